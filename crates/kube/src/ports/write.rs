//! Writes to the API server: server-side apply of children, prune, status, annotation and
//! finalizer patches, each a typed error the retry policy can read.

use kube::api::{Api, DeleteParams, GetParams, Patch, PatchParams, Preconditions};
use kube::core::{ApiResource, DynamicResourceScope};
use kube::core::{DynamicObject, ObjectMeta};
use kube::{Client, Resource};
use ork_protocol::{DesiredChild, OwnerRef};
use serde_json::{Map, Value, json};

use crate::discovery::ChildType;
use crate::labels::{
    APPLIED, FIELD_MANAGER, MANAGED, MANAGED_BY, MANAGED_SINCE, OWNER, OWNER_KIND, OWNER_MARK,
    OWNER_UID,
};
use crate::wire::Lean;

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("apply {kind} {name}: {}", message(source))]
    ApplyFailed {
        kind: String,
        name: String,
        source: kube::Error,
    },
    #[error("read {kind} {name}: {}", message(source))]
    ReadFailed {
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
    #[error("metadata patch: {}", message(.0))]
    AnnotateFailed(kube::Error),
    #[error("finalizer patch: {}", message(.0))]
    FinalizerFailed(kube::Error),
    #[error("event: {0}")]
    EventFailed(String),
    /// The in-memory cluster of `ork simulate` could not store the object.
    #[error("{0}")]
    Memory(String),
    /// Related objects (a Metacontroller customize hook's) could not be read.
    #[error("related {resource}: {message}")]
    RelatedFailed { resource: String, message: String },
}

impl WriteError {
    fn source(&self) -> Option<&kube::Error> {
        match self {
            WriteError::ApplyFailed { source, .. }
            | WriteError::PruneFailed { source, .. }
            | WriteError::ReadFailed { source, .. } => Some(source),
            WriteError::StatusFailed(e)
            | WriteError::AnnotateFailed(e)
            | WriteError::FinalizerFailed(e) => Some(e),
            WriteError::EventFailed(_)
            | WriteError::Memory(_)
            | WriteError::RelatedFailed { .. } => None,
        }
    }

    /// The CR changed under a write guarded by its resourceVersion (409): retry at once with
    /// the new version. (A field-manager conflict of an apply is not this: it backs off.)
    pub fn is_conflict(&self) -> bool {
        matches!(self, WriteError::FinalizerFailed(kube::Error::Api(s)) if s.code == 409)
    }

    /// The API server refused it for lack of permission (403): no retry helps until RBAC
    /// changes.
    pub fn is_forbidden(&self) -> bool {
        matches!(self.source(), Some(kube::Error::Api(s)) if s.code == 403)
    }

    /// The API server could not be reached or failed (5xx, 429): not the service's fault.
    pub fn is_unavailable(&self) -> bool {
        match self.source() {
            Some(kube::Error::Api(s)) => s.code >= 500 || s.code == 429,
            Some(_) => true,
            None => false,
        }
    }
}

/// The API server's own words for a refused request (its message and code, not the debug
/// dump kube's `Display` adds), else the client error.
pub(crate) fn message(e: &kube::Error) -> String {
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
    /// Marks the children no owner reference covers ([`OWNER_MARK`]).
    pub(crate) key: crate::mark::MarkKey,
}

impl Owner {
    /// The owner kind annotation value: `Kind.group` (`Kind` for the core group), see
    /// [`OWNER_KIND`].
    pub fn kind(&self) -> String {
        group_kind(&self.reference.kind, &self.reference.api_version)
    }

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

/// `Kind.group` of a type by its kind and apiVersion (`Kind` for the core group).
pub(crate) fn group_kind(kind: &str, api_version: &str) -> String {
    match api_version.split_once('/') {
        Some((group, _)) => format!("{kind}.{group}"),
        None => kind.to_string(),
    }
}

fn api_for<K: Resource<DynamicType = ApiResource, Scope = DynamicResourceScope>>(
    client: &Client,
    t: &ChildType,
    namespace: Option<&str>,
) -> Api<K> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &t.resource),
        None => Api::all_with(client.clone(), &t.resource),
    }
}

/// Sets `map[key] = value` under `metadata.<field>`, making `metadata.<field>` a map first if the
/// service sent something else (the answer check refuses that; this never panics regardless).
fn put(meta: &mut Map<String, Value>, field: &str, key: &str, value: Value) {
    let slot = meta
        .entry(field.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    if let Value::Object(m) = slot {
        m.insert(key.to_string(), value);
    }
}

/// The child as ork applies it: the service's object plus ork's labels, owner annotation,
/// (same namespace) a controller owner reference to the CR, and the fingerprint of all that
/// (annotation [`APPLIED`]), so an unchanged answer can skip the write.
pub fn stamped(child: &DesiredChild, owner: &Owner) -> Value {
    let mut obj = child.object.clone();
    if !obj.is_object() {
        obj = Value::Object(Map::new());
    }
    if let Value::Object(root) = &mut obj {
        let meta = root
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            put(meta, "labels", MANAGED, json!("true"));
            put(meta, "labels", OWNER_UID, json!(owner.uid));
            put(meta, "annotations", OWNER, json!(owner.annotation()));
            if child.same_namespace_as(&owner.reference) {
                meta.insert(
                    "ownerReferences".into(),
                    json!([{
                        "apiVersion": owner.reference.api_version,
                        "kind": owner.reference.kind,
                        "name": owner.reference.name,
                        "uid": owner.uid,
                        "controller": true,
                        "blockOwnerDeletion": true,
                    }]),
                );
            } else {
                put(meta, "annotations", OWNER_KIND, json!(owner.kind()));
                let mark = owner.key.mark(&crate::mark::Marked {
                    owner_uid: &owner.uid,
                    owner: &owner.annotation(),
                    group: &child.managed.group,
                    kind: &child.managed.kind,
                    namespace: child.namespace.as_deref().unwrap_or(""),
                    name: &child.name,
                });
                put(meta, "annotations", OWNER_MARK, json!(mark));
            }
        }
    }
    let print = format!("{:016x}", crate::index::fingerprint(&obj));
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        put(meta, "annotations", APPLIED, json!(print));
    }
    obj
}

/// Orkestra's `managed-by` and `managed-since` on a [`stamped`] child, outside its fingerprint:
/// the plan never counts them as a difference, so they only ride on writes made for other
/// reasons (an upgrade from a release without them rewrites nothing).
pub fn mark_managed(obj: &mut Value, managed_by: &str, since: String) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        put(meta, "annotations", MANAGED_BY, json!(managed_by));
        put(meta, "annotations", MANAGED_SINCE, json!(since));
    }
}

/// Server-side applies a [`stamped`] child with field manager `orkestra-remote`, at the
/// (served) version the service wrote it in.
///
/// # Errors
/// The API server refused the apply (conflict without force, validation, RBAC).
pub async fn apply_child(
    client: &Client,
    mode: Mode,
    t: &ChildType,
    child: &DesiredChild,
    object: &Value,
    force: bool,
) -> Result<DynamicObject, WriteError> {
    let mut params = mode.patch(PatchParams::apply(FIELD_MANAGER));
    params.force = force;
    let mut at = t.clone();
    if child.managed.version != at.resource.version {
        at.resource.version = child.managed.version.clone();
        at.resource.api_version = child.managed.api_version();
    }
    api_for::<Lean>(client, &at, child.namespace.as_deref())
        .patch(&child.name, &params, &Patch::Apply(object))
        .await
        .map(|o| o.object)
        .map_err(|source| WriteError::ApplyFailed {
            kind: child.managed.kind.clone(),
            name: child.name.clone(),
            source,
        })
}

/// The metadata of an existing object, read from the API server's watch cache.
///
/// # Errors
/// The read failed (other than "not found").
pub async fn existing(
    client: &Client,
    t: &ChildType,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<ObjectMeta>, WriteError> {
    api_for::<DynamicObject>(client, t, namespace)
        .get_metadata_opt_with(name, &GetParams::any())
        .await
        .map(|m| m.map(|m| m.metadata))
        .map_err(|source| WriteError::ReadFailed {
            kind: t.managed.kind.clone(),
            name: name.to_string(),
            source,
        })
}

/// Deletes a child ork applied earlier (background propagation); a child already gone is fine.
///
/// # Errors
/// The API server refused the delete.
pub async fn prune_child(
    client: &Client,
    mode: Mode,
    t: &ChildType,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), WriteError> {
    let params = mode.delete(DeleteParams::background());
    delete_child(client, t, namespace, name, &params)
        .await
        .map(drop)
}

/// How a delete guarded by what ork last saw of the object ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    Deleted,
    /// There was nothing to delete.
    AlreadyGone,
    /// The object changed since ork saw it (someone, ork included, wrote it): kept, and judged
    /// again from its new state.
    Changed,
}

/// Deletes a child only while it is the object ork last saw (`uid`, and `resource_version` when
/// known).
///
/// # Errors
/// The API server refused the delete.
pub async fn delete_unchanged(
    client: &Client,
    mode: Mode,
    t: &ChildType,
    namespace: Option<&str>,
    name: &str,
    uid: &str,
    resource_version: Option<&str>,
) -> Result<Deletion, WriteError> {
    let mut params = mode.delete(DeleteParams::background());
    params.preconditions = Some(Preconditions {
        uid: Some(uid.to_string()),
        resource_version: resource_version.map(str::to_string),
    });
    delete_child(client, t, namespace, name, &params).await
}

/// Deletes a child with `params`: a child already gone is fine, and a refused precondition (409
/// when `params` has one) means it changed.
async fn delete_child(
    client: &Client,
    t: &ChildType,
    namespace: Option<&str>,
    name: &str,
    params: &DeleteParams,
) -> Result<Deletion, WriteError> {
    match api_for::<DynamicObject>(client, t, namespace)
        .delete(name, params)
        .await
    {
        Ok(_) => Ok(Deletion::Deleted),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Deletion::AlreadyGone),
        Err(kube::Error::Api(status)) if status.code == 409 && params.preconditions.is_some() => {
            Ok(Deletion::Changed)
        }
        Err(source) => Err(WriteError::PruneFailed {
            kind: t.managed.kind.clone(),
            name: name.to_string(),
            source,
        }),
    }
}

/// Whether a write is made, or only checked: a server-side dry run (`dryRun=All`) goes through
/// admission, schema validation and RBAC like the write itself, and stores nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    Apply,
    DryRun,
}

impl Mode {
    fn patch(self, mut params: PatchParams) -> PatchParams {
        params.dry_run = self == Mode::DryRun;
        params
    }

    fn delete(self, mut params: DeleteParams) -> DeleteParams {
        params.dry_run = self == Mode::DryRun;
        params
    }
}

/// Where a CR's writes go: the client and the URL of its collection.
pub struct CrAt<'a> {
    pub client: &'a Client,
    pub mode: Mode,
    /// `/apis/<group>/<version>[/namespaces/<ns>]/<plural>`.
    pub url: String,
    pub name: &'a str,
}

/// Sends a write whose answer ork does not read (the watch brings the new object): the body is
/// not decoded, which for a CR with a large status or many managed fields is most of the work.
/// `built` is what `kube::core::Request` made of it.
///
/// # Errors
/// The request could not be built, failed, or the API server refused it.
pub(crate) async fn send(
    client: &Client,
    built: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
) -> Result<(), kube::Error> {
    let request = built.map_err(kube::Error::BuildRequest)?;
    client.request_text(request).await.map(drop)
}

/// Merge-patches the status subresource with `patch` (`{"status": {...}}`).
///
/// # Errors
/// The API server refused the patch (e.g. the CRD has no status subresource).
pub async fn patch_status(at: &CrAt<'_>, patch: &Value) -> Result<(), WriteError> {
    let request = kube::core::Request::new(&at.url).patch_subresource(
        "status",
        at.name,
        &at.mode.patch(PatchParams::default()),
        &Patch::Merge(patch),
    );
    send(at.client, request)
        .await
        .map_err(WriteError::StatusFailed)
}

/// Merge-patches the CR's `metadata` (its labels and annotations).
///
/// # Errors
/// The API server refused the patch.
pub async fn patch_metadata(
    at: &CrAt<'_>,
    metadata: &Map<String, Value>,
) -> Result<(), WriteError> {
    let patch = json!({ "metadata": metadata });
    merge(at, &patch).await.map_err(WriteError::AnnotateFailed)
}

/// Sets the CR's finalizers, guarded by its resourceVersion (a concurrent change fails the patch
/// with a conflict instead of being overwritten).
///
/// # Errors
/// The API server refused the patch (409 when the CR changed meanwhile).
pub async fn patch_finalizers(
    at: &CrAt<'_>,
    resource_version: Option<&str>,
    finalizers: Vec<String>,
) -> Result<(), WriteError> {
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": resource_version,
    }});
    merge(at, &patch).await.map_err(WriteError::FinalizerFailed)
}

async fn merge(at: &CrAt<'_>, patch: &Value) -> Result<(), kube::Error> {
    let request = kube::core::Request::new(&at.url).patch(
        at.name,
        &at.mode.patch(PatchParams::default()),
        &Patch::Merge(patch),
    );
    send(at.client, request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(object: Value) -> DesiredChild {
        DesiredChild {
            managed: crate::discovery::ChildType::config_maps().managed,
            name: "a".into(),
            namespace: Some("ns".into()),
            object,
            force_conflict: None,
        }
    }

    fn owner() -> Owner {
        Owner {
            entry: "e".into(),
            reference: OwnerRef {
                api_version: "demo/v1".into(),
                kind: "WebApp".into(),
                name: "w".into(),
                namespace: Some("ns".into()),
            },
            uid: "u1".into(),
            key: crate::mark::MarkKey::ephemeral(),
        }
    }

    #[test]
    fn labels_that_are_not_a_map_never_panic() {
        let c = child(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": "x", "annotations": 5}}));
        let out = stamped(&c, &owner());
        assert_eq!(out["metadata"]["labels"][MANAGED], "true");
        assert_eq!(out["metadata"]["annotations"][OWNER], "e/ns/w");
    }

    #[test]
    fn the_applied_fingerprint_changes_when_a_field_is_dropped() {
        let with = child(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "data": {"a": "1", "b": "2"}}));
        let without = child(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "data": {"a": "1"}}));
        let a = stamped(&with, &owner());
        let b = stamped(&without, &owner());
        assert_ne!(
            a["metadata"]["annotations"][APPLIED],
            b["metadata"]["annotations"][APPLIED]
        );
        assert_eq!(stamped(&with, &owner()), a, "stable");
        assert_eq!(a["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert!(a["metadata"]["annotations"].get(OWNER_KIND).is_none());
    }

    #[test]
    fn a_child_elsewhere_names_its_owner_s_kind_and_no_owner_reference() {
        let mut far = child(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "data": {"a": "1"}}));
        far.namespace = Some("other".into());
        let out = stamped(&far, &owner());
        assert_eq!(out["metadata"]["annotations"][OWNER_KIND], "WebApp.demo");
        assert!(out["metadata"].get("ownerReferences").is_none());
        assert_eq!(group_kind("Namespace", "v1"), "Namespace");
    }

    #[test]
    fn an_owner_kind_names_the_crs_of_one_type_only() {
        let tenant = group_kind("Tenant", "demo.ork.dev/v1");
        assert_eq!(tenant, "Tenant.demo.ork.dev");
        assert_eq!(
            group_kind("Tenant", "demo.ork.dev/v2"),
            tenant,
            "any version"
        );
        assert_ne!(group_kind("Tenant", "other.dev/v1"), tenant);
        assert_ne!(group_kind("Tenants", "demo.ork.dev/v1"), tenant);
        assert_ne!(group_kind("Tenant", "v1"), tenant);
        assert_eq!(group_kind("Tenant", "v1"), "Tenant");
    }
}
