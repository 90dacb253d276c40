//! How two answers to the same request differ, in the words of the report: each field that
//! differs, with what the earlier answer had and what the later one has.

use serde_json::Value;

/// At most this many differences are named; the rest are counted.
const MAX_SHOWN: usize = 5;

/// One line per differing field (`resources[0].data.count: expected 1, found 2`), empty when
/// the answers are the same JSON. Bodies that are not JSON are compared as bytes.
pub fn differences(expected: &[u8], found: &[u8]) -> Vec<String> {
    let (Ok(a), Ok(b)) = (
        serde_json::from_slice::<Value>(expected),
        serde_json::from_slice::<Value>(found),
    ) else {
        return if expected == found {
            Vec::new()
        } else {
            vec![format!(
                "the body: expected {}, found {}",
                shown_bytes(expected),
                shown_bytes(found)
            )]
        };
    };
    let mut out = Vec::new();
    walk("", &a, &b, &mut out);
    if out.len() > MAX_SHOWN {
        let more = out.len() - MAX_SHOWN;
        out.truncate(MAX_SHOWN);
        out.push(format!("and {more} more"));
    }
    out
}

fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    let at = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                match (x.get(k), y.get(k)) {
                    (Some(v), Some(w)) => walk(&at(k), v, w, out),
                    (Some(v), None) => {
                        out.push(format!("{}: expected {}, found it absent", at(k), shown(v)))
                    }
                    (None, Some(w)) => {
                        out.push(format!("{}: expected it absent, found {}", at(k), shown(w)))
                    }
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                walk(&format!("{path}[{i}]"), v, w, out);
            }
        }
        (Value::Array(x), Value::Array(y)) => out.push(format!(
            "{}: expected {} items, found {}",
            if path.is_empty() { "the answer" } else { path },
            x.len(),
            y.len()
        )),
        (v, w) if v != w => out.push(format!(
            "{}: expected {}, found {}",
            if path.is_empty() { "the answer" } else { path },
            shown(v),
            shown(w)
        )),
        _ => {}
    }
}

/// A value as JSON, cut to a readable length.
pub fn shown(v: &Value) -> String {
    cut(&v.to_string())
}

fn shown_bytes(b: &[u8]) -> String {
    if b.is_empty() {
        return "an empty body".into();
    }
    format!("{:?}", cut(&String::from_utf8_lossy(b)))
}

fn cut(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        return s.to_string();
    }
    let head: String = s.chars().take(MAX).collect();
    format!("{head}… ({} bytes)", s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_differing_field_is_named_with_both_values() {
        let a = br#"{"result":"ok","resources":[{"type":"configmap","fields":{"data":{"count":"1"}}}]}"#;
        let b = br#"{"result":"ok","resources":[{"type":"configmap","fields":{"data":{"count":"2"}}}],"status":{}}"#;
        assert_eq!(
            differences(a, b),
            vec![
                "resources[0].fields.data.count: expected \"1\", found \"2\"".to_string(),
                "status: expected it absent, found {}".to_string(),
            ]
        );
        assert!(differences(a, a).is_empty());
        // Key order is not a difference.
        assert!(differences(br#"{"a":1,"b":2}"#, br#"{"b":2,"a":1}"#).is_empty());
    }

    #[test]
    fn a_body_that_is_not_json_is_compared_as_text() {
        assert_eq!(
            differences(b"oops", b""),
            vec!["the body: expected \"oops\", found an empty body".to_string()]
        );
    }
}
