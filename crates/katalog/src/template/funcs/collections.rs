//! Lists and maps: membership, keys and values, picking keys, lookups with a default.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::template::args::{Call, bool_arg, int_arg, string};
use crate::template::error::TemplateError;
use crate::template::value::same;

/// `listHas`.
pub(super) fn list_has(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::Bool(
        a[0].as_array()
            .is_some_and(|x| x.iter().any(|i| same(m, i, a[1]))),
    ))
}

/// `listLen`: the number of items of a list, 0 for anything else (unlike `len`, a string or a
/// map counts 0 too, as in Orkestra).
pub(super) fn list_len(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::from(a[0].as_array().map_or(0, Vec::len)))
}

/// `mapKeys`.
pub(super) fn map_keys(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Array(
        a[0].as_object()
            .map(|m| m.keys().map(|k| Value::String(k.clone())).collect())
            .unwrap_or_default(),
    ))
}

/// `mapValues`.
pub(super) fn map_values(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Array(
        a[0].as_object()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default(),
    ))
}

/// `mapPick`, `mapOmit`.
pub(super) fn map_pick_or_omit(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        name,
        args: a,
        meter: m,
        ..
    } = *call;
    let keys: BTreeSet<String> = a[1..].iter().map(|v| string(m, v)).collect();
    Ok(Value::Object(match a[0].as_object() {
        None => Map::new(),
        // Picking looks its keys up; omitting goes through the map and keeps most of it.
        Some(map) if name == "mapPick" => keys
            .iter()
            .filter_map(|k| map.get(k).map(|v| (k.clone(), v.clone())))
            .collect(),
        Some(map) => map
            .iter()
            .filter(|(k, _)| !keys.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }))
}

/// `getIntOr`.
pub(super) fn get_int_or(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    Ok(match &a[0] {
        Value::Number(n) => Value::from(
            n.as_i64()
                .unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i64),
        ),
        _ => Value::from(int_arg(name, a[1])?),
    })
}

/// `getBoolOr` and `boolDefault`: the first argument when it is a boolean (a string "true" is
/// not), else the second, which must read as one.
pub(super) fn get_bool_or(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    Ok(match &a[0] {
        Value::Bool(b) => Value::Bool(*b),
        _ => Value::Bool(bool_arg(name, a[1])?),
    })
}
