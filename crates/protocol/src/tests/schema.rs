//! The published JSON Schema of `Response` against what `decide` accepts.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::*;
use crate::INTENT_TYPES;
use crate::intent::TYPES;
use crate::response::{FIELDS, Response};

fn response_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Response)).expect("schema is JSON")
}

#[test]
fn the_response_schema_lists_exactly_the_fields_decide_reads() {
    let schema = response_schema();
    let properties: Vec<&str> = schema["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .map(String::as_str)
        .collect();
    let mut fields = FIELDS.to_vec();
    fields.sort_unstable();
    assert_eq!(properties, fields);
    let intents: Vec<&str> = schema["properties"]["resources"]["items"]["oneOf"]
        .as_array()
        .expect("variants")
        .iter()
        .filter_map(|v| v["properties"]["type"]["const"].as_str())
        .collect();
    assert_eq!(intents, INTENT_TYPES);
    let tables: Vec<&str> = TYPES.iter().map(|t| t.name).collect();
    assert_eq!(tables, INTENT_TYPES);
}

/// Whether Python's `jsonschema` (Draft 2020-12) accepts each instance.
fn schema_accepts(schema: &Value, instances: &[Value]) -> Vec<bool> {
    let script = r#"
import json, sys
from jsonschema import Draft202012Validator
schema, instances = json.load(sys.stdin)
Draft202012Validator.check_schema(schema)
v = Draft202012Validator(schema)
print(json.dumps([v.is_valid(i) for i in instances]))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (cargo xtask test installs Python's jsonschema)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(json!([schema, instances]).to_string().as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("python3 finishes");
    assert!(
        out.status.success(),
        "the validator failed (is Python's jsonschema installed?): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a list of booleans")
}

#[test]
fn the_response_schema_agrees_with_decide_on_the_shape_of_answers() {
    // Answers whose fate depends only on their shape (no policy questions such as namespaces).
    let answers = [
        json!({}),
        json!({"result": "ok", "requeueAfter": "1h30m"}),
        json!({"result": "requeue", "requeueAfter": "1.5s"}),
        json!({"result": "requeue", "requeueAfter": "5 seconds"}),
        json!({"result": "ok", "requeueAfter": "12µs5m"}),
        json!({"result": "ok", "requeueAfter": ".s"}),
        json!({"result": "ok", "requeueAfter": ""}),
        json!({"result": "maybe"}),
        json!({"result": null, "error": null, "status": null, "resources": null}),
        json!({"status": "Ready"}),
        json!({"finalized": "yes"}),
        json!({"conditions": [{"type": "Db", "status": "True"}]}),
        json!({"conditions": [{"type": "Ready", "status": "True"}]}),
        json!({"conditions": [{"type": "Db", "status": "Maybe"}]}),
        json!({"conditions": [{"type": "Db"}]}),
        json!({"events": [{"reason": "Planned"}]}),
        json!({"events": [{"type": "Info", "reason": "Planned"}]}),
        json!({"events": [{"type": "Normal", "reason": ""}]}),
        json!({"resources": {"not": "a list"}}),
        json!({"resources": ["a string"]}),
        json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}}]}),
        json!({"resources": [{"apiVersion": "apps/", "kind": "Deployment", "metadata": {"name": "a"}}]}),
        json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "labels": "x"}}]}),
        json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "labels": {"a": 1}}}]}),
        json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": "a"}]}),
        json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}, "forceConflict": "yes"}]}),
        json!({"resources": [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": "a"}}]}),
        json!({"resources": [{"type": "service", "fields": {"name": "a", "port": 80}}]}),
        json!({"resources": [{"type": "service", "fields": {"name": "a", "port": "80", "extra": [1]}}]}),
        json!({"resources": [{"type": "service", "fields": {"name": "a"}}]}),
        json!({"resources": [{"type": "service", "fields": {"name": "a", "port": "eighty"}}]}),
        json!({"resources": [{"type": "service", "fields": {"name": "", "port": 80}}]}),
        json!({"resources": [{"type": "daemonset", "fields": {"name": "a"}}]}),
        json!({"resources": [{"type": "deployment", "fields": {"name": "a", "image": "i", "env": {"A": 1, "B": true}, "command": "run"}}]}),
        json!({"resources": [{"type": "deployment", "fields": {"name": "a", "image": "i", "env": {"A": [1]}}}]}),
        json!({"resources": [{"type": "deployment", "fields": {"name": "a", "image": "i", "command": [1]}}]}),
        json!({"resources": [{"type": "cronjob", "fields": {"name": "a", "image": "i", "schedule": "* * * * *", "suspend": "no"}}]}),
        json!({"resources": [{"type": "secret", "forceConflict": false, "fields": {"name": "a", "stringData": {"k": "v"}}}]}),
        json!({"resources": [{"type": "custom", "fields": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a", "spec": {}}}]}),
        json!({"resources": [{"type": "custom", "fields": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a", "spec": []}}]}),
        json!({"resources": [{"type": "custom", "fields": {"kind": "Deployment", "name": "a"}}]}),
    ];
    let verdicts = schema_accepts(&response_schema(), &answers);
    for (answer, schema_ok) in answers.iter().zip(verdicts) {
        let decided = decide_json(answer.clone());
        assert_eq!(
            schema_ok,
            decided.is_ok(),
            "schema and decide disagree on {answer}: {decided:?}"
        );
    }
}
