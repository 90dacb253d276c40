//! The Katalog file itself: `apiVersion`, `kind`, `metadata`, the top-level `notes` and
//! `spec.crds`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::entry::CrdEntry;
use crate::problem::Problem;

/// One Katalog file (or document): a set of CRD entries ork reconciles.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Katalog {
    /// The Katalog format's version: Orkestra's `orkestra.orkspace.io/v1`, or inrun's
    /// `inrun.dev/v1` (Orkestra renamed), read alike.
    #[schemars(extend("enum" = crate::limits::API_VERSIONS))]
    pub api_version: String,
    /// The kind of file: `Katalog`, or inrun's `Catalog`; Orkestra's Komposer and Motif files
    /// are not read.
    #[schemars(extend("enum" = crate::limits::KINDS))]
    pub kind: String,
    /// Who made the Katalog and what it is, shown by `ork validate` and `/katalog`.
    #[serde(default)]
    pub metadata: KatalogMeta,
    /// Template functions defined by the Katalog, usable in every templated field.
    #[serde(default, skip_serializing_if = "NotesBlock::is_empty")]
    pub notes: NotesBlock,
    /// The custom resource types ork reconciles.
    pub spec: KatalogSpec,
    /// What `ork validate` should tell the user that is not an error (for example that a
    /// templated Secret name widens RBAC). Filled by [`crate::load_file`].
    #[serde(skip)]
    #[schemars(skip)]
    pub notices: Vec<Problem>,
}

/// The Katalog's `metadata`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KatalogMeta {
    /// The Katalog's name, written in the `orkestra.orkspace.io/managed-by` annotation of CRs
    /// and children; empty: the entry's name is written instead.
    #[serde(default)]
    pub name: String,
    /// Orkestra's tenant grouping of entries (shown by `/katalog`; no effect on watching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Free text, shown by `ork validate` and `/katalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The Katalog's own version, shown by `ork validate` and `/katalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Shown by `ork validate` and `/katalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Shown by `ork validate` and `/katalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Shown by `ork validate` and `/katalog`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The Katalog's own labels, shown by `/katalog` (not written on any object).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The Katalog's own annotations, shown by `/katalog` (not written on any object).
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// Top-level `notes:`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotesBlock {
    /// Named template expressions, called as `{{ name }}` in any template of the Katalog.
    #[serde(default)]
    pub functions: Vec<NoteFunction>,
}

impl NotesBlock {
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }
}

/// `notes.functions[]`: a named template expression, called as `{{ name }}` in any template.
/// The expression sees the same data as its caller; its output is trimmed, and `true`/`false`
/// become booleans. Arguments given in a call are `$1`, `$2`… (and `$args`) inside it.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NoteFunction {
    /// The name templates call it by: letters, digits and `_`, not a sentinel's, nor a
    /// built-in function's without `shadow`.
    pub name: String,
    /// Free text for the reader; ork does not use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A template (Go syntax) rendered with the caller's data and arguments; its output,
    /// trimmed, is the value (`true` and `false` become booleans).
    pub expression: String,
    /// Acknowledges that this note replaces a built-in function of the same name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shadow: bool,
}

/// The Katalog's `spec`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KatalogSpec {
    /// The entries, by name: each key (letters, digits and `-`, as Orkestra's, `webApp` or
    /// `web-app`) names the entry in logs, metrics and health URLs; each value is one custom
    /// resource type and its reconciler.
    pub crds: BTreeMap<String, CrdEntry>,
}
