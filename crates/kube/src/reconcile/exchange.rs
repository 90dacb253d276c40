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
use crate::redact::redact_secrets;

/// A request or answer is kept up to this many bytes of its JSON text.
pub(crate) const BODY_LIMIT: usize = 16 * 1024;

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
    use crate::redact::REDACTED;
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

    /// Finding H2: a Secret written as an Orkestra intent was recorded in clear text.
    #[test]
    fn a_secret_is_taken_out_of_every_answer_shape() {
        let answer = json!({
            "result": "success",
            "resources": [
                {"type": "secret", "fields": {"name": "a", "stringData": {"k": "intent-plain"},
                    "data": {"k": "aW50ZW50LWI2NA=="}}},
                {"type": "custom", "fields": {"apiVersion": "v1", "kind": "Secret", "name": "b",
                    "data": {"k": "Y3VzdG9tLWI2NA=="}}},
                {"kind": "Secret", "metadata": {"name": "c"}, "stringData": {"k": "no-api-version"}},
                {"type": "configmap", "fields": {"name": "d", "data": {"k": "a config value"}}}
            ],
            "children": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "e"},
                "stringData": {"k": "mc-child"}}],
            "attachments": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "f"},
                "data": {"k": "bWMtYXR0YWNobWVudA=="}}],
            "related": {"Secret.v1": {"ns/g": {"metadata": {"name": "g"},
                "data": {"k": "cmVsYXRlZC1ubyBraW5k"}}}}
        });
        let kept = recordable(answer.to_string().as_bytes(), &Plain);
        for secret in [
            "intent-plain",
            "aW50ZW50LWI2NA==",
            "Y3VzdG9tLWI2NA==",
            "no-api-version",
            "mc-child",
            "bWMtYXR0YWNobWVudA==",
            "cmVsYXRlZC1ubyBraW5k",
        ] {
            assert!(!kept.contains(secret), "{secret} kept: {kept}");
        }
        let v: Value = serde_json::from_str(&kept).expect("still JSON");
        assert_eq!(v["resources"][0]["fields"]["stringData"]["k"], REDACTED);
        assert_eq!(v["resources"][0]["fields"]["name"], "a", "names stay");
        assert_eq!(
            v["resources"][3]["fields"]["data"]["k"], "a config value",
            "a ConfigMap is not a Secret"
        );
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
