//! Text from a service made safe for status, events, logs and annotations (SPEC §11).

const ELLIPSIS: char = '…';

/// `s` on one line, without control characters, at most `max_chars` characters.
///
/// Newlines, tabs and Unicode line/paragraph separators become spaces; terminal escape
/// sequences (`ESC [ … m` and the like) are removed whole; every other control character
/// (`CR`, `NUL`, `DEL`, C1 controls) and bidirectional overrides are removed. Text longer than
/// `max_chars` is cut on a character boundary and ends with `…` (counted in `max_chars`).
pub fn clean_text(s: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars.saturating_mul(4)));
    let mut count = 0;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let kept = match c {
            '\n' | '\t' | '\u{2028}' | '\u{2029}' => ' ',
            '\u{1b}' => {
                skip_escape_sequence(&mut chars);
                continue;
            }
            c if c.is_control() || is_bidi_control(c) => continue,
            c => c,
        };
        if count == max_chars {
            // One character too many: replace the last kept one with the ellipsis.
            if out.pop().is_some() {
                out.push(ELLIPSIS);
            }
            return out;
        }
        out.push(kept);
        count += 1;
    }
    out
}

/// After an `ESC`: a CSI sequence (`[` parameters, final byte `@`–`~`), an OSC sequence (`]` up
/// to `BEL` or `ESC \`), or a single following character.
fn skip_escape_sequence(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    break;
                }
            }
        }
        Some(_) => {
            chars.next();
        }
        None => {}
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
    }
}
