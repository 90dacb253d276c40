//! `operatorBox.preReconcile` (sentinels and gates) and `operatorBox.validation` (rules): the
//! conditions checked before a call.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::condition::Condition;
use crate::sentinel::Sentinel;

/// `operatorBox.preReconcile`: the sentinels ork computes and the gates that read them.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreReconcile {
    /// The sentinels ork computes on each CR change (what changed since the CR it saw last),
    /// for the gates and `prepared.sentinels`; a gate may use only these.
    #[serde(default)]
    pub sentinels: Vec<Sentinel>,
    /// Checked on each change of a CR: when it is closed, the change queues no reconcile
    /// (resyncs and child changes still do).
    #[serde(default)]
    pub enqueue_gate: Option<Gate>,
    /// Checked before each call: when it is closed, the CR is not called this time, its status
    /// is left as it is, and the entry's health shows `gated`.
    #[serde(default)]
    pub reconcile_gate: Option<Gate>,
}

/// A gate passes when every `when` condition holds, one `or` condition holds (if any), and one
/// of the `sentinels` listed is true (if any).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gate {
    /// Conditions that must all hold.
    #[serde(default)]
    pub when: Vec<Condition>,
    /// Conditions of which at least one must hold, when any are given.
    #[serde(default)]
    pub or: Vec<Condition>,
    /// Orkestra's shorthand: the gate opens when any of these (declared) sentinels is true.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sentinels: Vec<Sentinel>,
    /// What the gate does when a condition cannot be evaluated (a template that fails).
    #[serde(default)]
    pub fail_policy: FailPolicy,
}

/// `failPolicy`: a gate's answer when one of its conditions cannot be evaluated.
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
    /// Conditions on the CR, checked before each call but a finalize call: a failed `deny`
    /// rule fails the reconcile (reason `ValidationFailed`) without calling, a failed `warn`
    /// rule is sent in `prepared.validation.warnings`.
    #[serde(default)]
    pub rules: Vec<Condition>,
}
