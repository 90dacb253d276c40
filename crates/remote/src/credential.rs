//! A secret value with the header it goes in; its `Debug` never shows the value.

use std::fmt;

use ork_protocol::clean_text;
use reqwest::header::{HeaderName, HeaderValue};

use crate::error::CallError;
use crate::text;

/// A secret value with the header it goes in.
#[derive(Clone)]
pub struct Credential {
    pub(crate) header: HeaderName,
    pub(crate) value: HeaderValue,
    /// The secret as configured (trimmed), to redact it from service text.
    secret: String,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credential({}: <redacted>)", self.header)
    }
}

impl Credential {
    /// `Authorization` gets `Bearer <secret>`; any other header the raw value.
    ///
    /// # Errors
    /// When the header name or the value cannot be sent in HTTP (the value is not shown).
    pub fn new(header: &str, secret: &str) -> Result<Credential, CallError> {
        let name = HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
            CallError::Config(format!("{:?} is not a header name", clean_text(header, 64)))
        })?;
        let secret = secret.trim();
        let text = if name == reqwest::header::AUTHORIZATION {
            format!("Bearer {secret}")
        } else {
            secret.to_string()
        };
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            CallError::Config(format!(
                "the credential for header {name} contains characters HTTP headers cannot carry"
            ))
        })?;
        value.set_sensitive(true);
        Ok(Credential {
            header: name,
            value,
            secret: secret.to_string(),
        })
    }

    /// `text` with every occurrence of the secret (also as a JSON string escapes it) replaced by
    /// [`crate::REDACTED`]; `Bearer <secret>` becomes `Bearer [redacted]`.
    pub fn redact(&self, text: &str) -> String {
        self.redactor().redact(text)
    }

    pub(crate) fn redactor(&self) -> text::Redactor {
        let mut r = text::Redactor::default();
        r.add(&self.secret);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_for_authorization_raw_otherwise_and_never_printed() {
        let c = Credential::new("Authorization", "s3cret").expect("valid");
        assert_eq!(c.value.to_str().ok(), Some("Bearer s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
        let c = Credential::new("X-Api-Key", " s3cret\n").expect("valid");
        assert_eq!(c.value.to_str().ok(), Some("s3cret"));
    }

    #[test]
    fn redact_replaces_the_secret_in_every_form_a_service_echoes() {
        let c = Credential::new("Authorization", "s3cret").expect("valid");
        assert_eq!(
            c.redact("authorization: Bearer s3cret, again s3cret"),
            "authorization: Bearer [redacted], again [redacted]"
        );
        let c = Credential::new("X-Api-Key", r"a\b").expect("valid");
        assert_eq!(c.redact(r#"{"key":"a\\b"}"#), r#"{"key":"[redacted]"}"#);
    }

    #[test]
    fn a_bad_header_name_or_value_is_reported_without_the_value() {
        let err = Credential::new("X-Api-Key", "bad\u{1}value").expect_err("control char");
        assert!(!err.to_string().contains("bad"), "{err}");
        let err = Credential::new("bad header\u{1b}[2J", "s").expect_err("bad name");
        assert!(!err.to_string().contains('\u{1b}'), "{err}");
    }
}
