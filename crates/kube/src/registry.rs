//! The entries of one run, as other entries may see them: their CRs (for `observe.cross`, sent
//! as `prepared.cross`), their health (for `dependsOn`) and their load (for `/katalog`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use kube::ResourceExt;
use ork_engine::health::{Health, State};
use ork_katalog::{CrdEntry, DependencyCondition};
use serde_json::Value;
use tokio::sync::watch;

use crate::cache::{Cache, cache_key};

/// An `observe.cross` selector that does not render for a CR.
#[derive(Debug, Clone, thiserror::Error)]
#[error("observe.cross {alias}: {message}")]
pub struct CrossError {
    pub alias: String,
    pub message: String,
}

/// What the runtime may ask of a started entry (its loop answers).
/// What `ork rollout` asks of an entry's rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutCommand {
    /// Every CR on the candidate now.
    Promote,
    /// Every CR back on the stable endpoint.
    Abort,
    /// A halted rollout starts over from its first share.
    Resume,
}

impl RolloutCommand {
    /// Every command, by the name `ork rollout` and the inspector's path give it.
    pub const ALL: [RolloutCommand; 3] = [
        RolloutCommand::Promote,
        RolloutCommand::Abort,
        RolloutCommand::Resume,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RolloutCommand::Promote => "promote",
            RolloutCommand::Abort => "abort",
            RolloutCommand::Resume => "resume",
        }
    }

    /// The command called `name`.
    pub fn named(name: &str) -> Option<RolloutCommand> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

pub(crate) trait EntryHandle: Send + Sync {
    /// Queue depth and reconciles in flight.
    fn load(&self) -> (usize, usize);
    /// CRs whose annotations and events wait on the lower-priority lane.
    fn lane_waiting(&self) -> usize;
    /// Queued keys per shard, of `total` shards.
    fn queued_by_shard(&self, total: u32) -> BoxFuture<'static, BTreeMap<u32, usize>>;
    /// Reconciles in flight of keys in `shard`.
    fn in_flight_in_shard(&self, total: u32, shard: u32) -> usize;
    /// Queues every object of `shard` (gained: each is reconciled once).
    fn enqueue_shard(&self, total: u32, shard: u32);
    /// The set of shards changed: look at the queue again.
    fn wake(&self);
    /// The flight recorder of one CR (its key), or every CR's summary; `None` when the entry
    /// does not answer (it is stopping).
    fn inspect(&self, key: Option<String>) -> BoxFuture<'static, Option<Value>>;
    /// The entry's rollout, after `command` when one is given; `None` when the entry does not
    /// answer, `Some(None)` when it has no rollout.
    fn rollout(&self, command: Option<RolloutCommand>)
    -> BoxFuture<'static, Option<Option<Value>>>;
}

/// What one started entry shows the others.
#[derive(Clone)]
pub(crate) struct Published {
    pub namespaced: bool,
    pub crs: Cache,
    /// The entry's health, as its loop last published it.
    pub health: watch::Receiver<Health>,
    pub handle: Arc<dyn EntryHandle>,
}

impl Published {
    pub fn health(&self) -> Health {
        self.health.borrow().clone()
    }
}

#[derive(Clone, Default)]
pub(crate) struct Registry(Arc<RwLock<HashMap<String, Published>>>);

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Registry")
    }
}

impl Registry {
    /// Records that an entry's workers are starting.
    pub fn register(&self, name: &str, entry: Published) {
        if let Ok(mut map) = self.0.write() {
            map.insert(name.to_string(), entry);
        }
    }

    /// The entry's workers are gone.
    pub fn unregister(&self, name: &str) {
        if let Ok(mut map) = self.0.write() {
            map.remove(name);
        }
    }

    pub fn get(&self, name: &str) -> Option<Published> {
        self.0.read().ok()?.get(name).cloned()
    }

    /// Every started entry.
    pub fn all(&self) -> Vec<Published> {
        self.0
            .read()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether `name` meets `condition`: started, or healthy (a started entry with nothing to
    /// reconcile and no failures counts as healthy).
    fn meets(&self, name: &str, condition: DependencyCondition) -> bool {
        let Some(dep) = self.get(name) else {
            return false;
        };
        match condition {
            DependencyCondition::Started => true,
            DependencyCondition::Healthy => {
                let h = dep.health();
                h.state == State::Healthy
                    || (dep.crs.is_empty()
                        && h.consecutive_fails == 0
                        && h.state != State::Degraded)
            }
        }
    }

    /// Waits until every `dependsOn` of `entry` is met, logging every 10 s while it waits.
    pub async fn wait_for_dependencies(&self, name: &str, entry: &CrdEntry) {
        let deps = entry.depends_on.entries();
        let mut waited = 0u32;
        loop {
            let unmet: Vec<String> = deps
                .iter()
                .filter(|(dep, cond)| !self.meets(dep, *cond))
                .map(|(dep, cond)| format!("{dep} ({cond:?})"))
                .collect();
            if unmet.is_empty() {
                return;
            }
            if waited.is_multiple_of(20) {
                tracing::info!(entry = name, waiting_for = %unmet.join(", "), "dependencies not met yet; workers wait");
            }
            waited += 1;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// `prepared.cross`: for each `observe.cross` of `entry`, the other entry's objects chosen by
    /// the selector, rendered against `cr`. A name selects one object (or `null`), labels select
    /// a list; the namespace defaults to the CR's.
    ///
    /// # Errors
    /// A selector template that fails to render.
    pub fn cross(
        &self,
        entry: &CrdEntry,
        cr: &Value,
    ) -> Result<BTreeMap<String, Value>, CrossError> {
        let mut out = BTreeMap::new();
        for c in &entry.operator_box.observe.cross {
            let render = |t: &ork_katalog::Template| {
                t.render(cr).map_err(|e| CrossError {
                    alias: c.alias.clone(),
                    message: e.to_string(),
                })
            };
            let Some(other) = self.get(&c.crd) else {
                out.insert(c.alias.clone(), Value::Null);
                continue;
            };
            let namespace = match &c.selector.namespace {
                Some(t) => Some(render(t)?),
                None => cr
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            };
            let labels = c
                .selector
                .labels
                .iter()
                .map(|(k, t)| Ok((k.clone(), render(t)?)))
                .collect::<Result<Vec<_>, CrossError>>()?;
            let value = match &c.selector.name {
                Some(t) => {
                    let name = render(t)?;
                    let namespace = namespace.as_deref().filter(|_| other.namespaced);
                    other
                        .crs
                        .get(&cache_key(namespace, &name))
                        .and_then(|o| serde_json::to_value(o.as_ref()).ok())
                        .unwrap_or(Value::Null)
                }
                None => Value::Array(
                    match (other.namespaced, namespace.as_deref()) {
                        (false, _) => other.crs.list(None),
                        (true, Some(ns)) => other.crs.list(Some(ns)),
                        (true, None) => Vec::new(),
                    }
                    .iter()
                    .filter(|o| labels.iter().all(|(k, v)| o.labels().get(k) == Some(v)))
                    .filter_map(|o| serde_json::to_value(o.as_ref()).ok())
                    .collect(),
                ),
            };
            out.insert(c.alias.clone(), value);
        }
        Ok(out)
    }
}
