//! Whether a live object already holds everything ork would apply, so the apply can be skipped.

use serde_json::Value;

/// True when every field of `desired` is present in `live` with the same value: maps by key
/// (the server may add more), lists element by element with the same length, scalars equal.
/// A field the server normalises differently (a quantity written `0.5` read back as `500m`)
/// counts as different, so the apply happens: a false "different" costs one request, a false
/// "same" would leave drift in place.
pub fn already_applied(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => d
            .iter()
            .all(|(k, v)| l.get(k).is_some_and(|lv| already_applied(v, lv))),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(a, b)| already_applied(a, b))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

/// The fields of `desired` that `live` does not hold as [`already_applied`] judges them, as
/// paths (`spec.replicas`, `spec.ports[0].port`, `data`): the deepest map key where they
/// differ, or the list whose length differs.
pub fn differences(desired: &Value, live: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect(desired, live, String::new(), &mut out);
    out
}

fn collect(desired: &Value, live: &Value, path: String, out: &mut Vec<String>) {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => {
            for (k, v) in d {
                let at = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match l.get(k) {
                    Some(lv) => collect(v, lv, at, out),
                    None => out.push(at),
                }
            }
        }
        (Value::Array(d), Value::Array(l)) if d.len() == l.len() => {
            for (i, (a, b)) in d.iter().zip(l).enumerate() {
                collect(a, b, format!("{path}[{i}]"), out);
            }
        }
        (d, l) if already_applied(d, l) => {}
        _ => out.push(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_the_deepest_field_that_differs() {
        let desired = json!({"metadata": {"labels": {"a": "1", "b": "2"}},
            "spec": {"replicas": 2, "ports": [{"port": 80}, {"port": 81}], "x": [1]}});
        let live = json!({"metadata": {"labels": {"a": "1"}, "uid": "u"},
            "spec": {"replicas": 1, "ports": [{"port": 80}, {"port": 82}], "x": [1, 2]}});
        assert_eq!(
            differences(&desired, &live),
            [
                "metadata.labels.b",
                "spec.ports[1].port",
                "spec.replicas",
                "spec.x"
            ]
        );
        assert!(differences(&desired, &desired).is_empty());
    }

    #[test]
    fn server_defaults_do_not_count_as_drift() {
        let desired = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}});
        let live = json!({"metadata": {"uid": "u"}, "spec": {"replicas": 1, "strategy": {},
            "template": {"spec": {"containers": [{"name": "a", "image": "x", "imagePullPolicy": "Always"}]}}},
            "status": {"replicas": 0}});
        assert!(already_applied(&desired, &live));
    }

    #[test]
    fn a_changed_or_missing_field_or_list_element_is_drift() {
        let desired = json!({"spec": {"replicas": 1, "ports": [{"port": 80}]}});
        assert!(!already_applied(
            &desired,
            &json!({"spec": {"replicas": 5, "ports": [{"port": 80}]}})
        ));
        assert!(!already_applied(
            &desired,
            &json!({"spec": {"ports": [{"port": 80}]}})
        ));
        assert!(!already_applied(
            &desired,
            &json!({"spec": {"replicas": 1, "ports": [{"port": 80}, {"port": 81}]}})
        ));
        assert!(!already_applied(
            &desired,
            &json!({"spec": {"replicas": "1", "ports": [{"port": 80}]}})
        ));
    }
}
