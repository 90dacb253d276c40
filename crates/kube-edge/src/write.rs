//! Writes to the cluster: server-side apply of children, prune, status and annotation patches.
//! Each returns the resourceVersion it produced, so the watchers can recognise ork's own writes.

use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::core::DynamicObject;
use kube::{Client, ResourceExt};
use ork_protocol::{DesiredChild, OwnerRef};
use serde_json::{Value, json};

use crate::discovery::ChildType;
use crate::labels::{FIELD_MANAGER, MANAGED, OWNER, OWNER_UID};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("apply {kind} {name}: {}", message(source))]
    ApplyFailed {
        kind: String,
        name: String,
        source: kube::Error,
    },
    #[error("prune {kind} {name}: {}", message(source))]
    PruneFailed {
        kind: String,
        name: String,
        source: kube::Error,
    },
    #[error("status patch: {}", message(.0))]
    StatusFailed(kube::Error),
    #[error("annotation patch: {}", message(.0))]
    AnnotateFailed(kube::Error),
    #[error("finalizer patch: {}", message(.0))]
    FinalizerFailed(kube::Error),
}

/// The API server's own words for a refused request, else the client error.
fn message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

/// The CR a child belongs to, as needed to label and own it.
#[derive(Debug, Clone)]
pub struct Owner {
    pub entry: String,
    pub reference: OwnerRef,
    pub uid: String,
}

impl Owner {
    /// The owner annotation value: `<entry>/<namespace>/<name>` (namespace empty when cluster-scoped).
    pub fn annotation(&self) -> String {
        format!(
            "{}/{}/{}",
            self.entry,
            self.reference.namespace.as_deref().unwrap_or(""),
            self.reference.name
        )
    }
}

fn api_for(client: &Client, t: &ChildType, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &t.resource),
        None => Api::all_with(client.clone(), &t.resource),
    }
}

/// The child as ork applies it: the service's object plus ork's labels, owner annotation and
/// (same namespace) a controller owner reference to the CR.
pub fn stamped(child: &DesiredChild, owner: &Owner) -> Value {
    let mut obj = child.object.clone();
    let meta = &mut obj["metadata"];
    meta["labels"][MANAGED] = json!("true");
    meta["labels"][OWNER_UID] = json!(owner.uid);
    meta["annotations"][OWNER] = json!(owner.annotation());
    if child.same_namespace_as(&owner.reference) {
        meta["ownerReferences"] = json!([{
            "apiVersion": owner.reference.api_version,
            "kind": owner.reference.kind,
            "name": owner.reference.name,
            "uid": owner.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
    }
    obj
}

/// Server-side applies a [`stamped`] child with field manager `orkestra-remote`.
///
/// # Errors
/// The API server refused the apply (conflict without force, validation, RBAC).
pub async fn apply_child(
    client: &Client,
    t: &ChildType,
    child: &DesiredChild,
    object: &Value,
    force: bool,
) -> Result<DynamicObject, WriteError> {
    let mut params = PatchParams::apply(FIELD_MANAGER);
    params.force = force;
    api_for(client, t, child.namespace.as_deref())
        .patch(&child.name, &params, &Patch::Apply(object))
        .await
        .map_err(|source| WriteError::ApplyFailed {
            kind: child.managed.kind.clone(),
            name: child.name.clone(),
            source,
        })
}

/// Deletes a child ork applied earlier (background propagation); a child already gone is fine.
///
/// # Errors
/// The API server refused the delete.
pub async fn prune_child(
    client: &Client,
    t: &ChildType,
    child: &DynamicObject,
) -> Result<(), WriteError> {
    let name = child.name_any();
    match api_for(client, t, child.namespace().as_deref())
        .delete(&name, &DeleteParams::background())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(WriteError::PruneFailed {
            kind: t.managed.kind.clone(),
            name,
            source,
        }),
    }
}

/// Merge-patches the status subresource with `patch` (`{"status": {...}}`).
///
/// # Errors
/// The API server refused the patch (e.g. the CRD has no status subresource).
pub async fn patch_status(
    api: &Api<DynamicObject>,
    name: &str,
    patch: &Value,
) -> Result<DynamicObject, WriteError> {
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(WriteError::StatusFailed)
}

/// Merge-patches annotations of the CR.
///
/// # Errors
/// The API server refused the patch.
pub async fn patch_annotations(
    api: &Api<DynamicObject>,
    name: &str,
    annotations: &serde_json::Map<String, Value>,
) -> Result<DynamicObject, WriteError> {
    let patch = json!({"metadata": {"annotations": annotations}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(WriteError::AnnotateFailed)
}

/// Sets the CR's finalizers, guarded by its resourceVersion (a concurrent change fails the patch
/// instead of being overwritten).
///
/// # Errors
/// The API server refused the patch (409 when the CR changed meanwhile).
pub async fn patch_finalizers(
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    finalizers: Vec<String>,
) -> Result<DynamicObject, WriteError> {
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": obj.resource_version(),
    }});
    api.patch(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map_err(WriteError::FinalizerFailed)
}
