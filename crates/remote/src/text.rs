//! Service text made fit for error messages, status, events and logs (SPEC §11): short, one line,
//! no control characters, and no secret.

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// `text` on one line and at most `max_chars` characters (the cut marked with `…`): line
/// breaks and tabs become a space, runs of white space one space, terminal escape sequences and
/// every other control or bidirectional-override character are dropped.
pub fn clean_text(text: &str, max_chars: usize) -> String {
    truncate(&one_line(text), max_chars, Keep::Start)
}

/// Which end of a long text is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// A body starts with what matters.
    Start,
    /// A stderr tail ends with the reason.
    End,
}

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
        truncate(&self.redact(&cleaned), max_chars, keep)
    }
}

fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut pending_space = false;
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\n' | '\t' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}' => {
                pending_space = true;
            }
            c if c.is_whitespace() && !c.is_control() => pending_space = true,
            c if c.is_control() || is_bidi_control(c) => {}
            c => {
                if pending_space && !out.is_empty() {
                    out.push(' ');
                }
                pending_space = false;
                out.push(c);
            }
        }
    }
    out
}

/// Skips the rest of an escape sequence: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or
/// `ESC ] … ESC \`), or the one character of a two-character escape.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
        }
        _ => {}
    }
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn truncate(text: &str, max_chars: usize, keep: Keep) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let Some(room) = max_chars.checked_sub(1) else {
        return String::new();
    };
    match keep {
        Keep::Start => {
            let mut out: String = text.chars().take(room).collect();
            out.truncate(out.trim_end().len());
            out.push('…');
            out
        }
        Keep::End => {
            let kept: String = text.chars().skip(count - room).collect();
            format!("…{}", kept.trim_start())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_escapes_go_and_line_breaks_become_spaces() {
        assert_eq!(
            clean_text("a\r\nb\tc  d\u{1b}[31mred\u{1b}[0m\u{7}\u{0}e", 100),
            "a b c drede"
        );
        assert_eq!(
            clean_text("\u{1b}]0;title\u{7}x\u{202e}y\u{1b}]8;;u\u{1b}\\z", 100),
            "xyz"
        );
        assert_eq!(clean_text("  lead and trail \n", 100), "lead and trail");
        assert_eq!(clean_text("ünïcödé ✓", 100), "ünïcödé ✓");
    }

    #[test]
    fn long_text_is_cut_to_the_limit_at_either_end() {
        let long = "x".repeat(500);
        let cut = clean_text(&long, 200);
        assert_eq!(cut.chars().count(), 200);
        assert!(cut.ends_with('…'));
        let tail = truncate("abcdef", 4, Keep::End);
        assert_eq!(tail, "…def");
        assert_eq!(clean_text("abc", 0), "");
        assert_eq!(clean_text("abc", 3), "abc");
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
