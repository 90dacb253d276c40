//! The request of SPEC §2.1 for one CR: validation rules, `object` minus excluded paths, rendered
//! `args`, and `prepared` (children, cross objects, sentinels, health, trigger).

use std::collections::BTreeMap;

use kube::ResourceExt;
use ork_katalog::condition::RuleAction;
use ork_protocol::{Gvk, Prepared, Request, Trigger, ValidationReport};
use serde_json::{Map, Value};

use super::job::Job;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::redact::drop_secret_values;

/// The request body for `job` (`cr` is its CR as JSON).
///
/// # Errors
/// A denied validation rule (unless `finalizing`), or a template that fails.
pub(super) fn build(
    ctx: &EntryContext,
    job: &Job,
    cr: &Value,
    finalizing: bool,
) -> Result<Vec<u8>, ReconcileError> {
    let validation = if finalizing {
        ValidationReport::default()
    } else {
        validate(ctx, cr)
    };
    if !validation.passed {
        return Err(ReconcileError::Denied(validation.failed.join("; ")));
    }
    let inputs = job.inputs.clone()?;
    // A CR being deleted is not held back by an input that is gone: its finalize call gets
    // `null` there.
    if !finalizing && !inputs.missing.is_empty() {
        let missing: Vec<String> = inputs.missing.iter().map(ToString::to_string).collect();
        return Err(ReconcileError::InputMissing(missing.join("; ")));
    }
    let request = Request {
        key: job.key.clone(),
        gvk: Gvk {
            group: ctx.cr_resource.group.clone(),
            version: ctx.cr_resource.version.clone(),
            kind: ctx.cr_resource.kind.clone(),
        },
        object: strip_paths(cr.clone(), &ctx.remote.payload.object.exclude),
        args: args(ctx, cr)?,
        prepared: Prepared {
            children: children(ctx, job),
            cross: job.cross.clone()?,
            inputs: inputs.values,
            sentinels: job
                .sentinels
                .iter()
                .map(|(s, v)| (s.name().to_string(), *v))
                .collect(),
            validation,
            health: job.health.summary(),
            trigger: Trigger {
                reason: job.reason.as_str().to_string(),
                attempt: job.attempt,
            },
            finalizing,
        },
    };
    serde_json::to_vec(&request)
        .map_err(|e| ReconcileError::Request(format!("encoding the request: {e}")))
}

fn validate(ctx: &EntryContext, cr: &Value) -> ValidationReport {
    let mut report = ValidationReport::default();
    for rule in &ctx.rules {
        if !rule.holds(cr, &BTreeMap::new()) {
            match rule.action {
                RuleAction::Deny => report.failed.push(rule.describe_failure()),
                RuleAction::Warn => report.warnings.push(rule.describe_failure()),
            }
        }
    }
    report.passed = report.failed.is_empty();
    report
}

/// `prepared.children`: lowercase kind → name → object, the CR's own children only.
fn children(ctx: &EntryContext, job: &Job) -> BTreeMap<String, BTreeMap<String, Value>> {
    let payload = &ctx.remote.payload.children;
    let mut out: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for (child, obj) in &job.children {
        let Some(t) = ctx.children.get(child.type_index) else {
            continue;
        };
        let kind = t.managed.kind.to_lowercase();
        // `payload.children.resources` may leave a type out or strip it differently.
        let Some(exclude) = payload.exclude_for(&kind) else {
            continue;
        };
        let mut v = strip_paths(
            serde_json::to_value(obj.as_ref()).unwrap_or(Value::Null),
            exclude,
        );
        if t.managed.group.is_empty() && t.managed.kind == "Secret" && !payload.secret_values {
            // SPEC §11: what the cluster filled into a Secret does not go back unasked.
            drop_secret_values(&mut v);
        }
        out.entry(kind).or_default().insert(obj.name_any(), v);
    }
    out
}

/// `args` rendered with the Katalog's notes ("5" → 5, "true" → true); `None` when empty.
fn args(ctx: &EntryContext, cr: &Value) -> Result<Option<Map<String, Value>>, ReconcileError> {
    if ctx.remote.args.is_empty() {
        return Ok(None);
    }
    ctx.remote
        .render_args(cr)
        .map(Some)
        .map_err(ReconcileError::Request)
}

fn strip_paths(mut v: Value, paths: &[String]) -> Value {
    for p in paths {
        let (parent, last) = p.rsplit_once('.').unwrap_or(("", p.as_str()));
        let pointer = if parent.is_empty() {
            String::new()
        } else {
            format!("/{}", parent.replace('.', "/"))
        };
        if let Some(m) = v.pointer_mut(&pointer).and_then(Value::as_object_mut) {
            m.remove(last);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn excluded_paths_are_removed_from_the_object() {
        let cr = json!({"metadata": {"name": "a", "managedFields": [1]}, "spec": {"secret": "x", "keep": 1}});
        let out = strip_paths(
            cr,
            &[
                "metadata.managedFields".into(),
                "spec.secret".into(),
                "no.such".into(),
            ],
        );
        assert_eq!(out, json!({"metadata": {"name": "a"}, "spec": {"keep": 1}}));
    }
}
