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
    /// Not JSON, or a field of the wrong shape.
    #[error("response is not valid JSON for protocol v1: {0}")]
    Malformed(String),
    /// Well formed, but not acceptable (an unknown `result`, a cap exceeded, …).
    #[error("{0}")]
    Invalid(String),
    /// One entry of `resources` is refused.
    #[error("resources[{index}]: {message}")]
    Resource {
        /// Its place in `resources`, from 0.
        index: usize,
        message: String,
    },
}

/// What `result`, `requeueAfter` and `error` say together.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Done.
    Ok {
        /// Call again after this long (`requeueAfter` with `ok`); `None`: at the next event or
        /// resync.
        requeue_after: Option<Duration>,
    },
    /// Done; call again after `after`.
    Requeue { after: Duration },
    /// The message is the service's, cleaned (one line, no control characters, at most 1000
    /// characters).
    Error { message: String },
}

/// A condition the service reports for the CR's `.status.conditions`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCondition {
    /// Any type but `Ready`, which is ork's own; each type once per answer.
    #[serde(rename = "type")]
    #[schemars(schema_with = "schema::condition_type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`; `lastTransitionTime` moves when it changes.
    #[schemars(schema_with = "schema::condition_status")]
    pub status: String,
    /// The condition's reason, cut at 128 characters.
    #[serde(default)]
    pub reason: String,
    /// Free text, put on one line and cut at 1,000 characters.
    #[serde(default)]
    pub message: String,
}

/// An event the service wants recorded on the CR.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEvent {
    /// `Normal` or `Warning`.
    #[serde(rename = "type", default = "normal")]
    #[schemars(schema_with = "schema::event_type")]
    pub type_: String,
    /// The event's reason, required; cut at 128 characters.
    #[schemars(schema_with = "schema::event_reason")]
    pub reason: String,
    /// Free text, put on one line, the credential taken out, cut at 1,000 characters.
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
    /// `metadata.name`.
    pub name: String,
    /// `None` for cluster-scoped children.
    pub namespace: Option<String>,
    /// The object to apply, without `status` and the fields the server owns.
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
    /// The answer's `status`; `None`: leave status alone.
    pub status: Option<Map<String, Value>>,
    /// `None`: leave children alone. `Some([])`: the desired set is empty.
    pub resources: Option<Vec<DesiredChild>>,
    /// Reasons and messages cleaned.
    pub conditions: Vec<ServiceCondition>,
    /// Reasons (at most 128 characters) and messages (1000) cleaned.
    pub events: Vec<ServiceEvent>,
    /// The answer's `finalized` (absent: `false`).
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
    /// Labels to set on the decorated object (`null`: remove).
    pub labels: Map<String, Value>,
    /// Annotations to set on the decorated object (`null`: remove).
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
    /// The CR's whole `.status` as the service sees it (`conditions` and `observedGeneration`
    /// are ork's). When ork accepts the answer (it passes the check, and its children applied
    /// or it reports an error), keys returned before and left out now are removed and a
    /// `null` value deletes its key; absent or `null` leaves status alone. At most 256 KiB of
    /// JSON.
    #[serde(default)]
    pub status: Option<Map<String, Value>>,
    /// The full desired set of children. Each is a full object (`apiVersion`, `kind`,
    /// `metadata.name`, …) or an intent `{type, fields}` with type one of deployment, service,
    /// configmap, secret, serviceaccount, ingress, statefulset, job, cronjob, custom. Absent:
    /// leave children alone; `[]`: no children (those ork applied are pruned, unless
    /// `remote.prune: false`).
    #[serde(default)]
    #[schemars(schema_with = "schema::resources")]
    pub resources: Option<Vec<Value>>,
    /// The service's conditions in `.status.conditions`: with an accepted answer they replace
    /// the ones it returned before, so a condition it stops returning (every one, when
    /// absent) leaves the CR. `Ready` is ork's own.
    #[serde(default)]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Option<Vec<ServiceCondition>>,
    /// Recorded as Kubernetes events on the CR when ork accepts the answer.
    #[serde(default)]
    #[schemars(schema_with = "events_schema")]
    pub events: Option<Vec<ServiceEvent>>,
    /// For a finalize call (`prepared.finalizing`): `true` lets the CR go (ork deletes its
    /// children and removes its finalizer); otherwise ork asks again after `requeueAfter`, or
    /// 5s. The rest of a finalize answer is not applied.
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
