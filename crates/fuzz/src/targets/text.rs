//! Service text on its way to status, events, logs and annotations (SPEC §11):
//! `ork_protocol::clean_text` (the one cleaning rule; `ork-remote` builds its snippets on it)
//! on terminal escapes, controls, bidi overrides and long text; `ork_remote::Credential::redact`
//! on text that echoes the secret.
//!
//! Properties: the output has no control character (Unicode Cc), no bidirectional control
//! and no line separator; it is at most the limit in characters; it has no runs of spaces and
//! no space at either end; cleaning is idempotent; clean text comes through unchanged; reading
//! only the start of a long text gives what reading all of it gives. A redacted text no longer
//! contains the secret.

use ork_protocol::text::{Keep, one_line, truncate};
use ork_remote::Credential;

use crate::generate::Gen;
use crate::runner::{Case, Target};

#[derive(Debug)]
pub struct Text;

/// Unicode's Bidi_Control characters: every one can reorder how a line displays.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

impl Target for Text {
    fn name(&self) -> &'static str {
        "text"
    }

    fn about(&self) -> &'static str {
        "clean_text and Credential::redact on hostile service text"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        let text = service_text(g);
        let max = match g.below(7) {
            0 => 0,
            1 => 1,
            2 => g.below(6),
            3 => 200,
            4 => 1000,
            5 => usize::MAX,
            _ => g.below(300),
        };
        case.note("text", &format!("{text:?}"));
        case.note("max_chars", &max.to_string());

        case.begin();
        let p = ork_protocol::clean_text(&text, max);
        check_clean(case, &p, max);
        case.check(
            !p.contains("  ") && !p.starts_with(' ') && !p.ends_with(' '),
            "clean-one-line",
            || format!("clean_text left runs of spaces or a space at an end: {p:?}"),
        );
        case.check(
            ork_protocol::clean_text(&p, max) == p,
            "clean-idempotent",
            || format!("clean_text changes its own output {p:?}"),
        );
        let whole = truncate(one_line(&text), max, Keep::Start);
        case.check(p == whole, "clean-reads-enough", || {
            format!("clean_text stopped reading too early: {p:?}, the whole text gives {whole:?}")
        });
        let plain = !text.is_empty()
            && text.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
            && !text.contains("  ")
            && !text.starts_with(' ')
            && !text.ends_with(' ')
            && text.len() <= max;
        if plain {
            case.check(p == text, "clean-keeps-clean-text", || {
                format!("clean text changed: {p:?}")
            });
        }
        redaction(g, case);
    }
}

fn check_clean(case: &mut Case, out: &str, max: usize) {
    let count = out.chars().count();
    case.check(count <= max, "clean-within-limit", || {
        format!("clean_text returned {count} characters, limit {max}")
    });
    if let Some(c) = out.chars().find(|c| c.is_control()) {
        case.fail(
            "clean-no-control",
            format!("clean_text left control character {c:?} in {out:?}"),
        );
    }
    if let Some(c) = out.chars().find(|c| matches!(c, '\u{2028}' | '\u{2029}')) {
        case.fail(
            "clean-one-line",
            format!("clean_text left line separator {c:?} in {out:?}"),
        );
    }
    if let Some(c) = out.chars().find(|c| is_bidi_control(*c)) {
        let message = format!("clean_text left bidi control {c:?} in {out:?}");
        case.fail("clean-no-bidi", message);
    }
}

/// Text a service might send: words, whitespace runs, escape sequences (complete, cut short,
/// nested), controls and bidi overrides.
fn service_text(g: &mut Gen) -> String {
    match g.below(5) {
        0 => g.hostile_str(),
        1 => {
            let n = g.len(20, 400, 100_000);
            (0..n).map(|_| g.any_char()).collect()
        }
        2 => {
            let mut s = String::new();
            for _ in 0..1 + g.below(6) {
                s.push_str(&g.ident());
                s.push_str(&escape_sequence(g));
            }
            s
        }
        3 => {
            let mut s = String::new();
            for _ in 0..1 + g.below(10) {
                s.push_str(g.word(&["", " ", "  ", "\t", "\n", "\r\n", " \u{a0} ", "\u{3000}"]));
                s.push_str(&g.ident());
            }
            s.push_str(g.word(&["", " ", "\n", "\t "]));
            s
        }
        _ => {
            let mut s = String::new();
            for _ in 0..1 + g.below(8) {
                s.push_str(&g.nasty());
                s.push_str(&g.ident());
            }
            s
        }
    }
}

fn escape_sequence(g: &mut Gen) -> String {
    let params: String = (0..g.below(6))
        .map(|_| *g.pick(&['0', '1', '3', ';', '?', ' ', '\u{1b}', '\n', 'é']))
        .collect();
    match g.below(7) {
        0 => format!("\u{1b}[{params}m"),
        1 => format!("\u{1b}[{params}"),
        2 => format!("\u{1b}]{params}\u{7}"),
        3 => format!("\u{1b}]{params}\u{1b}\\"),
        4 => format!("\u{1b}]{params}"),
        5 => format!("\u{1b}{}", g.any_char()),
        _ => "\u{1b}".to_string(),
    }
}

/// A secret echoed in a service's text, raw, as `Bearer`, JSON-escaped and split by control
/// characters, is gone after redaction.
fn redaction(g: &mut Gen, case: &mut Case) {
    // No character of "[redacted]" in the secret, so the marker itself cannot spell it.
    const ALPHABET: &[char] = &[
        '0', '1', '7', 'X', 'Y', 'Z', 'K', 'Q', '!', '#', '$', '%', '&', '(', ')', '*', '+', ';',
        '=', '^', '~', '"', '\\', '/', '-', '_', '.', ':', ' ',
    ];
    let len = 1 + g.below(24);
    let secret: String = (0..len).map(|_| *g.pick(ALPHABET)).collect();
    let secret = secret.trim().to_string();
    if secret.is_empty() {
        return;
    }
    let Ok(credential) = Credential::new(g.word(&["Authorization", "X-Api-Key"]), &secret) else {
        return;
    };
    let escaped = serde_json::to_string(&secret).unwrap_or_default();
    let escaped = escaped.trim_matches('"').to_string();
    let mut text = String::new();
    for _ in 0..1 + g.below(5) {
        text.push_str(&g.hostile_str());
        match g.below(4) {
            0 => text.push_str(&secret),
            1 => text.push_str(&format!("Bearer {secret}")),
            2 => text.push_str(&format!("{{\"token\":\"{escaped}\"}}")),
            _ => text.push_str(&secret.repeat(2)),
        }
    }
    case.note("secret", &format!("{secret:?}"));
    case.note("echo", &format!("{text:?}"));
    let out = credential.redact(&text);
    case.check(!out.contains(&secret), "redact-removes-secret", || {
        format!("Credential::redact left the secret {secret:?} in {out:?}")
    });
}
