//! `operatorBox.reconcile`: workers, resync, the retry queue and its backoff.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::remote::Remote;
use crate::duration::Duration;

/// `operatorBox.reconcile`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reconcile {
    /// Orkestra starts its built-in reconciler unless this is `false`; ork requires `false`.
    #[serde(default)]
    pub default: Option<bool>,
    #[serde(default = "default_workers")]
    pub workers: u32,
    #[serde(default = "default_resync")]
    pub resync: Duration,
    #[serde(default)]
    pub queue: Queue,
    #[serde(default)]
    pub force_conflict: Option<bool>,
    /// What a start (or a leader change, or a shard gained) does with CRs that have not
    /// changed since ork's last successful reconcile of them (SPEC §17): `skipUnchanged`
    /// (the default) leaves them to their resync; `call` calls the service for every CR, as
    /// Orkestra does.
    #[serde(default)]
    pub on_start: OnStart,
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

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Queue {
    #[serde(default = "default_failure_threshold")]
    pub failure_threshold: u32,
    #[serde(default)]
    pub retry_backoff: RetryBackoff,
    /// Calls per failure series (the first included); then the object waits for its next
    /// event or resync. Unlimited when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

/// The map form of `retryBackoff`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RetryBackoffFields {
    #[serde(default = "default_backoff_initial")]
    initial: Duration,
    #[serde(default)]
    max: Option<Duration>,
    #[serde(default = "default_backoff_multiplier")]
    multiplier: f64,
    #[serde(default)]
    max_attempts: Option<u32>,
}

/// Schema of `retryBackoff`: a duration or the map.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum RetryBackoffSchema {
    Initial(Duration),
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
