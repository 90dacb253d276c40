//! The answer as a whole: result, requeueAfter, error text, conditions, events, JSON shape,
//! and `lint` agreeing with `decide`.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::Outcome;

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
    assert!(refusal(json!({"result": "requeue"})).contains("requeueAfter is empty"));
    assert!(refusal(json!({"result": "maybe"})).contains("unknown result value \"maybe\""));
    assert_eq!(
        decide_json(json!({"result": "ok", "error": "boom"}))
            .expect("ok")
            .outcome,
        Outcome::Error {
            message: "boom".into()
        }
    );
    assert_eq!(
        decide_json(json!({"result": "error"})).expect("ok").outcome,
        Outcome::Error {
            message: "remote reconciler returned result=error with no message".into()
        }
    );
    assert_eq!(
        decide_json(json!({})).expect("ok").outcome,
        Outcome::Ok {
            requeue_after: None
        }
    );
    assert!(matches!(
        decide(b"<html>", &policy()),
        Err(ResponseError::Malformed(_))
    ));
    assert!(matches!(
        decide(b"[1]", &policy()),
        Err(ResponseError::Malformed(_))
    ));
}

#[test]
fn requeue_after_must_be_a_go_duration_within_one_second_and_one_year() {
    let after = |text: &str| decide_json(json!({"result": "requeue", "requeueAfter": text}));
    for (text, want) in [
        ("1s", Duration::from_secs(1)),
        ("1.5s", Duration::from_millis(1500)),
        ("1h30m", Duration::from_secs(5400)),
        ("+90s", Duration::from_secs(90)),
        ("8760h", Duration::from_secs(365 * 24 * 3600)),
    ] {
        assert_eq!(
            after(text).expect(text).outcome,
            Outcome::Requeue { after: want },
            "{text}"
        );
    }
    for (text, why) in [
        ("999ms", "out of range"),
        ("8760h0m1s", "out of range"),
        ("-5s", "out of range"),
        ("0s", "out of range"),
        ("5 seconds", "unknown unit \" seconds\""),
        ("60", "missing unit"),
        ("1d", "unknown unit \"d\""),
        ("99999999999999h", "out of range"),
        ("9999999999999999999999999s", "out of range"),
    ] {
        let e = after(text).expect_err(text).to_string();
        assert!(e.contains(why), "{text}: {e}");
        assert!(e.starts_with("requeueAfter"), "{text}: {e}");
    }
    // Allowed with ok, where 0 means "no requeue" (Orkestra ignores it there).
    assert_eq!(
        decide_json(json!({"result": "ok", "requeueAfter": "2m"}))
            .expect("ok")
            .outcome,
        Outcome::Ok {
            requeue_after: Some(Duration::from_secs(120))
        }
    );
    assert_eq!(
        decide_json(json!({"result": "ok", "requeueAfter": "0s"}))
            .expect("ok")
            .outcome,
        Outcome::Ok {
            requeue_after: None
        }
    );
    assert!(refusal(json!({"result": "ok", "requeueAfter": "0.5s"})).contains("out of range"));
}

#[test]
fn service_text_is_cleaned_before_it_reaches_status_or_events() {
    let long = "x".repeat(5000);
    let d = decide_json(json!({
        "result": "error",
        "error": format!("\u{1b}[31mboom\u{1b}[0m\r\nat line 2\n{long}"),
        "conditions": [{"type": "Db", "status": "False", "reason": "Down\u{0}", "message": "a\nb\u{7}"}],
        "events": [{"type": "Warning", "reason": "R".repeat(300), "message": format!("m\u{1b}]0;title\u{7}\n{long}")}]
    }))
    .expect("valid");
    let Outcome::Error { message } = &d.outcome else {
        panic!("{:?}", d.outcome)
    };
    assert!(message.starts_with("boom at line 2 xxx"), "{message}");
    assert_eq!(message.chars().count(), 1000);
    assert!(message.ends_with('…'));
    assert_eq!(d.conditions[0].reason, "Down");
    assert_eq!(d.conditions[0].message, "a b");
    assert_eq!(d.events[0].reason.chars().count(), 128);
    assert!(
        d.events[0].message.starts_with("m xxx"),
        "{}",
        d.events[0].message
    );
    assert_eq!(d.events[0].message.chars().count(), 1000);
}

#[test]
fn conditions_and_events_are_checked() {
    assert!(
        refusal(json!({"conditions": [{"type": "Ready", "status": "True"}]}))
            .contains("condition Ready is ork's own")
    );
    assert!(
        refusal(json!({"conditions": [{"type": "Db", "status": "Yes"}]}))
            .contains("needs a type and status True, False or Unknown")
    );
    assert!(
        refusal(json!({"conditions": [
            {"type": "Db", "status": "True"}, {"type": "Db", "status": "False"}]}))
        .contains("conditions[1]: condition \"Db\" is listed twice")
    );
    assert!(
        refusal(json!({"events": [{"type": "Info", "reason": "X"}]}))
            .contains("event \"X\" needs type Normal or Warning")
    );
    assert!(
        refusal(json!({"events": [{"reason": "\u{7}"}]}))
            .contains("needs type Normal or Warning and a reason"),
        "a reason that is only control characters is no reason"
    );
    let d = decide_json(json!({"events": [{"reason": "Planned"}]})).expect("valid");
    assert_eq!(d.events[0].type_, "Normal");
}

#[test]
fn repeated_json_keys_are_refused_by_decide_and_listed_by_lint() {
    let body = br#"{"result":"ok","resources":[{"apiVersion":"v1","kind":"Service",
        "metadata":{"name":"a","namespace":"team","namespace":"kube-system"}}],"result":"error"}"#;
    let e = decide(body, &policy()).expect_err("repeated keys");
    assert!(matches!(e, ResponseError::Malformed(_)));
    assert!(
        e.to_string()
            .contains("resources[0].metadata: key \"namespace\" appears twice"),
        "{e}"
    );
    let l = lint(body, &policy());
    assert!(
        l.errors[1].contains("the top level: key \"result\" appears twice"),
        "{l:?}"
    );
    // The rest is checked as serde_json reads it (the last value), so its problems show too.
    assert!(l.errors[2].contains("namespace \"kube-system\""), "{l:?}");
    assert_eq!(l.errors.len(), 3, "{l:?}");
}

#[test]
fn every_misshapen_field_is_named_with_its_path() {
    let l = lint_json(json!({
        "result": 1,
        "status": "ok",
        "conditions": [{"type": "Db", "status": "True"}, {"type": "Db2"}],
        "resources": [{"type": "service", "fields": {"name": "a", "port": 80}}]
    }));
    let all = l.errors.join("\n");
    for expected in [
        "result: invalid type: integer `1`",
        "status: invalid type: string \"ok\"",
        "conditions[1]: missing field `status`",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
    }
    assert_eq!(l.errors.len(), 3, "{all}");
}

#[test]
fn lint_reports_every_problem_not_just_the_first() {
    let l = lint_json(json!({
        "result": "requeue",
        "resourcez": [],
        "conditions": [{"type": "Ready", "status": "True"}],
        "events": [{"type": "Info", "reason": "X"}],
        "resources": [
            {"type": "configmap", "fields": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "other"}},
            {"type": "service", "fields": {"name": "ok", "port": 80}},
            {"type": "service", "fields": {"name": "ok", "port": 81}},
            {"apiVersion": "apps/v1beta1", "kind": "Deployment",
             "metadata": {"name": "d", "labels": "x", "namespace": "ork-system"}},
            {"type": "deployment", "fields": {"name": "w", "imag": "nginx"}}
        ]
    }));
    let all = l.errors.join("\n");
    for expected in [
        "result=requeue but requeueAfter is empty",
        "condition Ready is ork's own",
        "event \"X\" needs type Normal or Warning",
        "resources[0]: ConfigMap (core) is not declared",
        "resources[1]: Service s is in namespace \"other\"",
        "resources[3]: Service ok is listed twice",
        "resources[4]: metadata.labels must be a map of strings, got \"x\"",
        "resources[4]: Deployment apps/v1beta1: the API server serves apps/deployments in v1, not v1beta1",
        "resources[4]: Deployment d is in ork's own namespace \"ork-system\"",
        "resources[5]: deployment intent: field \"image\" is required",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
    }
    assert_eq!(l.errors.len(), 10, "{all}");
    let warnings = l.warnings.join("\n");
    assert!(
        warnings.contains("unknown field \"resourcez\""),
        "{warnings}"
    );
    assert!(
        warnings.contains(
            "resources[5]: deployment intent field \"imag\" is unknown to ork and ignored"
        ),
        "{warnings}"
    );
}

#[test]
fn lint_and_decide_agree_on_every_answer() {
    let answers = [
        json!({}),
        json!({"result": "ok", "resources": [{"type": "service", "fields": {"name": "a", "port": 80, "colour": "red"}}]}),
        json!({"result": "requeue"}),
        json!({"result": "ok", "error": "boom", "requeueAfter": "5s"}),
        json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "labels": {"a": 1}}}]}),
        json!({"resources": [{"apiVersion": "demo.ork.dev/v1beta1", "kind": "WebApp", "metadata": {"name": "hello"}}]}),
        json!({"status": {"phase": "Ready"}, "events": [{"reason": "Done", "message": "ok"}], "finalized": true}),
        json!({"resources": [{"type": "cronjob", "fields": {"name": "c", "image": "i", "schedule": "* * * * *", "concurrencyPolicy": "sometimes"}}]}),
    ];
    for answer in answers {
        let body = answer.to_string();
        let l = lint(body.as_bytes(), &policy());
        match decide(body.as_bytes(), &policy()) {
            Ok(d) => {
                assert!(l.errors.is_empty(), "{answer}: {l:?}");
                assert_eq!(d.warnings, l.warnings, "{answer}");
            }
            Err(e) => assert_eq!(l.errors.first(), Some(&e.to_string()), "{answer}"),
        }
    }
}

#[test]
fn a_good_answer_lints_clean() {
    let body = json!({"result": "ok", "resources": [{"type": "service", "fields": {"name": "a", "port": 80}}]});
    assert_eq!(lint_json(body), Lint::default());
    assert!(!lint(b"<html>", &policy()).errors.is_empty());
}

#[test]
fn failure_hints_are_warnings() {
    let d =
        decide_json(json!({"result": "ok", "error": "boom", "requeueAfter": "5s"})).expect("valid");
    let all = d.warnings.join("\n");
    assert!(
        all.contains("a non-empty \"error\" makes this a failure"),
        "{all}"
    );
    assert!(
        all.contains("requeueAfter is ignored when the reconcile fails"),
        "{all}"
    );
}
