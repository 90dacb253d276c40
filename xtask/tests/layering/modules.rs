//! A crate target's module tree, followed from its root file's `mod` declarations.
//!
//! Following the declarations (not listing the folder) finds what rustc compiles: `#[path]`
//! modules, a `foo.rs` beside its `foo/` folder, and several binaries sharing one `src/`.

use std::path::Path;

use super::lex::{blank, is_ident_byte, without_tests};

/// Reads a source file; `None` if there is none. A closure so the checker's own tests can hand
/// it files kept in memory.
pub type Read<'a> = dyn Fn(&Path) -> Option<String> + 'a;

/// One file of the tree.
#[derive(Debug)]
pub struct Module {
    /// `["template", "funcs"]`; empty for the crate root.
    pub path: Vec<String>,
    /// The code, blanked (see `lex`), without its test items.
    pub code: String,
}

/// Every module of the target whose root file is `root`.
///
/// # Panics
/// If a declared module has no file: the crate would not build either.
pub fn tree(root: &Path, read: &Read) -> Vec<Module> {
    let mut out = Vec::new();
    let mut stack = vec![(Vec::new(), root.to_path_buf(), true)];
    while let Some((path, file, owns_dir)) = stack.pop() {
        let text = read(&file).unwrap_or_else(|| panic!("no file {}", file.display()));
        let code = without_tests(&blank(&text));
        let dir = file.parent().expect("a file has a folder").to_path_buf();
        // A root or `mod.rs` keeps its children beside it; `foo.rs` keeps them in `foo/`.
        let children_dir = if owns_dir {
            dir.clone()
        } else {
            dir.join(file.file_stem().expect("a file has a name"))
        };
        for declared in declarations(&text, &code) {
            let mut child = path.clone();
            child.push(declared.name.clone());
            let (child_file, child_owns_dir) = match declared.path_attr {
                Some(p) => {
                    let f = dir.join(p);
                    let owns = f.file_name().is_some_and(|n| n == "mod.rs");
                    (f, owns)
                }
                None => {
                    let flat = children_dir.join(format!("{}.rs", declared.name));
                    if read(&flat).is_some() {
                        (flat, false)
                    } else {
                        (children_dir.join(&declared.name).join("mod.rs"), true)
                    }
                }
            };
            stack.push((child, child_file, child_owns_dir));
        }
        out.push(Module { path, code });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// A `mod name;` declaration and its `#[path = "…"]`, if any.
struct Declaration {
    name: String,
    path_attr: Option<String>,
}

/// The `mod name;` declarations of a file (`code` blanked, `text` the original for `#[path]`).
fn declarations(text: &str, code: &str) -> Vec<Declaration> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("mod") {
        let at = from + found;
        from = at + 3;
        if at > 0 && is_ident_byte(b[at - 1]) {
            continue;
        }
        let rest = &code[at + 3..];
        let name_len = rest
            .trim_start()
            .bytes()
            .take_while(|&c| is_ident_byte(c))
            .count();
        let skipped = rest.len() - rest.trim_start().len();
        if name_len == 0 || skipped == 0 {
            continue;
        }
        let name = &rest[skipped..skipped + name_len];
        if !rest[skipped + name_len..].trim_start().starts_with(';') {
            continue; // an inline `mod name { … }`: its code stays part of this file's
        }
        // The attributes and visibility before `mod` run back to the previous item's end.
        let start = code[..at].rfind([';', '}', '{']).map_or(0, |i| i + 1);
        out.push(Declaration {
            name: name.to_string(),
            path_attr: path_attr(&text[start..at]),
        });
    }
    out
}

/// The value of a `#[path = "…"]` attribute in `prefix`.
fn path_attr(prefix: &str) -> Option<String> {
    let at = prefix.find("#[path")?;
    let rest = &prefix[at..];
    let open = rest.find('"')? + 1;
    let close = rest[open..].find('"')? + open;
    Some(rest[open..close].to_string())
}
