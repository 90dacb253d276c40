//! The entry loop of `ork run`: one task per entry owns its [`EntryState`] and reads a channel
//! of [`Input`]s (watch events, finished reconciles, shard changes, queries); between inputs it
//! hands out what is due to at most `workers` reconciles, each its own task that sends its
//! outcome back as an input. Timers (a delayed retry, a probe, the resync) wake it too. The
//! lane writer is a task of its own that reads the published load.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, error::TryRecvError};
use tokio::sync::{oneshot, watch};
use tracing::Instrument;

use super::lane::Lane;
use super::state::{EntryState, Input, Load};
use super::worker::Worker;
use crate::ports::Cluster;
use crate::registry::{EntryHandle, Published};
use crate::shard_set::shard_of;

/// Inputs handled before the loop looks at the queue again: a burst of watch events is taken
/// in a few steps, and reconciles start between them.
const BATCH: usize = 256;

/// How others reach a running entry loop.
pub(crate) struct LoopHandle {
    pub inputs: UnboundedSender<Input>,
    pub load: watch::Receiver<Load>,
    pub lane: Arc<Lane>,
}

impl EntryHandle for LoopHandle {
    fn load(&self) -> (usize, usize) {
        let l = self.load.borrow();
        (l.queue_depth, l.in_flight.len())
    }

    fn lane_waiting(&self) -> usize {
        self.lane.len()
    }

    fn queued_by_shard(&self, total: u32) -> BoxFuture<'static, BTreeMap<u32, usize>> {
        let (reply, answer) = oneshot::channel();
        let asked = self.inputs.send(Input::QueuedByShard { total, reply });
        Box::pin(async move {
            match asked {
                Ok(()) => answer.await.unwrap_or_default(),
                Err(_) => BTreeMap::new(),
            }
        })
    }

    fn in_flight_in_shard(&self, total: u32, shard: u32) -> usize {
        self.load
            .borrow()
            .in_flight
            .iter()
            .filter(|k| shard_of(k, total) == shard)
            .count()
    }

    fn enqueue_shard(&self, total: u32, shard: u32) {
        let _ = self.inputs.send(Input::ShardGained { total, shard });
    }

    fn wake(&self) {
        let _ = self.inputs.send(Input::Wake);
    }

    fn rollout(
        &self,
        command: Option<crate::registry::RolloutCommand>,
    ) -> BoxFuture<'static, Option<Option<serde_json::Value>>> {
        let (reply, answer) = oneshot::channel();
        let asked = self.inputs.send(Input::Rollout { command, reply });
        Box::pin(async move {
            match asked {
                Ok(()) => answer.await.ok(),
                Err(_) => None,
            }
        })
    }

    fn inspect(&self, key: Option<String>) -> BoxFuture<'static, Option<serde_json::Value>> {
        let (reply, answer) = oneshot::channel();
        let asked = self.inputs.send(Input::Inspect { key, reply });
        Box::pin(async move {
            match asked {
                Ok(()) => answer.await.ok(),
                Err(_) => None,
            }
        })
    }
}

/// What the entry of `state`, whose loop reads `inputs`, shows the others.
pub(crate) fn published(state: &EntryState, inputs: UnboundedSender<Input>) -> Published {
    Published {
        namespaced: state.ctx().cr_namespaced,
        crs: state.crs(),
        health: state.health(),
        handle: Arc::new(LoopHandle {
            inputs,
            load: state.load(),
            lane: state.lane(),
        }),
    }
}

/// Runs the entry loop until every sender of `inputs` is gone.
pub(crate) async fn run(
    mut state: EntryState,
    mut inputs: UnboundedReceiver<Input>,
    finished: UnboundedSender<Input>,
    worker: Arc<Worker>,
    mut active: watch::Receiver<bool>,
) {
    let reconcile = &state.ctx().entry.operator_box.reconcile;
    let workers = reconcile.workers.max(1) as usize;
    let period = reconcile.resync.get();
    // Each CR's resync comes at its own phase of the period (SPEC §17): a tick takes the CRs
    // whose phase passed since the last one, so resyncs spread evenly instead of coming all
    // at once, and a restart keeps them where they were (phases count from the Unix epoch).
    let period_ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX);
    let tick = resync_tick(period);
    let into_period = || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
        now % period_ms.max(1)
    };
    let mut resynced_to = into_period();
    let mut next_resync = (!period.is_zero()).then(|| Instant::now() + tick);
    loop {
        let mut taken = 0;
        while taken < BATCH {
            match inputs.try_recv() {
                Ok(input) => {
                    state.handle(input, Instant::now());
                    taken += 1;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        if let Some(at) = next_resync
            && at <= Instant::now()
        {
            let now = into_period();
            let due = Input::ResyncDue {
                from: resynced_to,
                to: now,
                period: period_ms,
            };
            state.handle(due, Instant::now());
            resynced_to = now;
            next_resync = Some(at + tick);
        }
        // A standby (or a process shutting down) keeps its caches but starts no reconcile.
        if *active.borrow_and_update() {
            for work in state.hand_out(Instant::now(), workers) {
                let worker = worker.clone();
                let finished = finished.clone();
                let span = tracing::info_span!("reconcile", key = %work.key, trigger = work.reason.as_str());
                tokio::spawn(
                    async move {
                        let _counted = crate::wake::InFlight::enter();
                        let done = worker.run(work).await;
                        let _ = finished.send(Input::Finished(Box::new(done)));
                    }
                    .instrument(span),
                );
            }
        } else {
            state.publish_load();
        }
        if taken == BATCH {
            tokio::task::yield_now().await;
            continue;
        }
        let due = [state.next_deadline(), next_resync]
            .into_iter()
            .flatten()
            .min();
        let sleep = due.map_or(Duration::from_secs(3600), |d| {
            d.saturating_duration_since(Instant::now())
        });
        tokio::select! {
            input = inputs.recv() => match input {
                Some(input) => {
                    state.handle(input, Instant::now());
                }
                None => return,
            },
            () = tokio::time::sleep(sleep) => {}
            changed = active.changed() => if changed.is_err() { return },
        }
    }
}

/// Writes the lane's annotations and events, forever: up to `AT_ONCE` CRs' at a time when no
/// fresh change is being reconciled or waits (resyncs, requeues and retries may run: they are
/// background work too) (as many as the default workers, and enough for the thread to
/// gather their answers into few wake-ups, see [`crate::wake`]); meanwhile only what waited
/// longer than `PATIENCE`, one at a time, so they do not compete with convergence for the
/// API server. The patience outlasts a burst of thousands of new CRs (2,000 converge in
/// 7–12 s on 2 cores): with 5 s, 0.23 lane writes per CR went before the burst had
/// converged; with 30 s, none. Under load that never ends, the trickle still goes. Once the
/// process may no longer reconcile (stopping, or leadership lost), nothing competes: what
/// waits goes `WHEN_STOPPING` CRs at a time, so a stopping ork writes its seals within its
/// grace.
pub(crate) async fn drive_lane(
    lane: Arc<Lane>,
    cluster: Arc<dyn Cluster>,
    load: watch::Receiver<Load>,
    active: watch::Receiver<bool>,
) {
    const AT_ONCE: usize = 16;
    const WHEN_STOPPING: usize = 64;
    const PATIENCE: Duration = Duration::from_secs(30);
    const LOOK_AGAIN: Duration = Duration::from_millis(100);
    loop {
        let batch = if !*active.borrow() {
            lane.take(WHEN_STOPPING)
        } else if load.borrow().converging {
            lane.take_waited(1, PATIENCE)
        } else {
            lane.take(AT_ONCE)
        };
        if batch.is_empty() {
            if lane.is_empty() {
                lane.wait().await;
            } else {
                tokio::time::sleep(LOOK_AGAIN).await;
            }
            continue;
        }
        let cluster = cluster.as_ref();
        futures::future::join_all(batch.iter().map(|l| async move {
            let _counted = crate::wake::LaneInFlight::enter();
            l.write(cluster).await;
        }))
        .await;
    }
}

/// How often the resyncs that fell due are taken: a 300th of the period, at least a second. Any
/// 10 seconds then hold at most one tick more than their share (with `resync: 10m`, 6 ticks of
/// 2 s against 5: 1.2× the mean rate; a 120th made it 3 ticks of 5 s against 2, 1.5×). Each tick
/// looks at every key's phase (a hash): 100,000 CRs cost about 2 ms of the loop per tick.
fn resync_tick(period: Duration) -> Duration {
    (period / 300).max(Duration::from_secs(1)).min(period)
}

#[cfg(test)]
mod tests {
    use super::super::state::{in_window, resync_phase};
    use super::*;

    #[test]
    fn with_resync_10m_no_10_second_window_carries_over_1_2_times_the_mean_rate() {
        // 100,000 CRs; the ticks of the loop take what fell due since the one before; calls go
        // out at the tick. Every 10-second window, wherever it starts, against the mean.
        let period = Duration::from_secs(600);
        let tick = resync_tick(period);
        assert_eq!(tick, Duration::from_secs(2));
        let (period_ms, tick_ms) = (600_000u64, 2_000u64);
        let ticks = usize::try_from(period_ms / tick_ms).unwrap_or(0);
        let mut per_tick = vec![0u32; ticks];
        for i in 0..100_000 {
            let phase = resync_phase(&format!("ns-{}/cr-{i}", i % 37), period_ms);
            let t = (0..ticks as u64)
                .find(|t| {
                    in_window(
                        phase,
                        (t * tick_ms + period_ms - 1) % period_ms,
                        t * tick_ms + tick_ms - 1,
                    )
                })
                .unwrap_or(0);
            per_tick[usize::try_from(t).unwrap_or(0)] += 1;
        }
        assert_eq!(
            per_tick.iter().sum::<u32>(),
            100_000,
            "every CR once a period"
        );
        let mean = 100_000.0 / 60.0;
        let mut worst = 0.0f64;
        for start_ms in (0..period_ms).step_by(100) {
            let calls: u32 = (0..ticks)
                .filter(|t| {
                    let at = (*t as u64 * tick_ms + period_ms - start_ms) % period_ms;
                    at < 10_000
                })
                .map(|t| per_tick[t])
                .sum();
            worst = worst.max(f64::from(calls) / mean);
        }
        assert!(worst <= 1.25, "a 10-s window carried {worst:.2}× the mean");
        assert!(worst <= 1.5);
    }
}

#[cfg(test)]
mod lane_tests {
    use kube::runtime::events::{Event, EventType};

    use super::*;
    use crate::ports::CrRef;
    use crate::reconcile::Later;
    use crate::simulate::memory::{Change, MemoryCluster};

    /// 100 CRs' writes waiting on a lane that holds back (reconciles run, none waited 30 s).
    fn lane_of_100() -> Arc<Lane> {
        let lane = Arc::new(Lane::default());
        for i in 0..100 {
            let cr = CrRef {
                namespace: Some("ns".into()),
                name: format!("cr-{i}"),
                uid: None,
                resource_version: None,
            };
            let event = Event {
                type_: EventType::Normal,
                reason: "Reconciled".into(),
                note: None,
                action: "Reconcile".into(),
                secondary: None,
            };
            lane.push(&format!("ns/cr-{i}"), Later::new(cr, None, vec![event]));
        }
        lane
    }

    fn events(cluster: &MemoryCluster) -> usize {
        cluster
            .take_journal()
            .iter()
            .filter(|c| matches!(c, Change::Event { .. }))
            .count()
    }

    /// While converging, the lane writes only what waited its patience; a stopping process
    /// writes everything at once. Paused time: the 30 s pass in no time, and nothing is proven
    /// by a sleep that happened to be long enough.
    #[tokio::test(start_paused = true)]
    async fn a_converging_lane_waits_its_patience_and_a_stopping_one_writes_all() {
        let converging = Load {
            converging: true,
            ..Load::default()
        };
        let (_load_tx, load) = watch::channel(converging);
        let cluster = Arc::new(MemoryCluster::default());
        let lane = lane_of_100();
        let (active_tx, active) = watch::channel(true);
        let task = tokio::spawn(drive_lane(
            lane.clone(),
            cluster.clone(),
            load.clone(),
            active,
        ));
        tokio::time::sleep(Duration::from_secs(29)).await;
        assert_eq!(events(&cluster), 0, "nothing waited the patience yet");
        assert_eq!(lane.len(), 100);
        // Past the patience: what waited that long goes.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(events(&cluster), 100);
        assert!(lane.is_empty());
        // New writes wait again while converging...
        for (i, later) in lane_of_100().take(usize::MAX).into_iter().enumerate() {
            lane.push(&format!("ns/cr-{i}"), later);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(events(&cluster), 0, "{} written", lane.len());
        // ... and a stopping process writes them all at once, reconciles running or not.
        active_tx.send_replace(false);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(lane.is_empty(), "{} CRs' writes still wait", lane.len());
        assert_eq!(events(&cluster), 100);
        task.abort();
    }
}
