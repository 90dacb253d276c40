//! `operatorBox`: the sections of an entry's reconcile, and `observe.cross`, the other
//! entries' objects sent along.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::gates::{PreReconcile, ValidationRules};
use super::reconcile::Reconcile;
use crate::template::Template;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorBox {
    #[serde(default)]
    pub pre_reconcile: PreReconcile,
    #[serde(default)]
    pub observe: Observe,
    #[serde(default)]
    pub validation: ValidationRules,
    pub reconcile: Reconcile,
    /// Orkestra's `operatorBox.runtime`; ork takes its namespace guards.
    #[serde(default)]
    pub runtime: RuntimeBox,
}

/// `operatorBox.runtime`: namespace guards (merged with the entry's own).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeBox {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_namespaces: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restricted_namespaces: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observe {
    #[serde(default)]
    pub cross: Vec<CrossRef>,
}

/// Objects of another Katalog entry sent to the service in `prepared.cross.<as>`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrossRef {
    pub crd: String,
    #[serde(default)]
    pub selector: CrossSelector,
    #[serde(rename = "as")]
    pub alias: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrossSelector {
    #[serde(default)]
    pub name: Option<Template>,
    #[serde(default)]
    pub namespace: Option<Template>,
    #[serde(default)]
    pub labels: BTreeMap<String, Template>,
}
