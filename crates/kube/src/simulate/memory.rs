//! An in-memory cluster for `ork simulate`: a simplified apply (maps merge, lists replace,
//! server-owned metadata kept by the "server"), merge patches for status and annotations, and a
//! journal of every change for the report.

use std::collections::BTreeMap;
use std::sync::Mutex;

use futures::future::BoxFuture;
use kube::core::{DynamicObject, ObjectMeta};
use kube::runtime::events::{Event, EventType};
use ork_protocol::DesiredChild;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::discovery::ChildType;
use crate::ports::{Cluster, CrRef, Deletion, WriteError, Written};

/// One thing that happened in the cluster during a cycle.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "change", rename_all = "camelCase")]
pub enum Change {
    Created {
        kind: String,
        object: String,
        manifest: Value,
    },
    Changed {
        kind: String,
        object: String,
        diff: Vec<String>,
    },
    Pruned {
        kind: String,
        object: String,
    },
    Status {
        cr: String,
        patch: Value,
    },
    Event {
        cr: String,
        r#type: String,
        reason: String,
        message: String,
    },
}

impl Change {
    /// Whether the change is the cluster's state moving (events are not).
    pub fn is_state(&self) -> bool {
        !matches!(self, Change::Event { .. })
    }
}

/// The creation time every simulated object gets: fixed, so output is the same run to run.
pub(crate) const SIMULATED_TIME: &str = "2000-01-01T00:00:00Z";

#[derive(Default)]
struct Memory {
    /// Children by (group/Kind, namespace/name).
    objects: BTreeMap<(String, String), Value>,
    /// CRs by queue key.
    crs: BTreeMap<String, Value>,
    journal: Vec<Change>,
    next_rv: u64,
}

impl Memory {
    fn bump(&mut self) -> String {
        self.next_rv += 1;
        self.next_rv.to_string()
    }
}

#[derive(Default)]
pub(crate) struct MemoryCluster {
    inner: Mutex<Memory>,
}

fn type_key(t: &ChildType) -> String {
    format!("{}/{}", t.managed.group, t.managed.kind)
}

fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

impl MemoryCluster {
    fn lock(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Removes a child whose metadata passes `unchanged`, journalled as a prune.
    fn remove_child(
        &self,
        t: &ChildType,
        namespace: Option<&str>,
        name: &str,
        unchanged: impl Fn(&Value) -> bool,
    ) -> Deletion {
        let mut m = self.lock();
        let key = (type_key(t), object_key(namespace, name));
        let Some(stored) = m.objects.get(&key) else {
            return Deletion::AlreadyGone;
        };
        if !unchanged(&stored["metadata"]) {
            return Deletion::Changed;
        }
        m.objects.remove(&key);
        m.journal.push(Change::Pruned {
            kind: t.managed.kind.clone(),
            object: key.1,
        });
        Deletion::Deleted
    }

    /// Puts a CR in place as the API server would have stored it.
    pub fn add_cr(&self, key: &str, cr: Value) {
        self.lock().crs.insert(key.to_string(), cr);
    }

    /// Puts an object in place as if someone had created it before the first cycle: a uid and
    /// a resourceVersion of the "server", not journalled (it is not a change ork made).
    pub fn add_child(&self, t: &ChildType, namespace: Option<&str>, name: &str, mut object: Value) {
        let mut m = self.lock();
        let key = (type_key(t), object_key(namespace, name));
        object["metadata"]["uid"] =
            json!(format!("given-{}-{}", t.managed.kind.to_lowercase(), key.1));
        object["metadata"]["creationTimestamp"] = json!(SIMULATED_TIME);
        object["metadata"]["resourceVersion"] = json!(m.bump());
        m.objects.insert(key, object);
    }

    pub fn crs(&self) -> Vec<(String, Value)> {
        self.lock()
            .crs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The children of one type, as a watch would deliver them.
    pub fn children_of_type(&self, t: &ChildType) -> Vec<Value> {
        let tk = type_key(t);
        self.lock()
            .objects
            .iter()
            .filter(|((k, _), _)| *k == tk)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The changes since the last call.
    pub fn take_journal(&self) -> Vec<Change> {
        std::mem::take(&mut self.lock().journal)
    }
}

/// Merges `patch` into `target`: maps recursively, everything else (lists included) replaced,
/// `null` deleting — server-side apply and merge patch, simplified.
pub fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// Paths whose values differ, as `path: old → new` lines.
pub fn diff(old: &Value, new: &Value) -> Vec<String> {
    fn walk(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
        match (old, new) {
            (Value::Object(a), Value::Object(b)) => {
                let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                for k in keys {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(
                        &p,
                        a.get(k).unwrap_or(&Value::Null),
                        b.get(k).unwrap_or(&Value::Null),
                        out,
                    );
                }
            }
            (a, b) if a != b => out.push(format!("{path}: {a} → {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", old, new, &mut out);
    out
}

/// Bookkeeping the "server" owns; not part of what a user compares.
pub(crate) fn without_server_fields(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            meta.remove(k);
        }
    }
    v
}

impl Cluster for MemoryCluster {
    /// ork is the only field manager here, so an apply sets exactly what it sends: fields it
    /// stops sending are removed, as server-side apply does for its own fields.
    fn apply<'a>(
        &'a self,
        t: &'a ChildType,
        child: &'a DesiredChild,
        object: &'a Value,
        _force: bool,
    ) -> BoxFuture<'a, Result<DynamicObject, WriteError>> {
        Box::pin(async move {
            let mut m = self.lock();
            let key = (
                type_key(t),
                object_key(child.namespace.as_deref(), &child.name),
            );
            let before = m.objects.get(&key).cloned();
            let mut next = object.clone();
            let (uid, created, old_rv) = match &before {
                Some(old) => (
                    old["metadata"]["uid"].clone(),
                    old["metadata"]["creationTimestamp"].clone(),
                    old["metadata"]["resourceVersion"].clone(),
                ),
                None => (
                    json!(format!("sim-{}-{}", t.managed.kind.to_lowercase(), key.1)),
                    json!(SIMULATED_TIME),
                    Value::Null,
                ),
            };
            next["metadata"]["uid"] = uid;
            next["metadata"]["creationTimestamp"] = created;
            match before {
                None => m.journal.push(Change::Created {
                    kind: t.managed.kind.clone(),
                    object: key.1.clone(),
                    manifest: without_server_fields(&next),
                }),
                Some(old) => {
                    let d = diff(&without_server_fields(&old), &without_server_fields(&next));
                    if d.is_empty() {
                        // Nothing changed: the server keeps the old version.
                        next["metadata"]["resourceVersion"] = old_rv;
                        return as_object(next);
                    }
                    m.journal.push(Change::Changed {
                        kind: t.managed.kind.clone(),
                        object: key.1.clone(),
                        diff: d,
                    });
                }
            }
            next["metadata"]["resourceVersion"] = json!(m.bump());
            m.objects.insert(key, next.clone());
            as_object(next)
        })
    }

    fn existing<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ObjectMeta>, WriteError>> {
        Box::pin(async move {
            let m = self.lock();
            let key = (type_key(t), object_key(namespace, name));
            Ok(m.objects
                .get(&key)
                .and_then(|o| serde_json::from_value(o["metadata"].clone()).ok()))
        })
    }

    fn delete<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
    ) -> Written<'a> {
        Box::pin(async move {
            self.remove_child(t, namespace, name, |_| true);
            Ok(())
        })
    }

    fn delete_unchanged<'a>(
        &'a self,
        t: &'a ChildType,
        namespace: Option<&'a str>,
        name: &'a str,
        uid: &'a str,
        resource_version: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Deletion, WriteError>> {
        Box::pin(async move {
            Ok(self.remove_child(t, namespace, name, |meta| {
                meta["uid"].as_str() == Some(uid)
                    && resource_version
                        .is_none_or(|rv| meta["resourceVersion"].as_str() == Some(rv))
            }))
        })
    }

    fn cr_uid<'a>(&'a self, cr: &'a CrRef) -> BoxFuture<'a, Result<Option<String>, WriteError>> {
        Box::pin(async move {
            Ok(self
                .lock()
                .crs
                .get(&cr.key())
                .and_then(|c| c["metadata"]["uid"].as_str().map(str::to_string)))
        })
    }

    fn patch_status<'a>(&'a self, cr: &'a CrRef, patch: &'a Value) -> Written<'a> {
        Box::pin(async move {
            let mut m = self.lock();
            let key = cr.key();
            let rv = m.bump();
            if let Some(stored) = m.crs.get_mut(&key) {
                merge(stored, patch);
                stored["metadata"]["resourceVersion"] = json!(rv);
            }
            m.journal.push(Change::Status {
                cr: key,
                patch: patch.get("status").cloned().unwrap_or(Value::Null),
            });
            Ok(())
        })
    }

    fn patch_metadata<'a>(
        &'a self,
        cr: &'a CrRef,
        metadata: &'a Map<String, Value>,
    ) -> Written<'a> {
        Box::pin(async move {
            let mut m = self.lock();
            let key = cr.key();
            let rv = m.bump();
            if let Some(stored) = m.crs.get_mut(&key) {
                merge(stored, &json!({ "metadata": metadata }));
                stored["metadata"]["resourceVersion"] = json!(rv);
            }
            Ok(())
        })
    }

    fn set_finalizers<'a>(&'a self, cr: &'a CrRef, finalizers: Vec<String>) -> Written<'a> {
        Box::pin(async move {
            let mut m = self.lock();
            let key = cr.key();
            let rv = m.bump();
            if let Some(stored) = m.crs.get_mut(&key) {
                stored["metadata"]["finalizers"] = json!(finalizers);
                stored["metadata"]["resourceVersion"] = json!(rv);
            }
            Ok(())
        })
    }

    fn event<'a>(&'a self, cr: &'a CrRef, event: &'a Event) -> Written<'a> {
        Box::pin(async move {
            self.lock().journal.push(Change::Event {
                cr: cr.key(),
                r#type: match event.type_ {
                    EventType::Normal => "Normal".into(),
                    EventType::Warning => "Warning".into(),
                },
                reason: event.reason.clone(),
                message: event.note.clone().unwrap_or_default(),
            });
            Ok(())
        })
    }

    fn list<'a>(
        &'a self,
        api_version: &'a str,
        resource: &'a str,
        _namespace: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Value>, WriteError>> {
        Box::pin(async move {
            Err(WriteError::RelatedFailed {
                resource: format!("{api_version}/{resource}"),
                message: "related objects are read from a cluster; ork simulate has none".into(),
            })
        })
    }
}

/// A stored object as the API server returns it.
fn as_object(v: Value) -> Result<DynamicObject, WriteError> {
    serde_json::from_value(v).map_err(|e| WriteError::Memory(format!("simulated object: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_merge_lists_replace_null_deletes() {
        let mut t = json!({"a": {"x": 1, "y": 2}, "l": [1, 2, 3], "gone": true});
        merge(
            &mut t,
            &json!({"a": {"y": 5, "z": 6}, "l": [9], "gone": null}),
        );
        assert_eq!(t, json!({"a": {"x": 1, "y": 5, "z": 6}, "l": [9]}));
    }

    #[test]
    fn diff_lists_changed_paths() {
        let d = diff(
            &json!({"spec": {"replicas": 1, "image": "a"}}),
            &json!({"spec": {"replicas": 3, "image": "a"}}),
        );
        assert_eq!(d, ["spec.replicas: 1 → 3"]);
    }
}
