//! Related objects of a Metacontroller controller (SPEC §15): which parents' customize hooks
//! asked for which objects, and a watch of each related type that syncs those parents again
//! when a related object they select changes, as Metacontroller does.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use futures::StreamExt;
use kube::Client;
use kube::api::Api;
use kube::core::{DynamicObject, TypeMeta};
use kube::runtime::watcher;
use ork_protocol::metacontroller::RelatedRule;
use serde_json::Value;
use tokio::sync::mpsc;

/// The related-object rules of an entry's parents, and the types to watch.
#[derive(Debug)]
pub(crate) struct Related {
    /// Parent key → the rules its customize hook last answered.
    rules: Mutex<HashMap<String, Vec<RelatedRule>>>,
    /// Asks for a watch of `(apiVersion, resource)`.
    wanted: mpsc::UnboundedSender<(String, String)>,
}

impl Related {
    /// A registry whose watch requests go to the receiver returned with it.
    pub fn new() -> (Related, mpsc::UnboundedReceiver<(String, String)>) {
        let (wanted, requests) = mpsc::unbounded_channel();
        let related = Related {
            rules: Mutex::default(),
            wanted,
        };
        (related, requests)
    }

    /// `key`'s customize hook answered `rules`: its related types are watched from now on.
    pub fn remember(&self, key: &str, rules: &[RelatedRule]) {
        for r in rules {
            let _ = self
                .wanted
                .send((r.api_version.clone(), r.resource.clone()));
        }
        if let Ok(mut m) = self.rules.lock() {
            if rules.is_empty() {
                m.remove(key);
            } else {
                m.insert(key.to_string(), rules.to_vec());
            }
        }
    }

    /// The parents with a rule for objects of `api_version`/`resource`.
    fn relating(&self, api_version: &str, resource: &str) -> Vec<String> {
        let Ok(m) = self.rules.lock() else {
            return Vec::new();
        };
        m.iter()
            .filter(|(_, rules)| {
                rules
                    .iter()
                    .any(|r| r.api_version == api_version && r.resource == resource)
            })
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// The parents whose rules select `object`, of `api_version`/`resource`.
    fn selecting(&self, api_version: &str, resource: &str, object: &Value) -> Vec<String> {
        let Ok(m) = self.rules.lock() else {
            return Vec::new();
        };
        let parent_namespace = |key: &str| key.split_once('/').map(|(ns, _)| ns.to_string());
        let object_namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        m.iter()
            .filter(|(key, rules)| {
                // A namespaced parent sees related objects of its own namespace only.
                parent_namespace(key).is_none_or(|ns| object_namespace.is_none_or(|o| o == ns))
                    && rules.iter().any(|r| {
                        r.api_version == api_version && r.resource == resource && r.selects(object)
                    })
            })
            .map(|(key, _)| key.clone())
            .collect()
    }
}

/// Watches every related type asked for, once each; `sync` gets the parents to sync again
/// when an object of one changes (created, edited or deleted; the initial list is no change).
pub(crate) async fn watch(
    client: Client,
    related: std::sync::Arc<Related>,
    mut requests: mpsc::UnboundedReceiver<(String, String)>,
    sync: impl Fn(Vec<String>) + Clone + Send + Sync + 'static,
) {
    let mut started: HashSet<(String, String)> = HashSet::new();
    let mut tasks = tokio::task::JoinSet::new();
    while let Some(wanted) = requests.recv().await {
        if !started.insert(wanted.clone()) {
            continue;
        }
        let (client, related, sync) = (client.clone(), related.clone(), sync.clone());
        tasks.spawn(async move {
            let (api_version, resource) = wanted;
            let ar = match crate::discovery::resolve(&client, &api_version, &resource).await {
                Ok((ar, _)) => ar,
                Err(e) => {
                    tracing::warn!(%api_version, %resource, error = %e, "related type not watched");
                    return;
                }
            };
            tracing::info!(%api_version, %resource, "watching related objects");
            let api: Api<DynamicObject> = Api::all_with(client, &ar);
            let mut events = watcher(api, watcher::Config::default()).boxed();
            // Object UID → the parents that selected it when last seen: an object that stops
            // matching (a label removed) syncs them too.
            let mut selected: HashMap<String, Vec<String>> = HashMap::new();
            while let Some(event) = events.next().await {
                let (mut object, gone, initial) = match event {
                    Ok(watcher::Event::Apply(o)) => (o, false, false),
                    Ok(watcher::Event::InitApply(o)) => (o, false, true),
                    Ok(watcher::Event::Delete(o)) => (o, true, false),
                    Ok(watcher::Event::InitDone) => {
                        // What changed between a parent's last read of its related objects and
                        // this (re)list arrived as part of the list: the parents relating this
                        // type sync once, so that nothing created meanwhile is missed.
                        let parents = related.relating(&api_version, &resource);
                        if !parents.is_empty() {
                            sync(parents);
                        }
                        continue;
                    }
                    Ok(_) => continue,
                    Err(e) => {
                        tracing::debug!(error = %e, %resource, "related watch");
                        continue;
                    }
                };
                object.types = Some(TypeMeta {
                    api_version: ar.api_version.clone(),
                    kind: ar.kind.clone(),
                });
                let uid = object.metadata.uid.clone().unwrap_or_default();
                let value = serde_json::to_value(&object).unwrap_or(Value::Null);
                let now = related.selecting(&api_version, &resource, &value);
                let before = selected.remove(&uid).unwrap_or_default();
                if !gone && !now.is_empty() {
                    selected.insert(uid, now.clone());
                }
                // The initial list is what the parents' last sync saw: no change.
                if initial {
                    continue;
                }
                let mut parents = now;
                parents.extend(before);
                parents.sort();
                parents.dedup();
                if !parents.is_empty() {
                    sync(parents);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parents_are_found_by_their_rules_and_namespace() {
        let (related, _requests) = Related::new();
        let rule = |labels: Value| RelatedRule {
            api_version: "v1".into(),
            resource: "configmaps".into(),
            match_labels: labels.as_object().cloned(),
            namespace: None,
            names: Vec::new(),
        };
        related.remember("ns-a/p", &[rule(json!({"team": "a"}))]);
        related.remember("cluster-parent", &[rule(json!({"team": "a"}))]);
        related.remember("ns-b/q", &[rule(json!({"team": "b"}))]);
        let object =
            json!({"metadata": {"name": "x", "namespace": "ns-a", "labels": {"team": "a"}}});
        let mut found = related.selecting("v1", "configmaps", &object);
        found.sort();
        assert_eq!(found, ["cluster-parent", "ns-a/p"]);
        assert!(related.selecting("v1", "secrets", &object).is_empty());
        related.remember("ns-a/p", &[]);
        assert_eq!(
            related.selecting("v1", "configmaps", &object),
            ["cluster-parent"]
        );
    }
}
