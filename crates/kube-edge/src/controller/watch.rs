//! The watches of one entry: CRs (with sentinels and the enqueue gate) and managed children
//! (an edit or deletion by someone else re-reconciles the owner); ork's own writes are ignored.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::Api;
use kube::core::DynamicObject;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use ork_engine::gate::sentinels;
use ork_engine::queue::Reason;
use serde_json::Value;

use super::{Shared, State, gate_context, key_of};
use crate::labels::{MANAGED, OWNER};

pub(super) async fn watch_crs(shared: Arc<Shared>, client: Client) {
    let entry = &shared.entry;
    let api = shared.cr_api(&client);
    let mut config = watcher::Config::default();
    let selector: Vec<String> = entry
        .label_selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !selector.is_empty() {
        config = config.labels(&selector.join(","));
    }
    let fields: Vec<String> = entry
        .field_selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !fields.is_empty() {
        config = config.fields(&fields.join(","));
    }
    let declared = entry.operator_box.pre_reconcile.sentinels.clone();
    let mut stream = watcher(api, config).default_backoff().boxed();
    let mut relist: Option<HashSet<String>> = None;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "watch of CRs failed; retrying");
                continue;
            }
        };
        let mut st = shared.lock();
        match event {
            watcher::Event::Init => relist = Some(HashSet::new()),
            watcher::Event::InitDone => {
                shared.process.mark_synced(&shared.name);
                if let Some(seen) = relist.take() {
                    let gone: Vec<String> = st
                        .crs
                        .keys()
                        .filter(|k| !seen.contains(*k))
                        .cloned()
                        .collect();
                    for k in gone {
                        forget(&mut st, &k);
                    }
                }
            }
            watcher::Event::Delete(obj) => forget(&mut st, &key_of(&obj)),
            watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => {
                let key = key_of(&obj);
                if let Some(seen) = relist.as_mut() {
                    seen.insert(key.clone());
                }
                let rv = obj.resource_version().unwrap_or_default();
                let previous = st.crs.insert(key.clone(), obj.clone());
                if previous
                    .as_ref()
                    .and_then(ResourceExt::resource_version)
                    .as_deref()
                    == Some(rv.as_str())
                    || st.own_rvs.contains(&rv)
                {
                    continue;
                }
                // Sentinels and the enqueue gate need JSON of both versions; skip that work
                // for the common entry that declares neither.
                if !declared.is_empty() || shared.enqueue_gate.is_some() {
                    let current = serde_json::to_value(&obj).unwrap_or(Value::Null);
                    let prev_value = previous.as_ref().and_then(|p| serde_json::to_value(p).ok());
                    let s = sentinels(&declared, prev_value.as_ref(), &current);
                    if let Some(gate) = &shared.enqueue_gate
                        && let Err(reason) = gate.evaluate(&gate_context(&current, &st.health), &s)
                    {
                        tracing::debug!(%key, %reason, "enqueue gate closed");
                        continue;
                    }
                    st.sentinels.insert(key.clone(), s);
                }
                let reason = if previous.is_none() {
                    Reason::Create
                } else {
                    Reason::Update
                };
                if st.trigger(key, rv, reason) {
                    shared.wake.notify_one();
                }
            }
        }
    }
}

fn forget(st: &mut State, key: &str) {
    st.crs.remove(key);
    st.queue.forget(&key.to_string());
    st.backoff.reset(&key.to_string());
    st.sentinels.remove(key);
    st.deferred.remove(key);
    st.stats.remove(key);
}

/// What of a child counts as a change someone made: everything but server bookkeeping and status.
fn fingerprint(obj: &DynamicObject) -> Value {
    let mut v = serde_json::to_value(obj).unwrap_or(Value::Null);
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "resourceVersion",
            "managedFields",
            "generation",
            "creationTimestamp",
        ] {
            meta.remove(k);
        }
    }
    if let Some(m) = v.as_object_mut() {
        m.remove("status");
    }
    v
}

/// The owner key from a child's owner annotation, if it belongs to this entry.
fn owner_key(shared: &Shared, child: &DynamicObject) -> Option<String> {
    let ann = child.annotations().get(OWNER)?;
    let mut parts = ann.splitn(3, '/');
    let (entry, ns, name) = (parts.next()?, parts.next()?, parts.next()?);
    if entry != shared.name {
        return None;
    }
    Some(if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    })
}

pub(super) async fn watch_children(shared: Arc<Shared>, client: Client, index: usize) {
    let t = &shared.children[index];
    let api: Api<DynamicObject> = Api::all_with(client, &t.resource);
    let config = watcher::Config::default().labels(&format!("{MANAGED}=true"));
    let mut stream = watcher(api, config).default_backoff().boxed();
    let mut initial = true;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(kind = %t.managed.kind, error = %e, "watch of children failed; retrying");
                continue;
            }
        };
        let mut st = shared.lock();
        match event {
            watcher::Event::Init => initial = true,
            watcher::Event::InitDone => initial = false,
            watcher::Event::InitApply(obj) | watcher::Event::Apply(obj) => {
                let Some(owner) = owner_key(&shared, &obj) else {
                    continue;
                };
                let uid = obj.uid().unwrap_or_default();
                let rv = obj.resource_version().unwrap_or_default();
                st.children[index].insert(key_of(&obj), obj.clone());
                let print = fingerprint(&obj);
                let changed = st
                    .child_fingerprints
                    .insert(uid, print.clone())
                    .is_some_and(|old| old != print);
                if initial || st.own_rvs.contains(&rv) || !changed {
                    continue;
                }
                tracing::debug!(kind = %t.managed.kind, child = %obj.name_any(), %owner, "child changed; reconciling its owner");
                if st.crs.contains_key(&owner) && st.trigger(owner, rv, Reason::Child) {
                    shared.wake.notify_one();
                }
            }
            watcher::Event::Delete(obj) => {
                st.children[index].remove(&key_of(&obj));
                let uid = obj.uid().unwrap_or_default();
                st.child_fingerprints.remove(&uid);
                if st.pruned.remove(&uid) {
                    continue;
                }
                let Some(owner) = owner_key(&shared, &obj) else {
                    continue;
                };
                let rv = obj.resource_version().unwrap_or_default();
                if st.crs.contains_key(&owner) && st.trigger(owner, rv, Reason::Child) {
                    shared.wake.notify_one();
                }
            }
        }
    }
}
