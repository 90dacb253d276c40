//! What to write to the CR's status subresource after a reconcile (SPEC §3.3); nothing when
//! nothing changed.

use ork_protocol::ServiceCondition;
use serde_json::{Map, Value, json};

/// The part of a reconcile's outcome that shows in status.
#[derive(Debug, Clone, Copy)]
pub struct StatusInput<'a> {
    /// `None` on success, the failure message otherwise.
    pub error: Option<&'a str>,
    pub service_status: Option<&'a Map<String, Value>>,
    pub service_conditions: &'a [ServiceCondition],
    pub generation: Option<i64>,
}

const MESSAGE_LIMIT: usize = 256;

/// The merge patch body (`{"status": {...}}`) to send, or `None` when status already says it.
/// `now` (RFC 3339) stamps conditions whose status changed.
pub fn plan_status(current: Option<&Value>, input: StatusInput<'_>, now: &str) -> Option<Value> {
    let current_map = current
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut next = current_map.clone();
    let mut patch = Map::new();
    if let Some(service) = input.service_status {
        for (k, v) in service {
            if k == "conditions" || k == "observedGeneration" {
                continue;
            }
            if v.is_null() {
                if next.remove(k).is_some() {
                    patch.insert(k.clone(), Value::Null);
                }
            } else if next.get(k) != Some(v) {
                next.insert(k.clone(), v.clone());
                patch.insert(k.clone(), v.clone());
            }
        }
    }
    let mut conditions: Vec<Value> = current_map
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ready = match input.error {
        None => ("True", "ReconcileSucceeded", String::new()),
        Some(e) => ("False", "ReconcileError", truncate(e)),
    };
    upsert(
        &mut conditions,
        "Ready",
        ready.0,
        ready.1,
        &ready.2,
        input.generation,
        now,
    );
    for c in input.service_conditions {
        upsert(
            &mut conditions,
            &c.type_,
            &c.status,
            &c.reason,
            &truncate(&c.message),
            input.generation,
            now,
        );
    }
    let conditions = Value::Array(conditions);
    if current_map.get("conditions") != Some(&conditions) {
        patch.insert("conditions".into(), conditions);
    }
    if let Some(g) = input.generation
        && current_map.get("observedGeneration") != Some(&json!(g))
    {
        patch.insert("observedGeneration".into(), json!(g));
    }
    (!patch.is_empty()).then(|| json!({ "status": patch }))
}

fn upsert(
    conditions: &mut Vec<Value>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &str,
) {
    let existing = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_));
    let transition = match &existing {
        Some(c) if c.get("status").and_then(Value::as_str) == Some(status) => c
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or_else(|| json!(now)),
        _ => json!(now),
    };
    let mut cond = json!({
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    });
    if let Some(g) = generation {
        cond["observedGeneration"] = json!(g);
    }
    match existing {
        Some(c) => *c = cond,
        None => conditions.push(cond),
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() <= MESSAGE_LIMIT {
        s.to_string()
    } else {
        let cut: String = s.chars().take(MESSAGE_LIMIT - 3).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(status: Option<&Map<String, Value>>) -> StatusInput<'_> {
        StatusInput {
            error: None,
            service_status: status,
            service_conditions: &[],
            generation: Some(1),
        }
    }

    fn apply(current: &Value, patch: &Value) -> Value {
        let mut out = current.as_object().cloned().unwrap_or_default();
        for (k, v) in patch["status"].as_object().expect("status patch") {
            if v.is_null() {
                out.remove(k);
            } else {
                out.insert(k.clone(), v.clone());
            }
        }
        Value::Object(out)
    }

    #[test]
    fn first_success_writes_ready_and_service_status_then_nothing() {
        let service = json!({"phase": "Ready"}).as_object().cloned();
        let patch = plan_status(None, ok(service.as_ref()), "t1").expect("first write");
        assert_eq!(patch["status"]["phase"], "Ready");
        assert_eq!(patch["status"]["conditions"][0]["status"], "True");
        assert_eq!(patch["status"]["observedGeneration"], 1);
        let stored = apply(&json!({}), &patch);
        assert_eq!(plan_status(Some(&stored), ok(service.as_ref()), "t2"), None);
    }

    #[test]
    fn failure_flips_ready_and_keeps_transition_time_while_unchanged() {
        let stored = apply(
            &json!({}),
            &plan_status(None, ok(None), "t1").expect("write"),
        );
        let fail = StatusInput {
            error: Some("boom"),
            ..ok(None)
        };
        let patch = plan_status(Some(&stored), fail, "t2").expect("flip");
        let ready = &patch["status"]["conditions"][0];
        assert_eq!(
            (ready["status"].as_str(), ready["reason"].as_str()),
            (Some("False"), Some("ReconcileError"))
        );
        assert_eq!(ready["lastTransitionTime"], "t2");
        let stored = apply(&stored, &patch);
        assert_eq!(
            plan_status(Some(&stored), fail, "t3"),
            None,
            "same failure: no write"
        );
    }

    #[test]
    fn null_removes_a_service_key_and_service_conditions_merge_by_type() {
        let stored = json!({"phase": "Old", "url": "x"});
        let service = json!({"url": null}).as_object().cloned();
        let conds = [ServiceCondition {
            type_: "DatabaseReady".into(),
            status: "False".into(),
            reason: "Waiting".into(),
            message: String::new(),
        }];
        let input = StatusInput {
            service_conditions: &conds,
            ..ok(service.as_ref())
        };
        let patch = plan_status(Some(&stored), input, "t").expect("write");
        assert_eq!(patch["status"]["url"], Value::Null);
        assert!(patch["status"].get("phase").is_none());
        let types: Vec<&str> = patch["status"]["conditions"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(types, ["Ready", "DatabaseReady"]);
    }

    #[test]
    fn long_messages_are_truncated() {
        let long = "x".repeat(1000);
        let patch = plan_status(
            None,
            StatusInput {
                error: Some(&long),
                ..ok(None)
            },
            "t",
        )
        .expect("write");
        assert_eq!(
            patch["status"]["conditions"][0]["message"]
                .as_str()
                .map(str::len),
            Some(256)
        );
    }
}
