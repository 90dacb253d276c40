//! `operatorBox.preReconcile` (sentinels and gates) and `operatorBox.validation` (rules): the
//! conditions checked before a call.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::condition::Condition;
use crate::sentinel::Sentinel;

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreReconcile {
    #[serde(default)]
    pub sentinels: Vec<Sentinel>,
    #[serde(default)]
    pub enqueue_gate: Option<Gate>,
    #[serde(default)]
    pub reconcile_gate: Option<Gate>,
}

/// A gate passes when every `when` condition holds, one `or` condition holds (if any), and one
/// of the `sentinels` listed is true (if any).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gate {
    #[serde(default)]
    pub when: Vec<Condition>,
    #[serde(default)]
    pub or: Vec<Condition>,
    /// Orkestra's shorthand: the gate opens when any of these (declared) sentinels is true.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sentinels: Vec<Sentinel>,
    /// What the gate does when a condition cannot be evaluated (a template that fails).
    #[serde(default)]
    pub fail_policy: FailPolicy,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FailPolicy {
    /// Pass the gate (Orkestra's default).
    #[default]
    Open,
    /// Hold the object back.
    Closed,
}

/// `operatorBox.validation`: conditions checked before the call; results go to
/// `prepared.validation`, and a failed `deny` rule fails the reconcile without calling.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidationRules {
    #[serde(default)]
    pub rules: Vec<Condition>,
}
