//! `remote.payload`: what of the CR and its children is sent to the service.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::defaults::yes;

/// `remote.payload`: what of the CR and its children the request carries.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Payload {
    /// What of the CR is sent as the request's `object`.
    #[serde(default)]
    pub object: ObjectPayload,
    /// Which children are sent in `prepared.children`, and what of them.
    #[serde(default)]
    pub children: ChildrenPayload,
}

/// `payload.object`: the CR as sent.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectPayload {
    /// Dot paths removed from the CR before it is sent (`spec.secret`); a path the CR does
    /// not have is skipped.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// `payload.children`: the children as sent.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildrenPayload {
    /// `false` sends `prepared.children` empty.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Dot paths removed from every child before it is sent (`metadata.annotations`).
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

/// `payload.children.resources.<type>`: how children of one type are sent.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildResourcePayload {
    /// Dot paths removed from this type's children instead of the root `exclude` (`null` or
    /// absent: the root `exclude`; `[]`: none).
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
