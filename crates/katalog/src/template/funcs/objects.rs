//! Kubernetes object helpers (metadata, labels, status, conditions, owners) and `inCluster`.

use serde_json::Value;

use crate::template::args::{Call, object_field, section, string};
use crate::template::error::TemplateError;

/// `name`, `resourceName`.
pub(super) fn name_of(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(meta_str(a[0], "name"))
}

/// `namespace`, `resourceNamespace`.
pub(super) fn namespace_of(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(meta_str(a[0], "namespace"))
}

/// `resourceUID`.
pub(super) fn resource_uid(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(meta_str(a[0], "uid"))
}

/// `resourceVersion`.
pub(super) fn resource_version(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(meta_str(a[0], "resourceVersion"))
}

/// `creationTimestamp`.
pub(super) fn creation_timestamp(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(meta_str(a[0], "creationTimestamp"))
}

/// `getLabel`, `getAnnotation`.
pub(super) fn meta_map_value(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        name,
        args: a,
        meter: m,
        ..
    } = *call;
    let map = if name == "getLabel" {
        "labels"
    } else {
        "annotations"
    };
    Ok(Value::String(meta_map_get(a[0], map, &string(m, a[1]))))
}

/// `getLabelInt`, `getAnnotationInt`.
pub(super) fn meta_map_int(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        name,
        args: a,
        meter: m,
        ..
    } = *call;
    let map = if name == "getLabelInt" {
        "labels"
    } else {
        "annotations"
    };
    Ok(Value::from(
        meta_map_get(a[0], map, &string(m, a[1]))
            .trim()
            .parse::<i64>()
            .unwrap_or(0),
    ))
}

/// `hasLabel`, `hasAnnotation`.
pub(super) fn meta_map_has(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        name,
        args: a,
        meter: m,
        ..
    } = *call;
    let map = if name == "hasLabel" {
        "labels"
    } else {
        "annotations"
    };
    Ok(Value::Bool(
        !meta_map_get(a[0], map, &string(m, a[1])).is_empty(),
    ))
}

/// `labelMatches`.
pub(super) fn label_matches(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    let pairs = &a[1..];
    Ok(Value::Bool(
        pairs.len().is_multiple_of(2)
            && pairs.chunks(2).all(|kv| {
                let got = field_in(a[0], "metadata", "labels")
                    .and_then(|l| object_field(l, &string(m, kv[0])))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                got == Some(string(m, kv[1]))
            }),
    ))
}

/// `getStatus`.
pub(super) fn get_status(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::String(
        match field_in(a[0], "status", &string(m, a[1])) {
            None | Some(Value::Null | Value::Object(_) | Value::Array(_)) => String::new(),
            Some(v) => string(m, v),
        },
    ))
}

/// `hasStatus`.
pub(super) fn has_status(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::Bool(
        field_in(a[0], "status", &string(m, a[1])).is_some_and(|v| match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Object(m) => !m.is_empty(),
            Value::Array(x) => !x.is_empty(),
            _ => true,
        }),
    ))
}

/// `phase`.
pub(super) fn phase(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::String(
        field_in(a[0], "status", "phase")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    ))
}

/// `ownerKind`, `ownerName`.
pub(super) fn owner_field(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    let field = if name == "ownerKind" { "kind" } else { "name" };
    Ok(Value::String(
        field_in(a[0], "metadata", "ownerReferences")
            .and_then(Value::as_array)
            .and_then(|o| o.first())
            .and_then(|o| object_field(o, field))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    ))
}

/// `hasCondition`.
pub(super) fn has_condition(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::Bool(
        condition_field(a[0], &string(m, a[1]), "status")
            .is_some_and(|s| s.as_str() == Some("True")),
    ))
}

/// `conditionReason`, `conditionMessage`.
pub(super) fn condition_text(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        name,
        args: a,
        meter: m,
        ..
    } = *call;
    let field = if name == "conditionReason" {
        "reason"
    } else {
        "message"
    };
    Ok(Value::String(
        condition_field(a[0], &string(m, a[1]), field)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
    ))
}

/// `resourceExists`.
pub(super) fn resource_exists(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(a[0].as_object().is_some_and(|m| {
        m.get("_placeholder") != Some(&Value::Bool(true))
    })))
}

/// `isTerminating`.
pub(super) fn is_terminating(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(
        field_in(a[0], "metadata", "deletionTimestamp").is_some_and(|t| !t.is_null()),
    ))
}

/// `generation`.
pub(super) fn generation(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::from(
        field_in(a[0], "metadata", "generation")
            .and_then(Value::as_i64)
            .unwrap_or(0),
    ))
}

/// `observedGeneration`.
pub(super) fn observed_generation(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::from(
        field_in(a[0], "status", "observedGeneration")
            .and_then(Value::as_i64)
            .unwrap_or(0),
    ))
}

/// `isSynced`.
pub(super) fn is_synced(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    let generation = field_in(a[0], "metadata", "generation").and_then(Value::as_i64);
    let observed = field_in(a[0], "status", "observedGeneration").and_then(Value::as_i64);
    Ok(Value::Bool(generation.is_some() && generation == observed))
}

/// `resourceCPU`, `resourceMemory`.
pub(super) fn resource_request(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    let key = if name == "resourceCPU" {
        "cpu"
    } else {
        "memory"
    };
    Ok(Value::String(
        field_in(a[0], "spec", "resources")
            .and_then(|r| object_field(r, "requests"))
            .and_then(|r| object_field(r, key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    ))
}

/// `inCluster`.
pub(super) fn in_cluster(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { facts, .. } = *call;
    Ok(Value::Bool(facts.in_cluster))
}

/// `obj.section.key`, through [`section`].
fn field_in<'a>(obj: &'a Value, section_key: &str, key: &str) -> Option<&'a Value> {
    section(obj, section_key).and_then(|s| object_field(s, key))
}

fn meta_str(obj: &Value, key: &str) -> Value {
    Value::String(
        object_field(obj, "metadata")
            .and_then(|m| object_field(m, key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    )
}

fn meta_map_get(obj: &Value, map: &str, key: &str) -> String {
    object_field(obj, "metadata")
        .and_then(|m| object_field(m, map))
        .and_then(|m| object_field(m, key))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn condition_field(obj: &Value, kind: &str, field: &str) -> Option<Value> {
    object_field(obj, "status")
        .and_then(|s| object_field(s, "conditions"))
        .and_then(Value::as_array)?
        .iter()
        .find(|c| object_field(c, "type").and_then(Value::as_str) == Some(kind))
        .map(|c| object_field(c, field).cloned().unwrap_or(Value::Null))
}
