//! Decoding and checking the service's answer (SPEC §2.2–§2.3): all or nothing.

use std::collections::BTreeSet;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::intent::build_intent;

/// A child type the entry may manage, resolved through discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Namespaces other than the CR's that children of this type may live in.
    pub namespaces: Vec<String>,
    pub cluster_scoped: bool,
}

impl ManagedType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The CR a response is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// `None` for a cluster-scoped CR.
    pub namespace: Option<String>,
}

/// What a response may ask for.
#[derive(Clone, Debug)]
pub struct Policy {
    pub owner: OwnerRef,
    pub managed: Vec<ManagedType>,
    /// ork's own namespace: off limits unless declared.
    pub ork_namespace: String,
}

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
    Ok { requeue_after: Option<Duration> },
    Requeue { after: Duration },
    Error { message: String },
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEvent {
    #[serde(rename = "type", default = "normal")]
    pub type_: String,
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
    pub managed: ManagedType,
    pub name: String,
    /// `None` for cluster-scoped children.
    pub namespace: Option<String>,
    pub object: Value,
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
    pub conditions: Vec<ServiceCondition>,
    pub events: Vec<ServiceEvent>,
    pub finalized: bool,
}

/// The service's answer as sent (SPEC §2.2), before [`decide`] checks it.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    /// `ok` (or empty): done. `requeue`: done, call again after `requeueAfter`. `error`: failure.
    #[serde(default)]
    pub result: Option<String>,
    /// A duration such as `60s`: required with `requeue`, allowed with `ok`.
    #[serde(default)]
    pub requeue_after: Option<String>,
    /// A non-empty message makes the reconcile a failure, whatever `result` says.
    #[serde(default)]
    pub error: Option<String>,
    /// Merged into the CR's `.status`; `null` values delete keys; absent leaves status alone.
    #[serde(default)]
    pub status: Option<Map<String, Value>>,
    /// The full desired set of children. Each is a full object (`apiVersion`, `kind`,
    /// `metadata.name`, …) or an intent `{type, fields}` with type one of deployment, service,
    /// configmap, secret, serviceaccount, ingress, statefulset, job, cronjob, custom. Absent:
    /// leave children alone; `[]`: no children (they are pruned).
    #[serde(default)]
    pub resources: Option<Vec<Value>>,
    /// Merged into `.status.conditions` by type (`Ready` is ork's own).
    #[serde(default)]
    pub conditions: Option<Vec<ServiceCondition>>,
    /// Recorded as Kubernetes events on the CR.
    #[serde(default)]
    pub events: Option<Vec<ServiceEvent>>,
    /// For finalize calls: `true` lets the CR go.
    #[serde(default)]
    pub finalized: Option<bool>,
}

const SERVER_OWNED: [&str; 7] = [
    "ownerReferences",
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "selfLink",
];

/// Decodes and checks a response body against `policy`.
///
/// # Errors
/// The first reason the answer cannot be used whole: not JSON of the right shape, an unknown
/// `result`, `requeue` without `requeueAfter`, or any resource that is undeclared, malformed,
/// in a forbidden namespace, a duplicate or the CR itself.
pub fn decide(body: &[u8], policy: &Policy) -> Result<Decision, ResponseError> {
    let raw: Response =
        serde_json::from_slice(body).map_err(|e| ResponseError::Malformed(e.to_string()))?;
    let outcome = outcome_of(&raw)?;
    let conditions = raw.conditions.unwrap_or_default();
    for c in &conditions {
        check_condition(c).map_err(ResponseError::Invalid)?;
    }
    let events = raw.events.unwrap_or_default();
    for e in &events {
        check_event(e).map_err(ResponseError::Invalid)?;
    }
    let resources = raw
        .resources
        .map(|list| check_resources(list, policy))
        .transpose()?;
    Ok(Decision {
        outcome,
        status: raw.status,
        resources,
        conditions,
        events,
        finalized: raw.finalized.unwrap_or(false),
    })
}

/// What `result`, `requeueAfter` and `error` say together.
pub(crate) fn outcome_of(raw: &Response) -> Result<Outcome, ResponseError> {
    let requeue_after = raw
        .requeue_after
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(parse_go_duration)
        .transpose()?;
    let error = raw.error.clone().filter(|e| !e.is_empty());
    Ok(match (raw.result.as_deref().unwrap_or(""), error) {
        (_, Some(message)) => Outcome::Error { message },
        ("" | "ok", None) => Outcome::Ok { requeue_after },
        ("requeue", None) => Outcome::Requeue {
            after: requeue_after.ok_or_else(|| {
                ResponseError::Invalid("result=requeue but requeueAfter is empty".into())
            })?,
        },
        ("error", None) => Outcome::Error {
            message: "remote reconciler returned result=error with no message".into(),
        },
        (other, None) => {
            return Err(ResponseError::Invalid(format!(
                "unknown result value \"{other}\" (expected ok, requeue or error)"
            )));
        }
    })
}

pub(crate) fn check_condition(c: &ServiceCondition) -> Result<(), String> {
    if c.type_.is_empty() || !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
        return Err(format!(
            "condition {:?} needs a type and status True, False or Unknown",
            c.type_
        ));
    }
    if c.type_ == "Ready" {
        return Err("condition Ready is ork's own; return `error` to report failure".into());
    }
    Ok(())
}

pub(crate) fn check_event(e: &ServiceEvent) -> Result<(), String> {
    if !matches!(e.type_.as_str(), "Normal" | "Warning") || e.reason.is_empty() {
        return Err(format!(
            "event {:?} needs type Normal or Warning and a reason",
            e.reason
        ));
    }
    Ok(())
}

fn check_resources(list: Vec<Value>, policy: &Policy) -> Result<Vec<DesiredChild>, ResponseError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(list.len());
    for (index, entry) in list.into_iter().enumerate() {
        let err = |message: String| ResponseError::Resource { index, message };
        let child = check_one(entry, policy).map_err(err)?;
        let id = (
            child.managed.group.clone(),
            child.managed.kind.clone(),
            child.namespace.clone(),
            child.name.clone(),
        );
        if !seen.insert(id) {
            return Err(err(format!(
                "{} {} is listed twice",
                child.managed.kind, child.name
            )));
        }
        out.push(child);
    }
    Ok(out)
}

pub(crate) fn check_one(entry: Value, policy: &Policy) -> Result<DesiredChild, String> {
    let Value::Object(map) = entry else {
        return Err("expected an object".into());
    };
    let owner_ns = policy
        .owner
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let mut obj = if map.contains_key("apiVersion") {
        Value::Object(map)
    } else if let (Some(Value::String(t)), Some(Value::Object(fields))) =
        (map.get("type"), map.get("fields"))
    {
        build_intent(t, fields, &owner_ns).map_err(|e| format!("{t} intent: {e}"))?
    } else {
        return Err("expected 'apiVersion' (full form) or 'type'+'fields' (intent form)".into());
    };
    let api_version = text(&obj, "apiVersion").ok_or("apiVersion must be a non-empty string")?;
    let kind = text(&obj, "kind").ok_or("kind must be a non-empty string")?;
    let name = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("metadata.name is required")?
        .to_string();
    if !is_dns_subdomain(&name) {
        return Err(format!(
            "metadata.name \"{name}\" is not a valid Kubernetes name"
        ));
    }
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let managed = policy
        .managed
        .iter()
        .find(|m| m.group == group && m.kind == kind)
        .ok_or_else(|| {
            format!(
                "{kind} ({}) is not declared in reconcile.remote.managedResources — add it to the Katalog before the service can create it",
                if group.is_empty() { "core" } else { &group }
            )
        })?;
    let mut managed = managed.clone();
    managed.version = version;

    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Err("metadata must be an object".into());
    };
    for field in SERVER_OWNED {
        meta.remove(field);
    }
    let namespace = if managed.namespaced {
        let ns = match meta.get("namespace") {
            None | Some(Value::Null) => owner_ns.clone(),
            Some(Value::String(s)) if s.is_empty() => owner_ns.clone(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(format!("metadata.namespace must be a string, got {other}")),
        };
        if ns != owner_ns && !managed.namespaces.contains(&ns) {
            return Err(format!(
                "{kind} {name} is in namespace \"{ns}\"; children live in the CR's namespace \"{owner_ns}\" unless managedResources declares `namespaces: [{ns}]`"
            ));
        }
        if ns == policy.ork_namespace && ns != owner_ns && !managed.namespaces.contains(&ns) {
            return Err(format!("{kind} {name} is in ork's own namespace"));
        }
        meta.insert("namespace".into(), Value::String(ns.clone()));
        Some(ns)
    } else {
        if !managed.cluster_scoped {
            return Err(format!(
                "{kind} is cluster-scoped; declare `clusterScoped: true` on its managedResources entry to allow it"
            ));
        }
        meta.remove("namespace");
        None
    };
    let owner = &policy.owner;
    if api_version == owner.api_version
        && kind == owner.kind
        && name == owner.name
        && namespace == owner.namespace
    {
        return Err(
            "the response names the CR itself; return its status in `status` instead".into(),
        );
    }
    if let Some(o) = obj.as_object_mut() {
        o.remove("status");
        o.remove("forceConflict");
    }
    Ok(DesiredChild {
        managed,
        name,
        namespace,
        object: obj,
    })
}

fn text(obj: &Value, key: &str) -> Option<String> {
    obj.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// Go duration syntax (`60s`, `1m30s`, `500ms`, `1.5s`).
fn parse_go_duration(s: &str) -> Result<Duration, ResponseError> {
    let bad = || {
        ResponseError::Invalid(format!(
            "requeueAfter \"{s}\" is not a duration (e.g. \"60s\")"
        ))
    };
    if let Ok(d) = humantime::parse_duration(s) {
        return Ok(d);
    }
    // Fractions such as 1.5s, which Go accepts.
    let split = s.find(|c: char| c.is_ascii_alphabetic()).ok_or_else(bad)?;
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn policy() -> Policy {
        let t = |group: &str, kind: &str, plural: &str, namespaced: bool| ManagedType {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            namespaces: Vec::new(),
            cluster_scoped: false,
        };
        Policy {
            owner: OwnerRef {
                api_version: "demo.ork.dev/v1".into(),
                kind: "WebApp".into(),
                name: "hello".into(),
                namespace: Some("team".into()),
            },
            managed: vec![
                t("apps", "Deployment", "deployments", true),
                t("", "Service", "services", true),
                t(
                    "rbac.authorization.k8s.io",
                    "ClusterRole",
                    "clusterroles",
                    false,
                ),
                t("demo.ork.dev", "WebApp", "webapps", true),
            ],
            ork_namespace: "ork-system".into(),
        }
    }

    fn decide_json(v: Value) -> Result<Decision, ResponseError> {
        decide(v.to_string().as_bytes(), &policy())
    }

    #[test]
    fn full_and_intent_children_are_accepted() {
        let d = decide_json(json!({
            "result": "ok",
            "status": {"phase": "Ready"},
            "resources": [
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "hello", "uid": "x", "ownerReferences": []}, "spec": {}},
                {"type": "service", "fields": {"name": "hello", "port": 80}}
            ]
        }))
        .expect("valid");
        let children = d.resources.expect("resources");
        assert_eq!(children.len(), 2);
        assert_eq!(children[0].namespace.as_deref(), Some("team"));
        assert!(children[0].object["metadata"].get("uid").is_none());
        assert!(
            children[0].object["metadata"]
                .get("ownerReferences")
                .is_none()
        );
        assert_eq!(children[1].managed.kind, "Service");
        assert_eq!(
            d.outcome,
            Outcome::Ok {
                requeue_after: None
            }
        );
    }

    #[test]
    fn undeclared_type_rejects_whole_response() {
        let e = decide_json(json!({"resources": [
            {"type": "configmap", "fields": {"name": "ok", "data": {}}},
        ]}))
        .expect_err("ConfigMap not declared");
        assert!(matches!(e, ResponseError::Resource { index: 0, .. }));
        assert!(
            e.to_string().contains("ConfigMap (core) is not declared"),
            "{e}"
        );
    }

    #[test]
    fn other_namespace_cluster_scope_and_the_cr_itself_are_refused() {
        let other_ns = json!({"resources": [{"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "kube-system"}}]});
        assert!(
            decide_json(other_ns)
                .expect_err("ns")
                .to_string()
                .contains("namespace \"kube-system\"")
        );
        let cluster = json!({"resources": [{"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole", "metadata": {"name": "r"}}]});
        assert!(
            decide_json(cluster)
                .expect_err("cluster")
                .to_string()
                .contains("clusterScoped: true")
        );
        let itself = json!({"resources": [{"apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
            "metadata": {"name": "hello"}}]});
        assert!(
            decide_json(itself)
                .expect_err("self")
                .to_string()
                .contains("CR itself")
        );
    }

    #[test]
    fn duplicates_and_nameless_entries_are_refused() {
        let dup = json!({"resources": [
            {"type": "service", "fields": {"name": "a", "port": 1}},
            {"type": "service", "fields": {"name": "a", "port": 2}}]});
        assert!(
            decide_json(dup)
                .expect_err("dup")
                .to_string()
                .contains("listed twice")
        );
        let nameless =
            json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {}}]});
        assert!(
            decide_json(nameless)
                .expect_err("nameless")
                .to_string()
                .contains("metadata.name")
        );
    }

    #[test]
    fn result_values() {
        assert_eq!(
            decide_json(json!({"result": "requeue", "requeueAfter": "1.5s"}))
                .expect("ok")
                .outcome,
            Outcome::Requeue {
                after: Duration::from_millis(1500)
            }
        );
        assert!(decide_json(json!({"result": "requeue"})).is_err());
        assert!(decide_json(json!({"result": "maybe"})).is_err());
        assert_eq!(
            decide_json(json!({"result": "ok", "error": "boom"}))
                .expect("ok")
                .outcome,
            Outcome::Error {
                message: "boom".into()
            }
        );
        assert!(matches!(
            decide(b"<html>", &policy()),
            Err(ResponseError::Malformed(_))
        ));
    }

    #[test]
    fn absent_and_empty_resources_differ() {
        assert!(decide_json(json!({})).expect("ok").resources.is_none());
        assert_eq!(
            decide_json(json!({"resources": []})).expect("ok").resources,
            Some(vec![])
        );
    }
}
