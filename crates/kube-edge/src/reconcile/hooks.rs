//! A Metacontroller CompositeController's exchange (SPEC §15): the related objects its customize
//! hook asks for, the sync or finalize request, and its answer checked whole as an ork answer,
//! with Metacontroller's invariants between the parent's selector and the children's labels.

use std::collections::BTreeMap;

use kube::Resource;
use ork_katalog::metacontroller::Composite;
use ork_protocol::metacontroller::{self as mc, ObjectMap};
use ork_protocol::{Decision, Policy};
use serde_json::{Map, Value};

use super::job::{Job, Ports};
use crate::entry::EntryContext;
use crate::error::ReconcileError;

/// The label `generateSelector` selects children by, set to the parent's UID.
const CONTROLLER_UID: &str = "controller-uid";

/// The objects the customize hook relates to the parent `cr` (empty without a customize hook),
/// read fresh from the API server: namespaced parents see their own namespace only.
///
/// # Errors
/// The customize hook failed or answered badly, or a related type cannot be read.
pub(super) async fn related(
    ctx: &EntryContext,
    ports: Ports<'_>,
    composite: &Composite,
    cr: &Value,
) -> Result<ObjectMap, ReconcileError> {
    let mut out = ObjectMap::new();
    let Some(customize) = &ctx.hooks.customize else {
        return Ok(out);
    };
    let body = mc::customize_request(&composite.controller, cr).to_string();
    let answer = customize.call(cr, body.into_bytes()).await?;
    let rules = mc::related_rules(&answer).map_err(|e| {
        ReconcileError::InvalidResponse(format!(
            "customize hook: {}",
            customize.redact(&e.to_string())
        ))
    })?;
    let parent_namespace = namespace_of(cr);
    for rule in rules {
        if let (Some(parent), Some(want)) = (parent_namespace, rule.namespace.as_deref())
            && parent != want
        {
            return Err(ReconcileError::InvalidResponse(format!(
                "customize hook: related {}/{} in namespace {want:?}, but a namespaced parent only sees its own namespace {parent:?}",
                rule.api_version, rule.resource
            )));
        }
        let scope = parent_namespace.or(rule.namespace.as_deref());
        let objects = ports
            .cluster
            .list(&rule.api_version, &rule.resource, scope)
            .await?;
        for o in objects.into_iter().filter(|o| rule.selects(o)) {
            mc::insert(&mut out, composite.version, parent_namespace, o);
        }
    }
    Ok(out)
}

/// The sync (or, `finalizing`, finalize) request for `job`: every declared child type present,
/// even with no objects.
///
/// # Errors
/// The request cannot be encoded.
pub(super) fn request(
    ctx: &EntryContext,
    composite: &Composite,
    job: &Job,
    cr: &Value,
    related: ObjectMap,
    finalizing: bool,
) -> Result<Vec<u8>, ReconcileError> {
    let mut children = ObjectMap::new();
    for t in &ctx.children {
        children.insert(
            mc::type_key(&t.resource.api_version, &t.managed.kind),
            Value::Object(Map::new()),
        );
    }
    let parent_namespace = namespace_of(cr);
    for (at, child) in &job.children {
        let mut v = serde_json::to_value(child.as_ref()).unwrap_or(Value::Null);
        if let Some(m) = v.pointer_mut("/metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        // The cache keeps objects without their type; the hook sees it as the API serves it.
        if let (Some(t), Value::Object(m)) = (ctx.children.get(at.type_index), &mut v) {
            m.insert(
                "apiVersion".into(),
                Value::String(t.resource.api_version.clone()),
            );
            m.insert("kind".into(), Value::String(t.managed.kind.clone()));
        }
        mc::insert(&mut children, composite.version, parent_namespace, v);
    }
    let mut parent = cr.clone();
    if let Some(m) = parent
        .pointer_mut("/metadata")
        .and_then(Value::as_object_mut)
    {
        m.remove("managedFields");
    }
    serde_json::to_vec(&mc::sync_request(
        &composite.controller,
        &parent,
        children,
        related,
        finalizing,
    ))
    .map_err(|e| ReconcileError::Request(format!("encoding the hook request: {e}")))
}

/// The hook's `answer` as a decision: translated, checked whole against `policy`, then held to
/// Metacontroller's invariant that every desired child matches the parent's selector (with
/// `generateSelector`, each child gets `controller-uid: <parent UID>`).
///
/// # Errors
/// Anything the answer breaks, named; nothing of it is applied.
pub(super) fn decide(
    composite: &Composite,
    job: &Job,
    cr: &Value,
    answer: &[u8],
    policy: &Policy,
    redact: impl Fn(&str) -> String,
) -> Result<Decision, ReconcileError> {
    let rejected =
        |e: &dyn std::fmt::Display| ReconcileError::InvalidResponse(redact(&e.to_string()));
    let body = mc::answer(answer, composite.version).map_err(|e| rejected(&e))?;
    let mut decision = ork_protocol::decide(&body, policy).map_err(|e| rejected(&e))?;
    if decision.finalized || job.cr.meta().deletion_timestamp.is_some() {
        // A parent on its way out keeps what its finalize hook says, selector or not.
        return Ok(decision);
    }
    let selector = if composite.generate_selector {
        let uid = job.cr.meta().uid.clone().unwrap_or_default();
        Selector {
            labels: BTreeMap::from([(CONTROLLER_UID.to_string(), uid)]),
            expressions: Vec::new(),
        }
    } else {
        Selector::of_parent(cr).map_err(ReconcileError::InvalidResponse)?
    };
    for child in decision.resources.iter_mut().flatten() {
        let labels = child
            .object
            .pointer_mut("/metadata")
            .and_then(Value::as_object_mut)
            .map(|m| {
                m.entry("labels")
                    .or_insert_with(|| Value::Object(Map::new()))
            });
        let Some(Value::Object(labels)) = labels else {
            continue;
        };
        if composite.generate_selector && !labels.contains_key(CONTROLLER_UID) {
            for (k, v) in &selector.labels {
                labels.insert(k.clone(), Value::String(v.clone()));
            }
        }
        if !selector.matches(labels) {
            return Err(ReconcileError::InvalidResponse(format!(
                "labels on desired child {} {} don't match the parent's selector",
                child.managed.kind, child.name
            )));
        }
    }
    Ok(decision)
}

/// A parent's `spec.selector`: `matchLabels` and `matchExpressions`.
struct Selector {
    labels: BTreeMap<String, String>,
    expressions: Vec<(String, String, Vec<String>)>,
}

impl Selector {
    /// The selector of `parent`; Metacontroller refuses an empty one (it would select
    /// everything).
    fn of_parent(parent: &Value) -> Result<Selector, String> {
        let sel = parent.pointer("/spec/selector");
        let labels: BTreeMap<String, String> = sel
            .and_then(|s| s.get("matchLabels"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let expressions: Vec<(String, String, Vec<String>)> = sel
            .and_then(|s| s.get("matchExpressions"))
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|e| {
                        let key = e.get("key")?.as_str()?.to_string();
                        let op = e.get("operator")?.as_str()?.to_string();
                        let values = e
                            .get("values")
                            .and_then(Value::as_array)
                            .map(|v| {
                                v.iter()
                                    .filter_map(|x| x.as_str().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default();
                        Some((key, op, values))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if labels.is_empty() && expressions.is_empty() {
            return Err(
                "the parent's .spec.selector must have matchLabels, matchExpressions or both (or the controller sets generateSelector: true)".into(),
            );
        }
        Ok(Selector {
            labels,
            expressions,
        })
    }

    fn matches(&self, labels: &Map<String, Value>) -> bool {
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.labels.iter().all(|(k, v)| get(k) == Some(v.as_str()))
            && self.expressions.iter().all(|(k, op, values)| {
                let has = |v: &str| values.iter().any(|x| x == v);
                match (op.as_str(), get(k)) {
                    ("In", Some(v)) => has(v),
                    ("In", None) => false,
                    ("NotIn", Some(v)) => !has(v),
                    ("NotIn", None) | ("DoesNotExist", None) | ("Exists", Some(_)) => true,
                    _ => false,
                }
            })
    }
}

fn namespace_of(cr: &Value) -> Option<&str> {
    cr.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_parent_selector_matches_labels_and_expressions() {
        let parent = json!({"spec": {"selector": {"matchLabels": {"app": "a"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]},
                {"key": "legacy", "operator": "DoesNotExist"}]}}});
        let s = Selector::of_parent(&parent).expect("selector");
        let labels = |v: Value| v.as_object().cloned().expect("object");
        assert!(s.matches(&labels(json!({"app": "a", "tier": "web"}))));
        assert!(!s.matches(&labels(json!({"app": "a", "tier": "db"}))));
        assert!(!s.matches(&labels(json!({"app": "a", "tier": "web", "legacy": "y"}))));
        assert!(!s.matches(&labels(json!({"tier": "web"}))));
    }

    #[test]
    fn an_empty_selector_is_refused_as_metacontroller_does() {
        let e = Selector::of_parent(&json!({"spec": {}}))
            .err()
            .expect("refused");
        assert!(e.contains("generateSelector"), "{e}");
    }
}
