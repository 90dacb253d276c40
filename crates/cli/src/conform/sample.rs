//! CRs made from a CRD's `openAPIV3Schema`: every field filled ([`Fill::All`]), only what the
//! schema requires with the defaults the API server would add ([`Fill::Required`]), and one
//! grown close to the size the API server stores ([`large`]). Values are the schema's own
//! (default, enum, example) where it has one, else the smallest that fits its type and bounds.

use serde_json::{Map, Value, json};

/// How much of a schema a sample fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Every property, one item per list, one key per map.
    All,
    /// Required properties, and those with a default (the API server defaults them).
    Required,
}

/// Deeper than this a sample stops (a recursive or very deep schema).
const MAX_DEPTH: usize = 16;

/// The largest object etcd stores by default is 1.5 MiB; a large sample stays a little under.
pub const LARGE_BYTES: usize = 1_400_000;

/// Where a CR of the entry is stored: its namespace, `None` when cluster-scoped.
#[derive(Debug, Clone)]
pub struct Placement {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    /// The entry's `labelSelector`: a CR without these labels is never reconciled.
    pub labels: Map<String, Value>,
}

/// A CR named `name` whose spec (and, with [`Fill::All`], status) follows `schema`.
pub fn cr(schema: &Value, fill: Fill, name: &str, at: &Placement) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = &at.namespace {
        metadata["namespace"] = json!(ns);
    }
    if !at.labels.is_empty() {
        metadata["labels"] = Value::Object(at.labels.clone());
    }
    let mut cr = json!({
        "apiVersion": at.api_version,
        "kind": at.kind,
        "metadata": metadata,
    });
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = required_of(schema);
    for (field, sub) in properties.into_iter().flatten() {
        let wanted = match field.as_str() {
            "apiVersion" | "kind" | "metadata" => false,
            // A status is the service's own answer; only a full sample brings one back.
            "status" => fill == Fill::All,
            _ => fill == Fill::All || required.contains(&field.as_str()) || field == "spec",
        };
        if wanted && let Some(v) = value(sub, fill, 1) {
            cr[field] = v;
        }
    }
    cr
}

/// `cr` grown to about [`LARGE_BYTES`] of JSON: the bulk in the first string of the spec the
/// schema leaves unbounded, else in an annotation (the API server allows 256 KiB of those).
/// Returns where the bulk went.
pub fn large(mut cr: Value, schema: &Value) -> (Value, String) {
    let size = serde_json::to_vec(&cr).map_or(0, |b| b.len());
    let spec = schema.pointer("/properties/spec").unwrap_or(&Value::Null);
    if let Some(path) = unbounded_string(spec, &mut vec!["spec".to_string()], 1) {
        let mut at = &mut cr;
        for part in &path {
            if !at.is_object() {
                *at = json!({});
            }
            at = &mut at[part.as_str()];
        }
        *at = json!(bulk(LARGE_BYTES.saturating_sub(size)));
        return (cr, path.join("."));
    }
    let key = "conform.ork.dev/large";
    if !cr["metadata"]["annotations"].is_object() {
        cr["metadata"]["annotations"] = json!({});
    }
    cr["metadata"]["annotations"][key] = json!(bulk(256 * 1024 - key.len() - 64));
    (cr, format!("metadata.annotations[{key}]"))
}

/// `n` bytes of plain text that reads as what it is.
fn bulk(n: usize) -> String {
    let word = "large-object ";
    word.repeat(n / word.len() + 1)[..n].trim_end().to_string()
}

/// The path of the first string under `schema` (in key order) with no length bound, pattern,
/// format or fixed values.
fn unbounded_string(schema: &Value, path: &mut Vec<String>, depth: usize) -> Option<Vec<String>> {
    if depth > MAX_DEPTH {
        return None;
    }
    if schema.get("type").and_then(Value::as_str) == Some("string") {
        let bounded = ["maxLength", "pattern", "format", "enum"]
            .iter()
            .any(|k| schema.get(k).is_some());
        return (!bounded).then(|| path.clone());
    }
    for (field, sub) in schema.get("properties").and_then(Value::as_object)? {
        path.push(field.clone());
        if let Some(found) = unbounded_string(sub, path, depth + 1) {
            return Some(found);
        }
        path.pop();
    }
    None
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A value `schema` accepts; `None` for an optional field [`Fill::Required`] leaves out.
pub fn value(schema: &Value, fill: Fill, depth: usize) -> Option<Value> {
    if let Some(v) = schema.get("default") {
        return Some(v.clone());
    }
    if let Some(v) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return Some(v.clone());
    }
    if let Some(v) = schema.get("example") {
        return Some(v.clone());
    }
    if depth > MAX_DEPTH {
        return Some(Value::Null);
    }
    // A schema without a type of its own: the first alternative that has one.
    let typed = match schema.get("type").and_then(Value::as_str) {
        Some(_) => schema,
        None => ["anyOf", "oneOf", "allOf"]
            .iter()
            .filter_map(|k| schema.get(*k).and_then(Value::as_array))
            .flatten()
            .find(|s| s.get("type").is_some())
            .unwrap_or(schema),
    };
    if typed.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return Some(json!(1));
    }
    Some(match typed.get("type").and_then(Value::as_str) {
        Some("object") => object(typed, fill, depth),
        Some("array") => {
            let items = typed.get("items").unwrap_or(&Value::Null);
            let min = typed.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let n = match fill {
                Fill::All => min.max(1),
                Fill::Required => min,
            };
            let one = value(items, fill, depth + 1).unwrap_or(Value::Null);
            Value::Array((0..n.min(8)).map(|_| one.clone()).collect())
        }
        Some("string") => json!(string(typed)),
        Some("integer") => json!(number(typed).round() as i64),
        Some("number") => json!(number(typed)),
        Some("boolean") => json!(true),
        // No type: preserve-unknown-fields or an empty schema.
        _ => json!({}),
    })
}

fn object(schema: &Value, fill: Fill, depth: usize) -> Value {
    let mut out = Map::new();
    let required = required_of(schema);
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (field, sub) in properties {
            let wanted = fill == Fill::All
                || required.contains(&field.as_str())
                || sub.get("default").is_some();
            if wanted && let Some(v) = value(sub, fill, depth + 1) {
                out.insert(field.clone(), v);
            }
        }
    } else if let Some(extra) = schema.get("additionalProperties").filter(|a| a.is_object())
        && fill == Fill::All
        && let Some(v) = value(extra, fill, depth + 1)
    {
        out.insert("sample".into(), v);
    }
    Value::Object(out)
}

fn string(schema: &Value) -> String {
    let format = schema.get("format").and_then(Value::as_str);
    let base = match format {
        Some("date-time") => "2025-01-01T00:00:00Z",
        Some("date") => "2025-01-01",
        Some("duration") => "30s",
        Some("uri" | "url") => "https://example.org/",
        Some("email") => "someone@example.org",
        Some("ipv4") => "192.0.2.1",
        Some("uuid") => "00000000-0000-4000-8000-000000000000",
        Some("byte") => "c2FtcGxl",
        _ => "sample",
    };
    let mut s = base.to_string();
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    while s.len() < min {
        s.push('x');
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        s.truncate(max as usize);
    }
    s
}

/// 1 where the bounds allow it, else the bound nearest to it.
fn number(schema: &Value) -> f64 {
    let min = schema.get("minimum").and_then(Value::as_f64);
    let max = schema.get("maximum").and_then(Value::as_f64);
    let exclusive = |k: &str| schema.get(k) == Some(&Value::Bool(true));
    let mut n: f64 = 1.0;
    if let Some(min) = min {
        let floor = if exclusive("exclusiveMinimum") {
            min + 1.0
        } else {
            min
        };
        n = n.max(floor);
    }
    if let Some(max) = max {
        let ceiling = if exclusive("exclusiveMaximum") {
            max - 1.0
        } else {
            max
        };
        n = n.min(ceiling);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["image"],
                    "properties": {
                        "image": {"type": "string"},
                        "replicas": {"type": "integer", "minimum": 0, "default": 1},
                        "port": {"type": "integer", "minimum": 1024, "maximum": 65535},
                        "mode": {"type": "string", "enum": ["fast", "slow"]},
                        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }
                },
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }
        })
    }

    fn at() -> Placement {
        Placement {
            api_version: "demo.ork.dev/v1".into(),
            kind: "WebApp".into(),
            namespace: Some("team".into()),
            labels: Map::new(),
        }
    }

    #[test]
    fn a_full_sample_fills_every_field_within_its_bounds() {
        let cr = cr(&schema(), Fill::All, "a", &at());
        assert_eq!(
            cr["spec"],
            json!({"image": "sample", "replicas": 1, "port": 1024, "mode": "fast", "tags": ["sam"], "labels": {"sample": "sample"}})
        );
        assert_eq!(cr["status"], json!({}));
        assert_eq!(cr["metadata"], json!({"name": "a", "namespace": "team"}));
    }

    #[test]
    fn a_minimal_sample_has_what_is_required_and_the_defaults() {
        let cr = cr(&schema(), Fill::Required, "a", &at());
        assert_eq!(cr["spec"], json!({"image": "sample", "replicas": 1}));
        assert!(cr.get("status").is_none());
    }

    #[test]
    fn a_large_sample_puts_its_bulk_in_an_unbounded_string_of_the_spec() {
        let full = cr(&schema(), Fill::All, "a", &at());
        let (big, at) = large(full, &schema());
        assert_eq!(at, "spec.image");
        let size = serde_json::to_vec(&big).expect("json").len();
        assert!(
            size > LARGE_BYTES - 100 && size <= LARGE_BYTES,
            "{size} bytes"
        );
        let bounded = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string", "maxLength": 4}}}}});
        let (big, at) = large(
            cr(
                &bounded,
                Fill::All,
                "a",
                &Placement {
                    namespace: None,
                    ..self::at()
                },
            ),
            &bounded,
        );
        assert_eq!(at, "metadata.annotations[conform.ork.dev/large]");
        assert!(
            big["metadata"]["annotations"]["conform.ork.dev/large"]
                .as_str()
                .is_some_and(|s| s.len() > 200_000)
        );
    }
}
