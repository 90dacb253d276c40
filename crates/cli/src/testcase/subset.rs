//! The subset match of `ork test`: every field of the expected value must be in the found one
//! with an equal value; fields it does not name may be there too. Maps match key by key, lists
//! item by item (the found list may be longer), `null` expects the field to be absent, and
//! numbers compare by value (`2` equals `2.0`).

use serde_json::Value;

/// A field that does not hold: where, what was expected and what was found (`None`: missing).
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// `spec.template.spec.containers[0].image`; empty for the value itself.
    pub path: String,
    pub expected: Value,
    pub found: Option<Value>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() {
            "the value"
        } else {
            &self.path
        };
        match (&self.expected, &self.found) {
            (Value::Null, Some(found)) => write!(f, "{path}: expected no value, found {found}"),
            (expected, None) => write!(f, "{path}: expected {expected}, found nothing"),
            (expected, Some(found)) => write!(f, "{path}: expected {expected}, found {found}"),
        }
    }
}

/// Every field of `expected` that `found` lacks or holds another value for.
pub fn subset(expected: &Value, found: &Value) -> Vec<Mismatch> {
    let mut out = Vec::new();
    walk("", expected, Some(found), &mut out);
    out
}

fn walk(path: &str, expected: &Value, found: Option<&Value>, out: &mut Vec<Mismatch>) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (expected, found) {
        (Value::Null, None | Some(Value::Null)) => {}
        (Value::Object(want), Some(Value::Object(have))) => {
            for (k, v) in want {
                walk(&join(k), v, have.get(k), out);
            }
        }
        (Value::Array(want), Some(Value::Array(have))) if want.len() <= have.len() => {
            for (i, v) in want.iter().enumerate() {
                walk(&format!("{path}[{i}]"), v, have.get(i), out);
            }
        }
        (Value::Number(a), Some(Value::Number(b))) if a.as_f64() == b.as_f64() => {}
        (want, Some(have)) if want == have => {}
        (want, have) => out.push(Mismatch {
            path: path.to_string(),
            expected: want.clone(),
            found: have.cloned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn extra_fields_are_allowed_and_equal_values_match() {
        let found =
            json!({"spec": {"replicas": 2, "image": "nginx", "extra": true}, "x": [1, 2, 3]});
        assert_eq!(
            subset(&json!({"spec": {"replicas": 2.0}, "x": [1, 2]}), &found),
            []
        );
        assert_eq!(subset(&json!({}), &found), []);
    }

    #[test]
    fn a_different_or_missing_field_names_its_path_the_expected_and_the_found_value() {
        let found = json!({"spec": {"replicas": 2, "containers": [{"image": "nginx:1.27"}]}});
        let want = json!({"spec": {"replicas": 3, "containers": [{"image": "nginx:1.28", "name": "web"}], "paused": false}});
        let lines: Vec<String> = subset(&want, &found)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [
                "spec.containers[0].image: expected \"nginx:1.28\", found \"nginx:1.27\"",
                "spec.containers[0].name: expected \"web\", found nothing",
                "spec.paused: expected false, found nothing",
                "spec.replicas: expected 3, found 2",
            ]
        );
    }

    #[test]
    fn a_longer_expected_list_a_type_change_and_null_fail_as_a_whole() {
        let found = json!({"ports": [80], "name": "a", "gone": 1});
        let m = subset(
            &json!({"ports": [80, 443], "name": {"x": 1}, "gone": null, "absent": null}),
            &found,
        );
        let lines: Vec<String> = m.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "gone: expected no value, found 1",
                "name: expected {\"x\":1}, found \"a\"",
                "ports: expected [80,443], found [80]",
            ]
        );
    }
}
