//! Service text made fit for error messages, status, events and logs (SPEC §11): short, one line,
//! no control characters (the rule of [`ork_protocol::text`]), and no secret.

pub(crate) use ork_protocol::text::Keep;
use ork_protocol::text::{one_line, truncate};

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Replaces every occurrence of a set of secrets by [`REDACTED`].
#[derive(Debug, Default, Clone)]
pub(crate) struct Redactor {
    /// Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    pub(crate) fn add(&mut self, secret: &str) {
        if secret.is_empty() || self.secrets.iter().any(|s| s == secret) {
            return;
        }
        self.secrets.push(secret.to_string());
        // A service that echoes JSON escapes `"` and `\` in the secret.
        if let Ok(quoted) = serde_json::to_string(secret) {
            let escaped = &quoted[1..quoted.len() - 1];
            if escaped != secret {
                self.secrets.push(escaped.to_string());
            }
        }
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    pub(crate) fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// Redacted, cleaned, redacted again (cleaning can join a secret split by control
    /// characters), then cut: the cut comes last so it never leaves half a secret behind.
    pub(crate) fn sanitize(&self, text: &str, max_chars: usize, keep: Keep) -> String {
        let cleaned = one_line(&self.redact(text));
        truncate(self.redact(&cleaned), max_chars, keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_before_and_after_cleaning_and_never_half_cut() {
        let mut r = Redactor::default();
        r.add("s3cret");
        r.add("");
        assert_eq!(
            r.sanitize("Authorization: Bearer s3cret", 200, Keep::Start),
            "Authorization: Bearer [redacted]"
        );
        // Joined by cleaning: the control character splits the secret in the raw text.
        assert_eq!(
            r.sanitize("k=s3c\r\u{0}ret", 200, Keep::Start),
            "k=[redacted]"
        );
        // Cut after redaction: no prefix of the secret survives at the edge.
        let out = r.sanitize(&format!("{}s3cret", "a".repeat(8)), 12, Keep::Start);
        assert!(!out.contains("s3"), "{out}");
        let mut quoted = Redactor::default();
        quoted.add(r#"pa"ss"#);
        assert_eq!(quoted.redact(r#"{"v":"pa\"ss"}"#), r#"{"v":"[redacted]"}"#);
    }
}
