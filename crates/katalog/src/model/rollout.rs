//! `remote.rollout`: a candidate endpoint serving a share of the entry's CRs, chosen by a
//! stable hash of each CR's key, grown by steps and halted back to the stable endpoint when it
//! fails more than the stable one (SPEC §19).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::template::Template;

/// `remote.rollout`: the candidate endpoint, its share and when it halts.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollout {
    /// The candidate's URL (literal): the same request, credential and TLS as `endpoint`.
    pub endpoint: Template,
    /// The percentage of CRs (by a stable hash of their key) the candidate serves first.
    #[serde(default = "default_percent")]
    pub percent: u32,
    /// The percentages that follow, each after `interval`, in increasing order; the last
    /// step reaching 100 promotes the candidate (every CR on it).
    #[serde(default)]
    pub steps: Vec<u32>,
    /// How long each share runs before the next step; without it the share stays until
    /// `ork rollout promote` (or a halt).
    #[serde(default)]
    pub interval: Option<Duration>,
    /// When the candidate is halted and every CR goes back to the stable endpoint.
    #[serde(default)]
    pub halt: Halt,
}

/// `remote.rollout.halt`: the candidate halts when, within `window`, it has served at least
/// `minReconciles` reconciles and more than `maxFailureRate` of them failed, a higher rate
/// than the stable endpoint's over the same window.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Halt {
    /// The share of the candidate's reconciles that may fail (0 to 1).
    #[serde(default = "default_max_failure_rate")]
    pub max_failure_rate: f64,
    /// Fewer reconciles than this within the window never halt.
    #[serde(default = "default_min_reconciles")]
    pub min_reconciles: u32,
    /// The span the rates are counted over.
    #[serde(default = "default_window")]
    pub window: Duration,
}

impl Default for Halt {
    fn default() -> Halt {
        Halt {
            max_failure_rate: default_max_failure_rate(),
            min_reconciles: default_min_reconciles(),
            window: default_window(),
        }
    }
}

fn default_percent() -> u32 {
    10
}

fn default_max_failure_rate() -> f64 {
    0.2
}

fn default_min_reconciles() -> u32 {
    5
}

fn default_window() -> Duration {
    Duration::from_secs(300)
}
