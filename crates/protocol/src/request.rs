//! The request body POSTed to the service (SPEC §2.1).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Group/version/kind with capitalised keys, as Orkestra's Go encoding writes them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub struct Gvk {
    #[serde(rename = "Group")]
    pub group: String,
    #[serde(rename = "Version")]
    pub version: String,
    #[serde(rename = "Kind")]
    pub kind: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// `namespace/name`, or `name` for cluster-scoped CRs.
    pub key: String,
    pub gvk: Gvk,
    pub object: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_json::Map<String, Value>>,
    pub prepared: Prepared,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Prepared {
    /// Owned children: lowercase kind → name → object.
    pub children: BTreeMap<String, BTreeMap<String, Value>>,
    pub cross: BTreeMap<String, Value>,
    pub sentinels: BTreeMap<String, bool>,
    pub validation: ValidationReport,
    pub health: HealthSummary,
    pub trigger: Trigger,
    pub finalizing: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidationReport {
    pub passed: bool,
    pub failed: Vec<String>,
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

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthSummary {
    pub state: String,
    pub consecutive_fails: u32,
    pub error_rate_percent: f64,
}

/// Why this call happens: `create`, `update`, `child`, `resync`, `requeue`, `retry`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trigger {
    pub reason: String,
    /// 1 for the first try, growing with each retry after failures.
    pub attempt: u32,
}
