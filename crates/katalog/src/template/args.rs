//! Arguments and values as the built-in functions read them: arity checks, Go's truth, lenient
//! conversions and the map lookups Orkestra's object helpers share.

use serde_json::Value;

use super::context::Facts;
use super::error::{TemplateError, err};
use super::print::{self, text};
use super::value::Meter;

/// What a function that makes a value is given: its name (several names share one function),
/// its arguments, the process facts and the render's meter.
#[derive(Clone, Copy)]
pub(super) struct Call<'a> {
    pub name: &'a str,
    pub args: &'a [&'a Value],
    pub facts: &'a Facts,
    pub meter: &'a Meter,
}

/// Go's truth: false, 0, nil and empty strings, lists and maps are false.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Orkestra's `empty`: nil, "", 0, false, empty list or map (or a stray `<no value>`).
pub(super) fn empty(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty() || s == "<no value>",
        other => !truthy(other),
    }
}

pub(super) fn arity<T>(name: &str, args: &[T], n: usize) -> Result<(), TemplateError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(err(format!(
            "{name} takes {n} argument{}, got {}",
            if n == 1 { "" } else { "s" },
            args.len()
        )))
    }
}

pub(super) fn at_least<T>(name: &str, args: &[T], n: usize) -> Result<(), TemplateError> {
    if args.len() >= n {
        Ok(())
    } else {
        Err(err(format!(
            "{name} takes at least {n} argument{}, got {}",
            if n == 1 { "" } else { "s" },
            args.len()
        )))
    }
}

/// `v` as text (`%v`); converting anything but a string costs the text it makes (the string
/// a call is given is charged by the call).
pub(super) fn string(m: &Meter, v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => print::text_in(other, m),
    }
}

pub(super) fn int_arg(name: &str, v: &Value) -> Result<i64, TemplateError> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
            .ok_or_else(|| err(format!("{name}: {n} is not an integer"))),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| err(format!("{name}: \"{s}\" is not an integer"))),
        Value::Null => Ok(0),
        other => Err(err(format!("{name}: {} is not an integer", text(other)))),
    }
}

pub(super) fn bool_arg(name: &str, v: &Value) -> Result<bool, TemplateError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Null => Ok(false),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(err(format!("{name}: {} is not a boolean", text(other)))),
    }
}

pub(super) fn object_field<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.as_object().and_then(|m| m.get(key))
}

/// `obj.key` when it is a map: Orkestra's `meta`, `spec` and `status` see an absent or
/// mistyped one as an empty map.
pub(super) fn section<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    object_field(obj, key).filter(|v| v.is_object())
}

pub(super) fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Object(_) => "map",
        Value::Array(_) => "slice",
    }
}

/// Orkestra's `typeOf` names: string, number, bool, map, slice, null.
pub fn type_name(v: &Value) -> &'static str {
    type_of(v)
}

/// `s` read as JSON, else as YAML (which reads many times slower per byte, and is charged so).
pub(super) fn parse_structured(m: &Meter, s: &str) -> Option<Value> {
    serde_json::from_str(s).ok().or_else(|| {
        m.charge(32 * s.len() as u64);
        serde_saphyr::from_str::<Value>(s).ok()
    })
}

/// Longest string a function may build (`repeat`, `printf` widths…): templates render into
/// names, URLs and labels, never megabytes.
pub const MAX_STRING: usize = 1 << 20;

pub(super) fn to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(super) fn limit(s: String) -> Result<Value, TemplateError> {
    if s.len() > MAX_STRING {
        return Err(err(format!("the result is longer than {MAX_STRING} bytes")));
    }
    Ok(Value::String(s))
}
