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
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: KatalogMeta,
    /// Template functions defined by the Katalog, usable in every templated field.
    #[serde(default, skip_serializing_if = "NotesBlock::is_empty")]
    pub notes: NotesBlock,
    pub spec: KatalogSpec,
    /// What `ork validate` should tell the user that is not an error (for example that a
    /// templated Secret name widens RBAC). Filled by [`crate::load_file`].
    #[serde(skip)]
    #[schemars(skip)]
    pub notices: Vec<Problem>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KatalogMeta {
    #[serde(default)]
    pub name: String,
    /// Orkestra's tenant grouping of entries (shown by `/katalog`; no effect on watching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// Top-level `notes:`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotesBlock {
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
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub expression: String,
    /// Acknowledges that this note replaces a built-in function of the same name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shadow: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KatalogSpec {
    pub crds: BTreeMap<String, CrdEntry>,
}
