//! Text from a service made safe for status, events, logs, annotations and error messages
//! (SPEC §11): one line, no control characters, no terminal escapes, short. The one
//! implementation of that rule: `ork-remote` builds its redacted snippets on [`one_line`] and
//! [`truncate`].

const ELLIPSIS: char = '…';

/// Which end of a long text is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// A message or a body starts with what matters.
    Start,
    /// A stderr tail ends with the reason.
    End,
}

/// `text` with every byte but RFC 3986's unreserved characters percent-encoded: a value
/// printed into a URL's path stays one segment (`/` is `%2F`) and cannot start a query (`?`);
/// the form a URL carries a secret in, for redaction.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `s` on one line, without control characters, at most `max_chars` characters: [`one_line`],
/// then [`truncate`] keeping the start.
pub fn clean_text(s: &str, max_chars: usize) -> String {
    // What lies beyond the first `max_chars + 1` kept characters cannot change the result: a
    // large text is not copied whole.
    truncate(
        one_line_up_to(s, max_chars.saturating_add(1)),
        max_chars,
        Keep::Start,
    )
}

/// `text` on one line: line breaks, tabs and runs of other white space become one space (none
/// at either end); terminal escape sequences (`ESC [ … m`, `ESC ] … BEL` and the like) are
/// removed whole; every other control character (`CR`, `NUL`, `DEL`, C1 controls) and every
/// bidirectional-override character (the "trojan source" set) is removed, so a secret split by
/// one comes out joined (and is found by redaction).
pub fn one_line(text: &str) -> String {
    one_line_up_to(text, usize::MAX)
}

/// [`one_line`], stopping once `limit` characters are kept.
fn one_line_up_to(text: &str, limit: usize) -> String {
    let mut out = String::with_capacity(text.len().min(limit.saturating_mul(4)));
    let mut kept = 0;
    let mut chars = text.chars().peekable();
    let mut pending_space = false;
    while kept < limit
        && let Some(c) = chars.next()
    {
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
                    kept += 1;
                }
                pending_space = false;
                out.push(c);
                kept += 1;
            }
        }
    }
    out
}

/// At most `max_chars` characters of `text`, cut on a character boundary; the cut is marked
/// with `…` (counted in `max_chars`) at the end that was cut.
pub fn truncate(text: String, max_chars: usize, keep: Keep) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text;
    }
    let Some(room) = max_chars.checked_sub(1) else {
        return String::new();
    };
    match keep {
        Keep::Start => {
            let mut out: String = text.chars().take(room).collect();
            out.truncate(out.trim_end().len());
            out.push(ELLIPSIS);
            out
        }
        Keep::End => {
            let kept: String = text.chars().skip(count - room).collect();
            format!("{ELLIPSIS}{}", kept.trim_start())
        }
    }
}

/// Skips the rest of an escape sequence, its `ESC` already read: CSI (`[` parameters, final
/// byte `@`–`~`), OSC (`]` up to `BEL` or `ESC \`), or the one character of a two-character
/// escape. An `ESC` inside an OSC string that is not `ESC \` ends the string and starts the
/// next sequence, as terminals read it (a loop, not recursion: hostile text may nest many).
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    loop {
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
                return;
            }
            Some(']') => loop {
                match chars.next() {
                    None | Some('\u{7}') => return,
                    Some('\u{1b}') if chars.next_if_eq(&'\\').is_some() => return,
                    // Another sequence starts.
                    Some('\u{1b}') => break,
                    Some(_) => {}
                }
            },
            _ => return,
        }
    }
}

/// Characters that reorder how text displays (the "trojan source" set).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_puts_text_on_one_line_without_control_characters() {
        assert_eq!(clean_text("a\nb\r\nc\td", 100), "a b c d");
        assert_eq!(clean_text("\u{1b}[31mred\u{1b}[0m done", 100), "red done");
        assert_eq!(
            clean_text("title\u{1b}]0;evil\u{7}ok\u{1b}]8;;x\u{1b}\\link", 100),
            "titleoklink"
        );
        assert_eq!(
            clean_text("nul\0bell\u{7}del\u{7f}c1\u{85}", 100),
            "nulbelldelc1"
        );
        assert_eq!(clean_text("abc\u{202e}fed", 100), "abcfed");
        assert_eq!(clean_text("trailing escape\u{1b}", 100), "trailing escape");
    }

    #[test]
    fn clean_text_truncates_on_a_character_boundary_with_an_ellipsis() {
        assert_eq!(clean_text("hello", 5), "hello");
        assert_eq!(clean_text("hello!", 5), "hell…");
        assert_eq!(clean_text("ééééé-é", 5), "éééé…");
        assert_eq!(clean_text("日本語のテキスト", 3), "日本…");
        assert_eq!(clean_text("a", 1), "a");
        assert_eq!(clean_text("ab", 1), "…");
        assert_eq!(clean_text("abc", 1), "…");
        assert_eq!(clean_text("abc", 0), "");
        assert_eq!(clean_text("", 0), "");
        // Removed characters do not count.
        assert_eq!(clean_text("a\rb\rc", 3), "abc");
        let cut = clean_text(&"x".repeat(500), 200);
        assert_eq!(cut.chars().count(), 200);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn printable_unicode_comes_through_and_mixed_noise_goes() {
        assert_eq!(clean_text("ünïcödé ✓", 100), "ünïcödé ✓");
        assert_eq!(
            clean_text("a\r\nb\tc  d\u{1b}[31mred\u{1b}[0m\u{7}\u{0}e", 100),
            "a b c drede"
        );
    }

    #[test]
    fn white_space_runs_become_one_space_and_none_is_left_at_an_end() {
        assert_eq!(
            one_line("  lead and\u{a0}\u{3000}trail \n"),
            "lead and trail"
        );
        assert_eq!(one_line("a\r\nb\u{b}\u{c}\u{85}c\u{2028}d"), "a b c d");
        assert_eq!(
            one_line("ok\rFAIL"),
            "okFAIL",
            "a carriage return is removed, not a space"
        );
        assert_eq!(clean_text("a    b", 100), "a b");
        assert_eq!(
            clean_text("ab    cd", 4),
            "ab…",
            "no space before the ellipsis"
        );
    }

    #[test]
    fn an_escape_inside_an_osc_string_starts_the_next_sequence() {
        assert_eq!(one_line("a\u{1b}]0;t\u{1b}[31mb"), "ab");
        assert_eq!(one_line("a\u{1b}]0;t\u{1b}\\b"), "ab");
        assert_eq!(one_line("a\u{1b}]0;unterminated"), "a");
        // Nested without end: a loop, not a stack per sequence.
        let nested = "\u{1b}]".repeat(100_000);
        assert_eq!(one_line(&format!("x{nested}")), "x");
    }

    #[test]
    fn a_long_text_is_cut_the_same_as_if_read_whole() {
        for max in [0, 1, 2, 3, 5, 8] {
            for text in [
                "ab cd ef",
                "a    b   c",
                "abc\u{1b}[31mdef ghi",
                " x y z w v ",
            ] {
                assert_eq!(
                    clean_text(text, max),
                    truncate(one_line(text), max, Keep::Start),
                    "{text:?} at {max}"
                );
            }
        }
    }

    #[test]
    fn the_tail_is_kept_when_asked() {
        assert_eq!(truncate("abcdef".into(), 4, Keep::End), "…def");
        assert_eq!(truncate("ab  cdef".into(), 6, Keep::End), "…cdef");
        assert_eq!(truncate("abc".into(), 3, Keep::End), "abc");
        assert_eq!(truncate("abc".into(), 0, Keep::End), "");
    }
}
