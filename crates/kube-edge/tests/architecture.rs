//! The crate's files depend on each other one way: no file reaches, directly or through others,
//! back to itself. Read from the sources, so a new circle fails the build's tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`controller::watch`) → file.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
                parts.pop();
            }
            out.insert(parts.join("::"), path);
        }
    }
    out
}

/// The code of a file without its `#[cfg(test)] mod tests` (tests may reach anywhere).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("readable file");
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The modules of the crate a file refers to through `crate::…` and `super::…` paths.
fn references(module: &str, text: &str, known: &BTreeMap<String, PathBuf>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let parent: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    let is_dir_module = known
        .get(module)
        .is_some_and(|p| p.ends_with("mod.rs") || p.ends_with("lib.rs"));
    let mut own = parent.clone();
    if !is_dir_module {
        own.pop();
    }
    let mut up = own.clone();
    up.pop();
    // `super` is the module a file sits in, or for a folder's mod.rs the one above.
    let sup = if is_dir_module { up } else { own.clone() };
    // `crate::x`, `super::x`, and a child module's own name (`watch::f` in controller/mod.rs).
    let children: Vec<(String, Vec<&str>)> = known
        .keys()
        .filter_map(|k| {
            let rest = k.strip_prefix(&own.join("::"))?;
            let rest = if own.is_empty() {
                rest
            } else {
                rest.strip_prefix("::")?
            };
            (!rest.is_empty() && !rest.contains("::")).then(|| {
                let mut base = own.clone();
                base.push(rest);
                (format!("{rest}::"), base)
            })
        })
        .collect();
    let mut prefixes: Vec<(String, Vec<&str>)> = vec![
        ("crate::".to_string(), Vec::new()),
        ("super::".to_string(), sup),
    ];
    if is_dir_module {
        prefixes.extend(children);
    }
    for (prefix, base) in prefixes {
        let prefix = prefix.as_str();
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            // A whole path segment: not `foo_watch::` for `watch::`, not `self::`-less suffixes.
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut segments: Vec<String> = base.iter().map(|s| s.to_string()).collect();
            segments.extend(
                path.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
            // The deepest module the path names.
            while !segments.is_empty() && !known.contains_key(&segments.join("::")) {
                segments.pop();
            }
            let target = segments.join("::");
            if target != module {
                out.insert(target);
            }
        }
    }
    out
}

#[test]
fn no_file_of_the_crate_imports_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let known = modules(&src);
    let graph: BTreeMap<String, BTreeSet<String>> = known
        .iter()
        .map(|(m, p)| (m.clone(), references(m, &code(p), &known)))
        .map(|(m, mut refs)| {
            refs.remove(""); // the crate root only re-exports
            (m, refs)
        })
        .collect();
    let mut circles = Vec::new();
    for start in graph.keys() {
        // Depth-first search for a path back to `start`.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if next == start {
                    circles.push(format!("{} → {start}", path.join(" → ")));
                } else if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    circles.sort();
    circles.dedup();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
