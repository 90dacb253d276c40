//! The request body POSTed to the service (SPEC §2.1).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Group/version/kind with capitalised keys, as Orkestra's Go encoding writes them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct Gvk {
    /// The CRs' API group (the entry's `apiTypes.group`).
    #[serde(rename = "Group")]
    pub group: String,
    /// The version ork watches the CRs in.
    #[serde(rename = "Version")]
    pub version: String,
    /// The CRs' kind.
    #[serde(rename = "Kind")]
    pub kind: String,
}

/// One reconcile's request: the CR, and what ork gathered for it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// `namespace/name`, or `name` for cluster-scoped CRs.
    pub key: String,
    /// The CR's group, version and kind.
    pub gvk: Gvk,
    /// The CR as ork's watch last saw it, without the entry's `payload.object.exclude` paths.
    pub object: Value,
    /// The entry's `remote.args`, rendered over the CR; absent when the entry has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_json::Map<String, Value>>,
    /// What ork gathered for this call: children, other entries' objects, sentinels, rule
    /// results, the entry's health, and why the call happens.
    pub prepared: Prepared,
}

/// `prepared`: what ork gathered for the call.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Prepared {
    /// The CR's own children: lowercase kind → name → object, as the entry's
    /// `payload.children` sends them (Secrets without their values unless `secretValues`).
    pub children: BTreeMap<String, BTreeMap<String, Value>>,
    /// The entry's `observe.cross` objects, under each item's `as`: one object (or `null`)
    /// for a `name` selector, else a list; `null` while the other entry is not running.
    pub cross: BTreeMap<String, Value>,
    /// The entry's `observe.inputs`, under each input's `name`: one object (or `null`) for a
    /// `matchName` input, else a list, without `managedFields`; a Secret without its `data`
    /// unless the input says `values: true`. Absent when the entry declares no input.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, Value>,
    /// Each sentinel the entry declares, `true` when the CR change behind this call changed
    /// what it watches (all `true` for a CR ork had not seen); empty for a call no CR change
    /// queued (a resync, a child, a retry).
    pub sentinels: BTreeMap<String, bool>,
    /// The results of the entry's `operatorBox.validation` rules for the CR.
    pub validation: ValidationReport,
    /// The entry's health, across all its CRs, as `/katalog/{entry}/health` reports it.
    pub health: HealthSummary,
    /// Why this call happens, and which try it is.
    pub trigger: Trigger,
    /// `true` for a finalize call: the CR is being deleted and the entry sets
    /// `remote.finalize`; answer `finalized: true` to let it go.
    pub finalizing: bool,
}

/// `prepared.validation`: how the CR fared against the entry's validation rules.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidationReport {
    /// Whether every `deny` rule held: always `true` in a request, since a failed `deny` rule
    /// fails the reconcile before any call (and a finalize call skips the rules).
    pub passed: bool,
    /// The messages of the `deny` rules that failed: always empty in a request.
    pub failed: Vec<String>,
    /// The messages of the `warn` rules that failed (a rule's `message`, else what it
    /// checked).
    pub warnings: Vec<String>,
}

impl Default for ValidationReport {
    fn default() -> Self {
        ValidationReport {
            passed: true,
            failed: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// `prepared.health`: the entry's health, across all its CRs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthSummary {
    /// `pending` (no reconcile has succeeded yet), `healthy`, `degraded` (`failureThreshold`
    /// failures in a row, or the CRs' type is not served) or `gated` (a reconcile gate held a
    /// CR back).
    pub state: String,
    /// The entry's failed reconciles in a row, across its CRs; a success resets it.
    pub consecutive_fails: u32,
    /// The entry's failed reconciles as a percentage of all it ran since it started, to one
    /// decimal.
    pub error_rate_percent: f64,
}

/// `prepared.trigger`: why this call happens.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trigger {
    /// `create` (a CR ork had not seen: new, or listed when ork starts), `update` (the CR
    /// changed, beyond its status and ork's own labels and annotations), `child` (one of its
    /// children changed or was deleted), `resync` (the periodic call), `requeue` (after the
    /// answer's `requeueAfter`, or a finalize call not yet finalized), `retry` (after a
    /// failure), `manual` (`ork retry` or a new `orkestra.orkspace.io/requested-at`),
    /// `gained` (this replica took over the CR's shard, with `--shards`), `related` (an
    /// object a Metacontroller customize hook relates to the CR changed) or `written` (a
    /// Metacontroller controller's last sync wrote children: it sees them now).
    #[schemars(extend("enum" = TRIGGER_REASONS))]
    pub reason: String,
    /// 1 for the first try, growing with each retry after failures.
    pub attempt: u32,
}

/// Every `prepared.trigger.reason` ork sends (the engine's queue reasons but `sweep`, which
/// calls no service), published as the schema's `enum`.
pub(crate) const TRIGGER_REASONS: [&str; 10] = [
    "create", "update", "child", "resync", "requeue", "retry", "manual", "gained", "related",
    "written",
];
