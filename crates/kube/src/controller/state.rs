//! The state of one entry and every way it changes: the one owner of the entry's caches (their
//! writing side), index, schedule and health. Everything that happens to an entry reaches it as
//! an [`Input`], one at a time, in the order it happened; what it hands out is [`Work`], a key
//! marked in flight with everything its reconcile reads, gathered in the same step (so a CR is
//! never paired with an older set of its children, and a child event after the hand-out is
//! judged when the reconcile ends). No I/O and no locks: `ork run` drives it from one task per
//! entry (the driver), `ork simulate` in its cycles, tests by hand.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Resource;
use ork_engine::health::Health;
use ork_engine::queue::Reason;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use super::lane::Lane;
use super::live::LiveView;
use super::observe::Step;
use super::recorder::{Record, Recorder};
use super::rollout::{Change, Phase, Rollout, Route};
use super::schedule::Schedule;
use crate::cache::{Cache, CacheWriter};
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::{ChildView, CrView, Effect, Index, Stray};
use crate::inputs::{InputEvent, InputStore};
use crate::process::Process;
use crate::reconcile::{Done, Job, Success, Swept};
use crate::registry::RolloutCommand;
use crate::shard_set::shard_of;

/// Something that happened to an entry.
#[derive(Debug)]
pub(crate) enum Input {
    /// A watch event of the CRs.
    Cr(Step<CrView>),
    /// A watch event of the children of managed type `type_index`, from its watch of scope
    /// `scope` (an index into the type's scopes).
    Child {
        type_index: usize,
        scope: usize,
        step: Step<ChildView>,
    },
    /// The API server serves the CRs' type again (`None`), or not: why.
    Served(Option<String>),
    /// A reconcile (or sweep) handed out ended.
    Finished(Box<Finished>),
    /// The periodic resync of the CRs whose phase in the resync period (a hash of their key,
    /// [`resync_phase`]) lies in `(from, to]` (milliseconds into the period, wrapping): every
    /// CR once per period, spread evenly over it, at the same offsets after a restart.
    ResyncDue { from: u64, to: u64, period: u64 },
    /// Related objects of these CRs changed (a Metacontroller customize hook's).
    Related(Vec<String>),
    /// An event of the objects of input type `type_index` (SPEC §20).
    Inputs {
        type_index: usize,
        event: InputEvent,
        /// Fired once the event is applied (the first list of a watch: the entry may start).
        synced: Option<oneshot::Sender<()>>,
    },
    /// This replica now holds `shard` of `total`: each of its objects is reconciled once.
    ShardGained { total: u32, shard: u32 },
    /// The shards held changed, or leadership: look at the queue again.
    Wake,
    /// Queued keys per shard of `total` (metrics).
    QueuedByShard {
        total: u32,
        reply: oneshot::Sender<BTreeMap<u32, usize>>,
    },
    /// `ork rollout`: the rollout as it stands, after `command` when one is given (SPEC §19);
    /// `None` when the entry has no rollout.
    Rollout {
        command: Option<RolloutCommand>,
        reply: oneshot::Sender<Option<Value>>,
    },
    /// What the flight recorder holds: of one CR (its key), or a summary of every CR.
    Inspect {
        key: Option<String>,
        reply: oneshot::Sender<Value>,
    },
}

/// A key handed out: reconcile it (when `job` is there) after deleting the children of CRs
/// that went under it without ork's finalizer (`strays`).
pub(crate) struct Work {
    pub key: String,
    pub reason: Reason,
    pub strays: Vec<Stray>,
    pub job: Option<Job>,
    /// The endpoint that serves it (the stable one unless the entry's rollout says otherwise).
    pub route: Route,
}

/// How a [`Work`] ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub key: String,
    pub reason: Reason,
    pub swept: Option<Swept>,
    pub done: Option<Done>,
    /// The attempt it was (1 for a first try).
    pub attempt: u32,
    /// How long it took.
    pub took: Duration,
    /// The failure as the CR's condition says it (credential taken out).
    pub error: Option<String>,
    /// The endpoint that served it.
    pub route: Route,
}

/// The entry's load as others see it (`/katalog`, metrics, the lane, shard hand-over).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Load {
    pub queue_depth: usize,
    pub in_flight: Vec<String>,
    /// Fresh changes (creates, edits, drift) wait or are being reconciled: the lane holds back.
    /// Resyncs, requeues and retries do not hold it back: with 100,000 CRs and `resync: 10m`
    /// some always run, and the lane wrote one CR's writes at a time for ten minutes after a
    /// burst had converged.
    pub converging: bool,
}

/// The writing sides of the caches of one managed type's watch scope.
pub(crate) struct ScopeWriter {
    pub objects: CacheWriter,
}

/// How many `written` syncs in a row may write children again before ork stops following its
/// own writes for that CR until another change: a hook whose answer differs on every sync
/// (a timestamp in a child) would otherwise be synced without end.
const MAX_WRITTEN_SYNCS: u8 = 5;

pub(crate) struct EntryState {
    ctx: Arc<EntryContext>,
    process: Arc<Process>,
    crs: CacheWriter,
    crs_read: Cache,
    children: Vec<Vec<ScopeWriter>>,
    /// What reconciles read of the children (the same caches).
    live: Arc<LiveView>,
    index: Index,
    /// The objects of the entry's inputs, and which CRs read which.
    inputs: InputStore,
    schedule: Schedule,
    health: Health,
    lane: Arc<Lane>,
    recorder: Recorder,
    /// Per key in flight for a child's change: which child, as the recorder names it.
    causes: HashMap<String, Box<str>>,
    /// Per key, how many `written` syncs in a row wrote children again (see
    /// [`MAX_WRITTEN_SYNCS`]).
    written: HashMap<String, u8>,
    /// The entry's progressive rollout, when `remote.rollout` asks for one (SPEC §19).
    rollout: Option<Rollout>,
    /// The CRs the rollout moved to the other endpoint whose next reconcile has not ended yet:
    /// when it does, an event on the CR tells which endpoint served it and why.
    rollout_moved: std::collections::HashSet<String>,
    /// The time the last input or hand-out was given (what [`EntryState::work`] counts from).
    now: Instant,
    published_health: watch::Sender<Health>,
    published_load: watch::Sender<Load>,
}

impl EntryState {
    pub fn new(
        ctx: Arc<EntryContext>,
        process: Arc<Process>,
        crs: CacheWriter,
        children: Vec<Vec<ScopeWriter>>,
        live: Arc<LiveView>,
    ) -> EntryState {
        let pre = &ctx.entry.operator_box.pre_reconcile;
        let mut index = Index::new(pre.sentinels.clone(), ctx.enqueue_gate.clone());
        if crate::reconcile::protocol::of(&ctx).observes_own_writes() {
            index.observe_own_writes();
        }
        let queue = &ctx.entry.operator_box.reconcile.queue;
        let health = Health::new(queue.failure_threshold);
        EntryState {
            schedule: Schedule::new(queue),
            published_health: watch::Sender::new(health.clone()),
            published_load: watch::Sender::new(Load::default()),
            health,
            index,
            inputs: InputStore::new(&ctx.entry.operator_box.observe.inputs),
            crs_read: crs.reader(),
            crs,
            children,
            live,
            lane: Arc::new(Lane::default()),
            recorder: Recorder::default(),
            causes: HashMap::new(),
            written: HashMap::new(),
            rollout: ctx.remote.rollout.as_ref().map(Rollout::new),
            rollout_moved: std::collections::HashSet::new(),
            now: Instant::now(),
            process,
            ctx,
        }
    }

    pub fn ctx(&self) -> &Arc<EntryContext> {
        &self.ctx
    }

    /// The CRs as the watch last saw them (read by other entries, `dependsOn`).
    pub fn crs(&self) -> Cache {
        self.crs_read.clone()
    }

    pub fn lane(&self) -> Arc<Lane> {
        self.lane.clone()
    }

    pub fn health(&self) -> watch::Receiver<Health> {
        self.published_health.subscribe()
    }

    pub fn load(&self) -> watch::Receiver<Load> {
        self.published_load.subscribe()
    }

    /// Handles one input at `now`; returns how a finished reconcile ended.
    pub fn handle(
        &mut self,
        input: Input,
        now: Instant,
    ) -> Option<Result<Success, ReconcileError>> {
        self.now = now;
        self.rollout_step(now);
        match input {
            Input::Cr(step) => self.cr_step(step),
            Input::Child {
                type_index,
                scope,
                step,
            } => {
                if let Some(w) = self
                    .children
                    .get_mut(type_index)
                    .and_then(|t| t.get_mut(scope))
                {
                    w.objects.apply(step.stored);
                }
                let scope_name = self.live.scope_name(type_index, scope);
                let effects = self
                    .index
                    .child_event(type_index, scope_name.as_deref(), step.seen);
                self.apply(effects);
            }
            Input::Served(None) => {
                if !self.health.is_served() {
                    self.health.record_served();
                    tracing::info!("the CRs' type is served again");
                    self.publish_health();
                }
            }
            Input::Served(Some(why)) => {
                if self.health.unserved.as_deref() != Some(why.as_str()) {
                    tracing::warn!(reason = %why, "entry degraded");
                    self.health.record_unserved(&why);
                    self.publish_health();
                }
            }
            Input::Finished(finished) => return self.finished(*finished, now),
            Input::ResyncDue { from, to, period } => self.resync(from, to, period),
            Input::Related(keys) => {
                let keys: std::collections::HashSet<String> = keys.into_iter().collect();
                self.enqueue_where(Reason::Related, |k| keys.contains(k));
            }
            Input::Inputs {
                type_index,
                event,
                synced,
            } => {
                let keys = self.inputs.event(type_index, event);
                if !keys.is_empty() {
                    self.enqueue_where(Reason::Input, |k| keys.contains(k));
                }
                if let Some(synced) = synced {
                    let _ = synced.send(());
                }
            }
            Input::ShardGained { total, shard } => {
                self.enqueue_where(Reason::Gained, |k| shard_of(k, total) == shard);
            }
            Input::Wake => {}
            Input::Rollout { command, reply } => {
                let change = match (command, self.rollout.as_mut()) {
                    (Some(RolloutCommand::Promote), Some(r)) => r.promote(now),
                    (Some(RolloutCommand::Abort), Some(r)) => r.abort(now),
                    (Some(RolloutCommand::Resume), Some(r)) => r.resume(now),
                    _ => None,
                };
                if let Some(change) = change {
                    self.rollout_changed(change);
                }
                let _ = reply.send(self.rollout.as_ref().map(|r| r.show(now)));
            }
            Input::Inspect { key, reply } => {
                let shown = match key {
                    Some(key) => self.inspect(&key),
                    None => self.objects(),
                };
                let _ = reply.send(shown);
            }
            Input::QueuedByShard { total, reply } => {
                let mut out = BTreeMap::new();
                for key in self.schedule.queued_keys() {
                    *out.entry(shard_of(key, total)).or_default() += 1;
                }
                let _ = reply.send(out);
            }
        }
        None
    }

    fn cr_step(&mut self, step: Step<CrView>) {
        self.crs.apply(step.stored);
        let health = &self.health;
        // Only an enqueue gate reads it.
        let gate = |cr: &Value| {
            let mut ctx = cr.clone();
            if let Value::Object(m) = &mut ctx {
                m.insert(
                    "health".into(),
                    serde_json::to_value(health).unwrap_or(Value::Null),
                );
            }
            ctx
        };
        let effects = self.index.cr_event(step.seen, &gate);
        self.apply(effects);
    }

    fn apply(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Enqueue(key, Reason::Written)
                    if self.written.get(&key).copied().unwrap_or(0) >= MAX_WRITTEN_SYNCS =>
                {
                    tracing::warn!(
                        cr = %key,
                        syncs = MAX_WRITTEN_SYNCS,
                        "the hook's answer changed children on every sync after its own writes; \
                         not syncing for them again until another change"
                    );
                }
                Effect::Enqueue(key, reason) => self.schedule.add(key, reason),
                Effect::Forget(key) => {
                    self.schedule.forget(&key);
                    self.inputs.forget(&key);
                    self.recorder.forget(&key);
                    self.written.remove(&key);
                    self.rollout_moved.remove(&key);
                }
            }
        }
    }

    /// The resyncs whose phase lies in `(from, to]` of the period (milliseconds). A CR whose
    /// last reconcile ended less than half a period ago was just looked at: its resync comes
    /// with the next period, so a CR created in a long burst is not called again moments after
    /// its first reconcile because its phase happened to come next. Between two resyncs of a
    /// CR left alone there is then at least half a period and at most one and a half. The
    /// sweeps due under keys of the window are queued whatever the last reconcile.
    fn resync(&mut self, from: u64, to: u64, period: u64) {
        let now = k8s_openapi::jiff::Timestamp::now().as_millisecond();
        let half = i64::try_from(period / 2).unwrap_or(i64::MAX);
        let in_phase = |k: &str| in_window(resync_phase(k, period), from, to);
        let recorder = &self.recorder;
        let due = self.index.keys_where(|k| {
            in_phase(k)
                && recorder
                    .last(k)
                    .is_none_or(|r| now.saturating_sub(r.at) >= half)
        });
        for k in due {
            self.schedule.add(k, Reason::Resync);
        }
        self.enqueue_sweeps_where(in_phase);
    }

    /// Queues the known CRs whose key passes `mine` with `reason`, and the sweeps due under
    /// such keys.
    fn enqueue_where(&mut self, reason: Reason, mine: impl Fn(&str) -> bool) {
        for k in self.index.keys_where(&mine) {
            self.schedule.add(k, reason);
        }
        self.enqueue_sweeps_where(mine);
    }

    fn enqueue_sweeps_where(&mut self, mine: impl Fn(&str) -> bool) {
        for k in self.index.due_sweeps_where(mine) {
            self.schedule.add(k, Reason::Sweep);
        }
    }

    /// Hands out keys due at `now` while fewer than `workers` are in flight: each marked in
    /// flight, with what its reconcile reads. Keys of shards this replica does not hold, and
    /// keys with nothing left to do, are let go.
    pub fn hand_out(&mut self, now: Instant, workers: usize) -> Vec<Work> {
        self.now = now;
        // A step due now counts although no input came (the loop woke for its deadline).
        self.rollout_step(now);
        let mut out = Vec::new();
        while self.schedule.in_flight() < workers {
            let Some((key, reason)) = self.schedule.next(now) else {
                break;
            };
            if let Some(waited) = self.schedule.waited(&key, now) {
                self.process.metrics.queue_wait(&self.ctx.name, waited);
            }
            // Another replica's shard: not ours to reconcile (we reconcile it when gained).
            if !self.process.shards.holds(&key) {
                self.schedule.skip(&key);
                continue;
            }
            if let Some(work) = self.work(key, reason) {
                out.push(work);
            }
        }
        self.publish_load();
        out
    }

    /// Every key due now, in key order, each marked in flight whatever the number of workers
    /// (`ork simulate` hands them out one by one with [`EntryState::work`]); in a resync,
    /// every CR.
    pub fn take_due(&mut self, now: Instant, resync: bool) -> Vec<(String, Reason)> {
        self.now = now;
        if resync {
            self.enqueue_where(Reason::Resync, |_| true);
        }
        let mut due = BTreeMap::new();
        while let Some((key, reason)) = self.schedule.next(now) {
            self.schedule.waited(&key, now);
            due.insert(key, reason);
        }
        due.into_iter().collect()
    }

    /// The work of `key`, handed out by the schedule: `None` (and let go) when there is
    /// nothing to do.
    pub fn work(&mut self, key: String, reason: Reason) -> Option<Work> {
        let strays = self.index.take_strays(&key);
        if let Some((child, deleted)) = self.index.take_drift(&key)
            && reason == Reason::Child
        {
            let kind = self
                .ctx
                .children
                .get(child.type_index)
                .map_or("child", |t| t.managed.kind.as_str());
            let at = match &child.namespace {
                Some(ns) => format!("{ns}/{}", child.name),
                None => child.name.to_string(),
            };
            let what = if deleted { "deleted" } else { "changed" };
            self.causes
                .insert(key.clone(), format!("{kind} {at} {what}").into_boxed_str());
        }
        // Only a sweep was asked (any other reason takes its place in the queue): a CR living
        // under the key has nothing new to be reconciled for.
        let job = (reason != Reason::Sweep)
            .then(|| self.job(&key, reason, true))
            .flatten();
        if job.is_none() && strays.is_empty() {
            self.schedule.skip(&key);
            return None;
        }
        // A start, a leadership or a shard gained: a CR unchanged since ork's last successful
        // reconcile of it is not called (it keeps its resync); one whose entry was
        // reconfigured since is called at its own moment of a spread, not with every other.
        let since = match &job {
            Some(j) if strays.is_empty() && matches!(reason, Reason::Create | Reason::Gained) => {
                self.since_sealed(j)
            }
            _ => crate::seal::Since::Changed,
        };
        match since {
            crate::seal::Since::Unchanged => {
                tracing::debug!(%key, "unchanged since its last reconcile; not called");
                self.process.metrics.unchanged_at_start(&self.ctx.name);
                self.schedule.skip(&key);
                return None;
            }
            crate::seal::Since::Reconfigured => {
                let spread = reconfigured_spread(&self.ctx);
                let at = self.now + reconfigured_delay(&key, spread);
                tracing::debug!(%key, in_ms = at.saturating_duration_since(self.now).as_millis(), "the entry was reconfigured since its last reconcile; called in its turn");
                self.schedule.skip(&key);
                self.schedule.add_at(key, Reason::Resync, at);
                return None;
            }
            crate::seal::Since::Changed => {}
        }
        if job.is_some() {
            self.index.begin(&key);
        }
        let route = self.route(&key);
        Some(Work {
            key,
            reason,
            strays,
            job,
            route,
        })
    }

    /// Whether `job`'s CR and children are what ork's last successful reconcile of it left
    /// ([`crate::seal`]): Ready at its generation, the same spec, labels and annotations,
    /// the same children holding the same content; and whether the entry was reconfigured
    /// since. `reconcile.onStart: call` says always changed.
    fn since_sealed(&self, job: &crate::reconcile::Job) -> crate::seal::Since {
        use crate::seal::Since;
        if self.ctx.entry.operator_box.reconcile.on_start == ork_katalog::OnStart::Call {
            return Since::Changed;
        }
        let cr = job.cr.as_ref();
        let status = cr.data.get("status");
        let ready = status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
        let observed = status
            .and_then(|s| s.get("observedGeneration"))
            .and_then(Value::as_i64);
        if !ready || observed != cr.metadata.generation {
            return Since::Changed;
        }
        let Some(sealed) = crate::reconcile::last_seal(cr) else {
            return Since::Changed;
        };
        let children = job
            .children
            .iter()
            .map(|(c, o)| (c, crate::index::child_fingerprint(o)));
        let now = crate::seal::seal(cr, &self.ctx.own_metadata, children, self.ctx.config_seal);
        crate::seal::compare(&sealed, &now)
    }

    /// Everything the reconcile of `key` reads; `None` when the CR is gone.
    pub fn job(&mut self, key: &str, reason: Reason, consume_sentinels: bool) -> Option<Job> {
        let cr = self.crs_read.get(key)?;
        let uid = cr.meta().uid.clone().unwrap_or_default();
        let sentinels = if consume_sentinels {
            self.index.take_sentinels(key)
        } else {
            self.index.peek_sentinels(key)
        };
        let children = self
            .index
            .children_of(&uid, cr.meta().namespace.as_deref())
            .into_iter()
            .filter_map(|c| {
                let obj = self.live.object(&c)?;
                Some((c, obj))
            })
            .collect();
        let observe = &self.ctx.entry.operator_box.observe;
        let cr_json = (!observe.cross.is_empty() || !self.inputs.is_empty())
            .then(|| serde_json::to_value(cr.as_ref()).unwrap_or(Value::Null));
        let cross = match &cr_json {
            Some(cr_json) if !observe.cross.is_empty() => {
                self.process.registry.cross(&self.ctx.entry, cr_json)
            }
            _ => Ok(Default::default()),
        };
        let inputs = match &cr_json {
            Some(cr_json) if !self.inputs.is_empty() => self.inputs.gather(key, cr_json),
            _ => Ok(Default::default()),
        };
        Some(Job {
            key: key.to_string(),
            cr,
            reason,
            attempt: self.schedule.attempt(key),
            sentinels,
            children,
            cross,
            inputs,
            health: self.health.clone(),
            count: self.recorder.reconciles(key),
            last_ok: self.recorder.last_ok(key),
        })
    }

    /// A handed-out key's work ended: the index learns what was written (and judges the child
    /// events that came meanwhile), the schedule what comes next, health how it went; the
    /// annotations and events go to the lane. Returns how the reconcile ended.
    fn finished(
        &mut self,
        finished: Finished,
        now: Instant,
    ) -> Option<Result<Success, ReconcileError>> {
        let Finished {
            key,
            reason,
            swept,
            mut done,
            attempt,
            took,
            error,
            route,
        } = finished;
        if let Some(swept) = swept {
            // The sweep's deletes are the work's own writes: a child event they caused that
            // came meanwhile is judged with the reconcile's.
            match &mut done {
                Some(done) => done.own.deleted.extend(swept.deleted),
                None => self.index.swept(swept.deleted),
            }
            for owner in &swept.kept {
                self.index.keep(owner);
            }
            for owner in &swept.unfinished {
                self.index.sweep_again(&key, owner);
            }
            self.schedule.swept(&key, swept.error.is_none(), now);
        }
        let Some(Done {
            outcome,
            own,
            later,
            exchange,
            plan,
        }) = done
        else {
            self.schedule.finished(&key, None, &mut self.health, now);
            self.publish_load();
            return None;
        };
        if let Some(later) = later {
            self.lane.push(&key, later);
        }
        // A `written` sync that wrote again extends the run; any other ends it.
        let wrote = !own.applied.is_empty() || !own.deleted.is_empty();
        if reason == Reason::Written && wrote {
            *self.written.entry(key.clone()).or_default() += 1;
        } else {
            self.written.remove(&key);
        }
        let effects = self.index.finish(&key, own);
        self.schedule
            .finished(&key, Some(&outcome), &mut self.health, now);
        if let Some(later) = self.rollout_reconciled(&key, route, outcome.is_err(), now) {
            self.lane.push(&key, later);
        }
        let wall_now = k8s_openapi::jiff::Timestamp::now();
        let next = self.schedule.due_at(&key).map(|at| {
            let wall = wall_now + at.saturating_duration_since(Instant::now());
            wall.round(k8s_openapi::jiff::Unit::Second)
                .unwrap_or(wall)
                .as_millisecond()
        });
        let (result, why, stalled) = match &outcome {
            Ok(Success::Reconciled { .. }) => ("ok", None, false),
            Ok(Success::Gated(g)) => ("gated", Some(g.clone()), false),
            Ok(Success::Deleting) => ("deleting", None, false),
            Ok(Success::Finalized) => ("finalized", None, false),
            Ok(Success::FinalizePending(_)) => ("finalizing", None, false),
            Err(e) => (
                "error",
                error.or_else(|| Some(e.to_string())),
                self.ctx.stalls(e, attempt),
            ),
        };
        // A reconcile that went well keeps the answer; its request (mostly the CR and its
        // children, which the cluster holds) only when it did not: a fifth of the memory.
        let mut exchange = exchange;
        if result == "ok" {
            exchange.request = None;
        }
        let plan = plan.as_ref().map(|p| self.recorder.plan(p));
        self.recorder.add(
            &key,
            Record {
                at: wall_now.as_millisecond(),
                trigger: reason.as_str(),
                attempt,
                outcome: result,
                reason: outcome.as_ref().err().map(ReconcileError::reason),
                message: why.map(String::into_boxed_str),
                stalled,
                duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                call_ms: exchange
                    .call
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                endpoint: self.rollout.is_some().then_some(route.as_str()),
                plan,
                next,
                times: 1,
                cause: self.causes.remove(&key),
                exchange: (exchange.size() > 0).then(|| Box::new(exchange)),
            },
        );
        self.apply(effects);
        self.publish_health();
        self.publish_load();
        Some(outcome)
    }

    /// The flight recorder's records of `key`, newest first, with where the key stands now.
    fn inspect(&self, key: &str) -> Value {
        json!({
            "key": key,
            "known": self.index.has_cr(key),
            "state": self.state_of(key),
            "conditions": self.kstatus(key),
            "records": self.recorder.show(key),
        })
    }

    /// The kstatus conditions ork's last reconcile of `key` wrote on the CR, as
    /// `{ready, reconciling, stalled}` (all false before its first reconcile here): `Ready`
    /// after a success, `Stalled` after a failure a retry alone is not expected to fix (ork
    /// still retries it), `Reconciling` otherwise.
    fn kstatus(&self, key: &str) -> Value {
        let last = self.recorder.last(key);
        let ready = last.is_some_and(|r| r.outcome == "ok");
        let stalled = last.is_some_and(|r| r.outcome == "error" && r.stalled);
        let reconciling = last.is_some() && !ready && !stalled;
        json!({"ready": ready, "reconciling": reconciling, "stalled": stalled})
    }

    /// Where `key` stands: in flight, queued, backing off after failures, or how its last
    /// reconcile ended.
    fn state_of(&self, key: &str) -> &'static str {
        if self.schedule.in_flight_keys().any(|k| k == key) {
            "in flight"
        } else if self.schedule.is_queued(key) {
            "queued"
        } else if let Some(last) = self.recorder.last(key) {
            match last.outcome {
                "ok" => "ready",
                "error" if self.schedule.attempt(key) > 1 => "backing off",
                "error" => "failed",
                other => other,
            }
        } else {
            "not reconciled yet"
        }
    }

    /// Every CR with where it stands and its last reconcile, and the counts.
    fn objects(&self) -> Value {
        let mut keys = self.index.keys();
        keys.sort();
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        let objects: Vec<Value> = keys
            .iter()
            .map(|key| {
                let state = self.state_of(key);
                *counts.entry(state).or_default() += 1;
                let last = self.recorder.last(key);
                json!({
                    "key": key,
                    "state": state,
                    "trigger": last.map(|r| r.trigger),
                    "at": last.map(|r| super::recorder::rfc3339(r.at)),
                    "reason": last.and_then(|r| r.reason),
                    "message": last.and_then(|r| r.message.clone()),
                    "attempt": self.schedule.attempt(key),
                    "next": last.and_then(|r| r.next).map(super::recorder::rfc3339),
                    "conditions": self.kstatus(key),
                })
            })
            .collect();
        let ready = counts.get("ready").copied().unwrap_or(0);
        json!({
            "counts": {
                "total": keys.len(),
                "ready": ready,
                "notReady": keys.len() - ready,
                "inFlight": counts.get("in flight").copied().unwrap_or(0),
                "queued": counts.get("queued").copied().unwrap_or(0),
                "backingOff": counts.get("backing off").copied().unwrap_or(0),
            },
            "objects": objects,
        })
    }

    /// The entry's input types, as their watches are to be started.
    pub fn input_types(&self) -> Vec<crate::inputs::InputType> {
        self.inputs.types()
    }

    /// Discovery says whether input type `type_index` is namespaced.
    pub fn set_input_namespaced(&mut self, type_index: usize, namespaced: bool) {
        self.inputs.set_namespaced(type_index, namespaced);
    }

    /// Every CR key the index knows.
    pub fn keys(&self) -> Vec<String> {
        self.index.keys()
    }

    fn publish_health(&self) {
        self.published_health.send_replace(self.health.clone());
    }

    /// Publishes the queue's depth and the keys in flight, when they changed.
    pub fn publish_load(&self) {
        let load = Load {
            queue_depth: self.schedule.depth(),
            in_flight: self.schedule.in_flight_keys().cloned().collect(),
            converging: self.schedule.fresh_in_flight() || self.schedule.has_fresh(),
        };
        self.published_load.send_if_modified(|l| {
            let changed = *l != load;
            if changed {
                *l = load;
            }
            changed
        });
    }

    /// When something is due next.
    pub fn next_deadline(&self) -> Option<Instant> {
        let step = self.rollout.as_ref().and_then(Rollout::next_step_at);
        [self.schedule.next_deadline(), step]
            .into_iter()
            .flatten()
            .min()
    }

    /// The endpoint that serves `key` now.
    fn route(&self, key: &str) -> Route {
        self.rollout
            .as_ref()
            .map_or(Route::Stable, |r| r.route(key))
    }

    /// The rollout's next step, when it is due at `now`.
    fn rollout_step(&mut self, now: Instant) {
        if let Some(change) = self.rollout.as_mut().and_then(|r| r.tick(now)) {
            self.rollout_changed(change);
        }
    }

    /// The rollout moved CRs from one endpoint to the other: each is reconciled again by the
    /// endpoint that serves it now (background work, paced by the entry's workers).
    fn rollout_changed(&mut self, change: Change) {
        let Some(rollout) = &self.rollout else {
            return;
        };
        let endpoint = rollout.endpoint();
        match &change.phase {
            Phase::Halted(why) => tracing::warn!(
                candidate = %endpoint, from = change.from, reason = %why,
                "rollout halted: every CR back on the stable endpoint"
            ),
            Phase::Promoted => tracing::info!(
                candidate = %endpoint, from = change.from,
                "rollout promoted: every CR on the candidate"
            ),
            Phase::Progressing => tracing::info!(
                candidate = %endpoint, from = change.from, to = change.to,
                "rollout step: the candidate serves a new share of the CRs"
            ),
        }
        self.process
            .metrics
            .rollout_percent(&self.ctx.name, change.phase.as_str(), change.to);
        // One pass over the CRs: each that moved is queued and remembered for its event.
        let moves = |k: &str| change.moves(super::rollout::bucket(k));
        let moved = self.index.keys_where(moves);
        for k in &moved {
            self.schedule.add(k.clone(), Reason::Rollout);
        }
        self.enqueue_sweeps_where(moves);
        self.rollout_moved.extend(moved);
    }

    /// A reconcile served by `route` ended: the rollout counts it (and may halt), and the first
    /// reconcile of a CR the rollout moved tells the CR which endpoint served it now and why.
    fn rollout_reconciled(
        &mut self,
        key: &str,
        route: Route,
        failed: bool,
        now: Instant,
    ) -> Option<crate::reconcile::Later> {
        let rollout = self.rollout.as_mut()?;
        self.process.metrics.rollout_reconciled(
            &self.ctx.name,
            route.as_str(),
            if failed { "error" } else { "ok" },
        );
        if let Some(change) = rollout.observe(route, failed, now) {
            self.rollout_changed(change);
        }
        // A reconcile handed out before the move ended by the endpoint the CR left: the CR's
        // next reconcile (queued by the move) is the one to tell.
        let rollout = self.rollout.as_ref()?;
        if rollout.route(key) != route || !self.rollout_moved.remove(key) {
            return None;
        }
        let kind = &self.ctx.cr_resource.kind;
        let (type_, why, note) = match (route, rollout.phase()) {
            (Route::Stable, Phase::Halted(halted)) => (
                kube::runtime::events::EventType::Warning,
                crate::event_reasons::ROLLOUT_HALTED.of(kind),
                format!("Reconciled by the stable endpoint again: the rollout halted: {halted}"),
            ),
            (route, _) => (
                kube::runtime::events::EventType::Normal,
                crate::event_reasons::ROLLOUT.of(kind),
                format!(
                    "Reconciled by the {} endpoint: the rollout of {} is at {} % ({})",
                    route.as_str(),
                    rollout.endpoint(),
                    rollout.percent(),
                    rollout.phase().as_str(),
                ),
            ),
        };
        let cr = self.crs_read.get(key)?;
        Some(crate::reconcile::Later::new(
            crate::ports::CrRef::of(&cr),
            None,
            vec![kube::runtime::events::Event {
                type_,
                reason: why,
                note: Some(note),
                action: "Reconcile".into(),
                secondary: None,
            }],
        ))
    }
}

/// The longest spread of the calls a reconfigured entry owes its unchanged CRs.
const RECONFIGURED_SPREAD: Duration = Duration::from_secs(300);

/// Over how long the CRs of a reconfigured entry are called: the resync period, at most
/// [`RECONFIGURED_SPREAD`].
fn reconfigured_spread(ctx: &EntryContext) -> Duration {
    let resync = ctx.entry.operator_box.reconcile.resync.get();
    if resync.is_zero() {
        RECONFIGURED_SPREAD
    } else {
        resync.min(RECONFIGURED_SPREAD)
    }
}

/// When in `spread` the CR at `key` is called after its entry was reconfigured: its phase, a
/// hash of its key, so the calls come evenly over the spread.
fn reconfigured_delay(key: &str, spread: Duration) -> Duration {
    let ms = u64::try_from(spread.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(resync_phase(key, ms))
}

/// Where in a resync period of `period` milliseconds the CR at `key` is resynced: a hash of
/// its key, so the same after a restart and spread evenly over the period.
pub(crate) fn resync_phase(key: &str, period: u64) -> u64 {
    let mut h = crate::fnv::Fnv::default();
    h.str("resync");
    h.str(key);
    h.finish() % period.max(1)
}

/// Whether `phase` lies in `(from, to]`, a window that may wrap past the period's end.
pub(crate) fn in_window(phase: u64, from: u64, to: u64) -> bool {
    if from <= to {
        from < phase && phase <= to
    } else {
        phase > from || phase <= to
    }
}

#[cfg(test)]
mod resync_tests {
    use super::*;

    #[test]
    fn every_key_is_resynced_once_per_period_and_no_window_carries_much_more_than_its_share() {
        // 100,000 CRs with `resync: 10m`, seen through 10-second windows.
        let period = 600_000;
        let keys: Vec<String> = (0..100_000)
            .map(|i| format!("ns-{}/cr-{i}", i % 37))
            .collect();
        let mut per_window = vec![0u32; 60];
        let mut once = vec![0u8; keys.len()];
        for w in 0..60u64 {
            let (from, to) = (w * 10_000, (w + 1) * 10_000);
            // The first window also takes phase 0 (the window that wraps takes it at the end).
            let (from, to) = if w == 0 { (period - 1, to) } else { (from, to) };
            for (i, k) in keys.iter().enumerate() {
                if in_window(resync_phase(k, period), from, to % period) {
                    per_window[w as usize] += 1;
                    once[i] += 1;
                }
            }
        }
        assert!(
            once.iter().all(|n| *n == 1),
            "a key resynced twice or never"
        );
        let mean = 100_000.0 / 60.0;
        let max = f64::from(*per_window.iter().max().unwrap_or(&0));
        assert!(
            max <= 1.5 * mean,
            "a window of {max} against a mean of {mean}"
        );
        assert!(
            max <= 1.1 * mean,
            "a window of {max} against a mean of {mean}"
        );
    }

    #[test]
    fn a_window_may_wrap_past_the_end_of_the_period() {
        assert!(in_window(5, 990, 10));
        assert!(in_window(995, 990, 10));
        assert!(!in_window(500, 990, 10));
        assert!(!in_window(990, 990, 10));
        assert!(in_window(10, 0, 10) && !in_window(0, 0, 10));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::future::BoxFuture;
    use kube::core::DynamicObject;
    use kube::discovery::ApiResource;
    use kube::runtime::watcher;
    use serde_json::json;

    use super::*;
    use crate::controller::live::ScopeCaches;
    use crate::controller::observe::Observer;
    use crate::controller::worker::Worker;
    use crate::discovery::ChildType;
    use crate::index::{Applied, OwnWrites, child_fingerprint};
    use crate::labels::{MANAGED, OWNER, OWNER_UID};
    use crate::ports::{CallFailed, Transport};
    use crate::simulate::MemoryCluster;

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
          workers: 4
          remote:
            endpoint: "http://127.0.0.1:1/r"
            managedResources:
              - {group: "", version: v1, plural: configmaps}
"#;

    struct Entry {
        state: EntryState,
        observer: Observer,
        live: Arc<LiveView>,
        process: Arc<Process>,
    }

    fn entry() -> Entry {
        entry_of(KATALOG)
    }

    fn entry_of(text: &str) -> Entry {
        let katalog = ork_katalog::load_str(text, std::path::Path::new("k.yaml")).expect("valid");
        let entry = katalog.spec.crds["webapp"].clone();
        let resource = |group: &str, kind: &str, plural: &str| ApiResource {
            group: group.into(),
            version: "v1".into(),
            api_version: if group.is_empty() {
                "v1".into()
            } else {
                format!("{group}/v1")
            },
            kind: kind.into(),
            plural: plural.into(),
        };
        let child = ChildType::config_maps();
        let ctx = Arc::new(
            EntryContext::build(
                "webapp".into(),
                entry,
                resource("demo.ork.dev", "WebApp", "webapps"),
                true,
                vec![child],
                "ork".into(),
                crate::mark::MarkKey::ephemeral(),
            )
            .expect("builds"),
        );
        let objects = CacheWriter::new();
        let live = Arc::new(LiveView {
            scopes: vec![vec![ScopeCaches {
                scope: None,
                objects: objects.reader(),
                holders: None,
            }]],
        });
        let process = Arc::new(Process::new(true, crate::shard_set::ShardSet::single()));
        let state = EntryState::new(
            ctx.clone(),
            process.clone(),
            CacheWriter::new(),
            vec![vec![ScopeWriter { objects }]],
            live.clone(),
        );
        Entry {
            state,
            observer: Observer::new(ctx),
            live,
            process,
        }
    }

    fn cr(name: &str, spec: u64) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "resourceVersion": "1"},
            "spec": {"n": spec}
        }))
        .expect("a CR")
    }

    /// A ConfigMap ork applied for CR `owner`, holding `value`.
    fn child(name: &str, owner: &str, value: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "labels": {MANAGED: "true", OWNER_UID: format!("uid-{owner}")},
                "annotations": {OWNER: format!("webapp/ns/{owner}")},
                "ownerReferences": [{"apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
                    "name": owner, "uid": format!("uid-{owner}"), "controller": true}]
            },
            "data": {"v": value}
        }))
        .expect("a ConfigMap")
    }

    impl Entry {
        fn cr(&mut self, event: watcher::Event<DynamicObject>) {
            if let Some(step) = self.observer.cr(&event) {
                self.state.handle(Input::Cr(step), Instant::now());
            }
        }

        fn child(&mut self, event: watcher::Event<DynamicObject>) {
            let step = self.observer.child(0, &event);
            let input = Input::Child {
                type_index: 0,
                scope: 0,
                step,
            };
            self.state.handle(input, Instant::now());
        }

        /// The keys due now, handed out and ended at once with nothing written.
        fn due(&mut self) -> Vec<(String, Reason)> {
            let due = self.state.take_due(Instant::now(), false);
            for (key, _) in &due {
                self.end(key, OwnWrites::default());
            }
            due
        }

        fn end(&mut self, key: &str, own: OwnWrites) {
            self.end_as(key, Reason::Update, own);
        }

        fn end_as(&mut self, key: &str, reason: Reason, own: OwnWrites) {
            let done = Done::early(
                Ok(Success::Reconciled {
                    requeue_after: None,
                }),
                own,
            );
            let finished = Finished {
                key: key.into(),
                reason,
                swept: None,
                done: Some(done),
                attempt: 1,
                took: Duration::ZERO,
                error: None,
                route: Route::Stable,
            };
            self.state
                .handle(Input::Finished(Box::new(finished)), Instant::now());
        }

        /// CR `a` with child `one`, reconciled: nothing due.
        fn settled() -> Entry {
            let mut e = entry();
            e.cr(watcher::Event::Apply(cr("a", 1)));
            e.child(watcher::Event::Apply(child("one", "a", "1")));
            assert_eq!(e.due(), [("ns/a".to_string(), Reason::Create)]);
            e
        }
    }

    /// SPEC §19: the rollout lives in the entry's state. A step that falls due while no input
    /// comes is taken when the loop wakes for it (its deadline), routes exactly the CRs it
    /// moves to the candidate and queues them with reason `rollout`; failures the candidate
    /// serves past the halt rule send every CR back, queued again.
    #[test]
    fn a_rollout_step_due_without_an_input_moves_its_crs_and_a_halt_moves_them_back() {
        let text = KATALOG.replace(
            "            managedResources:",
            "            rollout: {endpoint: \"http://127.0.0.1:2/r\", percent: 0, steps: [60], interval: 10s, halt: {minReconciles: 2, maxFailureRate: 0.5}}\n            managedResources:",
        );
        assert!(text.contains("rollout:"), "the fixture has a rollout");
        let mut e = entry_of(&text);
        let start = Instant::now();
        for i in 0..10 {
            e.cr(watcher::Event::Apply(cr(&format!("c{i}"), 1)));
        }
        e.state.hand_out(start, 0);
        let first = e.due();
        assert_eq!(first.len(), 10, "every CR reconciled once: {first:?}");
        let deadline = e.state.next_deadline().expect("the step's deadline");
        assert!(
            deadline > start && deadline <= Instant::now() + Duration::from_secs(10),
            "the step is due 10 s after the entry's first input: {deadline:?}"
        );
        assert!(
            e.state
                .hand_out(deadline - Duration::from_millis(1), 10)
                .is_empty(),
            "not before"
        );
        // The loop wakes at the deadline with no input and hands out.
        let work = e.state.hand_out(deadline, 10);
        let mut moved: Vec<&str> = work.iter().map(|w| w.key.as_str()).collect();
        moved.sort_unstable();
        let mut share: Vec<String> = (0..10)
            .map(|i| format!("ns/c{i}"))
            .filter(|k| crate::controller::rollout::bucket(k) < 60)
            .collect();
        share.sort_unstable();
        assert!(
            share.len() >= 2,
            "the fixture's share holds two CRs to fail: {share:?}"
        );
        assert_eq!(moved, share, "exactly the CRs the step moves");
        assert!(
            work.iter()
                .all(|w| w.reason == Reason::Rollout && w.route == Route::Candidate),
            "{:?}",
            work.iter()
                .map(|w| (&w.key, w.reason, w.route))
                .collect::<Vec<_>>()
        );
        // Two of them fail at the candidate: the rule halts it, every CR goes back.
        for w in work.iter().take(2) {
            let finished = Finished {
                key: w.key.clone(),
                reason: w.reason,
                swept: None,
                done: Some(Done::early(
                    Err(ReconcileError::ServiceReported("broke".into())),
                    Default::default(),
                )),
                attempt: 1,
                took: Duration::ZERO,
                error: Some("broke".into()),
                route: Route::Candidate,
            };
            e.state.handle(
                Input::Finished(Box::new(finished)),
                deadline + Duration::from_secs(1),
            );
        }
        let (reply, shown) = oneshot::channel();
        e.state.handle(
            Input::Rollout {
                command: None,
                reply,
            },
            deadline + Duration::from_secs(1),
        );
        let shown = shown.blocking_recv().ok().flatten().expect("the rollout");
        assert_eq!(shown["phase"], "Halted", "{shown}");
        assert_eq!(e.state.route("ns/c0"), Route::Stable);
    }

    #[test]
    fn a_job_knows_how_the_last_reconcile_here_went_before_the_cr_says_so() {
        let mut e = Entry::settled();
        // The CR carries no annotation yet (the lane writes it later): the record says it.
        let job = e.state.job("ns/a", Reason::Resync, false).expect("a job");
        assert_eq!((job.last_ok, job.count), (Some(true), 1));
        e.cr(watcher::Event::Apply(cr("b", 1)));
        let job = e.state.job("ns/b", Reason::Create, false).expect("a job");
        assert_eq!((job.last_ok, job.count), (None, 0));
    }

    #[test]
    fn a_cr_reconciled_moments_ago_waits_for_the_next_period_for_its_resync() {
        let mut e = Entry::settled();
        // `b` was reconciled a whole period ago: its resync comes; `a` moments ago.
        e.cr(watcher::Event::Apply(cr("b", 1)));
        assert_eq!(e.due(), [("ns/b".to_string(), Reason::Create)]);
        let period = 600_000;
        if let Some(r) = e.state.recorder.last_mut("ns/b") {
            r.at -= 600_000;
        }
        // The whole period falls due at once.
        e.state.handle(
            Input::ResyncDue {
                from: period - 1,
                to: period - 2,
                period,
            },
            Instant::now(),
        );
        let due = e.state.take_due(Instant::now(), false);
        assert_eq!(due, [("ns/b".to_string(), Reason::Resync)], "{due:?}");
    }

    fn applied(o: &DynamicObject) -> OwnWrites {
        OwnWrites {
            applied: vec![Applied {
                child: crate::index::ChildRef {
                    type_index: 0,
                    namespace: Some("ns".into()),
                    name: o.metadata.name.as_deref().unwrap_or_default().into(),
                },
                fingerprint: child_fingerprint(o),
                uid: o.metadata.uid.clone().unwrap_or_default(),
            }],
            deleted: vec![],
        }
    }

    #[test]
    fn the_job_pairs_the_cr_with_the_children_seen_with_it() {
        let mut e = Entry::settled();
        e.cr(watcher::Event::Apply(cr("a", 2)));
        e.child(watcher::Event::Apply(child("one", "a", "2")));
        let due = e.state.take_due(Instant::now(), false);
        let work = e.state.work(due[0].0.clone(), due[0].1).expect("work");
        let job = work.job.expect("a job");
        assert_eq!(job.cr.data["spec"]["n"], 2);
        assert_eq!(job.children.len(), 1);
        assert_eq!(job.children[0].1.data["data"]["v"], "2");
        assert_eq!(e.state.schedule.in_flight(), 1, "marked in flight with it");
    }

    #[test]
    fn a_child_event_between_hand_out_and_start_is_judged_when_the_reconcile_ends() {
        // ork's own write: the reconcile applies `one` = "2"; its watch event comes before the
        // reconcile has ended (even before it started, as a sweep's delete can). No call.
        let mut e = Entry::settled();
        e.cr(watcher::Event::Apply(cr("a", 2)));
        let (key, reason) = e.state.take_due(Instant::now(), false).remove(0);
        let work = e.state.work(key.clone(), reason).expect("work");
        let written = child("one", "a", "2");
        e.child(watcher::Event::Apply(written.clone()));
        drop(work);
        e.end(&key, applied(&written));
        assert_eq!(e.due(), [], "ork's own write is not a reason to call again");

        // A foreign edit at the same moment: one call, after this one.
        let mut e = Entry::settled();
        e.cr(watcher::Event::Apply(cr("a", 2)));
        let (key, reason) = e.state.take_due(Instant::now(), false).remove(0);
        let _work = e.state.work(key.clone(), reason).expect("work");
        e.child(watcher::Event::Apply(child("one", "a", "by hand")));
        assert_eq!(
            e.state.take_due(Instant::now(), false),
            [],
            "not while in flight"
        );
        e.end(&key, OwnWrites::default());
        assert_eq!(e.due(), [("ns/a".to_string(), Reason::Child)]);
        assert_eq!(e.due(), []);
    }

    #[test]
    fn a_child_deleted_meanwhile_and_applied_anew_by_the_reconcile_is_not_drift() {
        let mut e = Entry::settled();
        e.cr(watcher::Event::Apply(cr("a", 2)));
        let (key, reason) = e.state.take_due(Instant::now(), false).remove(0);
        let _work = e.state.work(key.clone(), reason).expect("work");
        e.child(watcher::Event::Delete(child("one", "a", "1")));
        // The reconcile created it again: another object (UID) than the one deleted.
        let mut again = child("one", "a", "1");
        again.metadata.uid = Some("uid-one-again".into());
        e.end(&key, applied(&again));
        assert_eq!(e.due(), []);
        // Deleted after ork's write instead (the same object): drift, one call.
        let mut e = Entry::settled();
        e.cr(watcher::Event::Apply(cr("a", 2)));
        let (key, reason) = e.state.take_due(Instant::now(), false).remove(0);
        let _work = e.state.work(key.clone(), reason).expect("work");
        let written = child("one", "a", "2");
        e.child(watcher::Event::Delete(written.clone()));
        e.end(&key, applied(&written));
        assert_eq!(e.due(), [("ns/a".to_string(), Reason::Child)]);
    }

    /// Where the protocol sees its own writes, each write's echo syncs the CR once more
    /// (`written`), and a hook whose answer changes its children on every sync gets at most
    /// [`MAX_WRITTEN_SYNCS`] such syncs in a row; the next change starts over.
    #[test]
    fn syncs_after_own_writes_end_when_nothing_changes_and_never_run_away() {
        let mut e = Entry::settled();
        e.state.index.observe_own_writes();
        e.cr(watcher::Event::Apply(cr("a", 2)));
        let mut reason = Reason::Update;
        let mut syncs = 0;
        for value in 0..20 {
            let due = e.state.take_due(Instant::now(), false);
            let Some((key, r)) = due.first().cloned() else {
                break;
            };
            assert_eq!(r, reason, "sync {syncs}");
            let _work = e.state.work(key.clone(), r).expect("work");
            // The hook's answer differs each time: the child is written again.
            let written = child("one", "a", &format!("v{value}"));
            e.end_as(&key, r, applied(&written));
            e.child(watcher::Event::Apply(written));
            syncs += 1;
            reason = Reason::Written;
        }
        assert_eq!(
            syncs,
            1 + usize::from(MAX_WRITTEN_SYNCS),
            "the edit's, then 5"
        );
        assert_eq!(e.due(), []);
        // An edit starts over; a sync that writes nothing ends the run at once.
        e.cr(watcher::Event::Apply(cr("a", 3)));
        let (key, r) = e.state.take_due(Instant::now(), false).remove(0);
        let _work = e.state.work(key.clone(), r).expect("work");
        let written = child("one", "a", "final");
        e.end_as(&key, r, applied(&written));
        e.child(watcher::Event::Apply(written));
        let (key, r) = e.state.take_due(Instant::now(), false).remove(0);
        assert_eq!(r, Reason::Written);
        let _work = e.state.work(key.clone(), r).expect("work");
        e.end_as(&key, r, OwnWrites::default());
        assert_eq!(e.due(), [], "it saw its children, wrote nothing: done");
    }

    /// A child the reconcile deleted itself (a prune, or a `Recreate` update's delete, which
    /// `children::apply` reports in `own.deleted` like a prune): its echo costs no call, whether
    /// it comes during the reconcile or after it.
    #[test]
    fn a_child_the_reconcile_deleted_itself_is_no_drift() {
        let deleted = |o: &DynamicObject| OwnWrites {
            applied: vec![],
            deleted: applied(o)
                .applied
                .into_iter()
                .map(|a| (a.child, a.uid))
                .collect(),
        };
        let old = child("one", "a", "1");
        for echo_after_the_end in [false, true] {
            let mut e = Entry::settled();
            e.cr(watcher::Event::Apply(cr("a", 2)));
            let (key, reason) = e.state.take_due(Instant::now(), false).remove(0);
            let _work = e.state.work(key.clone(), reason).expect("work");
            if !echo_after_the_end {
                e.child(watcher::Event::Delete(old.clone()));
            }
            e.end(&key, deleted(&old));
            if echo_after_the_end {
                e.child(watcher::Event::Delete(old.clone()));
            }
            assert_eq!(e.due(), [], "echo after the end: {echo_after_the_end}");
        }
    }

    #[test]
    fn a_foreign_edit_of_the_cr_during_its_reconcile_is_reconciled_after_it_and_a_status_write_is_not()
     {
        let mut e = Entry::settled();
        e.state.schedule.add("ns/a".into(), Reason::Resync);
        let (key, reason) = e.state.take_due(Instant::now(), false).remove(0);
        let _work = e.state.work(key.clone(), reason).expect("work");
        // ork's own status write: the spec is the same.
        let mut with_status = cr("a", 1);
        with_status.data["status"] = json!({"ready": true});
        e.cr(watcher::Event::Apply(with_status));
        e.end(&key, OwnWrites::default());
        assert_eq!(e.due(), []);
        // Someone edits the spec while a reconcile runs: once more, with the edit.
        e.state.schedule.add("ns/a".into(), Reason::Resync);
        let (key, reason) = e.state.take_due(Instant::now(), false).remove(0);
        let _work = e.state.work(key.clone(), reason).expect("work");
        e.cr(watcher::Event::Apply(cr("a", 3)));
        e.end(&key, OwnWrites::default());
        let (key, reason) = e.state.take_due(Instant::now(), false).remove(0);
        assert_eq!((key.as_str(), reason), ("ns/a", Reason::Update));
        let job = e
            .state
            .work(key, reason)
            .and_then(|w| w.job)
            .expect("a job");
        assert_eq!(job.cr.data["spec"]["n"], 3);
    }

    #[test]
    fn a_shard_gained_queues_each_of_its_objects_once() {
        let mut e = entry();
        let process = Arc::new(Process::new(true, crate::shard_set::ShardSet::new(2)));
        e.state.process = process.clone();
        for i in 0..20 {
            e.cr(watcher::Event::Apply(cr(&format!("c{i}"), 1)));
        }
        // Nothing held yet: handed out and let go.
        assert!(e.state.hand_out(Instant::now(), 100).is_empty());
        process.shards.set(1, true);
        e.state
            .handle(Input::ShardGained { total: 2, shard: 1 }, Instant::now());
        let handed: Vec<String> = e
            .state
            .hand_out(Instant::now(), 100)
            .into_iter()
            .map(|w| w.key)
            .collect();
        let expected: Vec<String> = (0..20)
            .map(|i| format!("ns/c{i}"))
            .filter(|k| shard_of(k, 2) == 1)
            .collect();
        assert_eq!(handed.len(), expected.len());
        assert!(handed.iter().all(|k| expected.contains(k)));
    }

    /// The hand-over of a shard in every order the model reaches (issue 29): CRs created and
    /// edited, the CRs' watch listing again, the shard gained and released, reconciles handed
    /// out and ending, in random interleavings from a fixed seed. Whenever the shard is held in
    /// the end, every CR's latest spec has been reconciled once all that is due has run.
    #[test]
    fn no_interleaving_of_events_gains_and_releases_loses_a_change() {
        #[derive(Clone, Copy, Debug)]
        enum Op {
            Create(usize),
            Edit(usize),
            Relist,
            Gain,
            Release,
            HandOut,
            Finish(usize),
        }
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n as u64).unwrap_or(0)
        };
        for round in 0..3000 {
            let mut e = entry();
            let process = Arc::new(Process::new(true, crate::shard_set::ShardSet::new(1)));
            e.state.process = process.clone();
            let mut specs: BTreeMap<usize, u64> = BTreeMap::new();
            let mut reconciled: BTreeMap<String, u64> = BTreeMap::new();
            let mut running: Vec<Work> = Vec::new();
            let mut ops = Vec::new();
            for _ in 0..14 {
                let op = match next(7) {
                    0 => Op::Create(next(4)),
                    1 => Op::Edit(next(4)),
                    2 => Op::Relist,
                    3 => Op::Gain,
                    4 => Op::Release,
                    5 => Op::HandOut,
                    _ => Op::Finish(next(3)),
                };
                ops.push(op);
            }
            let finish = |e: &mut Entry, w: Work, reconciled: &mut BTreeMap<String, u64>| {
                if let Some(job) = &w.job {
                    let spec = job.cr.data["spec"]["n"].as_u64().unwrap_or(0);
                    reconciled.insert(w.key.clone(), spec);
                }
                let key = w.key.clone();
                e.end(&key, OwnWrites::default());
            };
            for op in &ops {
                match *op {
                    Op::Create(i) | Op::Edit(i) => {
                        if matches!(op, Op::Edit(_)) && !specs.contains_key(&i) {
                            continue;
                        }
                        let spec = specs.entry(i).or_insert(0);
                        *spec += 1;
                        e.cr(watcher::Event::Apply(cr(&format!("c{i}"), *spec)));
                    }
                    Op::Relist => {
                        e.cr(watcher::Event::Init);
                        for (i, spec) in &specs {
                            e.cr(watcher::Event::InitApply(cr(&format!("c{i}"), *spec)));
                        }
                        e.cr(watcher::Event::InitDone);
                    }
                    Op::Gain => {
                        process.shards.set(0, true);
                        e.state
                            .handle(Input::ShardGained { total: 1, shard: 0 }, Instant::now());
                    }
                    Op::Release => process.shards.set(0, false),
                    Op::HandOut => running.extend(e.state.hand_out(Instant::now(), 2)),
                    Op::Finish(j) => {
                        if !running.is_empty() {
                            let w = running.remove(j % running.len());
                            finish(&mut e, w, &mut reconciled);
                        }
                    }
                }
            }
            // What is running ends; then, with the shard held, everything due runs.
            for w in std::mem::take(&mut running) {
                finish(&mut e, w, &mut reconciled);
            }
            if !process.shards.holds("ns/c0") {
                continue;
            }
            loop {
                let works = e.state.hand_out(Instant::now(), 2);
                if works.is_empty() {
                    break;
                }
                for w in works {
                    finish(&mut e, w, &mut reconciled);
                }
            }
            for (i, spec) in &specs {
                let key = format!("ns/c{i}");
                assert_eq!(
                    reconciled.get(&key),
                    Some(spec),
                    "round {round}: {key} lost its change after {ops:?}"
                );
            }
        }
    }

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

    #[tokio::test]
    async fn a_panic_in_a_reconcile_is_a_recorded_failure_that_frees_the_worker() {
        let mut e = entry();
        let worker = Worker {
            ctx: e.state.ctx().clone(),
            cluster: Arc::new(MemoryCluster::default()),
            transport: Arc::new(Panics),
            candidate: None,
            live: e.live.clone(),
            process: e.process.clone(),
        };
        e.cr(watcher::Event::Apply(cr("a", 1)));
        let work = e
            .state
            .hand_out(Instant::now(), 4)
            .pop()
            .expect("handed out");
        let finished = worker.run(work).await;
        let outcome = e
            .state
            .handle(Input::Finished(Box::new(finished)), Instant::now());
        let message = outcome.expect("ran").expect_err("a failure").to_string();
        assert!(message.contains("boom in a reconcile"), "{message}");
        assert_eq!(
            e.state.load().borrow().in_flight.len(),
            0,
            "the worker is free"
        );
        assert_eq!(e.state.schedule.attempt("ns/a"), 2, "retried with backoff");
        let retry = e.state.next_deadline().expect("the key stays schedulable");
        assert!(retry > Instant::now() + Duration::from_millis(100));
        assert_eq!(e.state.health().borrow().consecutive_fails, 1);
    }
}
