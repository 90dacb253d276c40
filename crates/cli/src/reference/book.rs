//! The book's own checks (`docs/`, and the README): every link resolves, and every snippet is
//! what it claims to be — a Katalog passes `ork validate`'s checks, an answer passes the
//! whole-answer check, a request reads as one, a command exists with the flags it is shown
//! with, a script parses. Run by the suite; `cargo xtask docs` builds the book itself.

use std::path::{Path, PathBuf};

/// One fenced code block.
#[derive(Debug)]
pub struct Snippet {
    pub file: PathBuf,
    /// The line of the opening fence, from 1.
    pub line: usize,
    /// The fence's info string split at commas: `yaml,fragment` → `["yaml", "fragment"]`.
    pub info: Vec<String>,
    pub text: String,
}

/// The fenced code blocks of a markdown text.
pub fn snippets(file: &Path, markdown: &str) -> Vec<Snippet> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, Vec<String>, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let indent = line.len() - trimmed.len();
                    let info = info
                        .split([',', ' '])
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect();
                    open = Some((i + 1, " ".repeat(indent), info, String::new()));
                }
            }
            Some((start, indent, info, text)) => {
                if trimmed.starts_with("```") {
                    out.push(Snippet {
                        file: file.to_path_buf(),
                        line: *start,
                        info: std::mem::take(info),
                        text: std::mem::take(text),
                    });
                    open = None;
                } else {
                    text.push_str(line.strip_prefix(indent.as_str()).unwrap_or(line));
                    text.push('\n');
                }
            }
        }
    }
    out
}

/// The text of markdown outside code blocks and inline code, for link and heading scans.
fn prose(markdown: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            let mut inline = false;
            for c in line.chars() {
                if c == '`' {
                    inline = !inline;
                } else if !inline {
                    out.push(c);
                }
            }
        }
        out.push('\n');
    }
    out
}

/// mdBook's anchor of a heading: lowercase, whitespace to `-`, only alphanumerics, `-`, `_`.
pub fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The anchors of a page's headings, repeats numbered as mdBook numbers them.
pub fn anchors(markdown: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let text = heading.trim_start_matches('#').trim();
        // Inline markup is not part of the anchor: `code`, *emphasis*, [links](..).
        let text = strip_links(text).replace(['`', '*'], "");
        let base = slug(&text);
        let mut id = base.clone();
        let mut n = 1;
        while out.contains(&id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        out.push(id);
    }
    out
}

/// `[text](target)` → `text`.
fn strip_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| {
            after[close + 2..]
                .find(')')
                .map(|end| (close, close + 2 + end))
        }) {
            Some((close, end)) => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every `[text](target)` and `[text]: target` link target of a page.
pub fn links(markdown: &str) -> Vec<String> {
    let text = prose(markdown);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find([')', ' ', '\n']).unwrap_or(after.len());
        out.push(after[..end].to_string());
        rest = &after[end..];
    }
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with('[')
            && let Some((_, target)) = line.split_once("]: ")
        {
            out.push(target.split_whitespace().next().unwrap_or("").to_string());
        }
    }
    out
}

/// The link problems of the page `file` (its text `markdown`): a target that does not exist,
/// an anchor no heading has.
pub fn broken_links(file: &Path, markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    for target in links(markdown) {
        if target.is_empty()
            || target.contains("://")
            || target.starts_with("mailto:")
            || target.starts_with('<')
        {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() {
            file.to_path_buf()
        } else {
            file.parent().unwrap_or(Path::new(".")).join(path)
        };
        if !resolved.exists() {
            out.push(format!(
                "{}: link to {target}: no such file",
                file.display()
            ));
            continue;
        }
        if let Some(anchor) = anchor
            && resolved.extension().is_some_and(|e| e == "md")
        {
            let page = std::fs::read_to_string(&resolved).unwrap_or_default();
            if !anchors(&page).iter().any(|a| a == anchor) {
                out.push(format!(
                    "{}: link to {target}: {} has no heading #{anchor}",
                    file.display(),
                    resolved.display()
                ));
            }
        }
    }
    out
}

/// The commands of a shell snippet: continuation lines joined, comments dropped, split at
/// `&&`, `||`, `;` and `|`; for a `console` transcript only the `$ ` lines.
pub fn commands(text: &str, transcript: bool) -> Vec<Vec<String>> {
    let mut lines: Vec<String> = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let line = if transcript {
            match line.strip_prefix("$ ") {
                Some(command) => command,
                None if !pending.is_empty() => line,
                None => continue,
            }
        } else {
            line
        };
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        lines.push(std::mem::take(&mut pending));
    }
    let mut out = Vec::new();
    for line in lines {
        let mut words: Vec<String> = Vec::new();
        let mut word = String::new();
        let mut quote: Option<char> = None;
        let mut chars = line.chars().peekable();
        let mut has_word = false;
        // The word after a redirection (`> file`, `2>&1` aside) is a file, not an argument.
        let mut target = false;
        let flush =
            |word: &mut String, has_word: &mut bool, words: &mut Vec<String>, target: &mut bool| {
                if *has_word {
                    let w = std::mem::take(word);
                    if !std::mem::take(target) {
                        words.push(w);
                    }
                    *has_word = false;
                }
            };
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => word.push(c),
                (None, '\'' | '"') => {
                    quote = Some(c);
                    has_word = true;
                }
                (None, '#') if !has_word => break,
                (None, c) if c.is_whitespace() => {
                    flush(&mut word, &mut has_word, &mut words, &mut target);
                }
                (None, '>' | '<') => {
                    // `2>`: the digit is the redirection's, not a word.
                    if word.chars().all(|c| c.is_ascii_digit()) {
                        word.clear();
                        has_word = false;
                    }
                    flush(&mut word, &mut has_word, &mut words, &mut target);
                    while matches!(chars.peek(), Some('>')) {
                        chars.next();
                    }
                    if chars.peek() == Some(&'&') {
                        // `>&1`: onto another descriptor, no file.
                        chars.next();
                        while matches!(chars.peek(), Some(c) if c.is_ascii_digit()) {
                            chars.next();
                        }
                    } else {
                        target = true;
                    }
                }
                (None, ';' | '|' | '&') => {
                    flush(&mut word, &mut has_word, &mut words, &mut target);
                    if matches!(chars.peek(), Some('|' | '&')) {
                        chars.next();
                    }
                    if !words.is_empty() {
                        out.push(std::mem::take(&mut words));
                    }
                }
                (None, c) => {
                    word.push(c);
                    has_word = true;
                }
            }
        }
        flush(&mut word, &mut has_word, &mut words, &mut target);
        if !words.is_empty() {
            out.push(words);
        }
    }
    out
}

/// Every markdown page the checks cover: `docs/**/*.md` and the README.
pub fn pages(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md")];
    let mut stack = vec![root.join("docs")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .canonicalize()
            .expect("the workspace root")
    }

    fn all_snippets() -> Vec<Snippet> {
        pages(&root())
            .iter()
            .flat_map(|p| snippets(p, &std::fs::read_to_string(p).unwrap_or_default()))
            .collect()
    }

    fn at(s: &Snippet) -> String {
        format!("{}:{}", s.file.display(), s.line)
    }

    #[test]
    fn every_link_of_the_book_resolves() {
        let mut broken = Vec::new();
        for page in pages(&root()) {
            let text = std::fs::read_to_string(&page).unwrap_or_default();
            broken.extend(broken_links(&page, &text));
        }
        assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    }

    #[test]
    fn every_page_of_the_book_is_in_its_table_of_contents() {
        let docs = root().join("docs");
        let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).expect("docs/SUMMARY.md");
        let listed = links(&summary);
        let missing: Vec<String> = pages(&root())
            .into_iter()
            .filter_map(|p| {
                let relative = p.strip_prefix(&docs).ok()?.to_string_lossy().into_owned();
                (relative != "SUMMARY.md"
                    && !relative.starts_with("design/")
                    && !listed.contains(&relative))
                .then_some(relative)
            })
            .collect();
        assert!(
            missing.is_empty(),
            "pages not in docs/SUMMARY.md: {missing:?}"
        );
    }

    #[test]
    fn every_yaml_snippet_parses_and_every_katalog_in_the_book_is_valid() {
        let mut problems = Vec::new();
        for s in all_snippets()
            .iter()
            .filter(|s| s.info.first().is_some_and(|l| l == "yaml"))
        {
            for doc in s.text.split("\n---\n") {
                if doc.trim().is_empty() || doc.trim() == "---" {
                    continue;
                }
                let value: serde_json::Value = match serde_saphyr::from_str(doc) {
                    Ok(v) => v,
                    Err(e) => {
                        problems.push(format!("{}: not YAML: {e}", at(s)));
                        continue;
                    }
                };
                if value.get("kind").and_then(|k| k.as_str()) == Some("Katalog") {
                    // Paths in a book Katalog are relative to the repository root, or to the
                    // folder its fence names (`yaml,dir=examples/webapp`) for a Katalog shown
                    // as a file next to others.
                    let dir = s
                        .info
                        .iter()
                        .find_map(|i| i.strip_prefix("dir="))
                        .map_or_else(root, |d| root().join(d));
                    let file = dir.join(format!("book-snippet-{}.yaml", s.line));
                    if let Err(e) = ork_katalog::load_str(doc, &file) {
                        problems.push(format!("{}: invalid Katalog: {e}", at(s)));
                    }
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn every_json_snippet_parses_and_every_answer_passes_the_whole_answer_check() {
        let mut problems = Vec::new();
        for s in all_snippets()
            .iter()
            .filter(|s| s.info.first().is_some_and(|l| l == "json"))
        {
            let value: serde_json::Value = match serde_json::from_str(&s.text) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("{}: not JSON: {e}", at(s)));
                    continue;
                }
            };
            match s.info.get(1).map(String::as_str) {
                Some("answer") => {
                    if let Err(e) = ork_protocol::decide(s.text.as_bytes(), &book_policy()) {
                        problems.push(format!("{}: the answer is refused: {e}", at(s)));
                    }
                }
                Some("request") => {
                    if let Err(e) = serde_json::from_value::<ork_protocol::Request>(value) {
                        problems.push(format!("{}: not a request: {e}", at(s)));
                    }
                }
                _ => {}
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    /// What a book answer may create: the intent types' objects, for a `WebApp` in `default`.
    fn book_policy() -> ork_protocol::Policy {
        use ork_protocol::ManagedType;
        let managed = [
            ("apps", "Deployment", "deployments"),
            ("apps", "StatefulSet", "statefulsets"),
            ("", "Service", "services"),
            ("", "ConfigMap", "configmaps"),
            ("", "Secret", "secrets"),
            ("", "ServiceAccount", "serviceaccounts"),
            ("networking.k8s.io", "Ingress", "ingresses"),
            ("batch", "Job", "jobs"),
            ("batch", "CronJob", "cronjobs"),
        ]
        .iter()
        .map(|(g, k, p)| ManagedType::namespaced(g, k, p, "v1", &["v1"]))
        .collect();
        ork_protocol::Policy::new(
            ork_protocol::OwnerRef {
                api_version: "demo.ork.dev/v1".into(),
                kind: "WebApp".into(),
                name: "hello".into(),
                namespace: Some("default".into()),
            },
            managed,
            "ork-system",
        )
    }

    #[test]
    fn every_command_in_the_book_exists_with_the_flags_it_is_shown_with() {
        let xtask = std::fs::read_to_string(root().join("xtask/src/main.rs")).expect("xtask");
        let mut problems = Vec::new();
        for s in all_snippets() {
            let transcript = match s.info.first().map(String::as_str) {
                Some("sh" | "bash" | "shell") => false,
                Some("console") => true,
                _ => continue,
            };
            for words in commands(&s.text, transcript) {
                let words: Vec<&str> = words
                    .iter()
                    .map(String::as_str)
                    .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                    .collect();
                match words.as_slice() {
                    ["ork", ..] => {
                        if let Err(e) = crate::commands::command().try_get_matches_from(&words) {
                            use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
                            if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                                let first = e.to_string();
                                let first = first.lines().next().unwrap_or_default();
                                problems.push(format!(
                                    "{}: `{}`: {first}",
                                    at(&s),
                                    words.join(" ")
                                ));
                            }
                        }
                    }
                    ["cargo", "xtask", command, ..]
                        if !xtask.contains(&format!("[\"{command}\"")) =>
                    {
                        problems.push(format!("{}: no xtask command {command}", at(&s)));
                    }
                    _ => {}
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn every_script_and_python_snippet_in_the_book_parses() {
        let dir = std::env::temp_dir().join(format!("ork-book-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut problems = Vec::new();
        for (i, s) in all_snippets().iter().enumerate() {
            let (file, command): (PathBuf, Vec<&str>) = match s.info.first().map(String::as_str) {
                Some("sh" | "bash") => (dir.join(format!("{i}.sh")), vec!["bash", "-n"]),
                Some("python") => (
                    dir.join(format!("{i}.py")),
                    vec!["python3", "-m", "py_compile"],
                ),
                _ => continue,
            };
            std::fs::write(&file, &s.text).expect("write snippet");
            let out = std::process::Command::new(command[0])
                .args(&command[1..])
                .arg(&file)
                .output();
            match out {
                Ok(o) if o.status.success() => {}
                Ok(o) => problems.push(format!(
                    "{}: {}",
                    at(s),
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => problems.push(format!("{}: {}: {e}", at(s), command[0])),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn the_checks_read_markdown_as_mdbook_does() {
        let page = "# Ork `run`, again\n\n## Ork run again\n\nSee [the loop](concepts/loop.md#what-triggers-a-reconcile) and `[not](a link)`.\n\n```sh\nork validate -k k.yaml && cargo xtask docs # build\n```\n";
        assert_eq!(anchors(page), ["ork-run-again", "ork-run-again-1"]);
        assert_eq!(links(page), ["concepts/loop.md#what-triggers-a-reconcile"]);
        let s = snippets(Path::new("p.md"), page);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].line, 7);
        assert_eq!(
            commands(&s[0].text, false),
            [
                vec!["ork", "validate", "-k", "k.yaml"],
                vec!["cargo", "xtask", "docs"]
            ]
        );
        assert_eq!(
            commands(
                "$ ork explain webapp/hello \\\n  --json\nReady: True\n",
                true
            ),
            [vec!["ork", "explain", "webapp/hello", "--json"]]
        );
        assert_eq!(
            commands(
                "ork diff --json > d.json 2>&1; ork check 2> err.txt\n",
                false
            ),
            [vec!["ork", "diff", "--json"], vec!["ork", "check"]]
        );
    }
}
