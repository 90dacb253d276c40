//! The exchange of one reconcile with its service as the flight recorder keeps it (SPEC §14):
//! the request and the answer, with every secret taken out and cut at a cap.
//!
//! What is taken out: the data of every Secret (`data`, `stringData`) wherever one appears (a
//! child in the request, or one the service asks for), the `secretValues` of a payload, the
//! service account tokens ork hands over, and the credential the transport sends, wherever the
//! service echoes it.

use std::time::Duration;

use serde_json::Value;

use crate::ports::Transport;

/// A request or answer is kept up to this many bytes of its JSON text.
pub(crate) const BODY_LIMIT: usize = 16 * 1024;

/// What replaces a secret value.
pub(crate) const REDACTED: &str = "(redacted)";

/// The request and answer of one reconcile, as recorded.
#[derive(Debug, Default, Clone)]
pub(crate) struct Exchange {
    pub request: Option<Box<str>>,
    pub answer: Option<Box<str>>,
    /// How long the service took.
    pub call: Option<Duration>,
}

impl Exchange {
    /// Bytes of text kept.
    pub fn size(&self) -> usize {
        self.request.as_deref().map_or(0, str::len) + self.answer.as_deref().map_or(0, str::len)
    }
}

/// `body` as the recorder keeps it: without secrets, cut at [`BODY_LIMIT`].
pub(crate) fn recordable(body: &[u8], transport: &dyn Transport) -> Box<str> {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(mut v) => {
            redact_secrets(&mut v);
            v.to_string()
        }
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    cut(transport.redact(&text)).into_boxed_str()
}

/// Takes every secret value out of `v` (see the module's documentation).
pub(crate) fn redact_secrets(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let secret = m.get("kind").and_then(Value::as_str) == Some("Secret")
                && m.get("apiVersion").and_then(Value::as_str) == Some("v1");
            for (k, x) in m.iter_mut() {
                let hidden = matches!(k.as_str(), "secretValues" | "serviceAccountTokens")
                    || (secret && matches!(k.as_str(), "data" | "stringData"));
                if hidden {
                    hide(x);
                } else {
                    redact_secrets(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_secrets),
        _ => {}
    }
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

/// `text` cut at [`BODY_LIMIT`] bytes on a character boundary, saying how much was left out.
fn cut(mut text: String) -> String {
    if text.len() <= BODY_LIMIT {
        return text;
    }
    let total = text.len();
    let mut at = BODY_LIMIT;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str(&format!("… ({} more bytes)", total - at));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::CallFailed;
    use futures::future::BoxFuture;
    use serde_json::json;

    /// A transport that sends no credential.
    struct Plain;

    impl Transport for Plain {
        fn call<'a>(
            &'a self,
            _cr: &'a Value,
            _body: Vec<u8>,
        ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }

    #[test]
    fn secrets_are_taken_out_wherever_they_are_and_the_rest_stays() {
        let request = json!({
            "key": "ns/a",
            "object": {"spec": {"password": "not a Secret's: stays"}},
            "children": {"secret": {"db": {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "db"}, "data": {"password": "c2VjcmV0"},
                "stringData": {"token": "t0ps3cret"}}}},
            "payload": {"secretValues": {"db": {"password": "c2VjcmV0"}}},
            "serviceAccountTokens": [{"name": "ork", "token": "eyJhbGciOi"}]
        });
        let kept = recordable(request.to_string().as_bytes(), &Plain);
        for secret in ["c2VjcmV0", "t0ps3cret", "eyJhbGciOi"] {
            assert!(!kept.contains(secret), "{kept}");
        }
        let v: Value = serde_json::from_str(&kept).expect("still JSON");
        assert_eq!(v["children"]["secret"]["db"]["data"]["password"], REDACTED);
        assert_eq!(v["object"]["spec"]["password"], "not a Secret's: stays");
        assert_eq!(v["key"], "ns/a");
    }

    #[test]
    fn a_large_body_is_cut_and_says_by_how_much() {
        let big = json!({"blob": "é".repeat(BODY_LIMIT)});
        let kept = recordable(big.to_string().as_bytes(), &Plain);
        assert!(kept.len() <= BODY_LIMIT + 40, "{}", kept.len());
        assert!(
            kept.ends_with("more bytes)"),
            "{}",
            &kept[kept.len() - 30..]
        );
    }
}
