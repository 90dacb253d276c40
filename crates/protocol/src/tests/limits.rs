//! The caps of `Policy::limits`.

use serde_json::{Value, json};

use super::*;
use crate::Limits;

fn small() -> Policy {
    let mut p = policy();
    p.limits = Limits {
        children: 2,
        conditions: 1,
        events: 1,
        status_bytes: 32,
    };
    p
}

fn services(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"type": "service", "fields": {"name": format!("s{i}"), "port": 80}}))
            .collect(),
    )
}

#[test]
fn the_default_limits_are_those_of_the_spec() {
    assert_eq!(
        Limits::default(),
        Limits {
            children: 1000,
            conditions: 100,
            events: 20,
            status_bytes: 256 * 1024
        }
    );
    assert!(decide_json(json!({ "resources": services(1000) })).is_ok());
    let e = refusal(json!({ "resources": services(1001) }));
    assert_eq!(
        e,
        "resources: 1001 entries, more than the limit of 1000 children"
    );
}

#[test]
fn each_cap_is_refused_with_a_clear_error() {
    let p = small();
    let at_limit = json!({
        "status": {"phase": "Ready"},
        "resources": services(2),
        "conditions": [{"type": "A", "status": "True"}],
        "events": [{"reason": "A"}]
    });
    assert!(decide_with(&p, at_limit).is_ok());
    for (answer, message) in [
        (
            json!({ "resources": services(3) }),
            "resources: 3 entries, more than the limit of 2 children",
        ),
        (
            json!({"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}),
            "2 conditions, more than the limit of 1",
        ),
        (
            json!({"events": [{"reason": "A"}, {"reason": "B"}]}),
            "2 events, more than the limit of 1",
        ),
        (
            json!({"status": {"message": "x".repeat(40)}}),
            "status is 54 bytes of JSON, more than the limit of 32 bytes",
        ),
    ] {
        let e = decide_with(&p, answer.clone()).expect_err(message);
        assert_eq!(e.to_string(), message);
        assert_eq!(lint(answer.to_string().as_bytes(), &p).errors, [message]);
    }
}

#[test]
fn a_hopeless_answer_lists_a_bounded_number_of_problems_and_warnings() {
    let bad: Vec<Value> = (0..500).map(|_| json!({"kind": "Nothing"})).collect();
    let l = lint_json(json!({ "resources": bad }));
    assert_eq!(l.errors.len(), 201);
    assert_eq!(l.errors[200], "… and 300 more problems");
    let noisy: Vec<Value> = (0..100)
        .map(|i| json!({"type": "service", "fields": {"name": format!("s{i}"), "port": 80, "colour": "red"}}))
        .collect();
    let d = decide_json(json!({ "resources": noisy })).expect("warnings are no errors");
    assert_eq!(d.warnings.len(), 51);
    assert_eq!(d.warnings[50], "… and 50 more warnings");
}
