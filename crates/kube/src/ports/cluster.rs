//! Where a reconcile writes: the one seam between the pipeline and the API server. `ork run`
//! writes through [`KubeCluster`]; `ork simulate` through an in-memory cluster, so both run the
//! very same reconcile code.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::api::Api;
use kube::core::{DynamicObject, ObjectMeta};
use kube::discovery::ApiResource;
use kube::runtime::events::Event;
use kube::{Resource, ResourceExt};
use ork_protocol::DesiredChild;
use serde_json::{Map, Value};

use super::events::EventRecorder;
use super::write::{
    CrAt, Deletion, Mode, WriteError, apply_child, delete_unchanged, existing, patch_finalizers,
    patch_metadata, patch_status, prune_child,
};
use crate::discovery::ChildType;

pub(crate) type Written<'a> = BoxFuture<'a, Result<(), WriteError>>;

/// The CR a write is about: where it is, and the version the reconcile read (what a guarded
/// write checks and an event names). Small, so that writes waiting on the lane do not hold
/// whole CRs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CrRef {
    pub namespace: Option<String>,
    pub name: String,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

impl CrRef {
    pub fn of(cr: &DynamicObject) -> CrRef {
        CrRef {
            namespace: cr.namespace(),
            name: cr.name_any(),
            uid: cr.uid(),
            resource_version: cr.resource_version(),
        }
    }

    /// The CR a queue key names, no more known of it.
    pub fn at_key(key: &str) -> CrRef {
        let (namespace, name) = match key.split_once('/') {
            Some((ns, name)) => (Some(ns.to_string()), name.to_string()),
            None => (None, key.to_string()),
        };
        CrRef {
            namespace,
            name,
            uid: None,
            resource_version: None,
        }
    }

    /// `namespace/name`, or `name` when cluster-scoped (the queue key).
    pub fn key(&self) -> String {
        crate::cache::cache_key(self.namespace.as_deref(), &self.name)
    }
}

/// The writes a reconcile makes.
pub(crate) trait Cluster: Send + Sync {
    /// Server-side applies a stamped child; returns the object as the server stored it.
    fn apply<'a>(
        &'a self,
        t: &'a ChildType,
        child: &'a DesiredChild,
        object: &'a Value,
        force: bool,
    ) -> BoxFuture<'a, Result<DynamicObject, WriteError>>;
    /// The metadata of an existing object of type `t`, if there is one (from the API server's
    /// cache: a cheap read).
    fn existing<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ObjectMeta>, WriteError>>;
    /// Deletes a child ork applied earlier; a child already gone is fine.
    fn delete<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> Written<'a>;
    /// Deletes a child only while it is still the object ork saw (`uid`, `resource_version`
    /// when known).
    fn delete_unchanged<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
        uid: &'a str,
        resource_version: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Deletion, WriteError>>;
    /// The UID of the CR at `cr`'s namespace and name, `None` when there is none.
    fn cr_uid<'a>(&'a self, cr: &'a CrRef) -> BoxFuture<'a, Result<Option<String>, WriteError>>;
    /// Merge-patches the CR's status subresource with `{"status": {...}}`.
    fn patch_status<'a>(&'a self, cr: &'a CrRef, patch: &'a Value) -> Written<'a>;
    /// Merge-patches the CR's `metadata` (labels, annotations) with `metadata`.
    fn patch_metadata<'a>(&'a self, cr: &'a CrRef, metadata: &'a Map<String, Value>)
    -> Written<'a>;
    /// Sets the CR's finalizers, guarded by its resourceVersion.
    fn set_finalizers<'a>(&'a self, cr: &'a CrRef, finalizers: Vec<String>) -> Written<'a>;
    /// Records an event on the CR.
    fn event<'a>(&'a self, cr: &'a CrRef, event: &'a Event) -> Written<'a>;
    /// Every object of `api_version`/`resource` (in `namespace` only, when given), as JSON: the
    /// related objects a Metacontroller customize hook asks for (SPEC §15), read fresh.
    fn list<'a>(
        &'a self,
        api_version: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Value>, WriteError>>;
}

/// The real cluster.
pub(crate) struct KubeCluster {
    client: Client,
    /// [`Mode::DryRun`] for `ork diff`: every write is checked by the API server and stored
    /// nowhere, and no event is sent.
    mode: Mode,
    cr_resource: ApiResource,
    recorder: EventRecorder,
    /// Related types resolved through discovery: `apiVersion/resource` → resource, namespaced.
    related: std::sync::Mutex<std::collections::HashMap<String, (ApiResource, bool)>>,
}

impl KubeCluster {
    pub fn new(client: Client, cr_resource: ApiResource) -> KubeCluster {
        let recorder = EventRecorder::new(client.clone(), "ork", std::env::var("POD_NAME").ok());
        KubeCluster {
            client,
            mode: Mode::Apply,
            cr_resource,
            recorder,
            related: std::sync::Mutex::default(),
        }
    }

    /// The cluster whose writes are server-side dry runs.
    pub fn dry_run(mut self) -> KubeCluster {
        self.mode = Mode::DryRun;
        self
    }

    fn at<'a>(&'a self, cr: &'a CrRef) -> CrAt<'a> {
        CrAt {
            client: &self.client,
            mode: self.mode,
            url: DynamicObject::url_path(&self.cr_resource, cr.namespace.as_deref()),
            name: &cr.name,
        }
    }
}

impl Cluster for KubeCluster {
    fn apply<'a>(
        &'a self,
        t: &'a ChildType,
        child: &'a DesiredChild,
        object: &'a Value,
        force: bool,
    ) -> BoxFuture<'a, Result<DynamicObject, WriteError>> {
        Box::pin(apply_child(
            &self.client,
            self.mode,
            t,
            child,
            object,
            force,
        ))
    }

    fn existing<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ObjectMeta>, WriteError>> {
        Box::pin(existing(&self.client, t, namespace, name))
    }

    fn delete<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> Written<'a> {
        Box::pin(prune_child(&self.client, self.mode, t, namespace, name))
    }

    fn delete_unchanged<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
        uid: &'a str,
        resource_version: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Deletion, WriteError>> {
        Box::pin(delete_unchanged(
            &self.client,
            self.mode,
            t,
            namespace,
            name,
            uid,
            resource_version,
        ))
    }

    fn cr_uid<'a>(&'a self, cr: &'a CrRef) -> BoxFuture<'a, Result<Option<String>, WriteError>> {
        Box::pin(async move {
            let api: Api<DynamicObject> = match &cr.namespace {
                Some(ns) => Api::namespaced_with(self.client.clone(), ns, &self.cr_resource),
                None => Api::all_with(self.client.clone(), &self.cr_resource),
            };
            api.get_metadata_opt(&cr.name)
                .await
                .map(|m| m.and_then(|m| m.metadata.uid))
                .map_err(|source| WriteError::ReadFailed {
                    kind: self.cr_resource.kind.clone(),
                    name: cr.name.clone(),
                    source,
                })
        })
    }

    fn patch_status<'a>(&'a self, cr: &'a CrRef, patch: &'a Value) -> Written<'a> {
        Box::pin(async move { patch_status(&self.at(cr), patch).await })
    }

    fn patch_metadata<'a>(
        &'a self,
        cr: &'a CrRef,
        metadata: &'a Map<String, Value>,
    ) -> Written<'a> {
        Box::pin(async move { patch_metadata(&self.at(cr), metadata).await })
    }

    fn set_finalizers<'a>(&'a self, cr: &'a CrRef, finalizers: Vec<String>) -> Written<'a> {
        Box::pin(async move {
            patch_finalizers(&self.at(cr), cr.resource_version.as_deref(), finalizers).await
        })
    }

    fn event<'a>(&'a self, cr: &'a CrRef, event: &'a Event) -> Written<'a> {
        Box::pin(async move {
            if self.mode == Mode::DryRun {
                return Ok(());
            }
            let reference = ObjectReference {
                api_version: Some(self.cr_resource.api_version.clone()),
                kind: Some(self.cr_resource.kind.clone()),
                name: Some(cr.name.clone()),
                namespace: cr.namespace.clone(),
                uid: cr.uid.clone(),
                resource_version: cr.resource_version.clone(),
                field_path: None,
            };
            self.recorder
                .publish(event, &reference)
                .await
                .map_err(|e| WriteError::EventFailed(super::write::message(&e)))
        })
    }

    fn list<'a>(
        &'a self,
        api_version: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Value>, WriteError>> {
        Box::pin(async move {
            let failed = |message: String| WriteError::RelatedFailed {
                resource: format!("{api_version}/{resource}"),
                message,
            };
            let id = format!("{api_version}/{resource}");
            let known = self.related.lock().ok().and_then(|m| m.get(&id).cloned());
            let (ar, namespaced) = match known {
                Some(found) => found,
                None => {
                    let found = crate::discovery::resolve(&self.client, api_version, resource)
                        .await
                        .map_err(|e| failed(e.to_string()))?;
                    if let Ok(mut m) = self.related.lock() {
                        m.insert(id, found.clone());
                    }
                    found
                }
            };
            let api: Api<DynamicObject> = match namespace.filter(|_| namespaced) {
                Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar),
                None => Api::all_with(self.client.clone(), &ar),
            };
            let list = api
                .list(&Default::default())
                .await
                .map_err(|e| failed(super::write::message(&e)))?;
            Ok(list
                .items
                .into_iter()
                .map(|mut o| {
                    o.types = Some(kube::core::TypeMeta {
                        api_version: ar.api_version.clone(),
                        kind: ar.kind.clone(),
                    });
                    o.metadata.managed_fields = None;
                    serde_json::to_value(o).unwrap_or(Value::Null)
                })
                .collect())
        })
    }
}
