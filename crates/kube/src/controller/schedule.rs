//! When each key of an entry is reconciled next: the work queue, per-key backoff, what a
//! finished reconcile means for its key and for the entry's health, and the recovery after a
//! service outage (a half-open probe). Owned by the entry loop; time is passed in.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use ork_engine::backoff::Backoff;
use ork_engine::health::Health;
use ork_engine::queue::{Reason, WorkQueue};
use ork_katalog::Queue;

use crate::error::{ReconcileError, Retry};
use crate::reconcile::Success;

/// While keys wait out a backoff because the service could not be reached, one of them is
/// tried this often ahead of its time: when it gets an answer, they all go (SPEC §10). A
/// service back after an outage is used within about this long, not after the longest backoff
/// (up to 2 minutes by default), at the price of one call per entry per period while it is down.
///
/// Only a service that answers nobody is away: a call that fails while the service answered
/// another call meanwhile is that key's own failure (the service crashed on this CR, or is slow
/// on it), which waits out its own backoff like any other.
pub(crate) const PROBE_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct Schedule {
    queue: WorkQueue<String>,
    backoff: Backoff<String>,
    /// The backoff of failed sweeps, per key.
    sweeps: Backoff<String>,
    recovery: Recovery,
    /// Since when each waiting key waits (a change seen, or a retry's time), for the metric of
    /// the time keys wait; measured, never decided on.
    waiting_since: HashMap<String, Instant>,
    /// Keys in flight for a fresh change (a create, an edit, drift: [`Reason::is_fresh`]), as
    /// against resyncs, requeues and retries.
    fresh_in_flight: HashSet<String>,
    /// When each key in flight was handed out: a call that fails as "away" although the
    /// service answered someone since is not the service being away.
    started: HashMap<String, Instant>,
}

/// Keys waiting out a backoff because the service was unreachable, and the probe among them.
#[derive(Debug, Default)]
struct Recovery {
    waiting: BTreeSet<String>,
    /// The key let through early, until its reconcile ends.
    probe: Option<String>,
    last_probe: Option<Instant>,
    /// The key probed last: the next probe is the one after it, so that no one key (one the
    /// service fails on whatever its state) is the only one ever tried.
    probed: Option<String>,
    /// When the service last answered a call.
    last_answer: Option<Instant>,
    /// Keys let go because the service answered (another key), and when: one that then fails
    /// as "away" again while the service answered someone since is failing on its own.
    released: HashMap<String, Instant>,
}

impl Recovery {
    fn probe_at(&self) -> Option<Instant> {
        if self.waiting.is_empty() || self.probe.is_some() {
            return None;
        }
        self.last_probe.map(|t| later(t, PROBE_EVERY))
    }

    /// Whether `key`'s "away" failure, of a call started at `started`, is its own: the service
    /// answered another call while this one ran, or answered someone after it let `key` go
    /// (and `key` failed again).
    fn fails_on_its_own(&mut self, key: &str, started: Option<Instant>) -> bool {
        let Some(answer) = self.last_answer else {
            return false;
        };
        let released = self.released.remove(key);
        started.is_some_and(|start| answer >= start) || released.is_some_and(|at| answer > at)
    }

    /// The waiting key to probe next: the one after the last probed, round the set.
    fn next_probe(&self) -> Option<String> {
        let after = self.probed.as_ref().and_then(|last| {
            self.waiting
                .range::<String, _>((std::ops::Bound::Excluded(last), std::ops::Bound::Unbounded))
                .next()
        });
        after.or_else(|| self.waiting.iter().next()).cloned()
    }
}

impl Schedule {
    pub fn new(queue: &Queue) -> Schedule {
        Schedule {
            queue: WorkQueue::default(),
            backoff: Backoff::from_queue(queue),
            sweeps: Backoff::from_queue(queue),
            recovery: Recovery::default(),
            waiting_since: HashMap::new(),
            fresh_in_flight: HashSet::new(),
            started: HashMap::new(),
        }
    }

    /// Queues `key` now; someone asking for it by hand ([`Reason::Manual`]) starts its backoff
    /// over.
    pub fn add(&mut self, key: String, reason: Reason) {
        if reason == Reason::Manual {
            self.backoff.reset(&key);
        }
        self.waiting_since
            .entry(key.clone())
            .or_insert_with(Instant::now);
        self.queue.add(key, reason);
    }

    /// How long `key`, just handed out at `now`, waited.
    pub fn waited(&mut self, key: &str, now: Instant) -> Option<Duration> {
        let since = self.waiting_since.remove(key)?;
        Some(now.saturating_duration_since(since))
    }

    /// `key` is queued for `at` (a retry, a requeue, a sweep, a reconfigured entry's spread).
    pub fn add_at(&mut self, key: String, reason: Reason, at: Instant) {
        self.waiting_since.entry(key.clone()).or_insert(at);
        self.queue.add_at(key, reason, at);
    }

    /// The next key to reconcile at `now`, marked in flight until [`Schedule::finished`] or
    /// [`Schedule::skip`].
    pub fn next(&mut self, now: Instant) -> Option<(String, Reason)> {
        self.queue.promote(now);
        if self.recovery.probe_at().is_some_and(|at| at <= now)
            && let Some(key) = self.recovery.next_probe()
        {
            // Ahead of its backoff; its reconcile says whether the service is back.
            self.queue.add(key.clone(), Reason::Retry);
            self.recovery.probed = Some(key.clone());
            self.recovery.probe = Some(key);
            self.recovery.last_probe = Some(now);
        }
        let next = self.queue.pop();
        if let Some((key, reason)) = &next {
            if reason.is_fresh() {
                self.fresh_in_flight.insert(key.clone());
            }
            self.started.insert(key.clone(), now);
        }
        next
    }

    /// A key handed out by [`Schedule::next`] that is not reconciled after all (another
    /// replica's shard, a CR gone meanwhile).
    pub fn skip(&mut self, key: &str) {
        self.end(key);
    }

    /// When something is due next: a delayed key or a probe.
    pub fn next_deadline(&self) -> Option<Instant> {
        let probe = self.recovery.probe_at();
        match (self.queue.next_deadline(), probe) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// 1 for the first try, n after n-1 failures in a row.
    pub fn attempt(&self, key: &str) -> u32 {
        self.backoff.failures(&key.to_string()) + 1
    }

    /// The CR is gone.
    pub fn forget(&mut self, key: &str) {
        let k = key.to_string();
        self.queue.forget(&k);
        self.backoff.reset(&k);
        self.sweeps.reset(&k);
        self.recovery.waiting.remove(key);
        self.recovery.released.remove(key);
        self.waiting_since.remove(key);
    }

    /// How the sweep of `key` (the children of CRs gone under it) ended: a failed one is tried
    /// again after its own backoff, apart from the reconciles' of a CR that may live under the
    /// key.
    pub fn swept(&mut self, key: &str, ok: bool, now: Instant) {
        let k = key.to_string();
        if ok {
            self.sweeps.reset(&k);
        } else {
            let delay = self.sweeps.failed(k.clone());
            self.add_at(k, Reason::Sweep, later(now, delay));
        }
    }

    /// The reconcile of `key` ended with `outcome` (`None`: it did not run, only its sweep):
    /// health, backoff, and when to look again.
    pub fn finished(
        &mut self,
        key: &str,
        outcome: Option<&Result<Success, ReconcileError>>,
        health: &mut Health,
        now: Instant,
    ) {
        let started = self.started.get(key).copied();
        self.end(key);
        let Some(outcome) = outcome else {
            return;
        };
        let k = key.to_string();
        let stamp = k8s_openapi::jiff::Timestamp::now().to_string();
        match outcome {
            Ok(success) => {
                self.recovery.waiting.remove(key);
                self.recovery.released.remove(key);
                let answered = match success {
                    Success::Gated(why) => {
                        health.record_gated(why);
                        false
                    }
                    Success::Deleting => false,
                    Success::Reconciled { requeue_after } => {
                        health.record_success(&stamp);
                        self.backoff.reset(&k);
                        if let Some(after) = requeue_after {
                            self.add_at(k.clone(), Reason::Requeue, later(now, *after));
                        }
                        true
                    }
                    Success::Finalized => {
                        self.backoff.reset(&k);
                        true
                    }
                    Success::FinalizePending(after) => {
                        self.add_at(k.clone(), Reason::Requeue, later(now, *after));
                        true
                    }
                };
                if answered {
                    self.service_answered(now);
                }
            }
            Err(e) => {
                if e.heard_from_service() {
                    self.service_answered(now);
                }
                if e.blames_service() {
                    health.record_failure(&e.to_string(), &stamp);
                }
                match e.retry() {
                    Retry::Now => self.add(k, Reason::Retry),
                    Retry::After(delay) => self.add_at(k, Reason::Retry, later(now, delay)),
                    Retry::Backoff => {
                        let delay = self.backoff.failed(k.clone());
                        if self.backoff.exhausted(&k) {
                            // `queue.maxAttempts`: no more retries until the CR changes or the
                            // next resync.
                            tracing::warn!(key = %k, "retries exhausted (queue.maxAttempts)");
                            self.recovery.waiting.remove(key);
                        } else {
                            if e.service_away() && !self.recovery.fails_on_its_own(key, started) {
                                self.recovery.waiting.insert(k.clone());
                                self.recovery.last_probe.get_or_insert(now);
                            } else {
                                // Its own failure: off the probe's list, its backoff alone.
                                self.recovery.waiting.remove(key);
                                self.recovery.released.remove(key);
                            }
                            self.add_at(k, Reason::Retry, later(now, delay));
                        }
                    }
                }
            }
        }
    }

    /// The service answered: every key waiting out a backoff because it could not be reached
    /// goes now.
    fn service_answered(&mut self, now: Instant) {
        self.recovery.last_answer = Some(now);
        let waiting = std::mem::take(&mut self.recovery.waiting);
        if !waiting.is_empty() {
            tracing::info!(
                keys = waiting.len(),
                "the service answers again: retrying what waited for it"
            );
        }
        for key in waiting {
            self.recovery.released.insert(key.clone(), now);
            self.add(key, Reason::Retry);
        }
        self.recovery.last_probe = None;
    }

    fn end(&mut self, key: &str) {
        if self.recovery.probe.as_deref() == Some(key) {
            self.recovery.probe = None;
        }
        self.fresh_in_flight.remove(key);
        self.started.remove(key);
        self.queue.done(&key.to_string());
    }

    /// When `key` is due next, if it waits for a time (a retry, a requeue).
    pub fn due_at(&self, key: &str) -> Option<Instant> {
        self.queue.due_at(&key.to_string())
    }

    /// Whether `key` waits to be reconciled now.
    pub fn is_queued(&self, key: &str) -> bool {
        self.queue.is_queued(&key.to_string())
    }

    /// Keys waiting to be reconciled now.
    pub fn depth(&self) -> usize {
        self.queue.depth()
    }

    /// Reconciles in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.in_flight()
    }

    pub fn in_flight_keys(&self) -> impl Iterator<Item = &String> {
        self.queue.in_flight_keys()
    }

    pub fn queued_keys(&self) -> impl Iterator<Item = &String> {
        self.queue.queued_keys()
    }

    /// Whether fresh changes (create, edit, child drift) may be waiting.
    pub fn has_fresh(&self) -> bool {
        self.queue.has_fresh()
    }

    /// Whether a fresh change is being reconciled.
    pub fn fresh_in_flight(&self) -> bool {
        !self.fresh_in_flight.is_empty()
    }
}

/// `now + delay`, saturating far in the future instead of overflowing.
pub(crate) fn later(now: Instant, delay: Duration) -> Instant {
    now.checked_add(delay)
        .or_else(|| now.checked_add(Duration::from_secs(365 * 24 * 3600)))
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::CallFailed;

    fn schedule(initial: &str, max: &str) -> Schedule {
        let queue: Queue = serde_json::from_value(serde_json::json!({
            "retryBackoff": {"initial": initial, "max": max, "multiplier": 2.0}
        }))
        .expect("a queue");
        Schedule::new(&queue)
    }

    #[test]
    fn only_fresh_changes_in_flight_count_as_converging() {
        let mut s = schedule("1s", "10s");
        let (now, mut health) = (Instant::now(), Health::new(3));
        s.add("ns/resynced".into(), Reason::Resync);
        assert_eq!(s.next(now), Some(("ns/resynced".into(), Reason::Resync)));
        assert!(!s.fresh_in_flight(), "a resync is background work");
        s.add("ns/new".into(), Reason::Create);
        assert_eq!(s.next(now), Some(("ns/new".into(), Reason::Create)));
        assert!(s.fresh_in_flight());
        s.finished("ns/new", None, &mut health, now);
        assert!(!s.fresh_in_flight(), "the create finished");
        s.add("ns/edited".into(), Reason::Update);
        assert!(s.next(now).is_some());
        s.skip("ns/edited");
        assert!(!s.fresh_in_flight(), "a skipped key is not in flight");
    }

    fn unreachable() -> Result<Success, ReconcileError> {
        Err(ReconcileError::CallFailed(CallFailed::Call(
            ork_remote::CallError::Connect {
                url: "http://127.0.0.1:1/r".into(),
                reason: "Connection refused".into(),
            },
        )))
    }

    fn ok() -> Result<Success, ReconcileError> {
        Ok(Success::Reconciled {
            requeue_after: None,
        })
    }

    /// Runs the next key due at `now` to `outcome`; returns it.
    fn run(
        s: &mut Schedule,
        health: &mut Health,
        now: Instant,
        outcome: &Result<Success, ReconcileError>,
    ) -> Option<(String, Reason)> {
        let (key, reason) = s.next(now)?;
        s.finished(&key, Some(outcome), health, now);
        Some((key, reason))
    }

    #[test]
    fn a_failure_backs_off_growing_and_a_success_starts_over() {
        let mut s = schedule("1s", "1m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        s.add("ns/a".into(), Reason::Create);
        let failed = Err(ReconcileError::ServiceReported("no".into()));
        assert_eq!(
            run(&mut s, &mut h, t0, &failed),
            Some(("ns/a".into(), Reason::Create))
        );
        assert_eq!(s.attempt("ns/a"), 2);
        assert_eq!(s.next(t0), None, "waits its backoff");
        assert_eq!(s.next_deadline(), Some(t0 + Duration::from_secs(1)));
        let t1 = t0 + Duration::from_secs(1);
        assert!(run(&mut s, &mut h, t1, &failed).is_some());
        assert_eq!(s.next_deadline(), Some(t1 + Duration::from_secs(2)));
        let t2 = t1 + Duration::from_secs(2);
        assert_eq!(
            run(&mut s, &mut h, t2, &ok()),
            Some(("ns/a".into(), Reason::Retry))
        );
        assert_eq!(s.attempt("ns/a"), 1);
        assert_eq!(s.next_deadline(), None);
        assert_eq!(h.consecutive_fails, 0);
    }

    #[test]
    fn asking_by_hand_starts_the_backoff_over_and_runs_now() {
        let mut s = schedule("10s", "1m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        s.add("ns/a".into(), Reason::Create);
        run(&mut s, &mut h, t0, &unreachable());
        run(&mut s, &mut h, t0 + Duration::from_secs(10), &unreachable());
        assert_eq!(s.attempt("ns/a"), 3);
        s.add("ns/a".into(), Reason::Manual);
        assert_eq!(s.attempt("ns/a"), 1);
        let t = t0 + Duration::from_secs(11);
        assert_eq!(s.next(t), Some(("ns/a".into(), Reason::Manual)));
    }

    #[test]
    fn a_key_handed_out_is_not_handed_out_again_until_it_ends() {
        let mut s = schedule("1s", "1m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        s.add("ns/a".into(), Reason::Create);
        assert!(s.next(t0).is_some());
        s.add("ns/a".into(), Reason::Update);
        assert_eq!(s.next(t0), None);
        assert_eq!(s.in_flight(), 1);
        s.finished("ns/a", Some(&ok()), &mut h, t0);
        assert_eq!(s.in_flight(), 0);
        assert_eq!(s.next(t0), Some(("ns/a".into(), Reason::Update)));
        s.skip("ns/a");
        assert_eq!((s.in_flight(), s.depth()), (0, 0));
    }

    #[test]
    fn when_the_service_answers_again_every_key_that_waited_for_it_goes_at_once() {
        let mut s = schedule("1s", "2m");
        let mut h = Health::new(3);
        let mut now = Instant::now();
        for key in ["ns/a", "ns/b", "ns/c"] {
            s.add(key.into(), Reason::Create);
        }
        // The service is down for a while: every key's backoff grows past a minute.
        let mut calls = 0;
        let until = now + Duration::from_secs(300);
        while now < until {
            while run(&mut s, &mut h, now, &unreachable()).is_some() {
                calls += 1;
            }
            now = s.next_deadline().expect("something is due");
        }
        // One probe per second at most, beside the keys' own retries.
        assert!(calls <= 300 + 3 * 9, "{calls} calls in 300 s");
        assert!(s.attempt("ns/b") >= 5, "{}", s.attempt("ns/b"));
        // Back: the next probe (within a second) gets an answer, and the others follow now.
        let probe_at = s.next_deadline().expect("due");
        assert!(
            probe_at <= now + PROBE_EVERY,
            "the probe is at most a second away"
        );
        let (probe, _) = run(&mut s, &mut h, probe_at, &ok()).expect("a probe");
        let mut rest: Vec<String> = std::iter::from_fn(|| run(&mut s, &mut h, probe_at, &ok()))
            .map(|(k, _)| k)
            .collect();
        rest.push(probe);
        rest.sort();
        assert_eq!(rest, ["ns/a", "ns/b", "ns/c"]);
        assert_eq!(s.next_deadline(), None, "nothing waits any more");
    }

    #[test]
    fn a_failure_that_is_not_the_service_being_away_is_not_probed_early() {
        let mut s = schedule("1m", "1m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        s.add("ns/a".into(), Reason::Create);
        s.add("ns/b".into(), Reason::Create);
        let rejected = Err(ReconcileError::InvalidResponse("bad".into()));
        run(&mut s, &mut h, t0, &rejected);
        run(&mut s, &mut h, t0, &ok());
        assert_eq!(s.next_deadline(), Some(t0 + Duration::from_secs(60)));
        assert_eq!(s.next(t0 + Duration::from_secs(5)), None);
    }

    fn status(code: u16) -> Result<Success, ReconcileError> {
        Err(ReconcileError::CallFailed(CallFailed::Call(
            ork_remote::CallError::Status {
                url: "http://127.0.0.1:1/r".into(),
                status: code,
                body: String::new(),
            },
        )))
    }

    fn closed() -> Result<Success, ReconcileError> {
        Err(ReconcileError::CallFailed(CallFailed::Call(
            ork_remote::CallError::Closed {
                url: "http://127.0.0.1:1/r".into(),
                reason: "connection closed before message completed".into(),
            },
        )))
    }

    fn timed_out() -> Result<Success, ReconcileError> {
        Err(ReconcileError::CallFailed(CallFailed::Call(
            ork_remote::CallError::Timeout {
                url: "http://127.0.0.1:1/r".into(),
                after: Duration::from_secs(2),
            },
        )))
    }

    #[test]
    fn keys_the_service_fails_on_wait_their_own_backoff_while_it_answers_others() {
        // Over 60 s with a backoff of 1 s doubling to 2 min, a key is tried at 0, 1, 3, 7, 15,
        // 31 s: six calls. Before, an HTTP status counted as "service away" and the probe
        // retried the first such key every second (62 calls in 60 s).
        let mut s = schedule("1s", "2m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        for key in ["ns/crashes", "ns/fails", "ns/healthy"] {
            s.add(key.into(), Reason::Create);
        }
        let mut calls: HashMap<String, u32> = HashMap::new();
        let mut now = t0;
        while now <= t0 + Duration::from_secs(60) {
            while let Some((key, _)) = s.next(now) {
                *calls.entry(key.clone()).or_default() += 1;
                let outcome = match key.as_str() {
                    "ns/crashes" => closed(),
                    "ns/fails" => status(500),
                    _ => ok(),
                };
                s.finished(&key, Some(&outcome), &mut h, now);
                if key == "ns/healthy" {
                    // The healthy CR is edited now and then: the service answers it.
                    s.add_at(key, Reason::Update, now + Duration::from_millis(700));
                }
            }
            now = s.next_deadline().expect("something is due");
        }
        assert_eq!(calls["ns/crashes"], 6, "{calls:?}");
        assert_eq!(calls["ns/fails"], 6, "{calls:?}");
        assert!(calls["ns/healthy"] > 60, "{calls:?}");
        assert_eq!(s.attempt("ns/fails"), 7);
    }

    #[test]
    fn a_timeout_while_the_service_answered_another_call_is_that_keys_own() {
        let mut s = schedule("30s", "2m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        s.add("ns/slow".into(), Reason::Create);
        s.add("ns/quick".into(), Reason::Create);
        assert!(
            s.next(t0).is_some() && s.next(t0).is_some(),
            "both in flight"
        );
        // ns/quick answered at 1 s; ns/slow timed out at 2 s: the service is not away.
        s.finished("ns/quick", Some(&ok()), &mut h, t0 + Duration::from_secs(1));
        s.finished(
            "ns/slow",
            Some(&timed_out()),
            &mut h,
            t0 + Duration::from_secs(2),
        );
        assert_eq!(
            s.next_deadline(),
            Some(t0 + Duration::from_secs(32)),
            "its backoff, no probe a second away"
        );
        // Alone, a timeout is the service being away: probed after a second.
        s.add("ns/slow".into(), Reason::Manual);
        let t3 = t0 + Duration::from_secs(3);
        assert!(s.next(t3).is_some());
        s.finished(
            "ns/slow",
            Some(&timed_out()),
            &mut h,
            t3 + Duration::from_secs(2),
        );
        assert_eq!(s.next_deadline(), Some(t3 + Duration::from_secs(3)));
    }

    /// A gateway's 503 for every call is the service being away: probed, and back within a
    /// second; a 503 for one CR while the service answers the others is that CR's, even when
    /// the others' answers let it go now and then.
    #[test]
    fn a_gateway_status_is_away_only_while_the_service_answers_nobody() {
        let mut s = schedule("1s", "2m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        s.add("ns/a".into(), Reason::Create);
        run(&mut s, &mut h, t0, &status(503));
        assert_eq!(
            s.next_deadline(),
            Some(t0 + PROBE_EVERY),
            "probed in a second"
        );

        let mut s = schedule("1s", "2m");
        for key in ["ns/unlucky", "ns/healthy"] {
            s.add(key.into(), Reason::Create);
        }
        let mut calls: HashMap<String, u32> = HashMap::new();
        let mut now = t0;
        while now <= t0 + Duration::from_secs(60) {
            while let Some((key, _)) = s.next(now) {
                *calls.entry(key.clone()).or_default() += 1;
                let outcome = if key == "ns/unlucky" {
                    status(503)
                } else {
                    ok()
                };
                s.finished(&key, Some(&outcome), &mut h, now);
                if key == "ns/healthy" {
                    s.add_at(key, Reason::Update, now + Duration::from_secs(5));
                }
            }
            now = s.next_deadline().expect("something is due");
        }
        assert!(calls["ns/unlucky"] <= 16, "{calls:?}");
        assert!(calls["ns/healthy"] >= 12, "{calls:?}");
    }

    #[test]
    fn the_probe_goes_round_the_waiting_keys() {
        let mut s = schedule("1m", "1m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        for key in ["ns/a", "ns/b", "ns/c"] {
            s.add(key.into(), Reason::Create);
        }
        while run(&mut s, &mut h, t0, &unreachable()).is_some() {}
        let probes: Vec<String> = (1..=4)
            .map(|i| {
                let at = t0 + Duration::from_secs(i);
                run(&mut s, &mut h, at, &unreachable()).expect("a probe").0
            })
            .collect();
        assert_eq!(probes, ["ns/a", "ns/b", "ns/c", "ns/a"]);
    }

    #[test]
    fn a_forgotten_key_leaves_nothing_behind() {
        let mut s = schedule("1s", "1m");
        let mut h = Health::new(3);
        let t0 = Instant::now();
        s.add("ns/a".into(), Reason::Create);
        run(&mut s, &mut h, t0, &unreachable());
        s.forget("ns/a");
        assert_eq!(s.next_deadline(), None);
        assert_eq!(s.attempt("ns/a"), 1);
    }

    #[test]
    fn a_failed_sweep_is_tried_again_after_its_own_backoff() {
        let mut s = schedule("2s", "1m");
        let t0 = Instant::now();
        s.swept("ns/a", false, t0);
        assert_eq!(s.next_deadline(), Some(t0 + Duration::from_secs(2)));
        assert_eq!(
            s.next(t0 + Duration::from_secs(2)),
            Some(("ns/a".into(), Reason::Sweep))
        );
        assert_eq!(s.attempt("ns/a"), 1, "the reconciles' backoff is apart");
    }
}
