//! `operatorBox`: the sections of an entry's reconcile, and `observe.cross`, the other
//! entries' objects sent along.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::gates::{PreReconcile, ValidationRules};
use super::inputs::Input;
use super::reconcile::Reconcile;
use crate::template::Template;

/// `operatorBox`: what ork does for each CR of the entry: gates, validation rules, the objects
/// sent along, and the call.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorBox {
    /// The sentinels ork computes on each CR change, and the gates that hold a CR back.
    #[serde(default)]
    pub pre_reconcile: PreReconcile,
    /// Other entries' objects sent to the service with each request.
    #[serde(default)]
    pub observe: Observe,
    /// Conditions on the CR checked before each call.
    #[serde(default)]
    pub validation: ValidationRules,
    /// How the service is called, how often, and how failures are retried.
    pub reconcile: Reconcile,
    /// Orkestra's `operatorBox.runtime`; ork takes its namespace guards.
    #[serde(default)]
    pub runtime: RuntimeBox,
}

/// `operatorBox.runtime`: namespace guards (merged with the entry's own).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeBox {
    /// Added to the entry's `allowedNamespaces`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_namespaces: Vec<String>,
    /// Added to the entry's `restrictedNamespaces`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restricted_namespaces: Vec<String>,
}

/// `operatorBox.observe`: what the service sees besides the CR and its children.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observe {
    /// Each item sends another entry's CRs in `prepared.cross`, under its `as`.
    #[serde(default)]
    pub cross: Vec<CrossRef>,
    /// Objects of any type the service needs (Secrets, ConfigMaps, other CRs, cluster-scoped
    /// objects), in `prepared.inputs` under each item's `name`; ork watches them, and a change
    /// reconciles exactly the CRs that read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<Input>,
}

/// Objects of another Katalog entry sent to the service in `prepared.cross.<as>`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrossRef {
    /// The name of the Katalog entry whose CRs are sent (`null` while that entry is not
    /// running).
    pub crd: String,
    /// Which of that entry's CRs are sent, rendered over this CR.
    #[serde(default)]
    pub selector: CrossSelector,
    /// The key under `prepared.cross`; unique within the entry.
    #[serde(rename = "as")]
    pub alias: String,
}

/// `observe.cross[].selector`: templates over the CR that pick the other entry's CRs.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrossSelector {
    /// The name of the one CR sent (`null` when there is none); `labels` are then not used.
    /// Absent: a list of the CRs that match `labels`.
    #[serde(default)]
    pub name: Option<Template>,
    /// The namespace looked in; absent: the CR's own. Not used for a cluster-scoped entry.
    #[serde(default)]
    pub namespace: Option<Template>,
    /// Without `name`: only CRs carrying all of these labels are sent (values are templates
    /// over the CR).
    #[serde(default)]
    pub labels: BTreeMap<String, Template>,
}
