//! `spec.crds.<name>`: one custom resource type, where its CRs are watched (namespace guards),
//! which of ork's routes it has, and `apiTypes`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::defaults::yes;
use super::depends_on::DependsOn;
use super::operator_box::OperatorBox;
use crate::template::{Notes, SharedNotes, Template};

/// `spec.crds.<name>`: one custom resource type and how it is reconciled.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrdEntry {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub description: Option<String>,
    /// Orkestra's `mode`; only `dynamic` applies to ork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Complete after loading: taken from `crdFile` when not written (and checked against it
    /// when written).
    #[serde(default)]
    pub api_types: ApiTypes,
    /// The CRD manifest, resolved against the Katalog's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd_file: Option<PathBuf>,
    /// Sample CRs applied once the CRD is established (development helper), resolved paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cr_files: Vec<PathBuf>,
    /// Manifests applied at start (development helper), resolved paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<PathBuf>,
    #[serde(default = "yes")]
    pub namespaced: bool,
    /// Watch only this namespace; empty watches all.
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub label_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub field_selector: BTreeMap<String, String>,
    /// Labels written onto each CR (values are templates over the CR).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Template>,
    /// Annotations written onto each CR (values are templates over the CR).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, Template>,
    /// Only CRs in these namespaces are reconciled (exact names or `prefix-*` / `*-suffix`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_namespaces: Vec<String>,
    /// CRs in these namespaces are never reconciled (same patterns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restricted_namespaces: Vec<String>,
    #[serde(default)]
    pub endpoints: Endpoints,
    #[serde(default)]
    pub depends_on: DependsOn,
    #[serde(default)]
    pub force_conflict: Option<bool>,
    pub operator_box: OperatorBox,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) notes: Option<SharedNotes>,
    /// Set when the entry runs a Metacontroller CompositeController (SPEC §15): its hooks'
    /// protocol, finalizer and update strategies.
    #[serde(skip)]
    #[schemars(skip)]
    pub metacontroller: Option<std::sync::Arc<super::composite::Composite>>,
}

impl CrdEntry {
    /// The Katalog's notes, for building a [`RenderContext`].
    pub fn notes(&self) -> Option<&Notes> {
        self.notes.as_deref()
    }

    /// Allowed namespace patterns of the entry and of `operatorBox.runtime`, merged.
    pub fn effective_allowed_namespaces(&self) -> Vec<String> {
        merge_patterns(
            &self.allowed_namespaces,
            &self.operator_box.runtime.allowed_namespaces,
        )
    }

    /// Restricted namespace patterns of the entry and of `operatorBox.runtime`, merged.
    pub fn effective_restricted_namespaces(&self) -> Vec<String> {
        merge_patterns(
            &self.restricted_namespaces,
            &self.operator_box.runtime.restricted_namespaces,
        )
    }

    /// Whether CRs in `namespace` are reconciled under the namespace guards.
    pub fn namespace_allowed(&self, namespace: &str) -> bool {
        let allowed = self.effective_allowed_namespaces();
        if self
            .effective_restricted_namespaces()
            .iter()
            .any(|p| namespace_matches(namespace, p))
        {
            return false;
        }
        allowed.is_empty() || allowed.iter().any(|p| namespace_matches(namespace, p))
    }

    /// The one namespace the guards pin the entry to (`namespace`, or a single exact allowed
    /// namespace with no restrictions), so a watch can be scoped to it.
    pub fn single_namespace(&self) -> Option<String> {
        if let Some(ns) = self.namespace.as_ref().filter(|n| !n.is_empty()) {
            return Some(ns.clone());
        }
        let allowed = self.effective_allowed_namespaces();
        match allowed.as_slice() {
            [one] if !one.contains('*') && self.effective_restricted_namespaces().is_empty() => {
                Some(one.clone())
            }
            _ => None,
        }
    }
}

fn merge_patterns(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in a.iter().chain(b) {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

/// Orkestra's namespace patterns: exact, `*`, `prefix*` or `*suffix`.
pub fn namespace_matches(namespace: &str, pattern: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    if let Some(prefix) = pattern.strip_suffix('*') {
        return namespace.starts_with(prefix);
    }
    if let Some(suffix) = pattern.strip_prefix('*') {
        return namespace.ends_with(suffix);
    }
    namespace == pattern
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiTypes {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub plural: String,
}

/// `endpoints`: which of ork's per-entry HTTP routes exist (all by default).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Endpoints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `/katalog/{entry}/health` (and the health annotation on CRs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<bool>,
    /// `/katalog/{entry}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<bool>,
}

impl Endpoints {
    pub fn health_enabled(&self) -> bool {
        self.enabled != Some(false) && self.health != Some(false)
    }

    pub fn info_enabled(&self) -> bool {
        self.enabled != Some(false) && self.info != Some(false)
    }
}
