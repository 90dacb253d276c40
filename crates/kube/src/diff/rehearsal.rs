//! The cluster one CR's reconcile writes to in `ork diff`: every write a server-side dry run
//! (the API server checks admission, schema and RBAC, and stores nothing), no event sent, and
//! each write that the API server accepted kept in order for the report.

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use kube::core::{DynamicObject, ObjectMeta};
use kube::runtime::events::{Event, EventType};
use ork_protocol::DesiredChild;
use serde_json::{Map, Value};

use crate::discovery::ChildType;
use crate::ports::{Cluster, CrRef, Deletion, KubeCluster, WriteError, Written};

/// One write the API server accepted as a dry run.
#[derive(Debug, Clone)]
pub(crate) enum Rehearsed {
    /// A child applied: the object as the API server would store it.
    Applied {
        kind: String,
        namespace: Option<String>,
        name: String,
        stored: Value,
    },
    /// A merge patch of the CR's status (`{"status": …}`).
    Status(Value),
    /// A merge patch of the CR's labels and annotations.
    Metadata(Map<String, Value>),
    Finalizers(Vec<String>),
    Event {
        warning: bool,
        reason: String,
        note: Option<String>,
    },
}

/// One CR's rehearsal over the shared dry-run cluster.
pub(crate) struct Rehearsal {
    cluster: Arc<KubeCluster>,
    journal: Mutex<Vec<Rehearsed>>,
}

impl Rehearsal {
    /// `cluster` must be a dry-run cluster ([`KubeCluster::dry_run`]).
    pub fn new(cluster: Arc<KubeCluster>) -> Rehearsal {
        Rehearsal {
            cluster,
            journal: Mutex::default(),
        }
    }

    fn keep(&self, write: Rehearsed) {
        self.journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(write);
    }

    /// What was written, in order.
    pub fn journal(&self) -> Vec<Rehearsed> {
        std::mem::take(&mut *self.journal.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Cluster for Rehearsal {
    fn apply<'a>(
        &'a self,
        t: &'a ChildType,
        child: &'a DesiredChild,
        object: &'a Value,
        force: bool,
    ) -> BoxFuture<'a, Result<DynamicObject, WriteError>> {
        Box::pin(async move {
            let stored = self.cluster.apply(t, child, object, force).await?;
            self.keep(Rehearsed::Applied {
                kind: t.managed.kind.clone(),
                namespace: child.namespace.clone(),
                name: child.name.clone(),
                stored: serde_json::to_value(&stored).unwrap_or(Value::Null),
            });
            Ok(stored)
        })
    }

    fn existing<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ObjectMeta>, WriteError>> {
        self.cluster.existing(t, namespace, name)
    }

    // Deletes are the plan's prunes and recreates: the report reads them there.
    fn delete<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> Written<'a> {
        self.cluster.delete(t, namespace, name)
    }

    fn delete_unchanged<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
        uid: &'a str,
        resource_version: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Deletion, WriteError>> {
        self.cluster
            .delete_unchanged(t, namespace, name, uid, resource_version)
    }

    fn cr_uid<'a>(&'a self, cr: &'a CrRef) -> BoxFuture<'a, Result<Option<String>, WriteError>> {
        self.cluster.cr_uid(cr)
    }

    fn patch_status<'a>(&'a self, cr: &'a CrRef, patch: &'a Value) -> Written<'a> {
        Box::pin(async move {
            self.cluster.patch_status(cr, patch).await?;
            self.keep(Rehearsed::Status(patch.clone()));
            Ok(())
        })
    }

    fn patch_metadata<'a>(
        &'a self,
        cr: &'a CrRef,
        metadata: &'a Map<String, Value>,
    ) -> Written<'a> {
        Box::pin(async move {
            self.cluster.patch_metadata(cr, metadata).await?;
            self.keep(Rehearsed::Metadata(metadata.clone()));
            Ok(())
        })
    }

    fn set_finalizers<'a>(&'a self, cr: &'a CrRef, finalizers: Vec<String>) -> Written<'a> {
        Box::pin(async move {
            self.cluster.set_finalizers(cr, finalizers.clone()).await?;
            self.keep(Rehearsed::Finalizers(finalizers));
            Ok(())
        })
    }

    fn event<'a>(&'a self, _cr: &'a CrRef, event: &'a Event) -> Written<'a> {
        // Not sent, not even as a dry run: the report tells what would be recorded.
        self.keep(Rehearsed::Event {
            warning: event.type_ == EventType::Warning,
            reason: event.reason.clone(),
            note: event.note.clone(),
        });
        Box::pin(async { Ok(()) })
    }

    fn list<'a>(
        &'a self,
        api_version: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Value>, WriteError>> {
        self.cluster.list(api_version, resource, namespace)
    }
}
