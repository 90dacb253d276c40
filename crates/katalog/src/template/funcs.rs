//! The functions every template can call: Go's built-ins and the pure notes Orkestra registers
//! in its resolver (strings, math, conditionals, types, collections, Kubernetes object helpers,
//! data encodings, `inCluster`). Arguments are converted leniently (a missing value is the
//! zero value) where Go would stop with a type error.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Number, Value};

use super::args::{
    arity, at_least, bool_arg, empty, int_arg, object_field, section, string, truthy, type_of,
};
use super::context::Facts;
use super::error::{TemplateError, err};
use super::pick;
use super::print::{self, text};
use super::value::{Meter, NODE_BYTES, Val, same};

/// Longest string a function may build (`repeat`, `printf` widths…): templates render into
/// names, URLs and labels, never megabytes.
pub const MAX_STRING: usize = 1 << 20;

/// Functions evaluated lazily by the evaluator itself.
pub const LAZY: [&str; 2] = ["and", "or"];

/// Every built-in function name, for validation and suggestions.
pub const NAMES: &[&str] = &[
    // Go text/template built-ins
    "and",
    "or",
    "not",
    "len",
    "index",
    "slice",
    "print",
    "printf",
    "println",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "html",
    "js",
    "urlquery",
    // ork's own (kept from earlier ork versions)
    "lower",
    "upper",
    "quote",
    // Orkestra notes: strings
    "toLower",
    "toUpper",
    "trimSpace",
    "trim",
    "trimPrefix",
    "trimSuffix",
    "hasPrefix",
    "hasSuffix",
    "contains",
    "replace",
    "split",
    "join",
    "repeat",
    "camelToKebab",
    "truncate",
    // math
    "add",
    "sub",
    "mul",
    "div",
    "mod",
    "min",
    "max",
    "clamp",
    "abs",
    // conditionals
    "ternary",
    "boolTernary",
    "boolDefault",
    "eqTernary",
    "coalesce",
    "default",
    "empty",
    "notEmpty",
    // types
    "toInt",
    "toFloat",
    "toBool",
    "toString",
    "toJson",
    "toList",
    "typeOf",
    "typeMap",
    "typeList",
    "typeString",
    "typeNumber",
    "typeBool",
    "typeNull",
    "isEmpty",
    "isScalar",
    "isComposite",
    // collections
    "listHas",
    "listGet",
    "listLen",
    "mapGet",
    "mapKeys",
    "mapValues",
    "mapPick",
    "mapOmit",
    "asList",
    "asMap",
    "asString",
    // safe access
    "getOr",
    "getStringOr",
    "getIntOr",
    "getBoolOr",
    // Kubernetes objects
    "meta",
    "name",
    "namespace",
    "labels",
    "annotations",
    "getLabel",
    "getLabelInt",
    "hasLabel",
    "getAnnotation",
    "getAnnotationInt",
    "hasAnnotation",
    "labelMatches",
    "spec",
    "status",
    "getStatus",
    "hasStatus",
    "phase",
    "get",
    "ownerKind",
    "ownerName",
    "hasCondition",
    "conditionReason",
    "conditionMessage",
    "resourceExists",
    "isTerminating",
    "generation",
    "observedGeneration",
    "isSynced",
    "resourceCPU",
    "resourceMemory",
    "resourceName",
    "resourceNamespace",
    "resourceUID",
    "resourceVersion",
    "creationTimestamp",
    // data
    "toBase64",
    "fromBase64",
    "toJSON",
    "sha256sum",
    "truncateName",
    "slugify",
    // environment
    "inCluster",
];

/// Orkestra note families ork does not provide, with the reason given to the user.
pub fn unsupported_reason(name: &str) -> Option<&'static str> {
    let families: [(&str, &str); 8] = [
        (
            "random",
            "random values change on every reconcile; let the service generate them",
        ),
        (
            "cron",
            "cron notes are not provided by ork; compute schedules in the service",
        ),
        (
            "semver",
            "semver notes are not provided by ork; compare versions in the service",
        ),
        (
            "time",
            "clock-dependent notes are not provided by ork (templates are deterministic)",
        ),
        ("duration", "duration notes are not provided by ork"),
        ("docker", "docker notes are not provided by ork"),
        ("git", "git notes are not provided by ork"),
        ("quantity", "quantity notes are not provided by ork"),
    ];
    let lower = name.to_ascii_lowercase();
    if matches!(
        name,
        "timeAgo" | "timeSince" | "timeUntil" | "isExpired" | "now"
    ) {
        return Some(families[3].1);
    }
    if matches!(name, "parseQuantity" | "formatQuantity" | "sumQuantity") {
        return Some(families[7].1);
    }
    families
        .iter()
        .find(|(prefix, _)| lower.starts_with(prefix))
        .map(|(_, why)| *why)
}

fn to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// An int when whole (as Orkestra's math notes return), else a float.
fn native(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

fn numbers(name: &str, args: &[&Value]) -> Result<Vec<f64>, TemplateError> {
    args.iter()
        .map(|a| to_f64(a).ok_or_else(|| err(format!("{name}: non-numeric argument {}", text(a)))))
        .collect()
}

fn limit(s: String) -> Result<Value, TemplateError> {
    if s.len() > MAX_STRING {
        return Err(err(format!("the result is longer than {MAX_STRING} bytes")));
    }
    Ok(Value::String(s))
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

/// Calls built-in `name`; `Ok(None)` when no such built-in exists. What it makes is charged to
/// `m`; what it returns of its arguments is passed on, not copied.
pub fn call<'c>(
    name: &str,
    args: Vec<Val<'c>>,
    facts: &Facts,
    m: &Meter,
) -> Result<Option<Val<'c>>, TemplateError> {
    if let Some(v) = pick::call(name, &args, m)? {
        return Ok(Some(v));
    }
    let refs: Vec<&Value> = args.iter().map(|v| &**v).collect();
    let a = refs.as_slice();
    let v = match name {
        "not" => {
            arity(name, a, 1)?;
            Value::Bool(!truthy(a[0]))
        }
        "len" => {
            arity(name, a, 1)?;
            Value::from(match &a[0] {
                Value::String(s) => s.len(),
                Value::Array(x) => x.len(),
                Value::Object(m) => m.len(),
                _ => 0,
            })
        }
        "slice" => {
            at_least(name, a, 1)?;
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
                Value::Null if idx.is_empty() => return Ok(Some(Val::null())),
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
            match &a[0] {
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
            }
        }
        "print" => limit(print::sprint(a, MAX_STRING, m))?,
        "println" => limit(print::sprintln(a, MAX_STRING, m))?,
        "printf" => {
            at_least(name, a, 1)?;
            limit(print::sprintf(&string(m, a[0]), &a[1..], MAX_STRING, m))?
        }
        "eq" => {
            at_least(name, a, 2)?;
            Value::Bool(a[1..].iter().any(|b| equal(m, a[0], b)))
        }
        "ne" => {
            arity(name, a, 2)?;
            Value::Bool(!equal(m, a[0], a[1]))
        }
        "lt" | "le" | "gt" | "ge" => {
            arity(name, a, 2)?;
            let ord = compare(a[0], a[1]).ok_or_else(|| {
                err(format!(
                    "{name}: incompatible types for comparison ({} and {})",
                    type_of(a[0]),
                    type_of(a[1])
                ))
            })?;
            Value::Bool(match name {
                "lt" => ord.is_lt(),
                "le" => ord.is_le(),
                "gt" => ord.is_gt(),
                _ => ord.is_ge(),
            })
        }
        "html" => limit(html_escape(&print::sprint(a, MAX_STRING, m)))?,
        "js" => limit(js_escape(&print::sprint(a, MAX_STRING, m)))?,
        "urlquery" => limit(url_query_escape(&print::sprint(a, MAX_STRING, m)))?,

        "lower" | "toLower" => {
            arity(name, a, 1)?;
            Value::String(string(m, a[0]).to_lowercase())
        }
        "upper" | "toUpper" => {
            arity(name, a, 1)?;
            Value::String(string(m, a[0]).to_uppercase())
        }
        "quote" => {
            arity(name, a, 1)?;
            Value::String(print::quote(&string(m, a[0])))
        }
        "trimSpace" => {
            arity(name, a, 1)?;
            Value::String(string(m, a[0]).trim().to_string())
        }
        "trim" => match a.len() {
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
        },
        "trimPrefix" => {
            arity(name, a, 2)?;
            let s = string(m, a[0]);
            let p = string(m, a[1]);
            Value::String(s.strip_prefix(p.as_str()).unwrap_or(&s).to_string())
        }
        "trimSuffix" => {
            arity(name, a, 2)?;
            let s = string(m, a[0]);
            let p = string(m, a[1]);
            Value::String(s.strip_suffix(p.as_str()).unwrap_or(&s).to_string())
        }
        "hasPrefix" => {
            arity(name, a, 2)?;
            Value::Bool(string(m, a[0]).starts_with(&string(m, a[1])))
        }
        "hasSuffix" => {
            arity(name, a, 2)?;
            Value::Bool(string(m, a[0]).ends_with(&string(m, a[1])))
        }
        "contains" => {
            arity(name, a, 2)?;
            Value::Bool(string(m, a[0]).contains(&string(m, a[1])))
        }
        "replace" => {
            arity(name, a, 3)?;
            let (s, old, new) = (string(m, a[0]), string(m, a[1]), string(m, a[2]));
            let grows = new.len().saturating_sub(old.len().max(1));
            if s.len().saturating_add(grows.saturating_mul(s.len() + 1)) > MAX_STRING {
                return Err(err(format!("the result is longer than {MAX_STRING} bytes")));
            }
            Value::String(s.replace(&old, &new))
        }
        "split" => {
            arity(name, a, 2)?;
            let s = string(m, a[0]);
            if s.is_empty() {
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
            }
        }
        "join" => {
            arity(name, a, 2)?;
            let items: Vec<String> = match &a[0] {
                Value::Array(x) => x.iter().map(|v| string(m, v)).collect(),
                Value::Null => Vec::new(),
                other => vec![string(m, other)],
            };
            limit(items.join(&string(m, a[1])))?
        }
        "repeat" => {
            arity(name, a, 2)?;
            let s = string(m, a[0]);
            let n = int_arg(name, a[1])?;
            let n = usize::try_from(n).map_err(|_| err("repeat: negative count"))?;
            if s.len().saturating_mul(n) > MAX_STRING {
                return Err(err(format!(
                    "repeat: the result is longer than {MAX_STRING} bytes"
                )));
            }
            Value::String(s.repeat(n))
        }
        "camelToKebab" => {
            arity(name, a, 1)?;
            Value::String(camel_to_kebab(&string(m, a[0])))
        }
        "truncate" => {
            arity(name, a, 2)?;
            let s = string(m, a[0]);
            let n = usize::try_from(int_arg(name, a[1])?).unwrap_or(0);
            Value::String(if s.len() <= n {
                s
            } else if n <= 3 {
                byte_prefix(&s, n)
            } else {
                format!("{}...", byte_prefix(&s, n - 3))
            })
        }
        "truncateName" => {
            arity(name, a, 2)?;
            let s = string(m, a[0]);
            let n = usize::try_from(int_arg(name, a[1])?).unwrap_or(0);
            Value::String(byte_prefix(&s, n))
        }

        "add" | "sub" | "mul" | "div" | "mod" | "min" | "max" => {
            arity(name, a, 2)?;
            let n = numbers(name, a)?;
            let (x, y) = (n[0], n[1]);
            match name {
                "add" => native(x + y),
                "sub" => native(x - y),
                "mul" => native(x * y),
                "div" if y == 0.0 => return Err(err("div: division by zero")),
                "div" => native(x / y),
                "mod" => {
                    let (xi, yi) = (x as i64, y as i64);
                    if yi == 0 {
                        return Err(err("mod: division by zero"));
                    }
                    Value::from(xi.wrapping_rem(yi))
                }
                "min" => native(x.min(y)),
                _ => native(x.max(y)),
            }
        }
        "clamp" => {
            arity(name, a, 3)?;
            let n = numbers(name, a)?;
            native(if n[0] < n[1] {
                n[1]
            } else if n[0] > n[2] {
                n[2]
            } else {
                n[0]
            })
        }
        "abs" => {
            arity(name, a, 1)?;
            native(numbers(name, a)?[0].abs())
        }

        "empty" => {
            arity(name, a, 1)?;
            Value::Bool(empty(a[0]))
        }
        "notEmpty" => {
            arity(name, a, 1)?;
            Value::Bool(!empty(a[0]))
        }

        "toInt" => {
            arity(name, a, 1)?;
            match &a[0] {
                Value::Bool(b) => Value::from(i64::from(*b)),
                v => Value::from(
                    to_f64(v).ok_or_else(|| err(format!("toInt: cannot convert {}", text(v))))?
                        as i64,
                ),
            }
        }
        "toFloat" => {
            arity(name, a, 1)?;
            let f = to_f64(a[0])
                .ok_or_else(|| err(format!("toFloat: cannot convert {}", text(a[0]))))?;
            Number::from_f64(f).map_or(Value::Null, Value::Number)
        }
        "toBool" => {
            arity(name, a, 1)?;
            Value::Bool(match &a[0] {
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
                Value::String(s) => match s.as_str() {
                    "true" | "True" | "TRUE" | "1" | "yes" | "YES" | "Yes" | "on" | "ON" => true,
                    "false" | "False" | "FALSE" | "0" | "no" | "NO" | "No" | "off" | "OFF" | "" => {
                        false
                    }
                    other => return Err(err(format!("toBool: unrecognised value \"{other}\""))),
                },
                other => return Err(err(format!("toBool: cannot convert {}", type_of(other)))),
            })
        }
        "toJson" | "toJSON" => {
            arity(name, a, 1)?;
            Value::String(serde_json::to_string(a[0]).unwrap_or_else(|_| "{}".into()))
        }
        "toList" => {
            arity(name, a, 1)?;
            let s = string(m, a[0]);
            let mut seen = Vec::new();
            let mut unique = HashSet::new();
            for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                m.charge(2 * NODE_BYTES);
                if unique.insert(part) {
                    seen.push(part);
                }
            }
            Value::Array(seen.into_iter().map(|p| Value::String(p.into())).collect())
        }
        "typeOf" => {
            arity(name, a, 1)?;
            Value::String(type_of(a[0]).into())
        }
        "typeMap" | "typeList" | "typeString" | "typeNumber" | "typeBool" | "typeNull" => {
            arity(name, a, 1)?;
            let want = match name {
                "typeMap" => "map",
                "typeList" => "slice",
                "typeString" => "string",
                "typeNumber" => "number",
                "typeBool" => "bool",
                _ => "null",
            };
            Value::Bool(type_of(a[0]) == want)
        }
        "isEmpty" => {
            arity(name, a, 1)?;
            Value::Bool(match &a[0] {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                Value::Array(x) => x.is_empty(),
                Value::Object(m) => m.is_empty(),
                _ => false,
            })
        }
        "isScalar" => {
            arity(name, a, 1)?;
            Value::Bool(matches!(
                a[0],
                Value::String(_) | Value::Number(_) | Value::Bool(_)
            ))
        }
        "isComposite" => {
            arity(name, a, 1)?;
            Value::Bool(matches!(a[0], Value::Array(_) | Value::Object(_)))
        }

        "listHas" => {
            arity(name, a, 2)?;
            Value::Bool(
                a[0].as_array()
                    .is_some_and(|x| x.iter().any(|i| same(m, i, a[1]))),
            )
        }
        "mapKeys" => {
            arity(name, a, 1)?;
            Value::Array(
                a[0].as_object()
                    .map(|m| m.keys().map(|k| Value::String(k.clone())).collect())
                    .unwrap_or_default(),
            )
        }
        "mapValues" => {
            arity(name, a, 1)?;
            Value::Array(
                a[0].as_object()
                    .map(|m| m.values().cloned().collect())
                    .unwrap_or_default(),
            )
        }
        "mapPick" | "mapOmit" => {
            at_least(name, a, 1)?;
            let keys: BTreeSet<String> = a[1..].iter().map(|v| string(m, v)).collect();
            Value::Object(match a[0].as_object() {
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
            })
        }
        "getIntOr" => {
            arity(name, a, 2)?;
            match &a[0] {
                Value::Number(n) => Value::from(
                    n.as_i64()
                        .unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i64),
                ),
                _ => Value::from(int_arg(name, a[1])?),
            }
        }
        "getBoolOr" => {
            arity(name, a, 2)?;
            match &a[0] {
                Value::Bool(b) => Value::Bool(*b),
                _ => Value::Bool(bool_arg(name, a[1])?),
            }
        }

        "name" | "resourceName" => {
            arity(name, a, 1)?;
            meta_str(a[0], "name")
        }
        "namespace" | "resourceNamespace" => {
            arity(name, a, 1)?;
            meta_str(a[0], "namespace")
        }
        "resourceUID" => {
            arity(name, a, 1)?;
            meta_str(a[0], "uid")
        }
        "resourceVersion" => {
            arity(name, a, 1)?;
            meta_str(a[0], "resourceVersion")
        }
        "creationTimestamp" => {
            arity(name, a, 1)?;
            meta_str(a[0], "creationTimestamp")
        }
        "getLabel" | "getAnnotation" => {
            arity(name, a, 2)?;
            let map = if name == "getLabel" {
                "labels"
            } else {
                "annotations"
            };
            Value::String(meta_map_get(a[0], map, &string(m, a[1])))
        }
        "getLabelInt" | "getAnnotationInt" => {
            arity(name, a, 2)?;
            let map = if name == "getLabelInt" {
                "labels"
            } else {
                "annotations"
            };
            Value::from(
                meta_map_get(a[0], map, &string(m, a[1]))
                    .trim()
                    .parse::<i64>()
                    .unwrap_or(0),
            )
        }
        "hasLabel" | "hasAnnotation" => {
            arity(name, a, 2)?;
            let map = if name == "hasLabel" {
                "labels"
            } else {
                "annotations"
            };
            Value::Bool(!meta_map_get(a[0], map, &string(m, a[1])).is_empty())
        }
        "labelMatches" => {
            at_least(name, a, 1)?;
            let pairs = &a[1..];
            Value::Bool(
                pairs.len().is_multiple_of(2)
                    && pairs.chunks(2).all(|kv| {
                        let got = field_in(a[0], "metadata", "labels")
                            .and_then(|l| object_field(l, &string(m, kv[0])))
                            .and_then(Value::as_str)
                            .map(str::to_string);
                        got == Some(string(m, kv[1]))
                    }),
            )
        }
        "getStatus" => {
            arity(name, a, 2)?;
            Value::String(match field_in(a[0], "status", &string(m, a[1])) {
                None | Some(Value::Null | Value::Object(_) | Value::Array(_)) => String::new(),
                Some(v) => string(m, v),
            })
        }
        "hasStatus" => {
            arity(name, a, 2)?;
            Value::Bool(
                field_in(a[0], "status", &string(m, a[1])).is_some_and(|v| match v {
                    Value::Null => false,
                    Value::String(s) => !s.is_empty(),
                    Value::Object(m) => !m.is_empty(),
                    Value::Array(x) => !x.is_empty(),
                    _ => true,
                }),
            )
        }
        "phase" => {
            arity(name, a, 1)?;
            Value::String(
                field_in(a[0], "status", "phase")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        }
        "ownerKind" | "ownerName" => {
            arity(name, a, 1)?;
            let field = if name == "ownerKind" { "kind" } else { "name" };
            Value::String(
                field_in(a[0], "metadata", "ownerReferences")
                    .and_then(Value::as_array)
                    .and_then(|o| o.first())
                    .and_then(|o| object_field(o, field))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        }
        "hasCondition" => {
            arity(name, a, 2)?;
            Value::Bool(
                condition_field(a[0], &string(m, a[1]), "status")
                    .is_some_and(|s| s.as_str() == Some("True")),
            )
        }
        "conditionReason" | "conditionMessage" => {
            arity(name, a, 2)?;
            let field = if name == "conditionReason" {
                "reason"
            } else {
                "message"
            };
            Value::String(
                condition_field(a[0], &string(m, a[1]), field)
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            )
        }
        "resourceExists" => {
            arity(name, a, 1)?;
            Value::Bool(
                a[0].as_object()
                    .is_some_and(|m| m.get("_placeholder") != Some(&Value::Bool(true))),
            )
        }
        "isTerminating" => {
            arity(name, a, 1)?;
            Value::Bool(
                field_in(a[0], "metadata", "deletionTimestamp").is_some_and(|t| !t.is_null()),
            )
        }
        "generation" => {
            arity(name, a, 1)?;
            Value::from(
                field_in(a[0], "metadata", "generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
            )
        }
        "observedGeneration" => {
            arity(name, a, 1)?;
            Value::from(
                field_in(a[0], "status", "observedGeneration")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
            )
        }
        "isSynced" => {
            arity(name, a, 1)?;
            let generation = field_in(a[0], "metadata", "generation").and_then(Value::as_i64);
            let observed = field_in(a[0], "status", "observedGeneration").and_then(Value::as_i64);
            Value::Bool(generation.is_some() && generation == observed)
        }
        "resourceCPU" | "resourceMemory" => {
            arity(name, a, 1)?;
            let key = if name == "resourceCPU" {
                "cpu"
            } else {
                "memory"
            };
            Value::String(
                field_in(a[0], "spec", "resources")
                    .and_then(|r| object_field(r, "requests"))
                    .and_then(|r| object_field(r, key))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        }

        "toBase64" => {
            arity(name, a, 1)?;
            Value::String(base64_encode(string(m, a[0]).as_bytes()))
        }
        "fromBase64" => {
            arity(name, a, 1)?;
            Value::String(
                base64_decode(&string(m, a[0]))
                    .and_then(|b| String::from_utf8(b).ok())
                    .unwrap_or_default(),
            )
        }
        "sha256sum" => {
            arity(name, a, 1)?;
            let s = string(m, a[0]);
            // Hashing is slower per byte than copying.
            m.charge(8 * s.len() as u64);
            let digest = sha256(s.as_bytes());
            Value::String(digest[..4].iter().map(|b| format!("{b:02x}")).collect())
        }
        "slugify" => {
            arity(name, a, 1)?;
            let mut out = String::new();
            for c in string(m, a[0]).to_lowercase().chars() {
                let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
                    c
                } else {
                    '-'
                };
                if !(c == '-' && out.ends_with('-')) {
                    out.push(c);
                }
            }
            Value::String(out.trim_matches('-').to_string())
        }
        "inCluster" => {
            arity(name, a, 0)?;
            Value::Bool(facts.in_cluster)
        }
        _ => return Ok(None),
    };
    Ok(Some(Val::fresh(v, m)))
}

fn byte_prefix(s: &str, n: usize) -> String {
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

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for chunk in s.as_bytes().chunks(4) {
        let mut n = 0u32;
        let mut pad = 0;
        for (i, &c) in chunk.iter().enumerate() {
            let v = match c {
                b'=' if i >= 2 => {
                    pad += 1;
                    0
                }
                _ if pad > 0 => return None,
                _ => u32::try_from(B64.iter().position(|x| *x == c)?).ok()?,
            };
            n = n << 6 | v;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// SHA-256 (FIPS 180-4).
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (hi, vi) in h.iter_mut().zip(v) {
            *hi = hi.wrapping_add(vi);
        }
    }
    let mut out = [0u8; 32];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn try_f(name: &str, args: Vec<Value>) -> Result<Option<Value>, TemplateError> {
        let args: Vec<Val<'_>> = args.into_iter().map(|v| Val::Own(v.into())).collect();
        call(name, args, Facts::current(), &Meter::default()).map(|v| v.map(|v| (*v).clone()))
    }

    fn f(name: &str, args: Vec<Value>) -> Value {
        try_f(name, args)
            .expect("call succeeds")
            .expect("function exists")
    }

    #[test]
    fn encodings_match_known_vectors() {
        assert_eq!(base64_encode(b"hello"), "aGVsbG8=");
        assert_eq!(base64_decode("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64_encode(b""), "");
        let hex: String = sha256(b"abc").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(f("sha256sum", vec![json!("abc")]), json!("ba7816bf"));
    }

    #[test]
    fn orkestra_string_and_math_notes() {
        assert_eq!(
            f("camelToKebab", vec![json!("HTTPRequest")]),
            json!("http-request")
        );
        assert_eq!(
            f("camelToKebab", vec![json!("myAppName")]),
            json!("my-app-name")
        );
        assert_eq!(
            f("truncate", vec![json!("abcdefgh"), json!(6)]),
            json!("abc...")
        );
        assert_eq!(
            f("slugify", vec![json!("My App / Service")]),
            json!("my-app-service")
        );
        assert_eq!(f("add", vec![json!(8080), json!("1000")]), json!(9080));
        assert_eq!(f("div", vec![json!(3), json!(2)]), json!(1.5));
        assert_eq!(f("clamp", vec![json!(50), json!(1), json!(20)]), json!(20));
        assert_eq!(f("default", vec![json!("x"), json!(null)]), json!("x"));
        assert_eq!(f("default", vec![json!("x"), json!("y")]), json!("y"));
        assert_eq!(
            f("coalesce", vec![json!(""), json!(0), json!("z")]),
            json!("z")
        );
        assert_eq!(
            f("toList", vec![json!("a, b,a,,c")]),
            json!(["a", "b", "c"])
        );
        assert_eq!(
            f("split", vec![json!("a,b"), json!(",")]),
            json!(["a", "b"])
        );
        assert_eq!(
            f("index", vec![json!({"a": [1, 2]}), json!("a"), json!(1)]),
            json!(2)
        );
        assert_eq!(
            f("slice", vec![json!("abcdef"), json!(1), json!(3)]),
            json!("bc")
        );
        assert_eq!(f("len", vec![json!(null)]), json!(0));
        assert_eq!(f("urlquery", vec![json!("a b&c")]), json!("a+b%26c"));
        assert_eq!(
            f("html", vec![json!("<a href='x'>")]),
            json!("&lt;a href=&#39;x&#39;&gt;")
        );
        assert!(try_f("repeat", vec![json!("ab"), json!(1_000_000)]).is_err());
    }

    #[test]
    fn kubernetes_object_notes() {
        let obj = json!({
            "metadata": {"name": "web", "labels": {"app": "x"}, "generation": 2},
            "status": {"observedGeneration": 2, "phase": "Ready",
                       "conditions": [{"type": "Available", "status": "True", "reason": "Ok"}]}
        });
        assert_eq!(f("name", vec![obj.clone()]), json!("web"));
        assert_eq!(f("getLabel", vec![obj.clone(), json!("app")]), json!("x"));
        assert_eq!(
            f("hasCondition", vec![obj.clone(), json!("Available")]),
            json!(true)
        );
        assert_eq!(
            f("conditionReason", vec![obj.clone(), json!("Available")]),
            json!("Ok")
        );
        assert_eq!(f("isSynced", vec![obj.clone()]), json!(true));
        assert_eq!(f("phase", vec![obj.clone()]), json!("Ready"));
        assert_eq!(
            f("get", vec![obj, json!("metadata"), json!("name")]),
            json!("web")
        );
    }
}
