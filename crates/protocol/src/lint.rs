//! `ork check`'s view of an answer: every way it breaks the protocol, where [`crate::decide`]
//! stops at the first. It shares its checks with `decide`.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::response::{Policy, Response, check_condition, check_event, check_one, outcome_of};

/// Every way an answer breaks the protocol, for `ork check` (where [`decide`] stops at the
/// first). Warnings are legal but probably not meant.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Lint {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

const FIELDS: [&str; 8] = [
    "result",
    "requeueAfter",
    "error",
    "status",
    "resources",
    "conditions",
    "events",
    "finalized",
];

/// Checks every part of an answer and reports all problems.
pub fn lint(body: &[u8], policy: &Policy) -> Lint {
    let mut lint = Lint::default();
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            lint.errors.push(format!("the body is not JSON: {e}"));
            return lint;
        }
    };
    let Some(fields) = value.as_object() else {
        lint.errors
            .push(format!("the body must be a JSON object, got {value}"));
        return lint;
    };
    for key in fields.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
        lint.warnings.push(format!(
            "unknown field \"{key}\" is ignored (fields: {})",
            FIELDS.join(", ")
        ));
    }
    let mut shape_ok = true;
    for (field, want_object) in [
        ("status", true),
        ("resources", false),
        ("conditions", false),
        ("events", false),
    ] {
        let v = &value[field];
        let fits = v.is_null()
            || if want_object {
                v.is_object()
            } else {
                v.is_array()
            };
        if !fits {
            shape_ok = false;
            lint.errors.push(format!(
                "\"{field}\" must be {} or null, got {v}",
                if want_object { "an object" } else { "a list" }
            ));
        }
    }
    if !shape_ok {
        return lint;
    }
    let raw: Response = match serde_json::from_value(value.clone()) {
        Ok(r) => r,
        Err(e) => {
            lint.errors.push(format!(
                "the answer does not have the protocol's shape: {e}"
            ));
            return lint;
        }
    };
    if let Err(e) = outcome_of(&raw) {
        lint.errors.push(e.to_string());
    }
    if raw.error.as_deref().is_some_and(|e| !e.is_empty()) && raw.result.as_deref() != Some("error")
    {
        lint.warnings
            .push("a non-empty \"error\" makes this a failure whatever \"result\" says".into());
    }
    for c in raw.conditions.iter().flatten() {
        if let Err(e) = check_condition(c) {
            lint.errors.push(e);
        }
    }
    for e in raw.events.iter().flatten() {
        if let Err(e) = check_event(e) {
            lint.errors.push(e);
        }
    }
    if let Some(list) = raw.resources {
        let mut seen = BTreeSet::new();
        for (index, entry) in list.into_iter().enumerate() {
            match check_one(entry, policy) {
                Ok(child) => {
                    if !seen.insert((
                        child.managed.group.clone(),
                        child.managed.kind.clone(),
                        child.namespace.clone(),
                        child.name.clone(),
                    )) {
                        lint.errors.push(format!(
                            "resources[{index}]: {} {} is listed twice",
                            child.managed.kind, child.name
                        ));
                    }
                }
                Err(message) => lint.errors.push(format!("resources[{index}]: {message}")),
            }
        }
    }
    lint
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::response::tests::policy;

    #[test]
    fn lint_reports_every_problem_not_just_the_first() {
        let body = json!({
            "result": "requeue",
            "resourcez": [],
            "conditions": [{"type": "Ready", "status": "True"}],
            "events": [{"type": "Info", "reason": "X"}],
            "resources": [
                {"type": "configmap", "fields": {"name": "a"}},
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "other"}},
                {"type": "service", "fields": {"name": "ok", "port": 80}},
                {"type": "service", "fields": {"name": "ok", "port": 81}}
            ]
        });
        let lint = lint(body.to_string().as_bytes(), &policy());
        let all = lint.errors.join("\n");
        for expected in [
            "result=requeue but requeueAfter is empty",
            "condition Ready is ork's own",
            "event \"X\" needs type Normal or Warning",
            "resources[0]: ConfigMap (core) is not declared",
            "resources[1]: Service s is in namespace \"other\"",
            "resources[3]: Service ok is listed twice",
        ] {
            assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
        }
        assert_eq!(lint.errors.len(), 6, "{all}");
        assert!(lint.warnings[0].contains("unknown field \"resourcez\""));
    }

    #[test]
    fn a_good_answer_lints_clean() {
        let body = json!({"result": "ok", "resources": [{"type": "service", "fields": {"name": "a", "port": 80}}]});
        assert_eq!(
            lint(body.to_string().as_bytes(), &policy()),
            Lint::default()
        );
        assert!(!lint(b"<html>", &policy()).errors.is_empty());
    }
}
