//! The built-in functions whose result is one of their arguments or a part of one (`index`,
//! `get`, `default`, `ternary`, `meta`, `asMap`…): the result is passed on as it came, borrowed
//! or shared, never copied — `index $ "spec"` costs the same over any CR.

use serde_json::{Map, Value};

use super::args::{
    arity, bool_arg, empty, int_arg, object_field, parse_structured, section, string, truthy,
    type_name,
};
use super::error::{TemplateError, err};
use super::value::{Meter, Val};

/// `index`.
pub(super) fn index_all<'c>(
    name: &str,
    a: &[Val<'c>],
    m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    let mut cur = a[0].clone();
    for key in &a[1..] {
        cur = index(name, &cur, key, m)?;
    }
    Ok(cur)
}

/// `get`.
pub(super) fn get_path<'c>(
    _name: &str,
    a: &[Val<'c>],
    m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    let mut cur = a[0].clone();
    for key in &a[1..] {
        let key = string(m, key);
        cur = cur.get(m, |v| object_field(v, &key));
        if cur.is_null() {
            break;
        }
    }
    Ok(cur)
}

/// `mapGet`.
pub(super) fn map_get<'c>(_name: &str, a: &[Val<'c>], m: &Meter) -> Result<Val<'c>, TemplateError> {
    let key = string(m, &a[1]);
    Ok(a[0].get(m, |v| object_field(v, &key)))
}

/// `listGet`.
pub(super) fn list_get<'c>(name: &str, a: &[Val<'c>], m: &Meter) -> Result<Val<'c>, TemplateError> {
    let i = int_arg(name, &a[1])?;
    let i = usize::try_from(i).ok();
    Ok(a[0].get(m, |v| v.as_array().and_then(|x| x.get(i?))))
}

/// `meta`.
pub(super) fn meta<'c>(_name: &str, a: &[Val<'c>], m: &Meter) -> Result<Val<'c>, TemplateError> {
    Ok(map_or_empty(a[0].get(m, |v| section(v, "metadata")), m))
}

/// `spec`, `status`.
pub(super) fn section_of<'c>(
    name: &str,
    a: &[Val<'c>],
    m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(map_or_empty(a[0].get(m, |v| section(v, name)), m))
}

/// `labels`, `annotations`.
pub(super) fn meta_map<'c>(name: &str, a: &[Val<'c>], m: &Meter) -> Result<Val<'c>, TemplateError> {
    let labels = a[0].get(m, |v| {
        section(v, "metadata")
            .and_then(|md| object_field(md, name))
            .filter(|l| l.is_object())
    });
    Ok(map_or_empty(labels, m))
}

/// `ternary`.
pub(super) fn ternary<'c>(
    _name: &str,
    a: &[Val<'c>],
    _m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(a[if truthy(&a[0]) { 1 } else { 2 }].clone())
}

/// `boolTernary`.
pub(super) fn bool_ternary<'c>(
    name: &str,
    a: &[Val<'c>],
    _m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(a[if bool_arg(name, &a[0])? { 1 } else { 2 }].clone())
}

/// `eqTernary`.
pub(super) fn eq_ternary<'c>(
    _name: &str,
    a: &[Val<'c>],
    m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(a[if string(m, &a[0]) == string(m, &a[1]) {
        2
    } else {
        3
    }]
    .clone())
}

/// `coalesce`.
pub(super) fn coalesce<'c>(
    _name: &str,
    a: &[Val<'c>],
    _m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(a.iter()
        .find(|v| !empty(v))
        .cloned()
        .unwrap_or_else(Val::null))
}

/// `default`.
pub(super) fn default_value<'c>(
    name: &str,
    a: &[Val<'c>],
    _m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    // {{ default "x" .v }} and {{ .v | default "x" }}: the fallback comes first.
    arity(name, a, 2)?;
    Ok(a[if empty(&a[1]) { 0 } else { 1 }].clone())
}

/// `getOr`.
pub(super) fn get_or<'c>(_name: &str, a: &[Val<'c>], _m: &Meter) -> Result<Val<'c>, TemplateError> {
    Ok(a[if empty(&a[0]) { 1 } else { 0 }].clone())
}

/// `getStringOr`.
pub(super) fn get_string_or<'c>(
    _name: &str,
    a: &[Val<'c>],
    m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(match &*a[0] {
        Value::String(s) if !s.is_empty() => a[0].clone(),
        _ => Val::fresh(Value::String(string(m, &a[1])), m),
    })
}

/// `asList`.
pub(super) fn as_list<'c>(_name: &str, a: &[Val<'c>], m: &Meter) -> Result<Val<'c>, TemplateError> {
    Ok(match &*a[0] {
        Value::Array(_) => a[0].clone(),
        Value::String(s) => match parse_structured(m, s) {
            Some(list @ Value::Array(_)) => Val::fresh(list, m),
            _ => Val::fresh(Value::Array(Vec::new()), m),
        },
        _ => Val::fresh(Value::Array(Vec::new()), m),
    })
}

/// `asMap`.
pub(super) fn as_map<'c>(_name: &str, a: &[Val<'c>], m: &Meter) -> Result<Val<'c>, TemplateError> {
    Ok(match &*a[0] {
        Value::Object(_) => a[0].clone(),
        Value::String(s) => match parse_structured(m, s) {
            Some(map @ Value::Object(_)) => Val::fresh(map, m),
            _ => Val::fresh(Value::Object(Map::new()), m),
        },
        _ => Val::fresh(Value::Object(Map::new()), m),
    })
}

/// `asString`.
pub(super) fn as_string<'c>(
    _name: &str,
    a: &[Val<'c>],
    m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(match &*a[0] {
        Value::String(_) => a[0].clone(),
        other => Val::fresh(
            Value::String(serde_json::to_string(other).unwrap_or_default()),
            m,
        ),
    })
}

/// `toString`.
pub(super) fn to_string_value<'c>(
    _name: &str,
    a: &[Val<'c>],
    m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(match &*a[0] {
        Value::String(_) => a[0].clone(),
        other => Val::fresh(Value::String(string(m, other)), m),
    })
}

/// One step of `index`: a map by key, a list by position, a string's byte by position.
fn index<'c>(
    name: &str,
    cur: &Val<'c>,
    key: &Val<'c>,
    m: &Meter,
) -> Result<Val<'c>, TemplateError> {
    Ok(match &**cur {
        Value::Null => Val::null(),
        Value::Object(_) => {
            let key = string(m, key);
            cur.get(m, |v| object_field(v, &key))
        }
        Value::Array(items) => {
            let i = int_arg(name, key)?;
            let len = items.len();
            let at = usize::try_from(i).ok().filter(|i| *i < len);
            match at {
                Some(at) => cur.get(m, |v| v.get(at)),
                None => return Err(err(format!("index out of range: {i} (length {len})"))),
            }
        }
        Value::String(s) => {
            let i = int_arg(name, key)?;
            let byte = usize::try_from(i)
                .ok()
                .and_then(|i| s.as_bytes().get(i))
                .ok_or_else(|| err(format!("index out of range: {i}")))?;
            Val::fresh(Value::from(*byte), m)
        }
        other => {
            return Err(err(format!(
                "can't index item of type {}",
                type_name(other)
            )));
        }
    })
}

/// `v` when it is a map, else a new empty map (what Orkestra's `meta`/`spec`/`status` give).
fn map_or_empty<'c>(v: Val<'c>, m: &Meter) -> Val<'c> {
    if v.is_object() {
        v
    } else {
        Val::fresh(Value::Object(Map::new()), m)
    }
}
