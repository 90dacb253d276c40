//! Source text made safe to search: comments and literal contents blanked, test items removed.
//!
//! Blanking keeps every byte offset (a blanked byte becomes a space, a newline stays), so an
//! offset found in the blanked text still points at the same place in the original.

/// `text` with comments and the insides of string and char literals replaced by spaces.
pub fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        let end = match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => line_comment_end(b, i),
            b'/' if b.get(i + 1) == Some(&b'*') => block_comment_end(b, i),
            b'"' => string_end(b, i + 1),
            b'r' if !ident_byte_before(b, i) || raw_prefix_is_byte(b, i) => match raw_end(b, i) {
                Some(end) => end,
                None => {
                    i += 1;
                    continue;
                }
            },
            b'\'' => match char_end(text, i) {
                Some(end) => end,
                None => {
                    i += 1; // a lifetime or label
                    continue;
                }
            },
            _ => {
                i += 1;
                continue;
            }
        };
        for byte in &mut out[i..end] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
        i = end;
    }
    // Only whole runs between ASCII delimiters were blanked, so no character was cut in two.
    String::from_utf8(out).expect("blanking replaces whole characters")
}

/// `code` (already blanked) without the items marked `#[cfg(test)]`: tests may reach anywhere.
pub fn without_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(found) = code[from..].find("#[cfg(test)]") {
        let start = from + found;
        let end = item_end(code.as_bytes(), start + "#[cfg(test)]".len());
        blank_range(&mut out, start, end);
        from = end;
    }
    String::from_utf8(out).expect("blanking replaces whole characters")
}

/// Replaces `out[from..to]` by spaces, keeping newlines.
pub fn blank_range(out: &mut [u8], from: usize, to: usize) {
    for byte in &mut out[from..to] {
        if *byte != b'\n' {
            *byte = b' ';
        }
    }
}

/// Whether `b` is part of an identifier.
pub fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The end of the item that starts after an attribute at `i`: its `;`, or its closing brace.
fn item_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => return i + 1,
            b'{' if depth == 0 => return matching_brace(b, i),
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// The offset after the `}` closing the `{` at `open`.
fn matching_brace(b: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, &byte) in b.iter().enumerate().skip(open) {
        match byte {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

fn ident_byte_before(b: &[u8], i: usize) -> bool {
    i > 0 && is_ident_byte(b[i - 1])
}

/// `br"…"`: the `r` follows a `b` that starts a token.
fn raw_prefix_is_byte(b: &[u8], i: usize) -> bool {
    i > 0 && b[i - 1] == b'b' && !ident_byte_before(b, i - 1)
}

fn line_comment_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |n| i + n)
}

/// Block comments nest in Rust.
fn block_comment_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The offset after the closing quote of a string whose contents start at `i`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// `r"…"` or `r#"…"#` starting at the `r` at `i`, if it is one.
fn raw_end(b: &[u8], i: usize) -> Option<usize> {
    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
    let quote = i + 1 + hashes;
    if b.get(quote) != Some(&b'"') {
        return None;
    }
    let mut closing = vec![b'"'];
    closing.extend(std::iter::repeat_n(b'#', hashes));
    let body = quote + 1;
    let end = b[body..]
        .windows(closing.len())
        .position(|w| w == closing.as_slice())
        .map_or(b.len(), |n| body + n + closing.len());
    Some(end)
}

/// A char literal starting at the quote at `i` (`'a'`, `'\n'`, `'→'`), or `None` for a lifetime.
fn char_end(text: &str, i: usize) -> Option<usize> {
    let rest = &text[i + 1..];
    let mut chars = rest.char_indices();
    let (_, first) = chars.next()?;
    if first == '\\' {
        return rest.find('\'').map(|n| {
            // `'\''`: the escaped quote is the character, the next one closes it.
            let n = if n == 1 {
                2 + rest[2..].find('\'').unwrap_or(0)
            } else {
                n
            };
            i + 1 + n + 1
        });
    }
    let (after, _) = chars.next()?;
    (rest[after..].starts_with('\'')).then_some(i + 1 + after + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_strings_are_blanked_and_offsets_kept() {
        let text = "use a; // crate::x\nlet s = \"crate::y\"; /* crate::z /* nested */ */ crate::w";
        let blanked = blank(text);
        assert_eq!(blanked.len(), text.len());
        assert!(!blanked.contains("crate::x"));
        assert!(!blanked.contains("crate::y"));
        assert!(!blanked.contains("crate::z"));
        assert!(blanked.ends_with("crate::w"));
    }

    #[test]
    fn raw_strings_chars_and_lifetimes_are_told_apart() {
        let text = "fn f<'a>(x: &'a str) { let q = '\"'; let r = r#\"crate::\"q\"#; crate::v }";
        let blanked = blank(text);
        assert!(!blanked.contains("crate::\"q"));
        assert!(blanked.contains("crate::v"));
        assert!(blanked.contains("&'a str"));
    }

    #[test]
    fn test_items_are_removed_wherever_they_are() {
        let code = "use crate::a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod more { crate::b }\nfn f() {}";
        let kept = without_tests(code);
        assert!(kept.contains("crate::a"));
        assert!(!kept.contains("crate::b"));
        assert!(!kept.contains("mod tests"));
        assert!(kept.contains("fn f() {}"));
    }
}
