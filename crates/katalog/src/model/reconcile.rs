//! `operatorBox.reconcile`: workers, resync, the retry queue and its backoff.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::remote::Remote;
use crate::duration::Duration;
use crate::limits::{
    MAX_MULTIPLIER, MAX_WORKERS, MIN_ATTEMPTS, MIN_FAILURE_THRESHOLD, MIN_MULTIPLIER, MIN_WORKERS,
};

/// `operatorBox.reconcile`: how ork calls the service for the entry's CRs, how often, and how
/// it retries.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reconcile {
    /// Orkestra starts its built-in reconciler unless this is `false`; ork requires `false`.
    #[serde(default)]
    pub default: Option<bool>,
    /// How many of the entry's CRs this replica reconciles at once.
    #[serde(default = "default_workers")]
    #[schemars(range(min = MIN_WORKERS, max = MAX_WORKERS))]
    pub workers: u32,
    /// How often each CR is reconciled again when nothing changed, at its own phase of the
    /// period (a hash of its key), so resyncs spread out; `0s` turns resyncs off.
    #[serde(default = "default_resync")]
    pub resync: Duration,
    /// Retries after a failed reconcile, and when the entry counts as degraded.
    #[serde(default)]
    pub queue: Queue,
    /// As the entry's `forceConflict`, which it overrides; an answer's resource may override
    /// both.
    #[serde(default)]
    pub force_conflict: Option<bool>,
    /// What a start (or a leader change, or a shard gained) does with CRs that have not
    /// changed since ork's last successful reconcile of them (SPEC §17): `skipUnchanged`
    /// (the default) leaves them to their resync; `call` calls the service for every CR, as
    /// Orkestra does.
    #[serde(default)]
    pub on_start: OnStart,
    /// The service that decides for each CR, and what it may return. ork requires it (with
    /// `default: false`).
    #[serde(default)]
    pub remote: Option<Remote>,
}

/// `operatorBox.reconcile.onStart`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnStart {
    /// A CR whose spec, labels, annotations and children still match ork's record of its last
    /// successful reconcile is not called; it keeps its resync.
    #[default]
    SkipUnchanged,
    /// Every CR is called.
    Call,
}

/// `operatorBox.reconcile.queue`: retries of failed reconciles and the entry's `degraded`
/// threshold.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Queue {
    /// Failed reconciles in a row, across the entry's CRs, after which the entry's health is
    /// `degraded` (and `/katalog/{entry}/health` answers 503); a success resets the count.
    #[serde(default = "default_failure_threshold")]
    #[schemars(range(min = MIN_FAILURE_THRESHOLD))]
    pub failure_threshold: u32,
    /// Per-CR exponential backoff between a failed reconcile and its retry, reset on success:
    /// a duration (the first delay) or `{initial, max, multiplier, maxAttempts}`.
    #[serde(default)]
    pub retry_backoff: RetryBackoff,
    /// Calls per failure series (the first included); then the object waits for its next
    /// event or resync. Unlimited when absent; wins over `retryBackoff.maxAttempts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = MIN_ATTEMPTS))]
    pub max_attempts: Option<u32>,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            failure_threshold: default_failure_threshold(),
            retry_backoff: RetryBackoff::default(),
            max_attempts: None,
        }
    }
}

impl Queue {
    /// `queue.maxAttempts`, else `queue.retryBackoff.maxAttempts`.
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts.or(self.retry_backoff.max_attempts)
    }
}

/// Per-object exponential backoff after failed reconciles; reset on success. Written as a map
/// or as a single duration (the initial delay).
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetryBackoff {
    pub initial: Duration,
    pub max: Duration,
    pub multiplier: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

impl Default for RetryBackoff {
    fn default() -> Self {
        RetryBackoff {
            initial: default_backoff_initial(),
            max: default_backoff_max(),
            multiplier: default_backoff_multiplier(),
            max_attempts: None,
        }
    }
}

/// `retryBackoff` as a map.
// Its schema, which [`RetryBackoff`]'s hand-written `json_schema` publishes, carries the bounds
// `validate` checks, from the same constants.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RetryBackoffFields {
    /// The delay before the first retry after a failure; must be above zero and at most
    /// `max`.
    #[serde(default = "default_backoff_initial")]
    initial: Duration,
    /// The longest delay between two tries. Absent: 5m, or `initial` when that is longer.
    #[serde(default)]
    max: Option<Duration>,
    /// Each further delay is the one before times this, up to `max`.
    #[serde(default = "default_backoff_multiplier")]
    #[schemars(range(min = MIN_MULTIPLIER, max = MAX_MULTIPLIER))]
    multiplier: f64,
    /// As `queue.maxAttempts`, which wins over it.
    #[serde(default)]
    #[schemars(range(min = MIN_ATTEMPTS))]
    max_attempts: Option<u32>,
}

/// Per-CR exponential backoff between a failed reconcile and its retry, reset on success: a
/// duration (the first delay) or a map.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum RetryBackoffSchema {
    /// The first delay; the others as the map's defaults.
    Initial(Duration),
    /// Every setting of the backoff.
    Fields(RetryBackoffFields),
}

impl JsonSchema for RetryBackoff {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RetryBackoff".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        RetryBackoffSchema::json_schema(g)
    }
}

impl<'de> Deserialize<'de> for RetryBackoff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RetryBackoff;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a duration such as 5s, or {initial, max, multiplier, maxAttempts}")
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<RetryBackoff, E> {
                let initial: Duration = s.parse().map_err(E::custom)?;
                Ok(RetryBackoff {
                    initial,
                    max: initial.max(default_backoff_max()),
                    ..RetryBackoff::default()
                })
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RetryBackoff, A::Error> {
                let f = RetryBackoffFields::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(RetryBackoff {
                    initial: f.initial,
                    max: f
                        .max
                        .unwrap_or_else(|| f.initial.max(default_backoff_max())),
                    multiplier: f.multiplier,
                    max_attempts: f.max_attempts,
                })
            }
        }
        d.deserialize_any(Visit)
    }
}

fn default_workers() -> u32 {
    2
}

fn default_resync() -> Duration {
    Duration::from_secs(300)
}

fn default_failure_threshold() -> u32 {
    5
}

fn default_backoff_initial() -> Duration {
    Duration::from_secs(1)
}

fn default_backoff_max() -> Duration {
    Duration::from_secs(300)
}

fn default_backoff_multiplier() -> f64 {
    2.0
}
