//! The CR fields an entry's templates and conditions read, checked against the CRD's
//! `openAPIV3Schema`: `{{ .spec.teem }}` where the schema has `spec.team` renders "" without a
//! word, so `ork validate` warns with the field meant (SPEC §16). Warnings, not errors: a field
//! the schema does not list may still be meant (a CRD that changes, a field set by a webhook).

use serde_json::Value;

use crate::condition::Condition;
use crate::model::CrdEntry;
use crate::template::{Template, is_template};
use crate::validate::Finding;

/// The fields of an object's metadata a template may read.
const METADATA: &[&str] = &[
    "name",
    "namespace",
    "generateName",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Deeper than this the walk stops (no real schema nests so deep).
const MAX_DEPTH: usize = 32;

/// Every field an entry's templates (endpoint, args, labels, annotations, cross selectors) and
/// conditions (gates, validation rules) read that `schema` (the CRD's `openAPIV3Schema` of the
/// entry's version) does not have. `entry_path` is `spec.crds.NAME`.
pub fn unknown_fields(entry_path: &str, entry: &CrdEntry, schema: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, read) in reads(entry_path, entry) {
        for chain in read.chains {
            if let Some((message, hint)) = check(&chain, schema) {
                let message = match &read.template {
                    Some(source) => format!("{source:?} reads {message}: it renders empty"),
                    None => format!("the condition reads {message}: it never has a value"),
                };
                out.push(Finding {
                    path: path.clone(),
                    message,
                    hint,
                });
            }
        }
    }
    out
}

/// What one templated or condition field reads.
struct Read {
    /// The template's source; `None` for a condition's dot path.
    template: Option<String>,
    chains: Vec<Vec<String>>,
}

fn template(t: &Template) -> Read {
    Read {
        template: Some(t.source().to_string()),
        chains: t.fields(),
    }
}

/// Every templated or condition field of the entry that reads the CR, with its Katalog path.
fn reads(ep: &str, entry: &CrdEntry) -> Vec<(String, Read)> {
    let mut out = Vec::new();
    for (k, t) in &entry.labels {
        out.push((format!("{ep}.labels.{k}"), template(t)));
    }
    for (k, t) in &entry.annotations {
        out.push((format!("{ep}.annotations.{k}"), template(t)));
    }
    let ob = &entry.operator_box;
    let bp = format!("{ep}.operatorBox");
    if let Some(remote) = &ob.reconcile.remote {
        let rp = format!("{bp}.reconcile.remote");
        if let Some(e) = &remote.endpoint {
            out.push((format!("{rp}.endpoint"), template(e)));
        }
        for (k, v) in &remote.args {
            args(&format!("{rp}.args.{k}"), v, &mut out);
        }
    }
    let gates = [
        ("enqueueGate", &ob.pre_reconcile.enqueue_gate),
        ("reconcileGate", &ob.pre_reconcile.reconcile_gate),
    ];
    for (name, gate) in gates {
        let Some(gate) = gate else { continue };
        let gp = format!("{bp}.preReconcile.{name}");
        for (i, c) in gate.when.iter().enumerate() {
            condition(&format!("{gp}.when[{i}].field"), c, &mut out);
        }
        for (i, c) in gate.or.iter().enumerate() {
            condition(&format!("{gp}.or[{i}].field"), c, &mut out);
        }
    }
    for (i, c) in ob.validation.rules.iter().enumerate() {
        condition(&format!("{bp}.validation.rules[{i}].field"), c, &mut out);
    }
    for (i, cross) in ob.observe.cross.iter().enumerate() {
        let sp = format!("{bp}.observe.cross[{i}].selector");
        let s = &cross.selector;
        if let Some(t) = &s.name {
            out.push((format!("{sp}.name"), template(t)));
        }
        if let Some(t) = &s.namespace {
            out.push((format!("{sp}.namespace"), template(t)));
        }
        for (k, t) in &s.labels {
            out.push((format!("{sp}.labels.{k}"), template(t)));
        }
    }
    for (i, input) in ob.observe.inputs.iter().enumerate() {
        let ip = format!("{bp}.observe.inputs[{i}]");
        if let Some(t) = &input.match_name {
            out.push((format!("{ip}.matchName"), template(t)));
        }
        for (k, t) in &input.match_labels {
            out.push((format!("{ip}.matchLabels.{k}"), template(t)));
        }
    }
    out
}

/// The templates in an `args` value (strings, in maps and lists too).
fn args(path: &str, v: &Value, out: &mut Vec<(String, Read)>) {
    match v {
        Value::String(s) if is_template(s) => {
            if let Ok(t) = Template::parse(s) {
                out.push((path.to_string(), template(&t)));
            }
        }
        Value::Object(m) => {
            for (k, v) in m {
                args(&format!("{path}.{k}"), v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                args(&format!("{path}[{i}]"), v, out);
            }
        }
        _ => {}
    }
}

/// A condition's `field`: a template, or a dot path into the CR.
fn condition(path: &str, c: &Condition, out: &mut Vec<(String, Read)>) {
    let Some(field) = c.field.as_deref() else {
        return;
    };
    if is_template(field) {
        if let Ok(t) = Template::parse(field) {
            out.push((path.to_string(), template(&t)));
        }
        return;
    }
    let chain: Vec<String> = field
        .trim_start_matches('.')
        .split('.')
        .map(str::to_string)
        .collect();
    out.push((
        path.to_string(),
        Read {
            template: None,
            chains: vec![chain],
        },
    ));
}

/// Whether the CR can have `chain`: `None` when it can (or the schema does not say), else what
/// is missing and a did-you-mean. Only `spec`, `status` and `metadata` are the CR's: other roots
/// (`.ork`, `.health`, a note) are the context's.
fn check(chain: &[String], schema: &Value) -> Option<(String, Option<String>)> {
    let first = chain.first()?.as_str();
    match first {
        "metadata" => {
            let field = chain.get(1)?;
            if METADATA.contains(&field.as_str()) {
                return None;
            }
            Some(missing(&chain[..2], METADATA.iter().copied()))
        }
        "spec" | "status" => {
            let mut at = schema;
            for (depth, part) in chain.iter().enumerate() {
                if depth > MAX_DEPTH || open(at) {
                    return None;
                }
                let properties = at.get("properties").and_then(Value::as_object);
                match properties.and_then(|p| p.get(part)) {
                    Some(next) => at = next,
                    None => {
                        let known = properties.into_iter().flatten().map(|(k, _)| k.as_str());
                        return Some(missing(&chain[..=depth], known));
                    }
                }
            }
            None
        }
        _ => None,
    }
}

/// An object whose keys the schema leaves free: a map, unknown fields kept, no object at all.
fn open(schema: &Value) -> bool {
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        || schema
            .get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(false))
        || (!is_object && schema.get("properties").is_none())
}

/// `.spec.teem, which the CRD's schema does not have`, and the field meant.
fn missing<'a>(
    chain: &[String],
    known: impl IntoIterator<Item = &'a str> + Clone,
) -> (String, Option<String>) {
    let (last, parent) = chain
        .split_last()
        .map_or(("", &[][..]), |(l, p)| (l.as_str(), p));
    let shown = format!(".{}", chain.join("."));
    let message = format!("{shown}, which the CRD's schema does not have");
    let hint = match crate::suggest::closest(last, known.clone()) {
        Some(near) => {
            let mut meant = parent.to_vec();
            meant.push(near.to_string());
            format!("did you mean .{}?", meant.join("."))
        }
        None => {
            let mut names: Vec<&str> = known.into_iter().collect();
            names.sort_unstable();
            if names.is_empty() {
                format!(".{} has no fields in the schema", parent.join("."))
            } else {
                format!(".{} has {}", parent.join("."), names.join(", "))
            }
        }
    };
    (message, Some(hint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "team": {"type": "string"},
                    "image": {"type": "string"},
                    "config": {"type": "object", "additionalProperties": {"type": "string"}}
                }},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }
        })
    }

    fn chain(s: &str) -> Vec<String> {
        s.split('.').map(str::to_string).collect()
    }

    #[test]
    fn a_misspelt_field_is_named_with_the_one_meant() {
        let (message, hint) = check(&chain("spec.teem"), &schema()).expect("unknown");
        assert_eq!(message, ".spec.teem, which the CRD's schema does not have");
        assert_eq!(hint.as_deref(), Some("did you mean .spec.team?"));
        let (_, hint) = check(&chain("spec.zzz"), &schema()).expect("unknown");
        assert_eq!(hint.as_deref(), Some(".spec has config, image, team"));
        let (_, hint) = check(&chain("metadata.nam"), &schema()).expect("unknown");
        assert_eq!(hint.as_deref(), Some("did you mean .metadata.name?"));
    }

    #[test]
    fn maps_kept_unknown_fields_and_the_context_s_own_roots_are_not_checked() {
        for ok in [
            "spec.team",
            "spec.config.anything",
            "status.whatever.deep",
            "metadata.labels.app",
            "ork.inCluster",
            "health.state",
        ] {
            assert!(check(&chain(ok), &schema()).is_none(), "{ok}");
        }
    }

    #[test]
    fn templates_read_fields_only_where_dot_is_the_cr() {
        let t = Template::parse(
            "{{ .spec.team }}-{{ with .spec.image }}{{ .tag }}{{ end }}-{{ range .spec.items }}{{ $.metadata.name }}{{ end }}",
        )
        .expect("template");
        assert_eq!(
            t.fields(),
            vec![
                chain("metadata.name"),
                chain("spec.image"),
                chain("spec.items"),
                chain("spec.team")
            ]
        );
    }
}
