//! The state of one entry and every way it changes: the one owner of the entry's caches (their
//! writing side), index, schedule and health. Everything that happens to an entry reaches it as
//! an [`Input`], one at a time, in the order it happened; what it hands out is [`Work`], a key
//! marked in flight with everything its reconcile reads, gathered in the same step (so a CR is
//! never paired with an older set of its children, and a child event after the hand-out is
//! judged when the reconcile ends). No I/O and no locks: `ork run` drives it from one task per
//! entry ([`super::driver`]), `ork simulate` in its cycles, tests by hand.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use kube::Resource;
use ork_engine::health::Health;
use ork_engine::queue::Reason;
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use super::lane::Lane;
use super::live::LiveView;
use super::observe::Step;
use super::schedule::Schedule;
use crate::cache::{Cache, CacheWriter};
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::{ChildView, CrView, Effect, Index, Stray};
use crate::process::Process;
use crate::reconcile::{Done, Job, Success, Swept};
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
    Finished(Finished),
    /// The periodic resync: every CR once.
    Resync,
    /// This replica now holds `shard` of `total`: each of its objects is reconciled once.
    ShardGained { total: u32, shard: u32 },
    /// The shards held changed, or leadership: look at the queue again.
    Wake,
    /// Queued keys per shard of `total` (metrics).
    QueuedByShard {
        total: u32,
        reply: oneshot::Sender<BTreeMap<u32, usize>>,
    },
}

/// A key handed out: reconcile it (when `job` is there) after deleting the children of CRs
/// that went under it without ork's finalizer (`strays`).
pub(crate) struct Work {
    pub key: String,
    pub reason: Reason,
    pub strays: Vec<Stray>,
    pub job: Option<Job>,
}

/// How a [`Work`] ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub key: String,
    pub swept: Option<Swept>,
    pub done: Option<Done>,
}

/// The entry's load as others see it (`/katalog`, metrics, the lane, shard hand-over).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Load {
    pub queue_depth: usize,
    pub in_flight: Vec<String>,
    /// Reconciles run or fresh changes wait: the lane holds back.
    pub converging: bool,
}

/// The writing sides of the caches of one managed type's watch scope.
pub(crate) struct ScopeWriter {
    pub objects: CacheWriter,
}

pub(crate) struct EntryState {
    ctx: Arc<EntryContext>,
    process: Arc<Process>,
    crs: CacheWriter,
    crs_read: Cache,
    children: Vec<Vec<ScopeWriter>>,
    /// What reconciles read of the children (the same caches).
    live: Arc<LiveView>,
    index: Index,
    schedule: Schedule,
    health: Health,
    lane: Arc<Lane>,
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
        let index = Index::new(pre.sentinels.clone(), ctx.enqueue_gate.clone());
        let queue = &ctx.entry.operator_box.reconcile.queue;
        let health = Health::new(queue.failure_threshold);
        EntryState {
            schedule: Schedule::new(queue),
            published_health: watch::Sender::new(health.clone()),
            published_load: watch::Sender::new(Load::default()),
            health,
            index,
            crs_read: crs.reader(),
            crs,
            children,
            live,
            lane: Arc::new(Lane::default()),
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
            Input::Finished(finished) => return self.finished(finished, now),
            Input::Resync => self.enqueue_where(Reason::Resync, |_| true),
            Input::ShardGained { total, shard } => {
                self.enqueue_where(Reason::Resync, |k| shard_of(k, total) == shard);
            }
            Input::Wake => {}
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
                Effect::Enqueue(key, reason) => self.schedule.add(key, reason),
                Effect::Forget(key) => self.schedule.forget(&key),
            }
        }
    }

    /// Queues the known CRs whose key passes `mine` with `reason`, and the sweeps due under
    /// such keys.
    fn enqueue_where(&mut self, reason: Reason, mine: impl Fn(&str) -> bool) {
        for k in self.index.keys().into_iter().filter(|k| mine(k)) {
            self.schedule.add(k, reason);
        }
        for k in self.index.due_sweeps().into_iter().filter(|k| mine(k)) {
            self.schedule.add(k, Reason::Sweep);
        }
    }

    /// Hands out keys due at `now` while fewer than `workers` are in flight: each marked in
    /// flight, with what its reconcile reads. Keys of shards this replica does not hold, and
    /// keys with nothing left to do, are let go.
    pub fn hand_out(&mut self, now: Instant, workers: usize) -> Vec<Work> {
        let mut out = Vec::new();
        while self.schedule.in_flight() < workers {
            let Some((key, reason)) = self.schedule.next(now) else {
                break;
            };
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
        if resync {
            self.enqueue_where(Reason::Resync, |_| true);
        }
        let mut due = BTreeMap::new();
        while let Some((key, reason)) = self.schedule.next(now) {
            due.insert(key, reason);
        }
        due.into_iter().collect()
    }

    /// The work of `key`, handed out by the schedule: `None` (and let go) when there is
    /// nothing to do.
    pub fn work(&mut self, key: String, reason: Reason) -> Option<Work> {
        let strays = self.index.take_strays(&key);
        // Only a sweep was asked (any other reason takes its place in the queue): a CR living
        // under the key has nothing new to be reconciled for.
        let job = (reason != Reason::Sweep)
            .then(|| self.job(&key, reason, true))
            .flatten();
        if job.is_none() && strays.is_empty() {
            self.schedule.skip(&key);
            return None;
        }
        if job.is_some() {
            self.index.begin(&key);
        }
        Some(Work {
            key,
            reason,
            strays,
            job,
        })
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
        let cross = if self.ctx.entry.operator_box.observe.cross.is_empty() {
            Ok(Default::default())
        } else {
            let cr_json = serde_json::to_value(cr.as_ref()).unwrap_or(Value::Null);
            self.process.registry.cross(&self.ctx.entry, &cr_json)
        };
        Some(Job {
            key: key.to_string(),
            cr,
            reason,
            attempt: self.schedule.attempt(key),
            sentinels,
            children,
            cross,
            health: self.health.clone(),
            count: self.schedule.count(key),
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
            swept,
            mut done,
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
        }) = done
        else {
            self.schedule.finished(&key, None, &mut self.health, now);
            self.publish_load();
            return None;
        };
        if let Some(later) = later {
            self.lane.push(&key, later);
        }
        let effects = self.index.finish(&key, own);
        self.schedule
            .finished(&key, Some(&outcome), &mut self.health, now);
        self.apply(effects);
        self.publish_health();
        self.publish_load();
        Some(outcome)
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
            converging: self.schedule.in_flight() > 0 || self.schedule.has_fresh(),
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
        self.schedule.next_deadline()
    }
}
