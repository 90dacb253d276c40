//! String functions: Orkestra's string notes and ork's `lower`, `upper`, `quote`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::template::args::{Call, MAX_STRING, int_arg, limit, string};
use crate::template::error::{TemplateError, err};
use crate::template::print;

/// `lower`, `toLower`.
pub(super) fn lower(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::String(string(m, a[0]).to_lowercase()))
}

/// `upper`, `toUpper`.
pub(super) fn upper(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::String(string(m, a[0]).to_uppercase()))
}

/// `quote`.
pub(super) fn quote(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::String(print::quote(&string(m, a[0]))))
}

/// `trimSpace`.
pub(super) fn trim_space(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::String(string(m, a[0]).trim().to_string()))
}

/// `trim`.
pub(super) fn trim(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(match a.len() {
        // ork's one-argument trim, Orkestra's strings.Trim(s, cutset)
        1 => Value::String(string(m, a[0]).trim().to_string()),
        2 => {
            let cut: BTreeSet<char> = string(m, a[1]).chars().collect();
            Value::String(
                string(m, a[0])
                    .trim_matches(|c| cut.contains(&c))
                    .to_string(),
            )
        }
        n => return Err(err(format!("trim takes 1 or 2 arguments, got {n}"))),
    })
}

/// `trimPrefix`.
pub(super) fn trim_prefix(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    let s = string(m, a[0]);
    let p = string(m, a[1]);
    Ok(Value::String(
        s.strip_prefix(p.as_str()).unwrap_or(&s).to_string(),
    ))
}

/// `trimSuffix`.
pub(super) fn trim_suffix(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    let s = string(m, a[0]);
    let p = string(m, a[1]);
    Ok(Value::String(
        s.strip_suffix(p.as_str()).unwrap_or(&s).to_string(),
    ))
}

/// `hasPrefix`.
pub(super) fn has_prefix(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::Bool(string(m, a[0]).starts_with(&string(m, a[1]))))
}

/// `hasSuffix`.
pub(super) fn has_suffix(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::Bool(string(m, a[0]).ends_with(&string(m, a[1]))))
}

/// `contains`.
pub(super) fn contains(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::Bool(string(m, a[0]).contains(&string(m, a[1]))))
}

/// `replace`.
pub(super) fn replace(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    let (s, old, new) = (string(m, a[0]), string(m, a[1]), string(m, a[2]));
    let grows = new.len().saturating_sub(old.len().max(1));
    if s.len().saturating_add(grows.saturating_mul(s.len() + 1)) > MAX_STRING {
        return Err(err(format!("the result is longer than {MAX_STRING} bytes")));
    }
    Ok(Value::String(s.replace(&old, &new)))
}

/// `split`.
pub(super) fn split(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    let s = string(m, a[0]);
    Ok(if s.is_empty() {
        Value::Array(Vec::new())
    } else {
        let sep = string(m, a[1]);
        let parts: Vec<Value> = if sep.is_empty() {
            s.chars().map(|c| Value::String(c.to_string())).collect()
        } else {
            s.split(sep.as_str())
                .map(|p| Value::String(p.to_string()))
                .collect()
        };
        Value::Array(parts)
    })
}

/// `join`.
pub(super) fn join(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    let items: Vec<String> = match &a[0] {
        Value::Array(x) => x.iter().map(|v| string(m, v)).collect(),
        Value::Null => Vec::new(),
        other => vec![string(m, other)],
    };
    limit(items.join(&string(m, a[1])))
}

/// `repeat`.
pub(super) fn repeat(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        name,
        args: a,
        meter: m,
        ..
    } = *call;
    let s = string(m, a[0]);
    let n = int_arg(name, a[1])?;
    let n = usize::try_from(n).map_err(|_| err("repeat: negative count"))?;
    if s.len().saturating_mul(n) > MAX_STRING {
        return Err(err(format!(
            "repeat: the result is longer than {MAX_STRING} bytes"
        )));
    }
    Ok(Value::String(s.repeat(n)))
}

/// `camelToKebab`.
pub(super) fn kebab(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        args: a, meter: m, ..
    } = *call;
    Ok(Value::String(camel_to_kebab(&string(m, a[0]))))
}

/// `truncate`.
pub(super) fn truncate(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call {
        name,
        args: a,
        meter: m,
        ..
    } = *call;
    let s = string(m, a[0]);
    let n = usize::try_from(int_arg(name, a[1])?).unwrap_or(0);
    Ok(Value::String(if s.len() <= n {
        s
    } else if n <= 3 {
        byte_prefix(&s, n)
    } else {
        format!("{}...", byte_prefix(&s, n - 3))
    }))
}

pub(super) fn byte_prefix(s: &str, n: usize) -> String {
    let mut end = n.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn camel_to_kebab(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    for (i, &c) in b.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = b[i - 1];
            let next = b.get(i + 1).copied().unwrap_or(0);
            if prev.is_ascii_lowercase() || (prev.is_ascii_uppercase() && next.is_ascii_lowercase())
            {
                out.push('-');
            }
        }
        out.push(char::from(c.to_ascii_lowercase()));
    }
    // Non-ASCII input keeps its characters (bytes were pushed one by one above only for ASCII).
    if s.is_ascii() { out } else { s.to_lowercase() }
}
