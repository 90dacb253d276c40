//! `dependsOn`: the entries an entry waits for, and for what.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `dependsOn`: a list of entry names (condition `started`), a map name → condition, or a map
/// name → `{condition: …}`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DependsOn {
    /// No dependencies.
    #[default]
    None,
    /// Entry names, each to be `started`.
    List(Vec<String>),
    /// Entry names with the condition each must meet.
    Map(BTreeMap<String, Dependency>),
}

/// One `dependsOn` map value: `healthy` or `{condition: healthy}`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum Dependency {
    /// The condition alone.
    Condition(DependencyCondition),
    /// The condition as a map.
    Full {
        /// What the named entry must be before this entry's workers start.
        condition: DependencyCondition,
    },
}

impl Dependency {
    pub fn condition(self) -> DependencyCondition {
        match self {
            Dependency::Condition(c) | Dependency::Full { condition: c } => c,
        }
    }
}

impl DependsOn {
    /// Every dependency with its condition, lists meaning `started`.
    pub fn entries(&self) -> Vec<(String, DependencyCondition)> {
        match self {
            DependsOn::None => Vec::new(),
            DependsOn::List(names) => names
                .iter()
                .map(|n| (n.clone(), DependencyCondition::Started))
                .collect(),
            DependsOn::Map(map) => map
                .iter()
                .map(|(k, v)| (k.clone(), v.condition()))
                .collect(),
        }
    }
}

/// What an entry named in `dependsOn` must be before the dependent entry's workers start.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DependencyCondition {
    /// Started: its CRs listed and its own dependencies met.
    Started,
    /// Started, and its health `healthy` (or, with no CRs yet, no failure).
    Healthy,
}
