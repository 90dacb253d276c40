//! Conversions and type tests: `toInt`, `toBool`, `typeOf`, `isEmpty`, `empty`…

use std::collections::HashSet;

use serde_json::{Number, Value};

use crate::template::args::{Call, empty, string, to_f64, type_of};
use crate::template::error::{TemplateError, err};
use crate::template::print::text;
use crate::template::value::NODE_BYTES;

/// `empty`.
pub(super) fn empty_test(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(empty(a[0])))
}

/// `notEmpty`.
pub(super) fn not_empty(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(!empty(a[0])))
}

/// `toInt`.
pub(super) fn to_int(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(match &a[0] {
        Value::Bool(b) => Value::from(i64::from(*b)),
        v => Value::from(
            to_f64(v).ok_or_else(|| err(format!("toInt: cannot convert {}", text(v))))? as i64,
        ),
    })
}

/// `toFloat`.
pub(super) fn to_float(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    let f = to_f64(a[0]).ok_or_else(|| err(format!("toFloat: cannot convert {}", text(a[0]))))?;
    Ok(Number::from_f64(f).map_or(Value::Null, Value::Number))
}

/// `toBool`.
pub(super) fn to_bool(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(match &a[0] {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => match s.as_str() {
            "true" | "True" | "TRUE" | "1" | "yes" | "YES" | "Yes" | "on" | "ON" => true,
            "false" | "False" | "FALSE" | "0" | "no" | "NO" | "No" | "off" | "OFF" | "" => false,
            other => return Err(err(format!("toBool: unrecognised value \"{other}\""))),
        },
        other => return Err(err(format!("toBool: cannot convert {}", type_of(other)))),
    }))
}

/// `toJson`, `toJSON`.
pub(super) fn to_json(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::String(
        serde_json::to_string(a[0]).unwrap_or_else(|_| "{}".into()),
    ))
}

/// `toList`.
pub(super) fn to_list(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    let s = string(m, a[0]);
    let mut seen = Vec::new();
    let mut unique = HashSet::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        m.charge(2 * NODE_BYTES);
        if unique.insert(part) {
            seen.push(part);
        }
    }
    Ok(Value::Array(
        seen.into_iter().map(|p| Value::String(p.into())).collect(),
    ))
}

/// `typeOf`.
pub(super) fn type_of_value(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::String(type_of(a[0]).into()))
}

/// `typeMap`, `typeList`, `typeString`, `typeNumber`, `typeBool`, `typeNull`.
pub(super) fn type_is(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    let want = match name {
        "typeMap" => "map",
        "typeList" => "slice",
        "typeString" => "string",
        "typeNumber" => "number",
        "typeBool" => "bool",
        _ => "null",
    };
    Ok(Value::Bool(type_of(a[0]) == want))
}

/// `isEmpty`.
pub(super) fn is_empty(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(match &a[0] {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(x) => x.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }))
}

/// `isScalar`.
pub(super) fn is_scalar(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(matches!(
        a[0],
        Value::String(_) | Value::Number(_) | Value::Bool(_)
    )))
}

/// `isComposite`.
pub(super) fn is_composite(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(matches!(
        a[0],
        Value::Array(_) | Value::Object(_)
    )))
}
