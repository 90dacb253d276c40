//! What to write to the CR's status subresource after a reconcile (SPEC §3.3); nothing when
//! nothing changed.

use ork_protocol::ServiceCondition;
use serde_json::{Map, Value, json};

/// The part of a reconcile's outcome that shows in status.
#[derive(Debug, Clone, Copy)]
pub struct StatusInput<'a> {
    /// `None` on success, the failure otherwise.
    pub error: Option<Failure<'a>>,
    /// Whether the service answered and its answer was accepted: its `status` and conditions
    /// then say what the service thinks now (SPEC §14), replacing what it said before.
    pub answered: bool,
    pub service_status: Option<&'a Map<String, Value>>,
    pub service_conditions: &'a [ServiceCondition],
    pub generation: Option<i64>,
    /// For an entry with validation rules: what they found on the CR, written as Orkestra's
    /// `ValidationFailed` and `ValidationWarning` conditions.
    pub validation: Option<Validation<'a>>,
}

/// The validation rules' verdict on a CR: each failed `deny` rule's and `warn` rule's message.
#[derive(Debug, Clone, Copy)]
pub struct Validation<'a> {
    pub denied: &'a [String],
    pub warned: &'a [String],
}

/// A failed reconcile, as status shows it.
#[derive(Debug, Clone, Copy)]
pub struct Failure<'a> {
    pub message: &'a str,
    /// The step that failed (`ServiceUnreachable`, `AnswerRejected`, …).
    pub reason: &'a str,
    /// ork will not succeed without a change (kstatus `Stalled`); else a retry is due
    /// (`Reconciling`).
    pub stalled: bool,
}

/// Condition messages are cut here, far above the cause of any failure ork records (its own
/// error text is at most 1,000 characters): a message is never cut before its cause.
const MESSAGE_LIMIT: usize = 4096;

/// The conditions ork itself writes, with what each says; every other one is the service's.
pub const ORK_CONDITIONS: [(&str, &str); 5] = [
    (
        "Ready",
        "`True` (reason `ReconcileSucceeded`) after a successful reconcile; `False` with the failed step's reason and its whole cause otherwise.",
    ),
    (
        "Reconciling",
        "`True` while a failed reconcile will be retried and a retry may help (kstatus); absent once Ready.",
    ),
    (
        "Stalled",
        "`True` when no retry will help without a change to the CR, the Katalog, the service or ork's RBAC, or when `queue.maxAttempts` is used up (kstatus); absent once Ready.",
    ),
    (
        "ValidationFailed",
        "For an entry with validation rules, as Orkestra writes it: `True` (reason `DenyRuleViolation`, each failed `deny` rule as `field \"<path>\": <message> (got \"<value>\")`, joined by `; `), else `False` (`ValidationPassed`).",
    ),
    (
        "ValidationWarning",
        "For an entry with validation rules, as Orkestra writes it: `True` (reason `WarnRuleViolation`, each failed `warn` rule) or `False` (`NoWarnings`).",
    ),
];

/// `Ready`'s reason after a success.
pub const SUCCEEDED: &str = "ReconcileSucceeded";

/// Status keys ork itself writes; every other one is the service's.
const ORK_KEYS: [&str; 2] = ["conditions", "observedGeneration"];

/// The merge patch body (`{"status": {...}}`) to send, or `None` when status already says it.
/// `now` (RFC 3339) stamps conditions whose status changed.
///
/// Status hygiene (SPEC §14): an accepted answer's `status` is the service's whole status —
/// keys it no longer returns are removed — and its conditions replace the ones it returned
/// before; a failure leaves both as the service last said them. `observedGeneration` is the
/// generation the service's status describes: it moves only with an accepted answer, while
/// each condition carries its own. So a CR's status never holds more than one answer's worth
/// (the per-answer caps hold per CR).
pub fn plan_status(current: Option<&Value>, input: StatusInput<'_>, now: &str) -> Option<Value> {
    let current_map = current
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut patch = Map::new();
    if let (true, Some(service)) = (input.answered, input.service_status) {
        for k in current_map.keys() {
            if !ORK_KEYS.contains(&k.as_str()) && !service.contains_key(k) {
                patch.insert(k.clone(), Value::Null);
            }
        }
        for (k, v) in service {
            if ORK_KEYS.contains(&k.as_str()) {
                continue;
            }
            if v.is_null() {
                if current_map.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            } else if current_map.get(k) != Some(v) {
                patch.insert(k.clone(), v.clone());
            }
        }
    }
    let previous: Vec<Value> = current_map
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut conditions = previous.clone();
    if input.answered {
        conditions.retain(|c| {
            c.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| ORK_CONDITIONS.iter().any(|(c, _)| *c == t))
        });
    }
    let stamp = Stamp {
        previous: &previous,
        generation: input.generation,
        now,
    };
    // Ready, and kstatus' abnormal-true pair: `Reconciling` while a retry is due, `Stalled`
    // when none will help; both absent once Ready (so `kubectl wait`, Argo CD and Flux read the
    // CR without custom checks).
    conditions.retain(|c| {
        !matches!(
            c.get("type").and_then(Value::as_str),
            Some("Reconciling" | "Stalled")
        )
    });
    match input.error {
        None => stamp.upsert(&mut conditions, "Ready", "True", SUCCEEDED, ""),
        Some(f) => {
            let message = truncate(f.message);
            stamp.upsert(&mut conditions, "Ready", "False", f.reason, &message);
            let progress = if f.stalled { "Stalled" } else { "Reconciling" };
            stamp.upsert(&mut conditions, progress, "True", f.reason, &message);
        }
    }
    if let Some(v) = input.validation {
        let (status, reason) = if v.denied.is_empty() {
            ("False", "ValidationPassed")
        } else {
            ("True", "DenyRuleViolation")
        };
        let message = truncate(&v.denied.join("; "));
        stamp.upsert(
            &mut conditions,
            "ValidationFailed",
            status,
            reason,
            &message,
        );
        let (status, reason) = if v.warned.is_empty() {
            ("False", "NoWarnings")
        } else {
            ("True", "WarnRuleViolation")
        };
        let message = truncate(&v.warned.join("; "));
        stamp.upsert(
            &mut conditions,
            "ValidationWarning",
            status,
            reason,
            &message,
        );
    }
    for c in input.service_conditions {
        // A service that reports `Ready` itself (a Metacontroller hook) does not hide a failure.
        if c.type_ == "Ready" && input.error.is_some() {
            continue;
        }
        stamp.upsert(
            &mut conditions,
            &c.type_,
            &c.status,
            &c.reason,
            &truncate(&c.message),
        );
    }
    let conditions = Value::Array(conditions);
    if current_map.get("conditions") != Some(&conditions) {
        patch.insert("conditions".into(), conditions);
    }
    if input.answered
        && let Some(g) = input.generation
        && current_map.get("observedGeneration") != Some(&json!(g))
    {
        patch.insert("observedGeneration".into(), json!(g));
    }
    (!patch.is_empty()).then(|| json!({ "status": patch }))
}

/// How conditions are written: a condition keeps its `lastTransitionTime` from `previous`
/// while its status is unchanged.
struct Stamp<'a> {
    previous: &'a [Value],
    generation: Option<i64>,
    now: &'a str,
}

impl Stamp<'_> {
    fn upsert(
        &self,
        conditions: &mut Vec<Value>,
        type_: &str,
        status: &str,
        reason: &str,
        message: &str,
    ) {
        let type_of = |c: &Value| c.get("type").and_then(Value::as_str) == Some(type_);
        let transition = match self.previous.iter().find(|c| type_of(c)) {
            Some(c) if c.get("status").and_then(Value::as_str) == Some(status) => c
                .get("lastTransitionTime")
                .cloned()
                .unwrap_or_else(|| json!(self.now)),
            _ => json!(self.now),
        };
        let mut cond = json!({
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": transition,
        });
        if let Some(g) = self.generation {
            cond["observedGeneration"] = json!(g);
        }
        match conditions.iter_mut().find(|c| type_of(c)) {
            Some(c) => *c = cond,
            None => conditions.push(cond),
        }
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
            answered: true,
            service_status: status,
            service_conditions: &[],
            generation: Some(1),
            validation: None,
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
            error: Some(Failure {
                message: "boom",
                reason: "ServiceUnreachable",
                stalled: false,
            }),
            answered: false,
            ..ok(None)
        };
        let patch = plan_status(Some(&stored), fail, "t2").expect("flip");
        let ready = &patch["status"]["conditions"][0];
        assert_eq!(
            (ready["status"].as_str(), ready["reason"].as_str()),
            (Some("False"), Some("ServiceUnreachable"))
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
    fn an_answer_s_status_replaces_the_service_s_keys_and_conditions() {
        let stored = json!({"phase": "Old", "url": "x", "quotaItems": 2,
            "conditions": [{"type": "HasUsers", "status": "True", "reason": "Bound", "message": "3 users bound"}]});
        let service = json!({"url": null, "phase": "Old"}).as_object().cloned();
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
        assert_eq!(
            patch["status"]["quotaItems"],
            Value::Null,
            "a key the service stopped returning goes"
        );
        assert!(patch["status"].get("phase").is_none(), "unchanged");
        let types: Vec<&str> = patch["status"]["conditions"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(
            types,
            ["Ready", "DatabaseReady"],
            "HasUsers is no longer said"
        );
    }

    #[test]
    fn a_failure_keeps_what_the_service_said_and_its_generation() {
        let conds = [ServiceCondition {
            type_: "HasUsers".into(),
            status: "True".into(),
            reason: "Bound".into(),
            message: "1 user".into(),
        }];
        let service = json!({"phase": "Active"}).as_object().cloned();
        let first = StatusInput {
            service_conditions: &conds,
            ..ok(service.as_ref())
        };
        let stored = apply(&json!({}), &plan_status(None, first, "t1").expect("write"));
        let fail = StatusInput {
            error: Some(Failure {
                message: "cannot connect",
                reason: "ServiceUnreachable",
                stalled: false,
            }),
            answered: false,
            service_status: None,
            service_conditions: &[],
            generation: Some(2),
            validation: None,
        };
        let stored = apply(
            &stored,
            &plan_status(Some(&stored), fail, "t2").expect("write"),
        );
        assert_eq!(stored["phase"], "Active");
        assert_eq!(
            stored["observedGeneration"], 1,
            "what the service's status describes"
        );
        let conditions = stored["conditions"].as_array().expect("list");
        let types: Vec<&str> = conditions
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(types, ["Ready", "HasUsers", "Reconciling"]);
        assert_eq!(
            conditions[0]["observedGeneration"], 2,
            "Ready: this attempt's"
        );
        assert_eq!(conditions[0]["reason"], "ServiceUnreachable");
        assert_eq!(conditions[1]["observedGeneration"], 1);
        // Ready again: the progress condition goes, kstatus reads the CR as Current.
        let back = apply(
            &stored,
            &plan_status(Some(&stored), ok(service.as_ref()), "t3").expect("write"),
        );
        let types: Vec<&str> = back["conditions"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(types, ["Ready"]);
    }

    #[test]
    fn a_failure_no_retry_mends_is_stalled_not_reconciling() {
        let stalled = StatusInput {
            error: Some(Failure {
                message: "response rejected",
                reason: "AnswerRejected",
                stalled: true,
            }),
            answered: false,
            ..ok(None)
        };
        let patch = plan_status(None, stalled, "t").expect("write");
        let conditions = patch["status"]["conditions"].as_array().expect("list");
        let types: Vec<&str> = conditions
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(types, ["Ready", "Stalled"]);
        assert_eq!(conditions[1]["reason"], "AnswerRejected");
    }

    #[test]
    fn conditions_and_keys_stay_one_answer_s_worth_over_many_cycles() {
        let mut stored = json!({});
        for cycle in 0..6 {
            let conds: Vec<ServiceCondition> = (0..100)
                .map(|i| ServiceCondition {
                    type_: format!("C{cycle}x{i}"),
                    status: "True".into(),
                    reason: "R".into(),
                    message: String::new(),
                })
                .collect();
            let service = json!({ format!("key{cycle}"): "v".repeat(1000) })
                .as_object()
                .cloned();
            let input = StatusInput {
                service_conditions: &conds,
                ..ok(service.as_ref())
            };
            if let Some(patch) = plan_status(Some(&stored), input, "t") {
                stored = apply(&stored, &patch);
            }
        }
        assert_eq!(stored["conditions"].as_array().map(Vec::len), Some(101));
        let keys: Vec<&String> = stored.as_object().expect("map").keys().collect();
        assert_eq!(keys, ["conditions", "key5", "observedGeneration"]);
    }

    #[test]
    fn long_messages_are_truncated() {
        let long = "x".repeat(10_000);
        let patch = plan_status(
            None,
            StatusInput {
                error: Some(Failure {
                    message: &long,
                    reason: "ServiceError",
                    stalled: false,
                }),
                ..ok(None)
            },
            "t",
        )
        .expect("write");
        assert_eq!(
            patch["status"]["conditions"][0]["message"]
                .as_str()
                .map(str::len),
            Some(MESSAGE_LIMIT)
        );
    }

    #[test]
    fn validation_rules_are_written_as_orkestra_s_two_conditions() {
        let denied = vec!["field \"spec.image\": required (got \"\")".to_string()];
        let warned = vec!["a".to_string(), "b".to_string()];
        let input = StatusInput {
            validation: Some(Validation {
                denied: &denied,
                warned: &warned,
            }),
            ..ok(None)
        };
        let patch = plan_status(None, input, "t0").expect("a patch");
        let conditions = patch["status"]["conditions"]
            .as_array()
            .expect("conditions");
        let of = |t: &str| {
            conditions.iter().find(|c| c["type"] == t).map(|c| {
                (
                    c["status"].clone(),
                    c["reason"].clone(),
                    c["message"].clone(),
                )
            })
        };
        assert_eq!(
            of("ValidationFailed"),
            Some((json!("True"), json!("DenyRuleViolation"), json!(denied[0])))
        );
        assert_eq!(
            of("ValidationWarning"),
            Some((json!("True"), json!("WarnRuleViolation"), json!("a; b")))
        );
        let clean = StatusInput {
            validation: Some(Validation {
                denied: &[],
                warned: &[],
            }),
            ..ok(None)
        };
        let patch = plan_status(None, clean, "t0").expect("a patch");
        let text = patch.to_string();
        assert!(
            text.contains("ValidationPassed") && text.contains("NoWarnings"),
            "{text}"
        );
        // Without rules, neither is written.
        let none = plan_status(None, ok(None), "t0")
            .expect("a patch")
            .to_string();
        assert!(!none.contains("Validation"), "{none}");
    }
}
