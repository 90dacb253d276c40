//! The handle on one `ork run`: it starts the entries and answers what the HTTP endpoints ask
//! (ready, health, metrics). Leadership and shutdown switch reconciling on and off through
//! [`Runtime::set_active`]; watches keep caches warm either way.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kube::Client;
use ork_engine::health::Health;
use ork_katalog::{CrdEntry, Katalog, KatalogMeta};
use ork_remote::HttpTransport;
use serde::Serialize;
use tracing::Instrument;

use crate::controller::{RunError, RunOptions, start_entry};
use crate::process::Process;
use crate::shard_set::ShardSet;

/// One entry as `/katalog` reports it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryReport {
    pub name: String,
    /// `not started` until its workers run (CRD missing, dependencies unmet), else the health state.
    pub state: String,
    /// 200 or 503, as `/katalog/{entry}/health` answers.
    pub status: u16,
    pub health: Option<Health>,
    pub queue_depth: usize,
    pub workers_busy: usize,
    /// CRs whose annotations and events wait on the lower-priority lane.
    pub lane_waiting: usize,
    /// The shards this replica holds (with `--shards`), else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards_held: Option<Vec<u32>>,
    /// The CRs' type.
    pub api_version: String,
    pub kind: String,
    pub plural: String,
    /// The fields of Orkestra's `/katalog/{crd}/health` body, beside ork's own.
    #[serde(flatten)]
    pub orkestra: OrkestraHealth,
}

/// Orkestra's flat health fields (its `CRDHealthResponse`), for tools written against it.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrkestraHealth {
    pub healthy: bool,
    pub started: bool,
    pub pending: bool,
    pub gated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gated_reason: Option<String>,
    pub error_rate: f64,
    pub consecutive_fails: u32,
    pub total_reconciles: u64,
    pub last_error: String,
    pub last_reconcile: String,
}

impl OrkestraHealth {
    /// As Orkestra words `health` (none: not started).
    fn of(health: Option<&Health>) -> OrkestraHealth {
        let Some(h) = health else {
            return OrkestraHealth::default();
        };
        OrkestraHealth {
            healthy: h.state == ork_engine::health::State::Healthy,
            started: true,
            pending: h.state == ork_engine::health::State::Pending,
            gated: h.state == ork_engine::health::State::Gated,
            gated_reason: h.gated_reason.clone(),
            error_rate: h.error_rate_percent / 100.0,
            consecutive_fails: h.consecutive_fails,
            total_reconciles: h.total_reconciles,
            last_error: h.last_error.clone().unwrap_or_default(),
            last_reconcile: h.last_reconcile.clone().unwrap_or_default(),
        }
    }
}

/// What a stopping runtime had not finished when its grace ran out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drained {
    /// Reconciles still in flight.
    pub reconciles: usize,
    /// CRs whose annotations and events were not written.
    pub lane: usize,
}

impl Drained {
    pub fn is_empty(&self) -> bool {
        self.reconciles == 0 && self.lane == 0
    }
}

#[derive(Debug, Clone)]
pub struct Runtime {
    pub(crate) process: Arc<Process>,
    /// The enabled entries: the Katalog's, then Metacontroller controllers' as they come.
    entries: Arc<RwLock<Entries>>,
    /// The Katalog's metadata (name, description, version, author, tags…), for `/katalog`.
    metadata: Arc<KatalogMeta>,
}

/// The entries a runtime serves.
#[derive(Debug, Default)]
struct Entries {
    /// In Katalog order, then in the order controllers came.
    names: Vec<String>,
    /// Their configuration, for `/katalog/{entry}`.
    configs: BTreeMap<String, CrdEntry>,
}

impl Runtime {
    /// A runtime for the enabled entries of `katalog`; `active` says whether it may reconcile
    /// from the start (false for a standby that waits for leadership).
    pub fn new(katalog: &Katalog, active: bool) -> Runtime {
        Runtime::with_shards(katalog, active, ShardSet::single())
    }

    /// A runtime that reconciles only the keys of the shards `shards` holds (SPEC §12).
    pub fn with_shards(katalog: &Katalog, active: bool, shards: ShardSet) -> Runtime {
        let enabled = katalog.spec.crds.iter().filter(|(_, e)| e.enabled);
        Runtime {
            metadata: Arc::new(katalog.metadata.clone()),
            entries: Arc::new(RwLock::new(Entries {
                names: enabled.clone().map(|(n, _)| n.clone()).collect(),
                configs: enabled.map(|(n, e)| (n.clone(), e.clone())).collect(),
            })),
            process: Arc::new(Process::new(active, shards)),
        }
    }

    /// Serves `entry` as `name` from now on (a Metacontroller controller that came).
    pub(crate) fn add_entry(&self, name: &str, entry: CrdEntry) {
        if let Ok(mut e) = self.entries.write() {
            if !e.names.iter().any(|n| n == name) {
                e.names.push(name.to_string());
            }
            e.configs.insert(name.to_string(), entry);
        }
    }

    /// Stops serving the entry `name` (its controller went): its workers must be stopped by
    /// the caller.
    pub(crate) fn remove_entry(&self, name: &str) {
        if let Ok(mut e) = self.entries.write() {
            e.names.retain(|n| n != name);
            e.configs.remove(name);
        }
        self.process.registry.unregister(name);
        self.process.forget_synced(name);
        self.process.remove_admitter(name);
    }

    /// Every entry served now with its configuration, in order: the Katalog's and the
    /// controllers' as they are at this moment (one snapshot, so a caller authorizes exactly
    /// what it then shows).
    pub fn entry_configs(&self) -> Vec<(String, CrdEntry)> {
        self.entries
            .read()
            .map(|e| {
                e.names
                    .iter()
                    .filter_map(|n| Some((n.clone(), e.configs.get(n)?.clone())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether an entry of this runtime asks for admission (then ork serves the webhook).
    pub fn serves_admission(&self) -> bool {
        self.entry_configs().iter().any(|(_, e)| {
            e.operator_box
                .reconcile
                .remote
                .as_ref()
                .is_some_and(|r| r.admission.is_some())
        })
    }

    /// Answers an AdmissionReview sent to `entry`'s `phase` webhook (SPEC §21).
    ///
    /// # Errors
    /// A review ork cannot read, or an entry that does not serve that phase (yet).
    pub async fn admit(
        &self,
        entry: &str,
        phase: crate::admission::Phase,
        body: &[u8],
    ) -> Result<Vec<u8>, crate::admission::BadReview> {
        let admitter =
            self.process
                .admitter(entry)
                .ok_or_else(|| crate::admission::BadReview::NotServed {
                    entry: entry.to_string(),
                    phase: phase.as_str(),
                })?;
        admitter.review(phase, body).await
    }

    /// From now on, each entry that starts with admission registers its webhook
    /// configurations, calling `base` and trusting `ca_pem` (`--register-webhooks`).
    pub fn register_webhooks(&self, base: crate::webhook::ClientBase, ca_pem: String) {
        if self
            .process
            .webhook_registration
            .set((base, ca_pem))
            .is_err()
        {
            tracing::warn!("the webhook registration was already set; the first one stays");
        }
    }

    /// Who asks the API server whether a caller may read this runtime's inspector, counted in
    /// its metrics.
    pub fn reviewer(&self, client: Client) -> crate::access::Reviewer {
        crate::access::Reviewer::new(client, self.process.metrics.clone())
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.entries
            .read()
            .map(|e| e.names.clone())
            .unwrap_or_default()
    }

    /// Runs every enabled entry until one fails to start (or forever).
    ///
    /// # Errors
    /// An entry that cannot start (unresolvable managed type, missing credential).
    pub async fn run(
        &self,
        client: Client,
        katalog: Katalog,
        options: RunOptions,
    ) -> Result<(), RunError> {
        let transport = HttpTransport::new()?;
        let mut tasks = tokio::task::JoinSet::new();
        let katalog_name = katalog.metadata.name;
        for (name, entry) in katalog.spec.crds {
            if !entry.enabled {
                tracing::info!(entry = %name, "disabled; not started");
                continue;
            }
            let (client, transport, options) = (client.clone(), transport.clone(), options.clone());
            let (process, katalog_name) = (self.process.clone(), katalog_name.clone());
            let span = tracing::info_span!("entry", entry = %name);
            tasks.spawn(
                async move {
                    start_entry(
                        client,
                        name.clone(),
                        entry,
                        transport,
                        options,
                        process,
                        katalog_name,
                    )
                    .await
                    .map_err(|error| RunError::Entry { entry: name, error })
                }
                .instrument(span),
            );
        }
        while let Some(done) = tasks.join_next().await {
            if let Ok(Err(e)) = done {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Allows or stops new reconciles (leadership gained or lost, shutdown).
    pub fn set_active(&self, active: bool) {
        self.process.active_tx.send_replace(active);
        self.process.metrics.set_leader(active);
    }

    pub fn is_active(&self) -> bool {
        *self.process.active.borrow()
    }

    /// Reconciles in flight across all entries.
    pub fn in_flight(&self) -> usize {
        self.process
            .registry
            .all()
            .iter()
            .map(|p| p.handle.load().1)
            .sum()
    }

    /// CRs whose annotations and events wait on a lane or are being written, every entry
    /// together.
    pub fn lane_waiting(&self) -> usize {
        let waiting: usize = self
            .process
            .registry
            .all()
            .iter()
            .map(|p| p.handle.lane_waiting())
            .sum();
        waiting + crate::wake::lane_in_flight()
    }

    /// What is not finished yet: reconciles in flight, lane writes waiting or in flight.
    pub fn unfinished(&self) -> Drained {
        Drained {
            reconciles: self.in_flight(),
            lane: self.lane_waiting(),
        }
    }

    /// Waits, at most `limit`, until no reconcile is in flight and the lanes have written what
    /// those reconciles left them (the seals with it: the next start skips what they cover);
    /// call once [`Runtime::set_active`] said false. Returns what was left.
    pub async fn drain(&self, limit: Duration) -> Drained {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = self.unfinished();
            if left.is_empty() || tokio::time::Instant::now() >= deadline {
                return left;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Ready when every enabled entry's CR cache is synced (leader and standby alike).
    pub fn ready(&self) -> bool {
        self.names().iter().all(|e| {
            self.process.is_synced(e)
                && self
                    .process
                    .registry
                    .get(e)
                    .is_none_or(|entry| entry.health().is_served())
        })
    }

    /// The Katalog's metadata.
    pub fn metadata(&self) -> &KatalogMeta {
        &self.metadata
    }

    /// The configuration of the enabled entry `name`.
    pub fn config(&self, name: &str) -> Option<CrdEntry> {
        self.entries.read().ok()?.configs.get(name).cloned()
    }

    /// The enabled entry `name` with its health.
    pub fn entry(&self, name: &str) -> Option<EntryReport> {
        let name = self.names().into_iter().find(|e| e == name)?;
        Some(self.report(&name))
    }

    /// Every enabled entry with its health.
    pub fn entries(&self) -> Vec<EntryReport> {
        self.names().iter().map(|name| self.report(name)).collect()
    }

    fn report(&self, name: &str) -> EntryReport {
        let t = self.config(name).map(|e| e.api_types).unwrap_or_default();
        let api_version = if t.group.is_empty() {
            t.version.clone()
        } else {
            format!("{}/{}", t.group, t.version)
        };
        let mut report = match self.process.registry.get(name) {
            None => EntryReport {
                name: name.to_string(),
                state: "not started".into(),
                status: 503,
                health: None,
                queue_depth: 0,
                workers_busy: 0,
                lane_waiting: 0,
                shards_held: self.shards_held(),
                api_version: String::new(),
                kind: String::new(),
                plural: String::new(),
                orkestra: OrkestraHealth::default(),
            },
            Some(entry) => {
                let health = entry.health();
                let (queue_depth, workers_busy) = entry.handle.load();
                EntryReport {
                    name: name.to_string(),
                    state: health.state.as_str().into(),
                    status: if health.is_serving() { 200 } else { 503 },
                    health: Some(health),
                    queue_depth,
                    workers_busy,
                    lane_waiting: entry.handle.lane_waiting(),
                    shards_held: self.shards_held(),
                    api_version: String::new(),
                    kind: String::new(),
                    plural: String::new(),
                    orkestra: OrkestraHealth::default(),
                }
            }
        };
        report.api_version = api_version;
        report.kind = t.kind;
        report.plural = t.plural;
        report.orkestra = OrkestraHealth::of(report.health.as_ref());
        report
    }

    fn shards_held(&self) -> Option<Vec<u32>> {
        let shards = &self.process.shards;
        shards
            .is_sharded()
            .then(|| shards.held().into_iter().collect())
    }

    /// The shards of this process.
    pub fn shards(&self) -> Arc<ShardSet> {
        self.process.shards.clone()
    }

    /// The shards held changed: every entry looks at its queue again.
    pub fn shards_changed(&self) {
        self.process
            .metrics
            .set_shards_held(self.process.shards.held().len());
        for e in self.process.registry.all() {
            e.handle.wake();
        }
    }

    /// Queues every object of `shard` in every entry (the shard was gained).
    pub fn reconcile_shard(&self, shard: u32) {
        let total = self.process.shards.total();
        for e in self.process.registry.all() {
            e.handle.enqueue_shard(total, shard);
        }
    }

    /// Reconciles in flight, across entries, of keys in `shard`.
    pub fn in_flight_in_shard(&self, shard: u32) -> usize {
        let total = self.process.shards.total();
        self.process
            .registry
            .all()
            .iter()
            .map(|e| e.handle.in_flight_in_shard(total, shard))
            .sum()
    }

    /// What the flight recorder of `entry` holds: of the CR at `key`, or (`None`) every CR's
    /// state with the counts. `None` when there is no such started entry.
    pub async fn inspect(&self, entry: &str, key: Option<String>) -> Option<serde_json::Value> {
        let e = self.process.registry.get(entry)?;
        e.handle.inspect(key).await
    }

    /// The rollout of `entry` (SPEC §19), after `command` when one is given: `None` when
    /// there is no such started entry, `Some(None)` when it has no rollout.
    pub async fn rollout(
        &self,
        entry: &str,
        command: Option<crate::registry::RolloutCommand>,
    ) -> Option<Option<serde_json::Value>> {
        let e = self.process.registry.get(entry)?;
        e.handle.rollout(command).await
    }

    /// Prometheus text, with the per-entry gauges brought up to date.
    pub async fn metrics_text(&self) -> String {
        for e in self.entries() {
            self.process.metrics.entry_gauges(
                &e.name,
                e.queue_depth,
                e.workers_busy,
                e.lane_waiting,
                &e.state,
            );
        }
        let shards = &self.process.shards;
        self.process.metrics.set_shards_held(shards.held().len());
        if shards.is_sharded() {
            let mut depth = std::collections::BTreeMap::new();
            for e in self.process.registry.all() {
                for (shard, n) in e.handle.queued_by_shard(shards.total()).await {
                    *depth.entry(shard).or_insert(0) += n;
                }
            }
            for shard in 0..shards.total() {
                let n = depth.get(&shard).copied().unwrap_or(0);
                self.process.metrics.shard_queue_depth(shard, n);
            }
        }
        self.process.metrics.encode()
    }
}
