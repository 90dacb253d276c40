//! `spec.crds.<name>`: one custom resource type, where its CRs are watched (namespace guards),
//! which of ork's routes it has, and `apiTypes`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::defaults::yes;
use super::depends_on::DependsOn;
use super::operator_box::OperatorBox;
use super::setup::Setup;
use crate::template::{Notes, SharedNotes, Template};

/// `spec.crds.<name>`: one custom resource type and how it is reconciled.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrdEntry {
    /// `false` keeps the entry in the file, but ork neither starts it nor grants it RBAC.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Free text about the entry, shown by `/katalog/{entry}`.
    #[serde(default)]
    pub description: Option<String>,
    /// Orkestra's `mode`; only `dynamic` applies to ork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = [crate::limits::DYNAMIC_MODE, null]))]
    pub mode: Option<String>,
    /// The CRs' type: group, version, kind and plural. Taken from `crdFile` when not written
    /// (and checked against it when written).
    #[serde(default)]
    pub api_types: ApiTypes,
    /// The CRD manifest (a file, relative to the Katalog's folder): `apiTypes` and the scope
    /// are read from it, and `ork run` installs or updates it before watching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd_file: Option<PathBuf>,
    /// Sample CRs applied once the CRD is established, relative to the Katalog's folder: a
    /// development helper, which `ork run --no-dev-files` (as the bundle runs it) skips.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cr_files: Vec<PathBuf>,
    /// Manifests applied when the entry starts, relative to the Katalog's folder, and what to
    /// wait for before it starts: a list of files, or `{apply, wait}`. A development helper,
    /// which `ork run --no-dev-files` (as the bundle runs it) skips.
    #[serde(default, skip_serializing_if = "Setup::is_unset")]
    pub setup: Setup,
    /// Whether the CRs are namespaced. With `crdFile` the CRD's scope decides, and a
    /// different value here is an error.
    #[serde(default = "yes")]
    pub namespaced: bool,
    /// Watch only this namespace (the generated RBAC is then a Role there); empty watches all.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Only CRs carrying all of these labels are watched (a label selector `key=value,…`).
    #[serde(default)]
    pub label_selector: BTreeMap<String, String>,
    /// Only CRs matching all of these fields are watched (a field selector such as
    /// `metadata.name=x`).
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
    /// Orkestra's switches for the entry's HTTP routes; read and shown, but ork serves its
    /// routes whatever they say.
    #[serde(default)]
    pub endpoints: Endpoints,
    /// Entries this one waits for: its workers start only once each is started (or healthy,
    /// as asked).
    #[serde(default)]
    pub depends_on: DependsOn,
    /// Whether children are server-side applied with `force`, taking fields another field
    /// manager owns; `false` makes such a conflict a failed apply. Absent: `true`.
    #[serde(default)]
    pub force_conflict: Option<bool>,
    /// What ork does for each CR: gates, validation, the objects sent along, and the call.
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

    /// The namespaces the guards pin the entry to, so its watches (and its generated RBAC) can
    /// be scoped to them: `namespace`, or the allowed namespaces when every one is an exact name
    /// (less those the restrictions exclude), in the order given. `None` when the entry watches
    /// every namespace (no guard, a wildcard, or nothing left).
    pub fn watched_namespaces(&self) -> Option<Vec<String>> {
        if let Some(ns) = self.namespace.as_ref().filter(|n| !n.is_empty()) {
            return Some(vec![ns.clone()]);
        }
        let allowed = self.effective_allowed_namespaces();
        if allowed.is_empty() || allowed.iter().any(|p| p.contains('*')) {
            return None;
        }
        let restricted = self.effective_restricted_namespaces();
        let watched: Vec<String> = allowed
            .into_iter()
            .filter(|ns| !restricted.iter().any(|p| namespace_matches(ns, p)))
            .collect();
        (!watched.is_empty()).then_some(watched)
    }

    /// The one namespace the guards pin the entry to ([`CrdEntry::watched_namespaces`] of one).
    pub fn single_namespace(&self) -> Option<String> {
        match self.watched_namespaces()?.as_slice() {
            [one] => Some(one.clone()),
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

/// `apiTypes`: the custom resource type an entry reconciles.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiTypes {
    /// The CRs' API group (`example.com`).
    #[serde(default)]
    pub group: String,
    /// The version ork watches the CRs in; from `crdFile`, its served storage version (else
    /// the first served one) when not written.
    #[serde(default)]
    pub version: String,
    /// The CRs' kind (`WebApp`).
    #[serde(default)]
    pub kind: String,
    /// The CRs' resource name, lowercase plural (`webapps`).
    #[serde(default)]
    pub plural: String,
}

/// `endpoints`: Orkestra's switches for an entry's HTTP routes. ork reads them, shows them in
/// `/katalog/{entry}` and serves its routes whatever they say.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Endpoints {
    /// Orkestra's switch for all of the entry's routes; no effect in ork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Orkestra's switch for `/katalog/{entry}/health`; no effect in ork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<bool>,
    /// Orkestra's switch for `/katalog/{entry}`; no effect in ork.
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
