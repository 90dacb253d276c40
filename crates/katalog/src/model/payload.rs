//! `remote.payload`: what of the CR and its children is sent to the service.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::defaults::yes;

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Payload {
    #[serde(default)]
    pub object: ObjectPayload,
    #[serde(default)]
    pub children: ChildrenPayload,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectPayload {
    #[serde(default)]
    pub exclude: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildrenPayload {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub exclude: Vec<String>,
    /// When set, only these child types (lowercase kind, e.g. `deployment`) are sent, each
    /// with its own `exclude` (`null`/absent: the root `exclude`; `[]`: strip nothing).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, Option<ChildResourcePayload>>,
    /// Send Secrets with their `data` and `stringData`. Off by default (SPEC §11): what the
    /// cluster filled into a Secret ork applied (a token, a generated key) does not go back to
    /// the service unless the Katalog says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret_values: bool,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildResourcePayload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<Vec<String>>,
}

impl ChildrenPayload {
    /// The paths to strip from children of `type_name` (lowercase kind), or `None` when that
    /// type is not sent at all.
    pub fn exclude_for(&self, type_name: &str) -> Option<&[String]> {
        if !self.enabled {
            return None;
        }
        if self.resources.is_empty() {
            return Some(&self.exclude);
        }
        match self.resources.get(type_name)? {
            Some(ChildResourcePayload {
                exclude: Some(list),
            }) => Some(list),
            _ => Some(&self.exclude),
        }
    }
}

impl Default for ChildrenPayload {
    fn default() -> Self {
        ChildrenPayload {
            enabled: true,
            exclude: Vec::new(),
            resources: BTreeMap::new(),
            secret_values: false,
        }
    }
}
