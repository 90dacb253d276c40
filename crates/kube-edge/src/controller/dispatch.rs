//! Handing queued keys to reconciles (at most `workers`, only while active), and the periodic
//! resync.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ork_engine::queue::Reason;
use tracing::Instrument;

use super::runner::Controller;

/// Queues every CR once per `resync` period.
pub(super) async fn resync(c: Arc<Controller>) {
    let period = c.ctx.entry.operator_box.reconcile.resync.get();
    if period.is_zero() {
        return;
    }
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tick.tick().await;
        c.enqueue_all(Reason::Resync);
    }
}

/// Starts reconciles of queued keys while the process is active.
pub(super) async fn dispatch(c: Arc<Controller>) {
    let workers = c.ctx.entry.operator_box.reconcile.workers.max(1) as usize;
    let mut active = c.process.active.clone();
    loop {
        // A standby (or a process shutting down) keeps its caches but starts no reconcile.
        if !*active.borrow_and_update() {
            if active.changed().await.is_err() {
                return;
            }
            continue;
        }
        let deadline = {
            let mut s = c.schedule();
            s.queue.promote(Instant::now());
            while s.busy < workers {
                let Some((key, reason)) = s.queue.pop() else {
                    break;
                };
                // Another replica's shard: not ours to reconcile (we reconcile it when gained).
                if !c.process.shards.holds(&key) {
                    s.queue.done(&key);
                    continue;
                }
                s.busy += 1;
                let c = c.clone();
                let span = tracing::info_span!("reconcile", %key, trigger = reason.as_str());
                tokio::spawn(
                    async move {
                        let _counted = crate::wake::InFlight::enter();
                        c.run_one(&key, reason).await;
                    }
                    .instrument(span),
                );
            }
            s.queue.next_deadline()
        };
        let sleep = deadline.map_or(Duration::from_secs(3600), |d| {
            d.saturating_duration_since(Instant::now())
        });
        tokio::select! {
            () = c.wake.notified() => {}
            () = tokio::time::sleep(sleep) => {}
            _ = active.changed() => {}
        }
    }
}
