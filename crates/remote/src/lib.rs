//! The remote edge: one request per reconcile to the service, and its answer back as bytes for
//! `ork-protocol` to check. Two transports: HTTP ([`HttpTransport`]: POST with timeout, size
//! limit, auth header, trace headers) and exec ([`exec()`]: a local program, request on stdin,
//! answer on stdout).
//!
//! The data flow of an HTTP call: the caller parses the rendered endpoint into an [`Endpoint`]
//! (the parser the HTTP client uses), decides with [`credential_allowed`] whether the
//! [`Credential`] may go there, and the transport sends to that same parsed URL. Redirects are
//! never followed.
//!
//! Credentials are handed in as [`Credential`], whose `Debug` never shows the value. No error
//! message here contains a header value or a URL's user info, and text from the service (a
//! non-200 body, stderr) is cut short, stripped of control characters (the rule of
//! `ork_protocol::text`) and of the credential ([`Credential::redact`]) before it goes into one.

mod endpoint;
mod exec;
mod http;
mod text;

use std::fmt;
use std::time::Duration;

use ork_protocol::clean_text;
use reqwest::header::{HeaderName, HeaderValue};

pub use endpoint::{Endpoint, UrlError, credential_allowed, endpoint_host, host_of};
pub use exec::{ExecCall, exec};
pub use http::{Call, HttpTransport, TlsSettings};
pub use text::REDACTED;

/// How many characters of service text (a body, stderr) an error message keeps.
pub const SNIPPET_CHARS: usize = 200;

/// A secret value with the header it goes in.
#[derive(Clone)]
pub struct Credential {
    header: HeaderName,
    value: HeaderValue,
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
    /// [`REDACTED`]; `Bearer <secret>` becomes `Bearer [redacted]`.
    pub fn redact(&self, text: &str) -> String {
        self.redactor().redact(text)
    }

    pub(crate) fn redactor(&self) -> text::Redactor {
        let mut r = text::Redactor::default();
        r.add(&self.secret);
        r
    }
}

/// Why a call did not produce an answer. Messages carry no header value and no user info;
/// service text in them is cleaned and redacted.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("endpoint URL refused: {0}")]
    Url(#[from] UrlError),
    #[error("POST {url}: timed out after {after:?}")]
    Timeout { url: String, after: Duration },
    #[error("POST {url}: cannot connect: {reason}")]
    Connect { url: String, reason: String },
    #[error("POST {url}: unexpected status {status}{body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("POST {url}: the service answered {status}, a redirect; redirects are never followed")]
    Redirect { url: String, status: u16 },
    #[error("POST {url}: response larger than the limit of {limit} bytes")]
    TooLarge { url: String, limit: u64 },
    #[error("POST {url}: {reason}")]
    Transport { url: String, reason: String },
    #[error("{0}")]
    Config(String),
    #[error("command {program}: cannot start: {reason}")]
    ExecSpawn { program: String, reason: String },
    #[error("command {program}: timed out after {after:?} and was killed{stderr}")]
    ExecTimeout {
        program: String,
        after: Duration,
        stderr: String,
    },
    #[error("command {program}: {status}{stderr}")]
    ExecFailed {
        program: String,
        status: String,
        stderr: String,
    },
    #[error(
        "command {program}: response larger than the limit of {limit} bytes; the command was killed{stderr}"
    )]
    ExecTooLarge {
        program: String,
        limit: u64,
        stderr: String,
    },
    #[error("command {program}: stdout is not a JSON answer: {reason}{stderr}")]
    ExecGarbage {
        program: String,
        reason: String,
        stderr: String,
    },
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
