//! The paths a module's code names: its `use` trees, paths in its code, the items it defines.
//!
//! Works on blanked code (see `lex`), so nothing in a comment or a string counts.

use super::lex::{blank_range, is_ident_byte};

/// One leaf of a `use` tree: `use crate::{a::X as Y, b::{self, *}}` has three.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseLeaf {
    /// The segments as written (`crate`, `super`, `self` included).
    pub path: Vec<String>,
    /// The name it binds: the last segment, its `as` name, or `None` for a glob or `as _`.
    pub name: Option<String>,
    pub glob: bool,
}

/// The `use` declarations of `code`, and `code` with them blanked so the paths left are the
/// ones in types and expressions.
pub fn uses(code: &str) -> (Vec<UseLeaf>, String) {
    let b = code.as_bytes();
    let mut rest = b.to_vec();
    let mut leaves = Vec::new();
    for at in words(code, "use") {
        let end = code[at..].find(';').map_or(code.len(), |n| at + n + 1);
        let tokens = tokens(&code[at + 3..end - 1]);
        let mut i = 0;
        tree(&tokens, &mut i, &[], &mut leaves);
        blank_range(&mut rest, at, end);
    }
    (
        leaves,
        String::from_utf8(rest).expect("blanking keeps characters"),
    )
}

/// Every path in `code` whose first segment is one of `starts`: `crate::x::f()`, `super::T`,
/// `watch::run`. Each is the list of its segments up to the first that is not a name.
pub fn mentions(code: &str, starts: &dyn Fn(&str) -> bool) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident_byte(b[i]) || (i > 0 && (is_ident_byte(b[i - 1]) || b[i - 1] == b'$')) {
            i += 1;
            continue;
        }
        let word_end = i + b[i..].iter().take_while(|&&c| is_ident_byte(c)).count();
        let first = &code[i..word_end];
        let after_colons = after_path_separator(b, word_end);
        // `::x` after a path is a segment of it; after a word it begins a path only at a start.
        let preceded_by_colons = i >= 2 && &b[i - 2..i] == b"::";
        if preceded_by_colons || after_colons.is_none() || !starts(first) {
            i = word_end;
            continue;
        }
        let mut path = vec![first.to_string()];
        let mut j = word_end;
        while let Some(next) = after_path_separator(b, j) {
            let len = b[next..].iter().take_while(|&&c| is_ident_byte(c)).count();
            if len == 0 {
                break;
            }
            path.push(code[next..next + len].to_string());
            j = next + len;
        }
        out.push(path);
        i = j.max(word_end);
    }
    out
}

/// The names of the items `code` defines at its top level or in blocks: `struct X`, `fn f`…
pub fn definitions(code: &str) -> Vec<String> {
    const KINDS: [&str; 9] = [
        "struct",
        "enum",
        "fn",
        "trait",
        "type",
        "const",
        "static",
        "union",
        "macro_rules!",
    ];
    let mut out = Vec::new();
    for kind in KINDS {
        for at in words(code, kind) {
            let rest = code[at + kind.len()..].trim_start();
            let name: String = rest
                .chars()
                .take_while(|&c| c.is_alphanumeric() || c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// The offsets where `word` stands as a whole word (not inside a longer name).
fn words<'a>(code: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let b = code.as_bytes();
    code.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| {
            let end = at + word.len();
            let before_ok = at == 0 || !(is_ident_byte(b[at - 1]) || b[at - 1] == b'$');
            let after_ok = end >= b.len() || !is_ident_byte(b[end]) || word.ends_with('!');
            before_ok && after_ok
        })
}

/// The offset after `::` (and any space around it) at `i`, if there is one.
fn after_path_separator(b: &[u8], i: usize) -> Option<usize> {
    let skip = |k: usize| {
        k + b[k..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count()
    };
    let k = skip(i);
    (b.get(k..k + 2) == Some(b"::".as_slice())).then(|| skip(k + 2))
}

#[derive(Debug, PartialEq)]
enum Token {
    Name(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
    As,
}

fn tokens(text: &str) -> Vec<Token> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b':' if b.get(i + 1) == Some(&b':') => {
                out.push(Token::Colons);
                i += 2;
                continue;
            }
            b'{' => out.push(Token::Open),
            b'}' => out.push(Token::Close),
            b',' => out.push(Token::Comma),
            b'*' => out.push(Token::Star),
            c if is_ident_byte(c) => {
                let len = b[i..].iter().take_while(|&&c| is_ident_byte(c)).count();
                let word = text[i..i + len].trim_start_matches("r#");
                out.push(if word == "as" {
                    Token::As
                } else {
                    Token::Name(word.to_string())
                });
                i += len;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Parses one use tree at `tokens[*i..]` under `prefix`, adding its leaves to `out`.
fn tree(tokens: &[Token], i: &mut usize, prefix: &[String], out: &mut Vec<UseLeaf>) {
    let mut path = prefix.to_vec();
    if tokens.get(*i) == Some(&Token::Colons) {
        *i += 1; // `::std::x`: a leading `::` names another crate
        path.push("::".to_string());
    }
    loop {
        match tokens.get(*i) {
            Some(Token::Name(name)) => {
                path.push(name.clone());
                *i += 1;
                if tokens.get(*i) == Some(&Token::Colons) {
                    *i += 1;
                    continue;
                }
                let mut name = if name == "self" {
                    path.pop();
                    path.last().cloned()
                } else {
                    Some(name.clone())
                };
                if tokens.get(*i) == Some(&Token::As) {
                    name = match tokens.get(*i + 1) {
                        Some(Token::Name(alias)) if alias != "_" => Some(alias.clone()),
                        _ => None,
                    };
                    *i += 2;
                }
                out.push(UseLeaf {
                    path,
                    name,
                    glob: false,
                });
                return;
            }
            Some(Token::Star) => {
                *i += 1;
                out.push(UseLeaf {
                    path,
                    name: None,
                    glob: true,
                });
                return;
            }
            Some(Token::Open) => {
                *i += 1;
                while !matches!(tokens.get(*i), None | Some(Token::Close)) {
                    tree(tokens, i, &path, out);
                    if tokens.get(*i) == Some(&Token::Comma) {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(path: &[&str], name: Option<&str>, glob: bool) -> UseLeaf {
        UseLeaf {
            path: path.iter().map(|s| s.to_string()).collect(),
            name: name.map(str::to_string),
            glob,
        }
    }

    #[test]
    fn use_groups_self_aliases_and_globs_become_leaves() {
        let code = "pub(crate) use crate::{a::X as Y, b::{self, *}};\nuse super::super::c;";
        let (leaves, rest) = uses(code);
        assert_eq!(
            leaves,
            vec![
                leaf(&["crate", "a", "X"], Some("Y"), false),
                leaf(&["crate", "b"], Some("b"), false),
                leaf(&["crate", "b"], None, true),
                leaf(&["super", "super", "c"], Some("c"), false),
            ]
        );
        assert!(!rest.contains("::"), "{rest}");
    }

    #[test]
    fn paths_in_expressions_are_found_from_their_start() {
        let code =
            "let v = crate::x::f(); super::super::y::T::new(); serde_json::json!(); a.b::<T>()";
        let found = mentions(code, &|w| matches!(w, "crate" | "super" | "json"));
        assert_eq!(
            found,
            vec![
                vec!["crate", "x", "f"],
                vec!["super", "super", "y", "T", "new"],
            ]
        );
    }
}
