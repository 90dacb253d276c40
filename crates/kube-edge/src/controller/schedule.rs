//! When each key of an entry is reconciled next: the work queue, per-key backoff, reconciles in
//! flight, and what a finished reconcile means for its key and for the entry's health.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ork_engine::backoff::Backoff;
use ork_engine::health::Health;
use ork_engine::queue::{Reason, WorkQueue};
use ork_katalog::Queue;

use crate::error::{ReconcileError, Retry};
use crate::reconcile::Success;

#[derive(Debug)]
pub(crate) struct Schedule {
    pub queue: WorkQueue<String>,
    pub backoff: Backoff<String>,
    /// The backoff of failed sweeps, per key.
    sweeps: Backoff<String>,
    /// Reconciles in flight.
    pub busy: usize,
    /// Reconciles per key so far (the metrics annotation).
    counts: HashMap<String, u64>,
}

impl Schedule {
    pub fn new(queue: &Queue) -> Schedule {
        Schedule {
            queue: WorkQueue::default(),
            backoff: Backoff::from_queue(queue),
            sweeps: Backoff::from_queue(queue),
            busy: 0,
            counts: HashMap::new(),
        }
    }

    pub fn count(&self, key: &str) -> u64 {
        self.counts.get(key).copied().unwrap_or(0)
    }

    /// The CR is gone.
    pub fn forget(&mut self, key: &str) {
        let k = key.to_string();
        self.queue.forget(&k);
        self.backoff.reset(&k);
        self.sweeps.reset(&k);
        self.counts.remove(key);
    }

    /// How the sweep of `key` (the children of CRs gone under it) ended, when there was one:
    /// a failed one is tried again after its own backoff, apart from the reconciles' of a CR
    /// that may live under the key.
    pub fn swept(&mut self, key: &str, ok: bool) {
        let k = key.to_string();
        if ok {
            self.sweeps.reset(&k);
        } else {
            let delay = self.sweeps.failed(k.clone());
            self.queue
                .add_at(k, Reason::Sweep, later(Instant::now(), delay));
        }
    }

    /// The reconcile of `key` ended (or never started).
    pub fn done(&mut self, key: &str) {
        self.busy = self.busy.saturating_sub(1);
        self.queue.done(&key.to_string());
    }

    /// What a finished reconcile means: health, backoff, and when to look again.
    pub fn after(
        &mut self,
        key: &str,
        outcome: &Result<Success, ReconcileError>,
        health: &mut Health,
    ) {
        let k = key.to_string();
        let now = Instant::now();
        let stamp = k8s_openapi::jiff::Timestamp::now().to_string();
        match outcome {
            Ok(Success::Gated(why)) => health.record_gated(why),
            Ok(Success::Deleting) => {}
            Ok(Success::Reconciled { requeue_after }) => {
                *self.counts.entry(k.clone()).or_default() += 1;
                health.record_success(&stamp);
                self.backoff.reset(&k);
                if let Some(after) = requeue_after {
                    self.queue.add_at(k, Reason::Requeue, later(now, *after));
                }
            }
            Ok(Success::Finalized) => self.backoff.reset(&k),
            Ok(Success::FinalizePending(after)) => {
                self.queue.add_at(k, Reason::Requeue, later(now, *after));
            }
            Err(e) => {
                *self.counts.entry(k.clone()).or_default() += 1;
                if e.blames_service() {
                    health.record_failure(&e.to_string(), &stamp);
                }
                match e.retry() {
                    Retry::Now => self.queue.add(k, Reason::Retry),
                    Retry::Backoff => {
                        let delay = self.backoff.failed(k.clone());
                        if self.backoff.exhausted(&k) {
                            // `queue.maxAttempts`: no more retries until the CR changes or the
                            // next resync.
                            tracing::warn!(key = %k, "retries exhausted (queue.maxAttempts)");
                        } else {
                            self.queue.add_at(k, Reason::Retry, later(now, delay));
                        }
                    }
                }
            }
        }
    }
}

/// `now + delay`, saturating far in the future instead of overflowing.
fn later(now: Instant, delay: Duration) -> Instant {
    now.checked_add(delay)
        .or_else(|| now.checked_add(Duration::from_secs(365 * 24 * 3600)))
        .unwrap_or(now)
}
