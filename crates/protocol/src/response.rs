//! The service's answer (SPEC §2.2) and what [`crate::decide`] makes of it: all or nothing.

use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::policy::{Limits, ManagedType, OwnerRef};
use crate::schema;

/// Why a response was rejected; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    #[error("response is not valid JSON for protocol v1: {0}")]
    Malformed(String),
    #[error("{0}")]
    Invalid(String),
    #[error("resources[{index}]: {message}")]
    Resource { index: usize, message: String },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok {
        requeue_after: Option<Duration>,
    },
    Requeue {
        after: Duration,
    },
    /// The message is the service's, cleaned (one line, no control characters, at most 1000
    /// characters).
    Error {
        message: String,
    },
}

/// A condition the service reports, merged into `.status.conditions` by type.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCondition {
    /// Any type but `Ready`, which is ork's own.
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::condition_type")]
    pub type_: String,
    #[schemars(schema_with = "schema::condition_status")]
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

/// An event the service wants recorded on the CR.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEvent {
    #[serde(rename = "type", default = "normal")]
    #[schemars(schema_with = "schema::event_type")]
    pub type_: String,
    #[schemars(schema_with = "schema::event_reason")]
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

fn normal() -> String {
    "Normal".into()
}

/// A child ready to apply: a complete object, server-owned fields removed.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredChild {
    /// The declared type, with `version` set to the child's own (a served one).
    pub managed: ManagedType,
    pub name: String,
    /// `None` for cluster-scoped children.
    pub namespace: Option<String>,
    pub object: Value,
    /// The resource's own `forceConflict` (full form: next to `apiVersion`; intent: next to
    /// `fields` or inside them), to be honoured over the entry's setting.
    pub force_conflict: Option<bool>,
}

impl DesiredChild {
    /// True when Kubernetes garbage collection can follow an owner reference to the CR.
    pub fn same_namespace_as(&self, owner: &OwnerRef) -> bool {
        self.namespace.is_some() && self.namespace == owner.namespace
    }
}

/// A checked answer.
#[derive(Clone, Debug)]
pub struct Decision {
    pub outcome: Outcome,
    pub status: Option<Map<String, Value>>,
    /// `None`: leave children alone. `Some([])`: the desired set is empty.
    pub resources: Option<Vec<DesiredChild>>,
    /// Reasons and messages cleaned.
    pub conditions: Vec<ServiceCondition>,
    /// Reasons (at most 128 characters) and messages (1000) cleaned.
    pub events: Vec<ServiceEvent>,
    pub finalized: bool,
    /// Legal but probably not meant: unknown fields ork ignored (in the answer or in an
    /// intent), values it replaced by Orkestra's defaults. Cleaned text.
    pub warnings: Vec<String>,
    /// A Metacontroller DecoratorController's labels and annotations for the object it
    /// decorates (SPEC §15); `None` for every other answer.
    pub decoration: Option<Decoration>,
}

/// What a Metacontroller DecoratorController's answer asks of the object it decorates: labels
/// and annotations to set (a `null` value removes one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decoration {
    pub labels: Map<String, Value>,
    pub annotations: Map<String, Value>,
}

/// The service's answer as sent (SPEC §2.2), before [`crate::decide`] checks it.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    /// `ok` (or empty): done. `requeue`: done, call again after `requeueAfter`. `error`: failure.
    #[serde(default)]
    #[schemars(schema_with = "schema::result")]
    pub result: Option<String>,
    /// A Go duration such as `60s` or `1m30s`, between 1s and 1 year: required with
    /// `requeue`, allowed with `ok` (where `0s` means no requeue).
    #[serde(default)]
    #[schemars(schema_with = "schema::requeue_after")]
    pub requeue_after: Option<String>,
    /// A non-empty message makes the reconcile a failure, whatever `result` says.
    #[serde(default)]
    pub error: Option<String>,
    /// Merged into the CR's `.status`; `null` values delete keys; absent leaves status alone.
    /// At most 256 KiB of JSON.
    #[serde(default)]
    pub status: Option<Map<String, Value>>,
    /// The full desired set of children. Each is a full object (`apiVersion`, `kind`,
    /// `metadata.name`, …) or an intent `{type, fields}` with type one of deployment, service,
    /// configmap, secret, serviceaccount, ingress, statefulset, job, cronjob, custom. Absent:
    /// leave children alone; `[]`: no children (they are pruned).
    #[serde(default)]
    #[schemars(schema_with = "schema::resources")]
    pub resources: Option<Vec<Value>>,
    /// Merged into `.status.conditions` by type (`Ready` is ork's own).
    #[serde(default)]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Option<Vec<ServiceCondition>>,
    /// Recorded as Kubernetes events on the CR.
    #[serde(default)]
    #[schemars(schema_with = "events_schema")]
    pub events: Option<Vec<ServiceEvent>>,
    /// For finalize calls: `true` lets the CR go.
    #[serde(default)]
    pub finalized: Option<bool>,
}

/// `conditions`: at most [`Limits::conditions`] of them.
fn conditions_schema(generator: &mut SchemaGenerator) -> Schema {
    let item = generator.subschema_for::<ServiceCondition>().to_value();
    schema::schema(json!({
        "type": ["array", "null"],
        "maxItems": Limits::default().conditions,
        "items": item
    }))
}

/// `events`: at most [`Limits::events`] of them.
fn events_schema(generator: &mut SchemaGenerator) -> Schema {
    let item = generator.subschema_for::<ServiceEvent>().to_value();
    schema::schema(json!({
        "type": ["array", "null"],
        "maxItems": Limits::default().events,
        "items": item
    }))
}

/// The top-level fields of [`Response`], as sent.
pub(crate) const FIELDS: [&str; 8] = [
    "result",
    "requeueAfter",
    "error",
    "status",
    "resources",
    "conditions",
    "events",
    "finalized",
];
