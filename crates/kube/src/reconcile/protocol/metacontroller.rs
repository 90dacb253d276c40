//! Metacontroller's protocol (SPEC §15), for a CompositeController and a DecoratorController:
//! the related objects a customize hook asks for, the sync or finalize request, and the answer
//! checked whole as an ork answer, with Metacontroller's invariants between the parent's
//! selector and the children's labels; a decorator's selectors, the update strategies, and the
//! sync after the hook's own writes.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use kube::Resource;
use kube::core::DynamicObject;
use ork_katalog::metacontroller::{Composite, Selector, UpdateMethod};
use ork_protocol::metacontroller::{self as mc, ObjectMap};
use ork_protocol::{Decision, Lint, Policy};
use serde_json::{Map, Value};

use super::contract::Protocol;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::ports::{Owner, Transport};
use crate::reconcile::job::{Job, Ports};

/// A Metacontroller controller's entry.
pub(super) struct Metacontroller<'a> {
    pub ctx: &'a EntryContext,
    pub composite: &'a Composite,
}

impl Protocol for Metacontroller<'_> {
    fn related<'a>(
        &'a self,
        ports: Ports<'a>,
        job: &'a Job,
        cr: &'a Value,
    ) -> BoxFuture<'a, Result<ObjectMap, ReconcileError>> {
        Box::pin(related(self.ctx, ports, self.composite, &job.key, cr))
    }

    fn request(
        &self,
        job: &Job,
        cr: &Value,
        related: ObjectMap,
        finalizing: bool,
    ) -> Result<Vec<u8>, ReconcileError> {
        request(self.ctx, self.composite, job, cr, related, finalizing)
    }

    fn transport<'a>(&'a self, ports: Ports<'a>, finalizing: bool) -> &'a dyn Transport {
        match (&self.ctx.hooks.finalize, finalizing) {
            (Some(finalize), true) => finalize.as_ref(),
            _ => ports.transport,
        }
    }

    fn decide(
        &self,
        job: &Job,
        cr: &Value,
        answer: &[u8],
        policy: &Policy,
        redact: &dyn Fn(&str) -> String,
    ) -> Result<Decision, ReconcileError> {
        decide(self.composite, job, cr, answer, policy, redact)
    }

    /// The hook's answer translated as [`decide`] does, then linted as an ork answer; an
    /// answer that does not translate is one error.
    fn lint(&self, answer: &[u8], policy: &Policy) -> Lint {
        let translated = if self.composite.decorator.is_some() {
            mc::decorator_answer(answer, self.composite.version).map(|(body, _)| body)
        } else {
            mc::answer(answer, self.composite.version)
        };
        match translated {
            Ok(body) => ork_protocol::lint(&body, policy),
            Err(e) => Lint {
                errors: vec![e.to_string()],
                warnings: Vec::new(),
            },
        }
    }

    fn policy(&self, owner: &Owner) -> Policy {
        let mut policy = self.ctx.policy(owner);
        // A Metacontroller hook's status conditions are its own, `Ready` included.
        policy.service_ready = true;
        let kind = if self.composite.decorator.is_some() {
            "DecoratorController"
        } else {
            "CompositeController"
        };
        policy.controller = Some(format!("{kind} {}", self.composite.name));
        policy
    }

    fn unselected(&self, cr: &DynamicObject) -> Option<String> {
        unselected(self.composite, cr)
    }

    fn update_method(&self, group: &str, plural: &str) -> UpdateMethod {
        self.composite.method(group, plural)
    }

    fn owns_the_object(&self) -> bool {
        self.composite.decorator.is_none()
    }

    fn observes_own_writes(&self) -> bool {
        true
    }

    /// Metacontroller's own: scripts that filter `reason=SyncError` keep working.
    fn failure_event(&self, kind: &str, message: &str) -> (String, String) {
        (
            crate::event_reasons::SYNC_ERROR.of(kind),
            format!("Sync error: {message}"),
        )
    }
}

/// The label `generateSelector` selects children by, set to the parent's UID.
const CONTROLLER_UID: &str = "controller-uid";

/// The annotation naming the DecoratorController that made an attachment.
const DECORATOR: &str = "metacontroller.k8s.io/decorator-controller";

/// Why a DecoratorController does not decorate `cr` (its label or annotation selector does not
/// select it); `None` when it does, or for a CompositeController.
fn unselected(composite: &Composite, cr: &DynamicObject) -> Option<String> {
    let decoration = composite.decorator.as_ref()?;
    let meta = cr.meta();
    let labels = meta.labels.as_ref();
    let annotations = meta.annotations.as_ref();
    if !decoration
        .labels
        .matches(|k| labels.and_then(|m| m.get(k)).map(String::as_str))
    {
        return Some("the decorator's labelSelector does not select it".into());
    }
    if !decoration
        .annotations
        .matches(|k| annotations.and_then(|m| m.get(k)).map(String::as_str))
    {
        return Some("the decorator's annotationSelector does not select it".into());
    }
    None
}

/// The objects the customize hook relates to the parent `cr` (empty without a customize hook),
/// read fresh from the API server: namespaced parents see their own namespace only.
///
/// # Errors
/// The customize hook failed or answered badly, or a related type cannot be read.
async fn related(
    ctx: &EntryContext,
    ports: Ports<'_>,
    composite: &Composite,
    key: &str,
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
    let refuse = |why: String| ReconcileError::InvalidResponse(why);
    // Every rule is checked before anything is read: a refused one refuses the whole answer.
    for rule in &rules {
        composite
            .may_relate(&rule.api_version, &rule.resource)
            .map_err(|r| refuse(r.0))?;
        if let (Some(parent), Some(want)) = (parent_namespace, rule.namespace.as_deref())
            && parent != want
        {
            return Err(refuse(format!(
                "customize hook: related {}/{} in namespace {want:?}, but a namespaced parent only sees its own namespace {parent:?}",
                rule.api_version, rule.resource
            )));
        }
        if parent_namespace.is_none() && rule.namespace.as_deref() == Some(&ctx.ork_namespace) {
            return Err(refuse(format!(
                "customize hook: related {}/{} in ork's own namespace {:?}, which holds ork's keys and credentials and is never read for a hook",
                rule.api_version, rule.resource, ctx.ork_namespace
            )));
        }
    }
    // Watched only once allowed: a refused type is never listed or watched.
    if let Some(watched) = &ctx.related {
        watched.remember(key, &rules);
    }
    let values = composite.related_secret_values();
    for rule in rules {
        let scope = parent_namespace.or(rule.namespace.as_deref());
        let objects = ports
            .cluster
            .list(&rule.api_version, &rule.resource, scope)
            .await?;
        let secrets = rule.api_version == "v1" && rule.resource == "secrets";
        for mut o in objects.into_iter().filter(|o| rule.selects(o)) {
            // A cluster-wide read skips ork's own namespace, unless the parent lives there.
            if parent_namespace != Some(ctx.ork_namespace.as_str())
                && namespace_of(&o) == Some(ctx.ork_namespace.as_str())
            {
                continue;
            }
            if secrets && !values {
                crate::redact::drop_secret_values(&mut o);
            }
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
fn request(
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
    let request = if composite.decorator.is_some() {
        mc::decorator_request(
            &composite.controller,
            &parent,
            children,
            related,
            finalizing,
        )
    } else {
        mc::sync_request(
            &composite.controller,
            &parent,
            children,
            related,
            finalizing,
        )
    };
    serde_json::to_vec(&request)
        .map_err(|e| ReconcileError::Request(format!("encoding the hook request: {e}")))
}

/// The hook's `answer` as a decision: translated, checked whole against `policy`, then held to
/// Metacontroller's invariant that every desired child matches the parent's selector (with
/// `generateSelector`, each child gets `controller-uid: <parent UID>`).
///
/// # Errors
/// Anything the answer breaks, named; nothing of it is applied.
fn decide(
    composite: &Composite,
    job: &Job,
    cr: &Value,
    answer: &[u8],
    policy: &Policy,
    redact: &dyn Fn(&str) -> String,
) -> Result<Decision, ReconcileError> {
    let rejected =
        |e: &dyn std::fmt::Display| ReconcileError::InvalidResponse(redact(&e.to_string()));
    if composite.decorator.is_some() {
        let (body, decoration) =
            mc::decorator_answer(answer, composite.version).map_err(|e| rejected(&e))?;
        let mut decision = ork_protocol::decide(&body, policy).map_err(|e| rejected(&e))?;
        // Metacontroller marks each attachment with the decorator that made it.
        for child in decision.resources.iter_mut().flatten() {
            if let Some(meta) = child
                .object
                .pointer_mut("/metadata")
                .and_then(Value::as_object_mut)
                && let Value::Object(annotations) = meta
                    .entry("annotations")
                    .or_insert_with(|| Value::Object(Map::new()))
            {
                annotations.insert(DECORATOR.into(), Value::String(composite.name.clone()));
            }
        }
        decision.decoration = Some(decoration);
        return Ok(decision);
    }
    let body = mc::answer(answer, composite.version).map_err(|e| rejected(&e))?;
    let mut decision = ork_protocol::decide(&body, policy).map_err(|e| rejected(&e))?;
    if decision.finalized || job.cr.meta().deletion_timestamp.is_some() {
        // A parent on its way out keeps what its finalize hook says, selector or not.
        return Ok(decision);
    }
    let selector = if composite.generate_selector {
        let uid = job.cr.meta().uid.clone().unwrap_or_default();
        Selector {
            equals: BTreeMap::from([(CONTROLLER_UID.to_string(), uid)]),
            expressions: Vec::new(),
        }
    } else {
        parent_selector(cr).map_err(ReconcileError::InvalidResponse)?
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
            for (k, v) in &selector.equals {
                labels.insert(k.clone(), Value::String(v.clone()));
            }
        }
        if !selector.matches(|k| labels.get(k).and_then(Value::as_str)) {
            return Err(ReconcileError::InvalidResponse(format!(
                "labels on desired child {} {} don't match the parent's selector",
                child.managed.kind, child.name
            )));
        }
    }
    Ok(decision)
}

/// A parent's `spec.selector`; Metacontroller refuses an empty one (it would select
/// everything).
fn parent_selector(parent: &Value) -> Result<Selector, String> {
    let selector = Selector::from_value(parent.pointer("/spec/selector"), "matchLabels")
        .map_err(|e| format!("the parent's .spec.selector: {e}"))?;
    if selector.is_empty() {
        return Err(
            "the parent's .spec.selector must have matchLabels, matchExpressions or both (or the controller sets generateSelector: true)".into(),
        );
    }
    Ok(selector)
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
        let s = parent_selector(&parent).expect("selector");
        let selects = |v: Value| s.matches(|k| v.get(k).and_then(Value::as_str));
        assert!(selects(json!({"app": "a", "tier": "web"})));
        assert!(!selects(json!({"app": "a", "tier": "db"})));
        assert!(!selects(json!({"app": "a", "tier": "web", "legacy": "y"})));
        assert!(!selects(json!({"tier": "web"})));
    }

    #[test]
    fn an_empty_selector_is_refused_as_metacontroller_does() {
        let e = parent_selector(&json!({"spec": {}})).expect_err("refused");
        assert!(e.contains("generateSelector"), "{e}");
    }
}
