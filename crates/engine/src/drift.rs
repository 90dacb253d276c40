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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
