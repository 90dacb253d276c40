//! One controller per Katalog entry: watchers feed the work queue, a dispatcher hands keys to at
//! most `workers` concurrent reconciles, never two for one object.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::Api;
use kube::core::DynamicObject;
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use ork_engine::backoff::Backoff;
use ork_engine::gate::{CompiledGate, sentinels};
use ork_engine::health::Health;
use ork_engine::queue::{Reason, WorkQueue};
use ork_engine::ratelimit::TokenBucket;
use ork_katalog::{Check, CrdEntry, Remote, Sentinel};
use ork_remote::HttpTransport;
use serde_json::Value;
use tokio::sync::Notify;
use tracing::Instrument;

use crate::auth::CredentialSource;
use crate::cluster::{Cluster, KubeCluster};
use crate::discovery::{ChildType, resolve_managed, wait_for_cr_type};
use crate::labels::{MANAGED, OWNER};
use crate::runtime::Process;

/// Process-wide settings for `ork run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// ork's own namespace (Lease, default Secret namespace, off limits to children).
    pub ork_namespace: String,
    /// The Katalog file's folder: relative `command` paths and `workingDir` start here.
    pub katalog_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("the HTTP client for reconcile calls: {0}")]
    Transport(String),
    #[error("entry {entry}: {message}")]
    Entry { entry: String, message: String },
}

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
    pub transport: HttpTransport,
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
    wake: Notify,
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
    child_fingerprints: HashMap<String, Value>,
    /// UIDs of children ork deleted, so their deletion events do not trigger the owner.
    pub pruned: HashSet<String>,
    own_rvs: HashSet<String>,
    own_order: VecDeque<String>,
    /// Events that arrived while their key was in flight: decided when it finishes.
    deferred: HashMap<String, (String, Reason)>,
    pub stats: HashMap<String, KeyStats>,
    busy: usize,
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

    fn trigger(&mut self, key: String, rv: String, reason: Reason) -> bool {
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

    fn queue_in_flight(&self, key: &str) -> bool {
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
    fn cr_api(&self, client: &Client) -> Api<DynamicObject> {
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
    pub transport: HttpTransport,
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

/// The queue key of an object: `namespace/name`, or `name` when cluster-scoped.
pub(crate) fn key_of(obj: &DynamicObject) -> String {
    match obj.namespace() {
        Some(ns) => format!("{ns}/{}", obj.name_any()),
        None => obj.name_any(),
    }
}

pub(crate) async fn start_entry(
    client: Client,
    name: String,
    entry: CrdEntry,
    transport: HttpTransport,
    options: RunOptions,
    process: Arc<Process>,
) -> Result<(), String> {
    let remote = entry
        .operator_box
        .reconcile
        .remote
        .clone()
        .ok_or("no remote block")?;
    let cr_resource = wait_for_cr_type(&client, &entry.api_types, &name)
        .await
        .map_err(|e| e.to_string())?;
    let children = resolve_managed(&client, &remote.managed_resources)
        .await
        .map_err(|e| e.to_string())?;
    let credential =
        CredentialSource::start(&client, remote.auth.as_ref(), &options.ork_namespace)?;
    let cluster = Arc::new(KubeCluster::new(client.clone(), cr_resource.clone()));
    let shared = Arc::new(Shared::build(
        Parts {
            name,
            entry,
            remote,
            cr_resource,
            children,
            transport,
            credential,
            cluster,
        },
        &options,
        process.clone(),
    )?);
    tracing::info!(kind = %shared.cr_resource.kind, children = shared.children.len(), "watching");
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..shared.children.len() {
        tasks.spawn(watch_children(shared.clone(), client.clone(), index).in_current_span());
    }
    tasks.spawn(watch_crs(shared.clone(), client.clone()).in_current_span());
    tasks.spawn(resync(shared.clone()).in_current_span());
    // Watches fill the caches meanwhile; workers start once the dependencies are met.
    process
        .registry
        .wait_for_dependencies(&shared.name, &shared.entry)
        .await;
    process.registry.register(shared.clone());
    tasks.spawn(dispatch(shared).in_current_span());
    while tasks.join_next().await.is_some() {}
    Ok(())
}

async fn watch_crs(shared: Arc<Shared>, client: Client) {
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

/// The object a gate sees: the CR plus `health` (the entry's health summary).
pub(crate) fn gate_context(cr: &Value, health: &Health) -> Value {
    let mut ctx = cr.clone();
    if let Value::Object(m) = &mut ctx {
        m.insert(
            "health".into(),
            serde_json::to_value(health).unwrap_or(Value::Null),
        );
    }
    ctx
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

async fn watch_children(shared: Arc<Shared>, client: Client, index: usize) {
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

async fn resync(shared: Arc<Shared>) {
    let period = shared.entry.operator_box.reconcile.resync.get();
    if period.is_zero() {
        return;
    }
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tick.tick().await;
        let mut st = shared.lock();
        let keys: Vec<String> = st.crs.keys().cloned().collect();
        for k in keys {
            st.queue.add(k, Reason::Resync);
        }
        drop(st);
        shared.wake.notify_one();
    }
}

async fn dispatch(shared: Arc<Shared>) {
    let workers = shared.entry.operator_box.reconcile.workers as usize;
    let mut active = shared.process.active.clone();
    loop {
        // A standby (or a process shutting down) keeps its caches but starts no reconcile.
        if !*active.borrow_and_update() {
            if active.changed().await.is_err() {
                return;
            }
            continue;
        }
        let deadline = {
            let mut st = shared.lock();
            st.queue.promote(Instant::now());
            while st.busy < workers {
                let Some((key, reason)) = st.queue.pop() else {
                    break;
                };
                st.busy += 1;
                let shared = shared.clone();
                let span = tracing::info_span!("reconcile", %key, trigger = reason.as_str());
                tokio::spawn(
                    async move {
                        let next = crate::reconcile::reconcile(&shared, &key, reason).await;
                        finish(&shared, &key, next);
                    }
                    .instrument(span),
                );
            }
            st.queue.next_deadline()
        };
        let sleep = deadline.map_or(Duration::from_secs(3600), |d| {
            d.saturating_duration_since(Instant::now())
        });
        tokio::select! {
            () = shared.wake.notified() => {}
            () = tokio::time::sleep(sleep) => {}
            _ = active.changed() => {}
        }
    }
}

/// What to do with a key after its reconcile.
#[derive(Debug)]
pub(crate) enum Next {
    Idle,
    After(Duration, Reason),
}

fn finish(shared: &Shared, key: &str, next: Next) {
    let mut st = shared.lock();
    st.busy -= 1;
    let k = key.to_string();
    st.queue.done(&k);
    if let Some((rv, reason)) = st.deferred.remove(key)
        && !st.own_rvs.contains(&rv)
    {
        st.queue.add(k.clone(), reason);
    }
    if let Next::After(delay, reason) = next {
        st.queue.add_at(k, reason, Instant::now() + delay);
    }
    drop(st);
    shared.wake.notify_one();
}
