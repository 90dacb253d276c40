//! The controller of one entry: its compiled context, caches, index, schedule and
//! ports, and [`Controller::run_one`], the path of one key from queue to finish.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use kube::core::DynamicObject;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use ork_engine::health::Health;
use ork_engine::queue::Reason;
use serde_json::Value;
use tokio::sync::Notify;

use super::lane::Lane;
use super::schedule::Schedule;
use crate::cache::{Cache, Holder, Readiness, cache_key};
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::{
    ChildRef, ChildView, CrView, Effect, Index, Seen, child_fingerprint, cr_fingerprint,
};
use crate::labels::{OWNER, OWNER_KIND, OWNER_MARK, OWNER_UID, REQUESTED_AT};
use crate::ports::{Cluster, Transport};
use crate::process::Process;
use crate::reconcile::{
    Done, Job, LiveChildren, Ports, Presence, Success, reconcile, record_failure, sweep,
};
use crate::registry::{EntryHandle, Published};
use crate::shard_set::shard_of;

/// The caches of one scope of a managed type's watches (a namespace, or everywhere).
pub(crate) struct ScopeCaches {
    pub scope: Option<String>,
    /// ork's children there (its label selector).
    pub objects: Cache,
    /// Every other object of the type there, by who holds it (a metadata-only watch of the
    /// complement of ork's label selector); `None` in `ork simulate`, which asks its in-memory
    /// cluster instead.
    pub holders: Option<Cache<Holder>>,
}

impl ScopeCaches {
    /// Whether each cache of the scope holds its first list.
    pub fn readiness(&self) -> impl Iterator<Item = Readiness> {
        std::iter::once(self.objects.readiness()).chain(self.holders.iter().map(Cache::readiness))
    }
}

/// One entry's moving parts.
pub(crate) struct Controller {
    pub ctx: Arc<EntryContext>,
    pub crs: Cache,
    /// Per managed type, the caches of its watches: one scope per namespace, or one for all.
    pub children: Vec<Vec<ScopeCaches>>,
    index: Mutex<Index>,
    schedule: Mutex<Schedule>,
    health: Arc<Mutex<Health>>,
    pub(crate) wake: Notify,
    cluster: Arc<dyn Cluster>,
    transport: Arc<dyn Transport>,
    pub process: Arc<Process>,
    /// Annotations and events, written after the reconciles that call for them.
    pub lane: Arc<Lane>,
}

impl Controller {
    pub fn new(
        ctx: Arc<EntryContext>,
        crs: Cache,
        children: Vec<Vec<ScopeCaches>>,
        cluster: Arc<dyn Cluster>,
        transport: Arc<dyn Transport>,
        process: Arc<Process>,
    ) -> Controller {
        let pre = &ctx.entry.operator_box.pre_reconcile;
        let index = Index::new(pre.sentinels.clone(), ctx.enqueue_gate.clone());
        let reconcile = &ctx.entry.operator_box.reconcile;
        Controller {
            schedule: Mutex::new(Schedule::new(&reconcile.queue)),
            health: Arc::new(Mutex::new(Health::new(reconcile.queue.failure_threshold))),
            index: Mutex::new(index),
            ctx,
            crs,
            children,
            wake: Notify::new(),
            cluster,
            transport,
            process,
            lane: Arc::new(Lane::default()),
        }
    }

    fn index(&self) -> MutexGuard<'_, Index> {
        self.index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn schedule(&self) -> MutexGuard<'_, Schedule> {
        self.schedule
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn health(&self) -> Health {
        self.health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether the API server serves the CRs' type: a 404 watch makes the entry degraded and
    /// not ready, the next event makes it whole again.
    pub fn served(&self, served: bool, why: &str) {
        let mut h = self
            .health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if served {
            if !h.is_served() {
                h.record_served();
                tracing::info!("the CRs' type is served again");
            }
        } else if h.unserved.as_deref() != Some(why) {
            h.record_unserved(why);
            tracing::warn!(reason = why, "entry degraded");
        }
    }

    /// What this entry shows the others (`observe.cross`, `dependsOn`, `/katalog`).
    pub fn published(self: &Arc<Self>) -> Published {
        Published {
            namespaced: self.ctx.cr_namespaced,
            crs: self.crs.clone(),
            health: self.health.clone(),
            handle: self.clone(),
        }
    }

    /// A watch event of the CRs (already applied to the CR store). A CR in a namespace the
    /// entry does not allow (`allowedNamespaces`, `restrictedNamespaces`) is not the entry's:
    /// it is seen as absent and never reconciled.
    pub fn cr_event(&self, event: &watcher::Event<DynamicObject>) {
        let allowed = |o: &DynamicObject| {
            o.namespace()
                .is_none_or(|ns| self.ctx.entry.namespace_allowed(&ns))
        };
        let hidden;
        let event = match event {
            watcher::Event::Apply(o) if !allowed(o) => {
                hidden = watcher::Event::Delete(o.clone());
                &hidden
            }
            watcher::Event::InitApply(o) if !allowed(o) => return,
            other => other,
        };
        let wants_json = self.index().wants_json();
        let view = |o: &DynamicObject| CrView {
            key: crate::cache::key_of(o),
            uid: o.uid().unwrap_or_default(),
            fingerprint: cr_fingerprint(o, &self.ctx.own_metadata),
            json: wants_json.then(|| serde_json::to_value(o).unwrap_or(Value::Null)),
            requested_at: o.annotations().get(REQUESTED_AT).cloned(),
        };
        let seen = reduce(event, view);
        let health = self.health();
        let gate = |cr: &Value| {
            let mut ctx = cr.clone();
            if let Value::Object(m) = &mut ctx {
                m.insert(
                    "health".into(),
                    serde_json::to_value(&health).unwrap_or(Value::Null),
                );
            }
            ctx
        };
        let effects = self.index().cr_event(seen, &gate);
        self.apply(effects);
    }

    /// A watch event of the children of managed type `type_index` from the watch of `scope`
    /// (applied to its store).
    pub fn child_event(
        &self,
        type_index: usize,
        scope: Option<&str>,
        event: &watcher::Event<DynamicObject>,
    ) {
        let view = |o: &DynamicObject| {
            let evidence = self.ownership(type_index, o);
            let by_mark = matches!(evidence, Some((_, _, Evidence::Mark)));
            let (owner_uid, owner_key) = match evidence {
                Some((uid, key, _)) => (Some(uid), key),
                None => (None, None),
            };
            ChildView {
                child: ChildRef {
                    type_index,
                    namespace: o.namespace(),
                    name: o.name_any(),
                },
                uid: o.uid().unwrap_or_default(),
                sweepable: by_mark && o.annotations().get(OWNER_KIND) == Some(&self.ctx.owner_kind),
                marked: by_mark,
                owner_uid,
                owner_key,
                fingerprint: child_fingerprint(o),
            }
        };
        let seen = reduce(event, view);
        let effects = self.index().child_event(type_index, scope, seen);
        self.apply(effects);
    }

    /// Whose child `o` is, by evidence a tenant cannot forge (SPEC §11): the owner's UID and
    /// key, when either a controller owner reference to the UID of ork's owner label sits in
    /// the namespace ork's owner annotation names (owner references do not cross namespaces,
    /// and writing there takes write access to the CR's namespace), or ork's mark over owner
    /// and child verifies. Labels, annotations and field managers alone are anyone's to write.
    fn ownership(
        &self,
        type_index: usize,
        o: &DynamicObject,
    ) -> Option<(String, Option<String>, Evidence)> {
        let uid = o.labels().get(OWNER_UID)?;
        let annotation = o.annotations().get(OWNER)?;
        let key = owner_key(&self.ctx.name, annotation);
        let referenced = o
            .owner_references()
            .iter()
            .any(|r| r.controller == Some(true) && &r.uid == uid);
        if referenced {
            let owner_ns = annotation.split('/').nth(1).unwrap_or_default();
            return (o.namespace().unwrap_or_default() == owner_ns)
                .then(|| (uid.clone(), key, Evidence::Reference));
        }
        let t = self.ctx.children.get(type_index)?;
        let mark = o.annotations().get(OWNER_MARK)?;
        let (namespace, name) = (o.namespace().unwrap_or_default(), o.name_any());
        let marked = crate::mark::Marked {
            owner_uid: uid,
            owner: annotation,
            group: &t.managed.group,
            kind: &t.managed.kind,
            namespace: &namespace,
            name: &name,
        };
        self.ctx
            .mark_key
            .verifies(mark, &marked)
            .then(|| (uid.clone(), key, Evidence::Mark))
    }

    fn apply(&self, effects: Vec<Effect>) {
        if effects.is_empty() {
            return;
        }
        let mut s = self.schedule();
        for effect in effects {
            match effect {
                Effect::Enqueue(key, Reason::Manual) => {
                    s.backoff.reset(&key);
                    s.queue.add(key, Reason::Manual);
                }
                Effect::Enqueue(key, reason) => s.queue.add(key, reason),
                Effect::Forget(key) => s.forget(&key),
            }
        }
        drop(s);
        self.wake.notify_one();
    }

    /// Queues every known CR (periodic resync, gaining leadership).
    pub fn enqueue_all(&self, reason: Reason) {
        self.enqueue_where(reason, |_| true);
    }

    /// Queues the known CRs whose key passes `mine` with `reason`, and the sweeps due under
    /// such keys.
    fn enqueue_where(&self, reason: Reason, mine: impl Fn(&str) -> bool) {
        let (keys, sweeps) = {
            let ix = self.index();
            (ix.keys(), ix.due_sweeps())
        };
        let mut s = self.schedule();
        for k in keys.into_iter().filter(|k| mine(k)) {
            s.queue.add(k, reason);
        }
        for k in sweeps.into_iter().filter(|k| mine(k)) {
            s.queue.add(k, Reason::Sweep);
        }
        drop(s);
        self.wake.notify_one();
    }

    /// Takes every key waiting in the queue (`ork simulate` runs them itself, in order).
    pub fn take_queued(&self) -> Vec<(String, Reason)> {
        let mut s = self.schedule();
        std::iter::from_fn(|| s.queue.pop()).collect()
    }

    /// Every CR key the index knows.
    pub fn keys(&self) -> Vec<String> {
        self.index().keys()
    }

    /// Everything the reconcile of `key` reads; `None` when the CR is gone.
    fn job(&self, key: &str, reason: Reason, consume_sentinels: bool) -> Option<Job> {
        let cr = self.crs.get(key)?;
        let uid = cr.meta().uid.clone().unwrap_or_default();
        let (sentinels, owned) = {
            let mut ix = self.index();
            let s = if consume_sentinels {
                ix.take_sentinels(key)
            } else {
                ix.peek_sentinels(key)
            };
            (s, ix.children_of(&uid, cr.meta().namespace.as_deref()))
        };
        let children = owned
            .into_iter()
            .filter_map(|c| {
                let obj = self.get(&c)?;
                Some((c, obj))
            })
            .collect();
        let cross = if self.ctx.entry.operator_box.observe.cross.is_empty() {
            Ok(Default::default())
        } else {
            let cr_json = serde_json::to_value(cr.as_ref()).unwrap_or(Value::Null);
            self.process.registry.cross(&self.ctx.entry, &cr_json)
        };
        let (attempt, count) = {
            let s = self.schedule();
            (s.backoff.failures(&key.to_string()) + 1, s.count(key))
        };
        Some(Job {
            key: key.to_string(),
            cr,
            reason,
            attempt,
            sentinels,
            children,
            cross,
            health: self.health(),
            count,
        })
    }

    /// Writes what the lane holds now, in this task (`ork simulate`: deterministic order).
    pub async fn flush_lane(&self) {
        for later in self.lane.take(usize::MAX) {
            later.write(self.cluster.as_ref()).await;
        }
    }

    /// Writes the lane's annotations and events, forever: up to `AT_ONCE` CRs' at a time when
    /// no reconcile runs or waits (as many as the default workers, and enough for the thread to
    /// gather their answers into few wake-ups, see [`crate::wake`]); meanwhile only what waited
    /// longer than `PATIENCE`, one at a time, so they do not compete with convergence for the
    /// API server. The patience outlasts a burst of thousands of new CRs (2,000 converge in
    /// 7–12 s on 2 cores): with 5 s, 0.23 lane writes per CR went before the burst had
    /// converged; with 30 s, none. Under load that never ends, the trickle still goes.
    pub async fn drive_lane(&self) {
        const AT_ONCE: usize = 16;
        const PATIENCE: Duration = Duration::from_secs(30);
        const LOOK_AGAIN: Duration = Duration::from_millis(100);
        loop {
            let converging = {
                let s = self.schedule();
                s.busy > 0 || s.queue.has_fresh()
            };
            let batch = if converging {
                self.lane.take_waited(1, PATIENCE)
            } else {
                self.lane.take(AT_ONCE)
            };
            if batch.is_empty() {
                if self.lane.is_empty() {
                    self.lane.wait().await;
                } else {
                    tokio::time::sleep(LOOK_AGAIN).await;
                }
                continue;
            }
            let cluster = self.cluster.as_ref();
            futures::future::join_all(batch.iter().map(|l| async move {
                let _counted = crate::wake::LaneInFlight::enter();
                l.write(cluster).await;
            }))
            .await;
        }
    }

    fn ports(&self) -> Ports<'_> {
        Ports {
            cluster: self.cluster.as_ref(),
            transport: self.transport.as_ref(),
            live: self,
            metrics: &self.process.metrics,
        }
    }

    /// Reconciles `key` once: gather, reconcile (a panic is caught and recorded as this
    /// reconcile's failure), tell the index what was written, schedule what comes next.
    /// Returns how it ended, `None` when the CR is gone.
    pub async fn run_one(
        &self,
        key: &str,
        reason: Reason,
    ) -> Option<Result<Success, ReconcileError>> {
        let swept = self.sweep(key).await;
        // Only a sweep was asked (any other reason takes its place in the queue): a CR living
        // under the key has nothing new to be reconciled for.
        let job = (reason != Reason::Sweep)
            .then(|| self.job(key, reason, true))
            .flatten();
        if let Some(swept) = &swept {
            self.schedule().swept(key, swept.is_ok());
        }
        let Some(job) = job else {
            self.schedule().done(key);
            self.wake.notify_one();
            return None;
        };
        self.index().begin(key);
        let ports = self.ports();
        let caught = std::panic::AssertUnwindSafe(reconcile(&self.ctx, ports, &job))
            .catch_unwind()
            .await;
        let done = match caught {
            Ok(done) => done,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                tracing::error!(panic = %what, "reconcile panicked; recorded as a failure");
                let error = ReconcileError::Panicked(what);
                let later = record_failure(&self.ctx, ports, &job, &error).await;
                Done {
                    outcome: Err(error),
                    own: Default::default(),
                    later,
                }
            }
        };
        Some(self.finish(key, done))
    }

    /// Deletes the children of CRs that went under `key` without ork's finalizer, if there are
    /// any (see [`crate::reconcile::sweep`]); how it ended, `None` when there was nothing to do.
    async fn sweep(&self, key: &str) -> Option<Result<(), ReconcileError>> {
        let strays = self.index().take_strays(key);
        if strays.is_empty() {
            return None;
        }
        let swept = sweep(&self.ctx, self.ports(), key, strays).await;
        let mut ix = self.index();
        ix.swept(swept.deleted);
        for owner in &swept.kept {
            ix.keep(owner);
        }
        for owner in &swept.unfinished {
            ix.sweep_again(key, owner);
        }
        Some(swept.error.map_or(Ok(()), Err))
    }

    /// `ork check`: the request of `key`, sent once, and the raw answer with its policy.
    pub async fn probe(
        &self,
        key: &str,
    ) -> Result<(Vec<u8>, ork_protocol::Policy), ReconcileError> {
        let job = self
            .job(key, Reason::Create, false)
            .ok_or_else(|| ReconcileError::Request(format!("no CR {key}")))?;
        crate::reconcile::probe(&self.ctx, self.ports(), &job).await
    }

    /// Tells the index what the reconcile wrote and schedules what comes next; returns how it
    /// ended.
    fn finish(&self, key: &str, done: Done) -> Result<Success, ReconcileError> {
        let Done {
            outcome,
            own,
            later,
        } = done;
        if let Some(later) = later {
            self.lane.push(key, later);
        }
        let effects = self.index().finish(key, own);
        {
            let mut health = self
                .health
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut s = self.schedule();
            s.done(key);
            s.after(key, &outcome, &mut health);
        }
        self.apply(effects);
        self.wake.notify_one();
        outcome
    }
}

impl EntryHandle for Controller {
    fn load(&self) -> (usize, usize) {
        let s = self.schedule();
        (s.queue.depth(), s.busy)
    }

    fn queued_by_shard(&self, total: u32) -> BTreeMap<u32, usize> {
        let mut out = BTreeMap::new();
        for key in self.schedule().queue.queued_keys() {
            *out.entry(shard_of(key, total)).or_default() += 1;
        }
        out
    }

    fn in_flight_in_shard(&self, total: u32, shard: u32) -> usize {
        self.schedule()
            .queue
            .in_flight_keys()
            .filter(|k| shard_of(k, total) == shard)
            .count()
    }

    fn enqueue_shard(&self, total: u32, shard: u32) {
        self.enqueue_where(Reason::Resync, |k| shard_of(k, total) == shard);
    }

    fn wake(&self) {
        self.wake.notify_one();
    }
}

impl Controller {
    /// The caches of the scope `child` lies in.
    fn scope_of(&self, child: &ChildRef) -> Option<&ScopeCaches> {
        self.children
            .get(child.type_index)?
            .iter()
            .find(|s| s.scope.is_none() || s.scope == child.namespace)
    }
}

impl LiveChildren for Controller {
    fn get(&self, child: &ChildRef) -> Option<Arc<DynamicObject>> {
        let key = cache_key(child.namespace.as_deref(), &child.name);
        self.scope_of(child)?.objects.get(&key)
    }

    fn presence(&self, child: &ChildRef) -> Presence {
        let Some(scope) = self.scope_of(child) else {
            return Presence::Unknown;
        };
        let Some(holders) = &scope.holders else {
            return Presence::Unknown;
        };
        // The two watches split the objects by ork's label: look in both.
        let key = cache_key(child.namespace.as_deref(), &child.name);
        if let Some(object) = scope.objects.get(&key) {
            return Presence::Held(Holder::of(&object.metadata));
        }
        match holders.lookup(&key) {
            Some(holder) => Presence::Held(holder),
            None => Presence::Absent,
        }
    }
}

/// A watcher event in the index's terms.
fn reduce<T>(event: &watcher::Event<DynamicObject>, view: impl Fn(&DynamicObject) -> T) -> Seen<T> {
    match event {
        watcher::Event::Init => Seen::Init,
        watcher::Event::InitDone => Seen::InitDone,
        watcher::Event::InitApply(o) => Seen::Object {
            listing: true,
            object: view(o),
        },
        watcher::Event::Apply(o) => Seen::Object {
            listing: false,
            object: view(o),
        },
        watcher::Event::Delete(o) => Seen::Deleted(view(o)),
    }
}

/// The owner key from a child's owner annotation `<entry>/<namespace>/<name>`, if it names
/// this entry.
/// How a child's ownership is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Evidence {
    /// A controller owner reference, in the CR's namespace.
    Reference,
    /// ork's mark ([`crate::mark`]).
    Mark,
}

fn owner_key(entry: &str, annotation: &str) -> Option<String> {
    let mut parts = annotation.splitn(3, '/');
    let (e, ns, name) = (parts.next()?, parts.next()?, parts.next()?);
    if e != entry {
        return None;
    }
    Some(if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheWriter;
    use crate::discovery::ChildType;
    use crate::ports::CallFailed;
    use crate::simulate::MemoryCluster;
    use futures::future::BoxFuture;
    use kube::discovery::ApiResource;
    use ork_protocol::ManagedType;

    /// A service whose answer makes ork panic (standing in for any bug in ork).
    struct Panics;

    impl Transport for Panics {
        fn call<'a>(
            &'a self,
            _cr: &'a Value,
            _body: Vec<u8>,
        ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>> {
            Box::pin(async { panic!("boom in a reconcile") })
        }
    }

    const KATALOG: &str = r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {name: t}
spec:
  crds:
    webapp:
      apiTypes: {group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}
      operatorBox:
        reconcile:
          default: false
          workers: 1
          remote:
            endpoint: "http://127.0.0.1:1/r"
            managedResources:
              - {group: "", version: v1, plural: configmaps}
"#;

    fn controller() -> (Arc<Controller>, CacheWriter) {
        let katalog =
            ork_katalog::load_str(KATALOG, std::path::Path::new("k.yaml")).expect("valid");
        let entry = katalog.spec.crds["webapp"].clone();
        let cr = ApiResource {
            group: "demo.ork.dev".into(),
            version: "v1".into(),
            api_version: "demo.ork.dev/v1".into(),
            kind: "WebApp".into(),
            plural: "webapps".into(),
        };
        let cm = ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
        };
        let child = ChildType {
            managed: ManagedType {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
                namespaced: true,
                namespaces: vec![],
                cluster_scoped: false,
                bind_roles: Vec::new(),
                service_account_tokens: false,
                served_versions: vec!["v1".into()],
            },
            resource: cm.clone(),
        };
        let ctx = EntryContext::build(
            "webapp".into(),
            entry,
            cr.clone(),
            true,
            vec![child],
            "ork".into(),
            crate::mark::MarkKey::ephemeral(),
        )
        .expect("builds");
        let writer = CacheWriter::new();
        let c = Controller::new(
            Arc::new(ctx),
            writer.reader(),
            vec![vec![ScopeCaches {
                scope: None,
                objects: CacheWriter::new().reader(),
                holders: None,
            }]],
            Arc::new(MemoryCluster::default()),
            Arc::new(Panics),
            Arc::new(Process::new(true, crate::shard_set::ShardSet::single())),
        );
        (Arc::new(c), writer)
    }

    #[tokio::test]
    async fn a_panic_in_a_reconcile_is_a_recorded_failure_that_frees_the_worker() {
        let (c, mut writer) = controller();
        let cr: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "1"},
            "spec": {}
        }))
        .expect("object");
        let event = watcher::Event::Apply(cr);
        writer.apply_watcher_event(&event);
        c.cr_event(&event);
        let (key, reason) = c.take_queued().pop().expect("queued");
        c.schedule().busy += 1;
        let result = c.run_one(&key, reason).await.expect("ran");
        let message = result.expect_err("a failure").to_string();
        assert!(message.contains("boom in a reconcile"), "{message}");
        let s = c.schedule();
        assert_eq!(s.busy, 0, "the worker is free");
        assert_eq!(s.backoff.failures(&key), 1, "retried with backoff");
        assert!(
            s.queue.next_deadline().is_some(),
            "the key stays schedulable"
        );
        drop(s);
        assert_eq!(c.health().consecutive_fails, 1);
    }
}
