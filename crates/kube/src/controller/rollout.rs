//! A progressive rollout of an entry's candidate endpoint (SPEC §19), as a pure state machine
//! the entry loop owns: which endpoint serves a key, the share grown by steps on a schedule,
//! the halt when the candidate fails more than the stable endpoint within the window, and
//! `ork rollout promote|abort`. Time is passed in; what changed comes back as a [`Change`] for
//! the loop to act on (the keys to reconcile again, a log line, the metrics).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Which endpoint serves a reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Route {
    /// `remote.endpoint`.
    #[default]
    Stable,
    /// `remote.rollout.endpoint`.
    Candidate,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Stable => "stable",
            Route::Candidate => "candidate",
        }
    }
}

/// Where the rollout stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Phase {
    /// The candidate serves `percent` of the CRs; the next step comes at its time, if any.
    Progressing,
    /// Every CR is on the candidate.
    Promoted,
    /// Every CR is back on the stable endpoint: why.
    Halted(String),
}

impl Phase {
    pub fn as_str(&self) -> &'static str {
        match self {
            Phase::Progressing => "Progressing",
            Phase::Promoted => "Promoted",
            Phase::Halted(_) => "Halted",
        }
    }
}

/// What a step of the rollout changed: the CRs whose endpoint changed are those whose bucket
/// lies in `from..to` (growing) or `to..from` (shrinking).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub from: u32,
    pub to: u32,
    pub phase: Phase,
}

impl Change {
    /// Whether the CR in `bucket` changed endpoint.
    pub fn moves(&self, bucket: u32) -> bool {
        let (low, high) = (self.from.min(self.to), self.from.max(self.to));
        (low..high).contains(&bucket)
    }
}

/// The rollout of one entry.
#[derive(Debug)]
pub(crate) struct Rollout {
    endpoint: String,
    steps: Vec<u32>,
    /// The index in `steps` of the share served now.
    step: usize,
    interval: Option<Duration>,
    halt: ork_katalog::Halt,
    phase: Phase,
    /// When the share served now began (set by the first [`Rollout::tick`]: the entry's
    /// start).
    since: Option<Instant>,
    /// The reconciles within the window: when, by which endpoint, failed or not.
    seen: VecDeque<(Instant, Route, bool)>,
}

impl Rollout {
    pub fn new(spec: &ork_katalog::Rollout) -> Rollout {
        let steps: Vec<u32> = std::iter::once(spec.percent.min(100))
            .chain(spec.steps.iter().map(|s| (*s).min(100)))
            .collect();
        let phase = if steps[0] >= 100 {
            Phase::Promoted
        } else {
            Phase::Progressing
        };
        Rollout {
            endpoint: spec.endpoint.source().to_string(),
            steps,
            step: 0,
            interval: spec.interval.map(|d| d.0),
            halt: spec.halt.clone(),
            phase,
            since: None,
            seen: VecDeque::new(),
        }
    }

    /// The candidate's URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The share of CRs the candidate serves now, in percent.
    pub fn percent(&self) -> u32 {
        match self.phase {
            Phase::Progressing => self.steps[self.step],
            Phase::Promoted => 100,
            Phase::Halted(_) => 0,
        }
    }

    /// The endpoint that serves `key` now.
    pub fn route(&self, key: &str) -> Route {
        if bucket(key) < self.percent() {
            Route::Candidate
        } else {
            Route::Stable
        }
    }

    /// When the next step is due, if one is.
    pub fn next_step_at(&self) -> Option<Instant> {
        match self.phase {
            Phase::Progressing if self.step + 1 < self.steps.len() => {
                Some(self.since? + self.interval?)
            }
            _ => None,
        }
    }

    /// A reconcile served by `route` ended (`failed` or not): a halt when the candidate now
    /// fails more than its rule allows and more than the stable endpoint.
    pub fn observe(&mut self, route: Route, failed: bool, now: Instant) -> Option<Change> {
        self.seen.push_back((now, route, failed));
        self.forget_before(now);
        if self.phase != Phase::Progressing {
            return None;
        }
        let (calls, failures) = self.counts(Route::Candidate);
        if calls < u64::from(self.halt.min_reconciles) {
            return None;
        }
        let rate = failures as f64 / calls as f64;
        let (stable_calls, stable_failures) = self.counts(Route::Stable);
        let stable_rate = if stable_calls == 0 {
            0.0
        } else {
            stable_failures as f64 / stable_calls as f64
        };
        if rate > self.halt.max_failure_rate && rate > stable_rate {
            let why = format!(
                "the candidate {} failed {failures} of its {calls} reconciles in {} ({:.0} %, more than maxFailureRate {:.0} % and the stable endpoint's {:.0} %)",
                self.endpoint,
                humantime(self.halt.window.0),
                rate * 100.0,
                self.halt.max_failure_rate * 100.0,
                stable_rate * 100.0,
            );
            return Some(self.enter(Phase::Halted(why), now));
        }
        None
    }

    /// The next step, when it is due at `now` (the first call starts the clock of the first
    /// share).
    pub fn tick(&mut self, now: Instant) -> Option<Change> {
        self.since.get_or_insert(now);
        let due = self.next_step_at()?;
        if now < due {
            return None;
        }
        let from = self.percent();
        self.step += 1;
        self.since = Some(now);
        if self.steps[self.step] >= 100 {
            self.phase = Phase::Promoted;
        }
        Some(Change {
            from,
            to: self.percent(),
            phase: self.phase.clone(),
        })
    }

    /// `ork rollout promote`: every CR on the candidate now.
    pub fn promote(&mut self, now: Instant) -> Option<Change> {
        (self.phase != Phase::Promoted).then(|| self.enter(Phase::Promoted, now))
    }

    /// `ork rollout abort`: every CR back on the stable endpoint.
    pub fn abort(&mut self, now: Instant) -> Option<Change> {
        (!matches!(self.phase, Phase::Halted(_))).then(|| {
            self.enter(
                Phase::Halted("aborted by hand (ork rollout abort)".into()),
                now,
            )
        })
    }

    /// `ork rollout resume`: a halted rollout starts over from its first share.
    pub fn resume(&mut self, now: Instant) -> Option<Change> {
        if !matches!(self.phase, Phase::Halted(_)) {
            return None;
        }
        self.step = 0;
        self.seen.clear();
        let phase = if self.steps[0] >= 100 {
            Phase::Promoted
        } else {
            Phase::Progressing
        };
        Some(self.enter(phase, now))
    }

    fn enter(&mut self, phase: Phase, now: Instant) -> Change {
        let from = self.percent();
        self.phase = phase;
        self.since = Some(now);
        Change {
            from,
            to: self.percent(),
            phase: self.phase.clone(),
        }
    }

    fn forget_before(&mut self, now: Instant) {
        while let Some((at, _, _)) = self.seen.front() {
            if now.saturating_duration_since(*at) > self.halt.window.0 {
                self.seen.pop_front();
            } else {
                break;
            }
        }
    }

    /// Reconciles and failures of `route` within the window.
    fn counts(&self, route: Route) -> (u64, u64) {
        self.seen
            .iter()
            .filter(|(_, r, _)| *r == route)
            .fold((0, 0), |(n, f), (_, _, failed)| {
                (n + 1, f + u64::from(*failed))
            })
    }

    /// The rollout as `/katalog/{entry}` and `ork rollout status` show it.
    pub fn show(&self, now: Instant) -> Value {
        let (calls, failures) = self.counts(Route::Candidate);
        let (stable_calls, stable_failures) = self.counts(Route::Stable);
        json!({
            "endpoint": self.endpoint,
            "phase": self.phase.as_str(),
            "percent": self.percent(),
            "steps": self.steps,
            "step": self.step,
            "halted": match &self.phase { Phase::Halted(why) => Value::from(why.as_str()), _ => Value::Null },
            "sinceSeconds": self.since.map(|s| now.saturating_duration_since(s).as_secs()),
            "nextStepInSeconds": self.next_step_at().map(|at| at.saturating_duration_since(now).as_secs()),
            "window": {
                "seconds": self.halt.window.0.as_secs(),
                "candidate": {"reconciles": calls, "failed": failures},
                "stable": {"reconciles": stable_calls, "failed": stable_failures},
            },
        })
    }
}

/// The CR's place among 100 buckets: a hash of its key, the same in every replica and after a
/// restart, so a share grows by adding CRs and never moves one back and forth.
pub(crate) fn bucket(key: &str) -> u32 {
    let mut h = crate::fnv::Fnv::default();
    h.str("rollout");
    h.str(key);
    u32::try_from(h.finish() % 100).unwrap_or(0)
}

fn humantime(d: Duration) -> String {
    let s = d.as_secs();
    if s.is_multiple_of(60) && s >= 60 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: Value) -> ork_katalog::Rollout {
        serde_json::from_value(v).expect("a rollout")
    }

    #[test]
    fn a_share_takes_the_keys_whose_bucket_lies_below_it_and_grows_by_adding_keys() {
        let now = Instant::now();
        let mut r = Rollout::new(&spec(
            json!({"endpoint": "http://127.0.0.1:1/c", "percent": 25, "steps": [50, 100], "interval": "1m"}),
        ));
        assert_eq!(r.next_step_at(), None, "not started");
        assert_eq!(r.tick(now), None, "started");
        let keys: Vec<String> = (0..4000).map(|i| format!("ns/cr-{i}")).collect();
        let on = |r: &Rollout| -> Vec<&String> {
            keys.iter()
                .filter(|k| r.route(k) == Route::Candidate)
                .collect()
        };
        let quarter = on(&r);
        let share = quarter.len() as f64 / keys.len() as f64;
        assert!((0.22..0.28).contains(&share), "about a quarter: {share}");
        assert_eq!(r.next_step_at(), Some(now + Duration::from_secs(60)));
        assert_eq!(r.tick(now + Duration::from_secs(59)), None, "not yet");
        let change = r.tick(now + Duration::from_secs(60)).expect("a step");
        assert_eq!((change.from, change.to), (25, 50));
        let half = on(&r);
        assert!(
            quarter.iter().all(|k| half.contains(k)),
            "a key on the candidate stays on it as the share grows"
        );
        assert!(
            keys.iter()
                .all(|k| change.moves(bucket(k)) == (half.contains(&k) && !quarter.contains(&k))),
            "the change names exactly the keys that moved"
        );
        let last = r
            .tick(now + Duration::from_secs(120))
            .expect("the last step");
        assert_eq!(last.phase, Phase::Promoted);
        assert_eq!(on(&r).len(), keys.len());
        assert_eq!(r.next_step_at(), None);
    }

    #[test]
    fn the_candidate_halts_when_it_fails_more_than_its_rule_and_the_stable_endpoint() {
        let now = Instant::now();
        let mut r = Rollout::new(&spec(
            json!({"endpoint": "http://127.0.0.1:1/c", "percent": 30,
                "halt": {"maxFailureRate": 0.5, "minReconciles": 4, "window": "10s"}}),
        ));
        // Failures of the stable endpoint as high as the candidate's are not the candidate's.
        for i in 0..4 {
            assert_eq!(
                r.observe(Route::Stable, true, now + Duration::from_millis(i)),
                None
            );
        }
        for i in 0..4 {
            assert_eq!(
                r.observe(Route::Candidate, true, now + Duration::from_millis(10 + i)),
                None,
                "the stable endpoint fails as much"
            );
        }
        // Once the stable endpoint's failures leave the window, the candidate's halt it.
        let later = now + Duration::from_secs(10) + Duration::from_millis(5);
        let halted = r.observe(Route::Candidate, true, later).expect("halted");
        assert_eq!((halted.from, halted.to), (30, 0));
        let Phase::Halted(why) = &halted.phase else {
            panic!("{halted:?}")
        };
        assert!(why.contains("failed 5 of its 5 reconciles in 10s"), "{why}");
        assert_eq!(r.route("ns/any"), Route::Stable);
        assert_eq!(
            r.observe(Route::Candidate, true, later),
            None,
            "halted once"
        );
        let resumed = r.resume(later).expect("resumed");
        assert_eq!((resumed.from, resumed.to), (0, 30));
    }

    #[test]
    fn too_few_reconciles_never_halt_and_promote_and_abort_move_every_key() {
        let now = Instant::now();
        let mut r = Rollout::new(&spec(
            json!({"endpoint": "http://127.0.0.1:1/c", "percent": 10}),
        ));
        for _ in 0..4 {
            assert_eq!(r.observe(Route::Candidate, true, now), None, "fewer than 5");
        }
        assert_eq!(r.next_step_at(), None, "no interval: the share stays");
        let promoted = r.promote(now).expect("promoted");
        assert_eq!((promoted.from, promoted.to), (10, 100));
        assert_eq!(r.promote(now), None);
        let aborted = r.abort(now).expect("aborted");
        assert_eq!((aborted.from, aborted.to), (100, 0));
        assert_eq!(r.show(now)["phase"], "Halted");
    }
}
