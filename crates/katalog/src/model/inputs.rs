//! `operatorBox.observe.inputs`: objects that are neither the CR nor its children which the
//! service needs to decide (a Secret's value, a shared ConfigMap, a Namespace's labels), sent
//! in `prepared.inputs` and watched (SPEC §20).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::template::Template;

/// One input: which objects of which type, found from the CR, under which key.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Input {
    /// The key under `prepared.inputs`; unique within the entry.
    pub name: String,
    /// The type's `group/version` (`v1` for the core group).
    pub api_version: String,
    /// The type's kind (`Secret`, `ConfigMap`, a CRD's kind).
    pub kind: String,
    /// The type's plural (`spec.names.plural` of its CRD): only for `ork generate rbac`, which
    /// names resources by plural, when the kind is not one of Kubernetes' own.
    #[serde(default)]
    pub plural: Option<String>,
    /// The one object sent (or `null` when there is none), by name: a template over the CR
    /// (`{{ .spec.dbSecret }}`). Without it, a list of the objects `matchLabels` and
    /// `matchExpressions` select.
    #[serde(default)]
    pub match_name: Option<Template>,
    /// Without `matchName`: only objects carrying all of these labels are sent (values are
    /// templates over the CR).
    #[serde(default)]
    pub match_labels: BTreeMap<String, Template>,
    /// Without `matchName`: label requirements every object sent meets, as in a Kubernetes
    /// label selector.
    #[serde(default)]
    pub match_expressions: Vec<MatchExpression>,
    /// The namespace looked in, written in the Katalog (never chosen by the CR); absent: the
    /// CR's own. Not used for a cluster-scoped type.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Sends a Secret's `data`; without it a Secret arrives without its values (its name,
    /// labels and type only).
    #[serde(default)]
    pub values: bool,
    /// An absent object is sent as `null` (an empty list for a selector). Without it the CR
    /// waits, its Ready condition naming the missing input, until the object exists.
    #[serde(default)]
    pub optional: bool,
}

/// A label requirement of `matchExpressions`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchExpression {
    /// The label's key.
    pub key: String,
    pub operator: LabelOperator,
    /// The values `In` and `NotIn` compare with; empty for `Exists` and `DoesNotExist`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// How a `matchExpressions` requirement compares a label.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum LabelOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl MatchExpression {
    /// Whether labels read by `get` meet this requirement.
    pub fn holds<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match (self.operator, get(&self.key)) {
            (LabelOperator::In, Some(v)) => listed(v),
            (LabelOperator::NotIn, Some(v)) => !listed(v),
            (LabelOperator::NotIn | LabelOperator::DoesNotExist, None)
            | (LabelOperator::Exists, Some(_)) => true,
            _ => false,
        }
    }
}

impl Input {
    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        self.api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }

    /// Whether this is the core group's Secret (whose `data` goes only with `values`).
    pub fn is_secret(&self) -> bool {
        self.group().is_empty() && self.kind == "Secret"
    }

    /// The plural: `plural`, or the built-in kind's; `None` when only discovery can tell.
    pub fn plural(&self) -> Option<String> {
        self.plural.clone().or_else(|| {
            crate::kinds::by_kind(&self.kind, Some(self.group())).map(|b| b.plural.to_string())
        })
    }

    /// Whether the type is cluster-scoped, as far as Kubernetes' built-in kinds tell (a CRD's
    /// type is taken to be namespaced; `ork run` asks discovery).
    pub fn cluster_scoped(&self) -> bool {
        crate::kinds::by_kind(&self.kind, Some(self.group())).is_some_and(|b| !b.namespaced)
    }

    /// `Kind` or `group/Kind`, as messages name the type.
    pub fn describe_type(&self) -> String {
        match self.group() {
            "" => self.kind.clone(),
            group => format!("{group}/{}", self.kind),
        }
    }
}
