//! `ork schema` output validates what ork really reads and writes, checked by an independent
//! JSON Schema implementation (Python's `jsonschema`, installed by `cargo xtask test`).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn schema(what: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["schema", what])
        .output()
        .expect("ork runs");
    assert!(out.status.success());
    let schema: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    schema
}

/// The validator's error messages; empty when `instance` is valid.
fn validate(schema: &Value, instance: &Value) -> String {
    let program = r#"
import json, sys
from jsonschema import Draft202012Validator
schema, instance = json.load(sys.stdin)
Draft202012Validator.check_schema(schema)
for e in Draft202012Validator(schema).iter_errors(instance):
    print(f"{list(e.absolute_path)}: {e.message}")
"#;
    let mut child = Command::new("python3")
        .args(["-c", program])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(json!([schema, instance]).to_string().as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("python3 finishes");
    assert!(
        out.status.success(),
        "the validator failed (is Python's jsonschema installed?): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn example_katalog() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp/katalog.yaml");
    serde_saphyr::from_str(&std::fs::read_to_string(path).expect("example")).expect("YAML")
}

#[test]
fn the_katalog_schema_accepts_the_examples_and_rejects_typos() {
    let schema = schema("katalog");
    assert_eq!(validate(&schema, &example_katalog()), "");
    let mut typo = example_katalog();
    typo["spec"]["crds"]["webapp"]["operatorBox"]["reconcile"]["remote"]["timout"] = json!("5s");
    let errors = validate(&schema, &typo);
    assert!(
        errors.contains("'remote']") && errors.contains("'timout'"),
        "the typo is refused: {errors}"
    );
}

#[test]
fn the_request_schema_accepts_a_request_ork_sends() {
    let request = json!({
        "key": "default/hello",
        "gvk": {"Group": "demo.ork.dev", "Version": "v1", "Kind": "WebApp"},
        "object": {"apiVersion": "demo.ork.dev/v1", "kind": "WebApp", "metadata": {"name": "hello"}},
        "args": {"environment": "prod"},
        "prepared": {
            "children": {"deployment": {"hello": {}}},
            "cross": {},
            "sentinels": {"generationChanged": true},
            "validation": {"passed": true, "failed": [], "warnings": []},
            "health": {"state": "healthy", "consecutiveFails": 0, "errorRatePercent": 0.0},
            "trigger": {"reason": "create", "attempt": 1},
            "finalizing": false
        }
    });
    assert_eq!(validate(&schema("request"), &request), "");
}

#[test]
fn the_response_schema_accepts_the_protocol_and_rejects_wrong_types() {
    let schema = schema("response");
    let answer = json!({
        "result": "requeue", "requeueAfter": "30s",
        "status": {"phase": "Ready"},
        "resources": [{"type": "service", "fields": {"name": "a", "port": 80}}],
        "conditions": [{"type": "DatabaseReady", "status": "True", "reason": "Up", "message": ""}],
        "events": [{"type": "Normal", "reason": "Planned", "message": "ok"}]
    });
    assert_eq!(validate(&schema, &answer), "");
    let errors = validate(&schema, &json!({"resources": {"not": "a list"}}));
    assert!(!errors.is_empty(), "a map where a list belongs is refused");
}
