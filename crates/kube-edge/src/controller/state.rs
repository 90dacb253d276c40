//! What the tasks of one entry share: the compiled entry, the writer, and the mutable state.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use kube::Client;
use kube::api::Api;
use kube::core::DynamicObject;
use kube::discovery::ApiResource;
use ork_engine::backoff::Backoff;
use ork_engine::gate::CompiledGate;
use ork_engine::health::Health;
use ork_engine::queue::{Reason, WorkQueue};
use ork_engine::ratelimit::TokenBucket;
use ork_katalog::{Check, CrdEntry, Remote, Sentinel};
use serde_json::Value;
use tokio::sync::Notify;

use super::RunOptions;
use crate::auth::{CredentialSource, TransportSource};
use crate::cluster::Cluster;
use crate::discovery::ChildType;
use crate::runtime::Process;

/// Everything one entry's tasks share.
pub(crate) struct Shared {
    pub name: String,
    pub entry: CrdEntry,
    pub remote: Remote,
    /// Where reconciles write (the API server, or memory in `ork simulate`).
    pub cluster: Arc<dyn Cluster>,
    /// `ork simulate --record/--replay`: calls saved, or answered from saved files.
    pub tap: Option<Arc<crate::simulate::Tap>>,
    /// Time spent waiting for the service, in nanoseconds (ork's own time is the rest).
    pub service_nanos: std::sync::atomic::AtomicU64,
    pub cr_resource: ApiResource,
    pub children: Vec<ChildType>,
    pub transport: TransportSource,
    pub credential: CredentialSource,
    pub ork_namespace: String,
    /// Where the exec transport's command runs.
    pub working_dir: PathBuf,
    /// The entry has children garbage collection cannot reach, or asks for finalize calls.
    pub needs_finalizer: bool,
    /// What every entry of this run shares (registry, metrics, the active switch).
    pub process: Arc<Process>,
    pub enqueue_gate: Option<CompiledGate>,
    pub reconcile_gate: Option<CompiledGate>,
    pub rules: Vec<Check>,
    state: Mutex<State>,
    pub(super) wake: Notify,
}

/// Mutable per-entry state; locked briefly, never across an await.
pub(crate) struct State {
    pub queue: WorkQueue<String>,
    pub backoff: Backoff<String>,
    pub health: Health,
    pub bucket: Option<TokenBucket>,
    pub crs: HashMap<String, DynamicObject>,
    pub sentinels: HashMap<String, BTreeMap<Sentinel, bool>>,
    /// Children by type index, keyed `namespace/name`.
    pub children: Vec<HashMap<String, DynamicObject>>,
    pub(super) child_fingerprints: HashMap<String, Value>,
    /// UIDs of children ork deleted, so their deletion events do not trigger the owner.
    pub pruned: HashSet<String>,
    pub(super) own_rvs: HashSet<String>,
    pub(super) own_order: VecDeque<String>,
    /// Events that arrived while their key was in flight: decided when it finishes.
    pub(super) deferred: HashMap<String, (String, Reason)>,
    pub stats: HashMap<String, KeyStats>,
    pub(super) busy: usize,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct KeyStats {
    pub reconciles: u64,
    pub last_duration_ms: u64,
    pub last_result: String,
}

const OWN_RV_MEMORY: usize = 50_000;

impl State {
    /// Remembers a resourceVersion produced by ork's own write.
    pub fn own_write(&mut self, rv: Option<String>) {
        if let Some(rv) = rv
            && self.own_rvs.insert(rv.clone())
        {
            self.own_order.push_back(rv);
            if self.own_order.len() > OWN_RV_MEMORY
                && let Some(old) = self.own_order.pop_front()
            {
                self.own_rvs.remove(&old);
            }
        }
    }

    pub(super) fn trigger(&mut self, key: String, rv: String, reason: Reason) -> bool {
        if self.queue_in_flight(&key) {
            self.deferred.insert(key, (rv, reason));
            false
        } else {
            self.queue.add(key, reason);
            true
        }
    }

    /// Reconciles of this entry in flight.
    pub fn busy(&self) -> usize {
        self.busy
    }

    pub(super) fn queue_in_flight(&self, key: &str) -> bool {
        self.queue.is_in_flight(&key.to_string())
    }
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a reconcile panicked mid-update; the state is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The CRs this entry watches: one namespace if the entry says so, else all.
    pub(super) fn cr_api(&self, client: &Client) -> Api<DynamicObject> {
        match self.entry.namespace.as_deref().filter(|n| !n.is_empty()) {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &self.cr_resource),
            None => Api::all_with(client.clone(), &self.cr_resource),
        }
    }
}

/// What an entry is made of once its types are resolved.
pub(crate) struct Parts {
    pub name: String,
    pub entry: CrdEntry,
    pub remote: Remote,
    pub cr_resource: ApiResource,
    pub children: Vec<ChildType>,
    pub transport: TransportSource,
    pub credential: CredentialSource,
    pub cluster: Arc<dyn Cluster>,
}

impl Shared {
    /// Compiles the entry's gates and rules and sets up its empty state.
    ///
    /// # Errors
    /// A gate or rule that does not compile (only when the Katalog was not validated).
    pub(crate) fn build(
        parts: Parts,
        options: &RunOptions,
        process: Arc<Process>,
    ) -> Result<Shared, String> {
        let Parts {
            name,
            entry,
            remote,
            cr_resource,
            children,
            transport,
            credential,
            cluster,
        } = parts;
        let pre = &entry.operator_box.pre_reconcile;
        let enqueue_gate = pre
            .enqueue_gate
            .as_ref()
            .map(CompiledGate::compile)
            .transpose()?;
        let reconcile_gate = pre
            .reconcile_gate
            .as_ref()
            .map(CompiledGate::compile)
            .transpose()?;
        let rules = entry
            .operator_box
            .validation
            .rules
            .iter()
            .map(|r| r.compile().map_err(|e| format!("{e:?}")))
            .collect::<Result<Vec<_>, _>>()?;
        let reconcile = &entry.operator_box.reconcile;
        let bucket = remote
            .rate_limit
            .map(|rl| TokenBucket::new(rl.qps, rl.burst, Instant::now()));
        let state = State {
            queue: WorkQueue::default(),
            backoff: Backoff::new(&reconcile.queue.retry_backoff),
            health: Health::new(reconcile.queue.failure_threshold),
            bucket,
            crs: HashMap::new(),
            sentinels: HashMap::new(),
            children: vec![HashMap::new(); children.len()],
            child_fingerprints: HashMap::new(),
            pruned: HashSet::new(),
            own_rvs: HashSet::new(),
            own_order: VecDeque::new(),
            deferred: HashMap::new(),
            stats: HashMap::new(),
            busy: 0,
        };
        let working_dir = options
            .katalog_dir
            .join(remote.working_dir.as_deref().unwrap_or("."));
        let needs_finalizer = remote.finalize
            || children
                .iter()
                .any(|c| c.managed.cluster_scoped || !c.managed.namespaces.is_empty());
        Ok(Shared {
            name,
            remote,
            cluster,
            tap: None,
            service_nanos: std::sync::atomic::AtomicU64::new(0),
            cr_resource,
            children,
            transport,
            credential,
            working_dir,
            needs_finalizer,
            process,
            ork_namespace: options.ork_namespace.clone(),
            enqueue_gate,
            reconcile_gate,
            rules,
            entry,
            state: Mutex::new(state),
            wake: Notify::new(),
        })
    }
}
