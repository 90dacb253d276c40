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
        // Nor the literal alone: a service that echoes headers percent-encoded, or base64'd (a
        // Basic header, a debug dump), shows the secret in those forms, at any offset.
        let encoded = ork_protocol::text::percent_encode(secret);
        if encoded != secret {
            self.secrets.push(encoded);
        }
        for alphabet in [STANDARD, URL_SAFE] {
            self.secrets
                .extend(base64_cores(secret.as_bytes(), alphabet));
        }
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        self.secrets.dedup();
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

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 of `bytes`, without padding.
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(char::from(alphabet[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// The parts of `secret`'s base64 that are the same wherever it sits in a longer text: for each
/// of the three alignments, the characters that depend on the secret's bytes alone. Secrets too
/// short to leave 8 such characters are left to the literal forms.
fn base64_cores(secret: &[u8], alphabet: &[u8; 64]) -> Vec<String> {
    let mut out = Vec::new();
    for offset in 0..3usize {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(secret);
        let text = base64(&padded, alphabet);
        // Characters touching the `offset` bytes before, or the bytes after, depend on them.
        let skip = (offset * 8).div_ceil(6);
        let whole = padded.len() / 3 * 4;
        let end = whole.min(text.len());
        if end > skip && end - skip >= 8 {
            out.push(text[skip..end].to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Informational finding of issue 47: redaction matched the literal credential only.
    #[test]
    fn a_secret_is_redacted_base64d_at_any_offset_and_percent_encoded() {
        let secret = "tok/en+s3cret=value";
        let mut r = Redactor::default();
        r.add(secret);
        for prefix in ["", "u", "us", "user:"] {
            for alphabet in [STANDARD, URL_SAFE] {
                let echoed = base64(format!("{prefix}{secret}").as_bytes(), alphabet);
                let shown = r.redact(&format!("Basic {echoed}"));
                assert!(shown.contains(REDACTED), "{prefix:?}: {shown}");
                // What is left is too short to carry the secret.
                let left = shown.replace(REDACTED, "").replace("Basic ", "");
                assert!(left.len() <= 8, "{prefix:?}: {shown}");
            }
        }
        assert_eq!(
            r.redact("GET /r?t=tok%2Fen%2Bs3cret%3Dvalue"),
            format!("GET /r?t={REDACTED}")
        );
        assert_eq!(base64(b"Man", STANDARD), "TWFu");
        assert_eq!(base64(b"Ma", STANDARD), "TWE");
    }

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
