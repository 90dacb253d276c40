//! Prometheus metrics of one `ork run`, served at `/metrics`.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EntryLabel {
    entry: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ShardLabel {
    shard: u32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    entry: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    entry: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApplyLabels {
    entry: String,
    kind: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    entry: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    entry: String,
    endpoint: String,
    result: String,
}

fn seconds_histogram() -> Histogram {
    // 1 ms to ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The metric families; cheap to clone (families share their storage).
#[derive(Clone)]
pub(crate) struct Metrics {
    registry: std::sync::Arc<Registry>,
    reconciles: Family<ResultLabels, Counter>,
    reconcile_duration: Family<ResultLabels, Histogram, fn() -> Histogram>,
    remote_calls: Family<OutcomeLabels, Histogram, fn() -> Histogram>,
    queue_wait: Family<EntryLabel, Histogram, fn() -> Histogram>,
    apply_duration: Family<KindLabels, Histogram, fn() -> Histogram>,
    failures: Family<ReasonLabels, Counter>,
    applies: Family<ApplyLabels, Counter>,
    queue_depth: Family<EntryLabel, Gauge>,
    workers_busy: Family<EntryLabel, Gauge>,
    lane_waiting: Family<EntryLabel, Gauge>,
    health_state: Family<StateLabels, Gauge>,
    leader: Gauge,
    shards_held: Gauge,
    shard_queue_depth: Family<ShardLabel, Gauge>,
    undecodable: Family<KindLabels, Counter>,
    unchanged_at_start: Family<EntryLabel, Counter>,
    inspector_reviews: Family<ReviewLabels, Counter>,
    inspector_throttled: Counter,
    admissions: Family<AdmissionLabels, Histogram, fn() -> Histogram>,
    rollout_reconciles: Family<EndpointLabels, Counter>,
    rollout_percent: Family<StateLabels, Gauge>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AdmissionLabels {
    entry: String,
    phase: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReviewLabels {
    review: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    entry: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    entry: String,
    kind: String,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

pub(crate) const STATES: [&str; 4] = ["pending", "healthy", "degraded", "gated"];

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register(
            "ork_reconciles",
            "Reconciles by entry and result (ok, error, gated)",
            reconciles.clone(),
        );
        let reconcile_duration: Family<ResultLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(seconds_histogram);
        registry.register(
            "ork_reconcile_duration_seconds",
            "Duration of a whole reconcile (call, apply, status) by entry and result (ok, error)",
            reconcile_duration.clone(),
        );
        let queue_wait: Family<EntryLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(seconds_histogram);
        registry.register(
            "ork_queue_wait_seconds",
            "Time from a change (or a retry falling due) to its reconcile starting",
            queue_wait.clone(),
        );
        let apply_duration: Family<KindLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(seconds_histogram);
        registry.register(
            "ork_apply_duration_seconds",
            "Duration of one server-side apply of a child by entry and kind",
            apply_duration.clone(),
        );
        let failures = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "ork_reconcile_failures",
            "Failed reconciles by entry and the condition reason of the step that failed",
            failures.clone(),
        );
        let admissions: Family<AdmissionLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(seconds_histogram);
        registry.register(
            "ork_admission_duration_seconds",
            "Admission reviews by entry, phase (validate, mutate) and result (allowed, denied, patched, failed-allowed, failed-denied), with the time ork took",
            admissions.clone(),
        );
        let remote_calls: Family<OutcomeLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(seconds_histogram);
        registry.register(
            "ork_remote_call_duration_seconds",
            "Duration of calls to the reconcile service by entry and outcome",
            remote_calls.clone(),
        );
        let applies = Family::<ApplyLabels, Counter>::default();
        registry.register(
            "ork_apply_operations",
            "Server-side applies, prunes, sweeps and recreate deletes of children by entry, kind and result (ok, error, pruned, prune_error, swept, sweep_error, recreated, recreate_error)",
            applies.clone(),
        );
        let queue_depth = Family::<EntryLabel, Gauge>::default();
        registry.register(
            "ork_queue_depth",
            "Objects waiting to be reconciled",
            queue_depth.clone(),
        );
        let workers_busy = Family::<EntryLabel, Gauge>::default();
        registry.register(
            "ork_workers_busy",
            "Reconciles in flight",
            workers_busy.clone(),
        );
        let lane_waiting = Family::<EntryLabel, Gauge>::default();
        registry.register(
            "ork_lane_waiting",
            "CRs whose annotations and events wait on the lower-priority lane, written after reconciles",
            lane_waiting.clone(),
        );
        let health_state = Family::<StateLabels, Gauge>::default();
        registry.register(
            "ork_entry_health_state",
            "1 for the entry's current health state (pending, healthy, degraded, gated), else 0",
            health_state.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "ork_leader",
            "1 while this process may reconcile (leader, or no election)",
            leader.clone(),
        );
        let shards_held = Gauge::default();
        registry.register(
            "ork_shards_held",
            "Shards this replica holds (1 without --shards when it may reconcile)",
            shards_held.clone(),
        );
        let shard_queue_depth = Family::<ShardLabel, Gauge>::default();
        registry.register(
            "ork_shard_queue_depth",
            "Keys waiting in this replica's queues, per shard (with --shards)",
            shard_queue_depth.clone(),
        );
        let undecodable = Family::<KindLabels, Counter>::default();
        registry.register(
            "ork_undecodable_objects",
            "Watched objects (CRs, children) ork could not read whole, e.g. nested too deep",
            undecodable.clone(),
        );
        let unchanged_at_start = Family::<EntryLabel, Counter>::default();
        registry.register(
            "ork_unchanged_at_start",
            "CRs not called at a start, leader change or shard gain: unchanged since ork's last successful reconcile",
            unchanged_at_start.clone(),
        );
        let inspector_reviews = Family::<ReviewLabels, Counter>::default();
        registry.register(
            "ork_inspector_reviews",
            "TokenReviews (review=token) and SubjectAccessReviews (review=access) the inspector asked the API server, by result",
            inspector_reviews.clone(),
        );
        let rollout_reconciles = Family::<EndpointLabels, Counter>::default();
        registry.register(
            "ork_rollout_reconciles",
            "Reconciles of an entry with a rollout by the endpoint that served them (stable, candidate) and result (ok, error)",
            rollout_reconciles.clone(),
        );
        let rollout_percent = Family::<StateLabels, Gauge>::default();
        registry.register(
            "ork_rollout_percent",
            "The share of an entry's CRs its rollout's candidate serves, labelled with the rollout's state (Progressing, Promoted, Halted)",
            rollout_percent.clone(),
        );
        let inspector_throttled = Counter::default();
        registry.register(
            "ork_inspector_throttled",
            "Inspector requests refused (429) without a review: their address presented too many refused tokens, or the process asked too many reviews",
            inspector_throttled.clone(),
        );
        Metrics {
            rollout_reconciles,
            rollout_percent,
            inspector_reviews,
            inspector_throttled,
            admissions,
            unchanged_at_start,
            undecodable,
            shards_held,
            shard_queue_depth,
            registry: std::sync::Arc::new(registry),
            reconciles,
            reconcile_duration,
            remote_calls,
            queue_wait,
            apply_duration,
            failures,
            applies,
            queue_depth,
            workers_busy,
            lane_waiting,
            health_state,
            leader,
        }
    }

    pub fn reconciled(&self, entry: &str, result: &str, took: Duration) {
        self.reconciles
            .get_or_create(&ResultLabels {
                entry: entry.into(),
                result: result.into(),
            })
            .inc();
        if result != "gated" {
            self.reconcile_duration
                .get_or_create(&ResultLabels {
                    entry: entry.into(),
                    result: result.into(),
                })
                .observe(took.as_secs_f64());
        }
    }

    /// A reconcile failed at the step `reason` names (`ServiceUnreachable`, `AnswerRejected`…).
    pub fn failed(&self, entry: &str, reason: &str) {
        self.failures
            .get_or_create(&ReasonLabels {
                entry: entry.into(),
                reason: reason.into(),
            })
            .inc();
    }

    /// A key waited `took` in the queue before its reconcile started.
    pub fn queue_wait(&self, entry: &str, took: Duration) {
        self.queue_wait
            .get_or_create(&EntryLabel {
                entry: entry.into(),
            })
            .observe(took.as_secs_f64());
    }

    /// One apply of a child of `kind` took `took`.
    pub fn apply_duration(&self, entry: &str, kind: &str, took: Duration) {
        self.apply_duration
            .get_or_create(&KindLabels {
                entry: entry.into(),
                kind: kind.into(),
            })
            .observe(took.as_secs_f64());
    }

    pub fn remote_call(&self, entry: &str, outcome: &str, took: Duration) {
        self.remote_calls
            .get_or_create(&OutcomeLabels {
                entry: entry.into(),
                outcome: outcome.into(),
            })
            .observe(took.as_secs_f64());
    }

    pub fn admission(&self, entry: &str, phase: &str, result: &str, took: Duration) {
        self.admissions
            .get_or_create(&AdmissionLabels {
                entry: entry.into(),
                phase: phase.into(),
                result: result.into(),
            })
            .observe(took.as_secs_f64());
    }

    /// A reconcile of an entry with a rollout ended, served by `endpoint`.
    pub fn rollout_reconciled(&self, entry: &str, endpoint: &str, result: &str) {
        self.rollout_reconciles
            .get_or_create(&EndpointLabels {
                entry: entry.into(),
                endpoint: endpoint.into(),
                result: result.into(),
            })
            .inc();
    }

    /// The rollout of `entry` now serves `percent` of its CRs from the candidate, in `state`
    /// (the series of its other states are removed).
    pub fn rollout_percent(&self, entry: &str, state: &str, percent: u32) {
        for other in ["Progressing", "Promoted", "Halted"] {
            if other != state {
                self.rollout_percent.remove(&StateLabels {
                    entry: entry.into(),
                    state: other.into(),
                });
            }
        }
        self.rollout_percent
            .get_or_create(&StateLabels {
                entry: entry.into(),
                state: state.into(),
            })
            .set(i64::from(percent));
    }

    pub fn unchanged_at_start(&self, entry: &str) {
        self.unchanged_at_start
            .get_or_create(&EntryLabel {
                entry: entry.into(),
            })
            .inc();
    }

    pub fn undecodable(&self, entry: &str, kind: &str) {
        self.undecodable
            .get_or_create(&KindLabels {
                entry: entry.into(),
                kind: kind.into(),
            })
            .inc();
    }

    pub fn applied(&self, entry: &str, kind: &str, result: &str) {
        self.applies
            .get_or_create(&ApplyLabels {
                entry: entry.into(),
                kind: kind.into(),
                result: result.into(),
            })
            .inc();
    }

    pub fn set_shards_held(&self, n: usize) {
        self.shards_held.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub fn shard_queue_depth(&self, shard: u32, depth: usize) {
        self.shard_queue_depth
            .get_or_create(&ShardLabel { shard })
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// Sets the gauges that describe an entry at scrape time.
    pub fn entry_gauges(
        &self,
        entry: &str,
        queue_depth: usize,
        busy: usize,
        lane: usize,
        state: &str,
    ) {
        let label = EntryLabel {
            entry: entry.into(),
        };
        self.queue_depth
            .get_or_create(&label)
            .set(queue_depth as i64);
        self.workers_busy.get_or_create(&label).set(busy as i64);
        self.lane_waiting
            .get_or_create(&label)
            .set(i64::try_from(lane).unwrap_or(i64::MAX));
        for s in STATES {
            self.health_state
                .get_or_create(&StateLabels {
                    entry: entry.into(),
                    state: s.into(),
                })
                .set(i64::from(s == state));
        }
    }

    /// The inspector asked the API server a `review` (`token`, `access`) with `result`.
    pub fn inspector_review(&self, review: &str, result: &str) {
        self.inspector_reviews
            .get_or_create(&ReviewLabels {
                review: review.into(),
                result: result.into(),
            })
            .inc();
    }

    /// The inspector refused a request without asking the API server (too many reviews).
    pub fn inspector_throttled(&self) {
        self.inspector_throttled.inc();
    }

    /// Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// Every metric with one sample of each label set, in exposition format: what the reference
/// lists (name, type, help, labels). Label values are placeholders.
pub fn specimen() -> String {
    let m = Metrics::new();
    let took = Duration::from_millis(1);
    m.reconciled("<entry>", "<result>", took);
    m.failed("<entry>", "<reason>");
    m.queue_wait("<entry>", took);
    m.apply_duration("<entry>", "<kind>", took);
    m.remote_call("<entry>", "<outcome>", took);
    m.unchanged_at_start("<entry>");
    m.undecodable("<entry>", "<kind>");
    m.applied("<entry>", "<kind>", "<result>");
    m.set_shards_held(1);
    m.shard_queue_depth(0, 0);
    m.set_leader(true);
    m.entry_gauges("<entry>", 0, 0, 0, "healthy");
    m.inspector_review("<review>", "<result>");
    m.inspector_throttled();
    m.admission("<entry>", "<phase>", "<result>", took);
    m.rollout_reconciled("<entry>", "<endpoint>", "<result>");
    m.rollout_percent("<entry>", "<state>", 0);
    m.encode()
}

#[cfg(test)]
mod tests {
    /// A metric the specimen does not exercise would show in the reference without its labels.
    #[test]
    fn the_specimen_has_a_sample_of_every_metric() {
        let text = super::specimen();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap_or_default();
                assert!(
                    text.lines()
                        .any(|l| !l.starts_with('#') && l.starts_with(name)),
                    "{name} has no sample in specimen()"
                );
            }
        }
    }
}
