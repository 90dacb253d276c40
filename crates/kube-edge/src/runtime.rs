//! The handle on one `ork run`: it starts the entries and answers what the HTTP endpoints ask
//! (ready, health, metrics). Leadership and shutdown switch reconciling on and off through
//! [`Runtime::set_active`]; watches keep caches warm either way.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Client;
use ork_engine::health::Health;
use ork_katalog::Katalog;
use ork_remote::HttpTransport;
use serde::Serialize;
use tokio::sync::watch;
use tracing::Instrument;

use crate::controller::{RunError, RunOptions, start_entry};
use crate::metrics::Metrics;
use crate::registry::Registry;

/// What the entries of one run share.
#[derive(Debug)]
pub(crate) struct Process {
    pub registry: Registry,
    pub metrics: Metrics,
    /// Whether workers may start reconciles: leader (or no election) and not shutting down.
    pub active: watch::Receiver<bool>,
    active_tx: watch::Sender<bool>,
    enabled: Vec<String>,
    synced: Mutex<HashSet<String>>,
}

impl Process {
    /// The entry's CR cache holds the initial list.
    pub fn mark_synced(&self, entry: &str) {
        if let Ok(mut s) = self.synced.lock() {
            s.insert(entry.to_string());
        }
    }
}

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
}

#[derive(Debug, Clone)]
pub struct Runtime {
    process: Arc<Process>,
}

impl Runtime {
    /// A runtime for the enabled entries of `katalog`; `active` says whether it may reconcile
    /// from the start (false for a standby that waits for leadership).
    pub fn new(katalog: &Katalog, active: bool) -> Runtime {
        let (active_tx, active_rx) = watch::channel(active);
        let metrics = Metrics::new();
        metrics.set_leader(active);
        Runtime {
            process: Arc::new(Process {
                registry: Registry::default(),
                metrics,
                active: active_rx,
                active_tx,
                enabled: katalog
                    .spec
                    .crds
                    .iter()
                    .filter(|(_, e)| e.enabled)
                    .map(|(n, _)| n.clone())
                    .collect(),
                synced: Mutex::default(),
            }),
        }
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
        let transport = HttpTransport::new().map_err(|e| RunError::Transport(e.to_string()))?;
        let mut tasks = tokio::task::JoinSet::new();
        for (name, entry) in katalog.spec.crds {
            if !entry.enabled {
                tracing::info!(entry = %name, "disabled; not started");
                continue;
            }
            let (client, transport, options) = (client.clone(), transport.clone(), options.clone());
            let process = self.process.clone();
            let span = tracing::info_span!("entry", entry = %name);
            tasks.spawn(
                async move {
                    start_entry(client, name.clone(), entry, transport, options, process)
                        .await
                        .map_err(|message| RunError::Entry {
                            entry: name,
                            message,
                        })
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

    pub(crate) fn process(&self) -> Arc<Process> {
        self.process.clone()
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
            .map(|s| s.lock().busy())
            .sum()
    }

    /// Waits until no reconcile is in flight, at most `limit`; returns how many were left.
    pub async fn drain(&self, limit: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let n = self.in_flight();
            if n == 0 || tokio::time::Instant::now() >= deadline {
                return n;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Ready when every enabled entry's CR cache is synced (leader and standby alike).
    pub fn ready(&self) -> bool {
        let synced = self
            .process
            .synced
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        self.process.enabled.iter().all(|e| synced.contains(e))
    }

    /// Every enabled entry with its health.
    pub fn entries(&self) -> Vec<EntryReport> {
        self.process
            .enabled
            .iter()
            .map(|name| match self.process.registry.get(name) {
                None => EntryReport {
                    name: name.clone(),
                    state: "not started".into(),
                    status: 503,
                    health: None,
                    queue_depth: 0,
                    workers_busy: 0,
                },
                Some(shared) => {
                    let st = shared.lock();
                    EntryReport {
                        name: name.clone(),
                        state: st.health.state.as_str().into(),
                        status: if st.health.is_serving() { 200 } else { 503 },
                        health: Some(st.health.clone()),
                        queue_depth: st.queue.depth(),
                        workers_busy: st.busy(),
                    }
                }
            })
            .collect()
    }

    /// Prometheus text, with the per-entry gauges brought up to date.
    pub fn metrics_text(&self) -> String {
        for e in self.entries() {
            self.process
                .metrics
                .entry_gauges(&e.name, e.queue_depth, e.workers_busy, &e.state);
        }
        self.process.metrics.encode()
    }
}
