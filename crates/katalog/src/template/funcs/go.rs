//! Go's `text/template` built-ins: printing, comparison, escaping, `len`, `slice`, `not`.

use serde_json::Value;

use crate::template::args::{Call, MAX_STRING, int_arg, limit, string, to_f64, truthy, type_of};
use crate::template::error::{TemplateError, err};
use crate::template::print::{self, text};
use crate::template::value::{Meter, same};

/// `not`.
pub(super) fn not(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::Bool(!truthy(a[0])))
}

/// `len`.
pub(super) fn len(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { args: a, .. } = *call;
    Ok(Value::from(match &a[0] {
        Value::String(s) => s.len(),
        Value::Array(x) => x.len(),
        Value::Object(m) => m.len(),
        _ => 0,
    }))
}

/// `slice`.
pub(super) fn slice(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    if a.len() > 4 {
        return Err(err("slice takes at most 3 indexes"));
    }
    let idx: Vec<i64> = a[1..]
        .iter()
        .map(|v| int_arg(name, v))
        .collect::<Result<_, _>>()?;
    let len = match &a[0] {
        Value::String(s) => s.len(),
        Value::Array(x) => x.len(),
        Value::Null if idx.is_empty() => return Ok(Value::Null),
        other => return Err(err(format!("can't slice item of type {}", type_of(other)))),
    };
    let to_usize = |i: i64| usize::try_from(i).ok().filter(|i| *i <= len);
    let lo = idx.first().map_or(Some(0), |i| to_usize(*i));
    let hi = idx.get(1).map_or(Some(len), |i| to_usize(*i));
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Err(err(format!("slice index out of range (length {len})")));
    };
    if lo > hi {
        return Err(err(format!("invalid slice index: {lo} > {hi}")));
    }
    Ok(match &a[0] {
        Value::String(s) => {
            if idx.len() == 3 {
                return Err(err("cannot 3-index slice a string"));
            }
            Value::String(
                s.get(lo..hi)
                    .ok_or_else(|| err("slice splits a multi-byte character"))?
                    .to_string(),
            )
        }
        Value::Array(x) => Value::Array(x[lo..hi].to_vec()),
        _ => Value::Null,
    })
}

/// `print`.
pub(super) fn print(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    limit(print::sprint(a, MAX_STRING, m))
}

/// `println`.
pub(super) fn println(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    limit(print::sprintln(a, MAX_STRING, m))
}

/// `printf`.
pub(super) fn printf(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    limit(print::sprintf(&string(m, a[0]), &a[1..], MAX_STRING, m))
}

/// `eq`.
pub(super) fn eq(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::Bool(a[1..].iter().any(|b| equal(m, a[0], b))))
}

/// `ne`.
pub(super) fn ne(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::Bool(!equal(m, a[0], a[1])))
}

/// `lt`, `le`, `gt`, `ge`.
pub(super) fn ordered(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    let ord = compare(a[0], a[1]).ok_or_else(|| {
        err(format!(
            "{name}: incompatible types for comparison ({} and {})",
            type_of(a[0]),
            type_of(a[1])
        ))
    })?;
    Ok(Value::Bool(match name {
        "lt" => ord.is_lt(),
        "le" => ord.is_le(),
        "gt" => ord.is_gt(),
        _ => ord.is_ge(),
    }))
}

/// `html`.
pub(super) fn html(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    limit(html_escape(&print::sprint(a, MAX_STRING, m)))
}

/// `js`.
pub(super) fn js(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    limit(js_escape(&print::sprint(a, MAX_STRING, m)))
}

/// `urlquery`.
pub(super) fn urlquery(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    limit(url_query_escape(&print::sprint(a, MAX_STRING, m)))
}

/// Go's `eq` for two operands, lenient across numbers and their text.
pub fn equal(m: &Meter, a: &Value, b: &Value) -> bool {
    if same(m, a, b) {
        return true;
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        _ => text(a) == text(b),
    }
}

/// Go's ordered comparison; `None` when the operands cannot be ordered.
pub fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Null, Value::Null) => Some(std::cmp::Ordering::Equal),
        (Value::Null, Value::Number(y)) => 0.0f64.partial_cmp(&y.as_f64()?),
        (Value::Number(x), Value::Null) => x.as_f64()?.partial_cmp(&0.0),
        (Value::Null, Value::String(y)) => Some("".cmp(y.as_str())),
        (Value::String(x), Value::Null) => Some(x.as_str().cmp("")),
        (Value::String(_), Value::Number(_)) | (Value::Number(_), Value::String(_)) => {
            to_f64(a)?.partial_cmp(&to_f64(b)?)
        }
        _ => None,
    }
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

fn url_query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
