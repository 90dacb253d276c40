//! Taking secret values out of what ork keeps or shows: a Secret's `data` wherever a Secret
//! appears in a request or an answer (a child, an input, a Metacontroller related object),
//! and the marker that replaces them. A leaf: what records or shows text uses it.

use serde_json::Value;

/// What replaces a secret value.
pub(crate) const REDACTED: &str = "(redacted)";

/// A Secret `v` without its values (`data`, `stringData`), for a service that did not ask for
/// them (SPEC §11, §20): its name, labels and keys' absence say what it needs to know.
pub(crate) fn drop_secret_values(v: &mut Value) {
    if let Value::Object(m) = v {
        m.remove("data");
        m.remove("stringData");
    }
}

/// Takes every secret value out of `v` (see the module's documentation).
///
/// A Secret is found by its shape, whatever part of a request or answer holds it: an object of
/// kind `Secret` (a child, a `custom` intent's fields, a Metacontroller child or attachment, an
/// input or related object; with or without `apiVersion`), an Orkestra intent of `type:
/// secret` (its `fields`), and any object under a `Secret` key of a Metacontroller map
/// (`"Secret.v1": {name: object}`, whose objects may come without `kind`).
pub(crate) fn redact_secrets(v: &mut Value) {
    redact(v, false);
}

fn redact(v: &mut Value, in_secret_map: bool) {
    match v {
        Value::Object(m) => {
            let kind = m.get("kind").and_then(Value::as_str);
            let secret = kind == Some("Secret")
                && m.get("apiVersion")
                    .and_then(Value::as_str)
                    .is_none_or(|a| a == "v1");
            let secret = secret || (in_secret_map && kind.is_none_or(|k| k == "Secret"));
            let secret_intent = m.get("type").and_then(Value::as_str) == Some("secret")
                && m.get("fields").is_some_and(Value::is_object);
            for (k, x) in m.iter_mut() {
                if secret_intent && k == "fields" {
                    if let Value::Object(fields) = x {
                        for (name, value) in fields.iter_mut() {
                            if matches!(name.as_str(), "data" | "stringData") {
                                hide(value);
                            }
                        }
                    }
                    continue;
                }
                if is_secret_map_key(k) {
                    // `{"Secret.v1": {"ns/name": object}}` in Metacontroller's requests.
                    if let Value::Object(objects) = x {
                        objects.values_mut().for_each(|o| redact(o, true));
                    }
                    continue;
                }
                let hidden = matches!(k.as_str(), "secretValues" | "serviceAccountTokens")
                    || (secret && matches!(k.as_str(), "data" | "stringData"));
                if hidden {
                    hide(x);
                } else {
                    redact(x, false);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact(x, in_secret_map)),
        _ => {}
    }
}

/// A Metacontroller map key naming core Secrets: `Secret.v1` (children, attachments, related).
fn is_secret_map_key(key: &str) -> bool {
    key == "Secret.v1"
}

/// Every leaf of `v` replaced by [`REDACTED`], keys kept (which keys a Secret has is not secret,
/// and says what the service saw).
fn hide(v: &mut Value) {
    match v {
        Value::Object(m) => m.values_mut().for_each(hide),
        Value::Array(a) => a.iter_mut().for_each(hide),
        other => *other = Value::String(REDACTED.into()),
    }
}
