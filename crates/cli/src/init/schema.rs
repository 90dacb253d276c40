//! An OpenAPI v3 schema inferred from a sample CR's values, as a CRD needs it (structural: every
//! node typed, or marked `x-kubernetes-preserve-unknown-fields` where the sample cannot tell).

use serde_json::{Map, Value, json};

/// What a value the sample leaves open is: anything, kept as written (an empty object or list,
/// a null, a list whose items disagree).
fn unsure() -> Value {
    json!({"x-kubernetes-preserve-unknown-fields": true})
}

/// The schema of `value`: its type, an object's properties, a list's items (merged over every
/// item). Nothing is required: one sample does not say what every CR must have.
pub fn infer(value: &Value) -> Value {
    match value {
        Value::Null => json!({"nullable": true, "x-kubernetes-preserve-unknown-fields": true}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
        Value::String(_) => json!({"type": "string"}),
        Value::Array(items) => {
            let merged = items.iter().map(infer).reduce(|a, b| merge(&a, &b));
            json!({"type": "array", "items": merged.unwrap_or_else(unsure)})
        }
        Value::Object(fields) if fields.is_empty() => {
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        }
        Value::Object(fields) => {
            let properties: Map<String, Value> =
                fields.iter().map(|(k, v)| (k.clone(), infer(v))).collect();
            json!({"type": "object", "properties": properties})
        }
    }
}

/// One schema for two items of a list: equal ones as they are, objects with the union of their
/// properties, integers with numbers as numbers, integers with strings as int-or-string; items
/// that disagree otherwise are anything.
fn merge(a: &Value, b: &Value) -> Value {
    if a == b {
        return a.clone();
    }
    let type_of = |s: &Value| s.get("type").and_then(Value::as_str).map(str::to_string);
    match (type_of(a).as_deref(), type_of(b).as_deref()) {
        (Some("object"), Some("object")) => {
            let props = |s: &Value| s.get("properties").and_then(Value::as_object).cloned();
            let mut out = json!({"type": "object"});
            let open = a.get("x-kubernetes-preserve-unknown-fields").is_some()
                || b.get("x-kubernetes-preserve-unknown-fields").is_some();
            let mut merged = props(a).unwrap_or_default();
            for (k, v) in props(b).unwrap_or_default() {
                let joined = match merged.get(&k) {
                    Some(existing) => merge(existing, &v),
                    None => v,
                };
                merged.insert(k, joined);
            }
            if !merged.is_empty() {
                out["properties"] = Value::Object(merged);
            }
            if open {
                out["x-kubernetes-preserve-unknown-fields"] = json!(true);
            }
            out
        }
        (Some("array"), Some("array")) => {
            let items = |s: &Value| s.get("items").cloned().unwrap_or_else(unsure);
            json!({"type": "array", "items": merge(&items(a), &items(b))})
        }
        (Some("integer"), Some("number")) | (Some("number"), Some("integer")) => {
            json!({"type": "number"})
        }
        (Some("integer"), Some("string")) | (Some("string"), Some("integer")) => {
            json!({"x-kubernetes-int-or-string": true})
        }
        // A null among typed items: the type, and null allowed.
        (Some(_), None) if is_null(b) => with_nullable(a),
        (None, Some(_)) if is_null(a) => with_nullable(b),
        _ => unsure(),
    }
}

fn is_null(schema: &Value) -> bool {
    schema.get("nullable") == Some(&json!(true)) && schema.get("type").is_none()
}

fn with_nullable(schema: &Value) -> Value {
    let mut out = schema.clone();
    out["nullable"] = json!(true);
    out
}

/// The CR's schema: the sample's top-level fields but `apiVersion`, `kind`, `metadata` and
/// `status` inferred (`spec`, and any other such as a ConfigMap-like `data`); `spec` open to
/// anything when the sample has none; `status` open to anything the service writes.
pub fn cr_schema(sample: Option<&Value>) -> Value {
    let mut properties = Map::new();
    if let Some(Value::Object(fields)) = sample {
        for (k, v) in fields {
            if !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status") {
                properties.insert(k.clone(), infer(v));
            }
        }
    }
    properties.entry("spec").or_insert_with(|| {
        json!({
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "x-kubernetes-preserve-unknown-fields": true,
        })
    });
    properties.insert(
        "status".into(),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    );
    json!({"type": "object", "properties": properties})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_get_their_types_and_integers_stay_integers() {
        assert_eq!(infer(&json!("x")), json!({"type": "string"}));
        assert_eq!(infer(&json!(3)), json!({"type": "integer"}));
        assert_eq!(infer(&json!(0.5)), json!({"type": "number"}));
        assert_eq!(infer(&json!(true)), json!({"type": "boolean"}));
    }

    #[test]
    fn nested_objects_and_lists_of_objects_get_the_union_of_their_fields() {
        let schema = infer(&json!({
            "quota": {"cpu": "2", "pods": 10},
            "members": [{"name": "ann", "role": "admin"}, {"name": "bob", "weight": 1}],
        }));
        assert_eq!(
            schema["properties"]["quota"],
            json!({"type": "object", "properties": {"cpu": {"type": "string"}, "pods": {"type": "integer"}}})
        );
        let item = &schema["properties"]["members"]["items"];
        assert_eq!(item["type"], "object");
        for (field, t) in [
            ("name", "string"),
            ("role", "string"),
            ("weight", "integer"),
        ] {
            assert_eq!(item["properties"][field]["type"], t, "{field}");
        }
    }

    #[test]
    fn what_the_sample_cannot_tell_is_kept_as_written() {
        let open = json!(true);
        let schema =
            infer(&json!({"tags": [], "extra": {}, "mixed": [1, "a", true], "gone": null}));
        let p = &schema["properties"];
        assert_eq!(
            p["tags"]["items"]["x-kubernetes-preserve-unknown-fields"],
            open
        );
        assert_eq!(p["extra"]["x-kubernetes-preserve-unknown-fields"], open);
        assert_eq!(p["extra"]["type"], "object");
        assert_eq!(
            p["mixed"]["items"]["x-kubernetes-preserve-unknown-fields"],
            open
        );
        assert_eq!(p["gone"]["nullable"], open);
    }

    #[test]
    fn items_that_mix_integers_with_numbers_or_strings_get_a_type_for_both() {
        assert_eq!(infer(&json!([1, 2.5]))["items"], json!({"type": "number"}));
        assert_eq!(
            infer(&json!([80, "http"]))["items"],
            json!({"x-kubernetes-int-or-string": true})
        );
        assert_eq!(
            infer(&json!(["a", null]))["items"],
            json!({"type": "string", "nullable": true})
        );
    }

    #[test]
    fn the_cr_schema_has_the_samples_spec_and_an_open_status() {
        let schema = cr_schema(Some(&json!({
            "apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "a"},
            "spec": {"size": 3}, "status": {"phase": "Ready"},
        })));
        assert_eq!(
            schema["properties"]["spec"]["properties"]["size"]["type"],
            "integer"
        );
        assert_eq!(
            schema["properties"]["status"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        assert!(schema["properties"].get("metadata").is_none());
        let minimal = cr_schema(None);
        assert_eq!(
            minimal["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
    }
}
