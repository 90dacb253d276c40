//! Maps field paths (`spec.crds.a.operatorBox.reconcile.remote.timeout`) to YAML line numbers,
//! and splits a file into its YAML documents with the line each starts on.
//!
//! The YAML parser gives a tree without positions, so this reads the block structure of the
//! text once: keys, `- ` items and indentation. Flow collections (`{a: b}`) and anything it
//! does not follow map to the line of the nearest enclosing key, which is where a user looks.

use std::collections::HashMap;

/// Field path → 1-based line number within the file.
#[derive(Debug, Default, Clone)]
pub struct LineIndex {
    lines: HashMap<String, usize>,
}

#[derive(Debug)]
struct Frame {
    col: usize,
    path: String,
    seq: Option<usize>,
}

impl LineIndex {
    /// Indexes one YAML document whose first line is line `first_line` of the file.
    pub fn build(text: &str, first_line: usize) -> LineIndex {
        let mut index = LineIndex::default();
        let mut stack: Vec<Frame> = Vec::new();
        let mut block_scalar_col: Option<usize> = None;
        for (i, raw) in text.lines().enumerate() {
            let line_no = first_line + i;
            let col = raw.len() - raw.trim_start_matches(' ').len();
            let content = raw.trim();
            if let Some(c) = block_scalar_col {
                if content.is_empty() || col > c {
                    continue;
                }
                block_scalar_col = None;
            }
            if content.is_empty() || content.starts_with('#') || content.starts_with("---") {
                continue;
            }
            let mut col = col;
            let mut rest = &raw[col..];
            // Sequence items, possibly with a key on the same line ("- name: x").
            while rest.starts_with("- ") || rest == "-" {
                while stack.last().is_some_and(|f| f.col > col) {
                    stack.pop();
                }
                let item_path = match stack.last_mut() {
                    Some(f) if f.seq.is_some() && f.col == col => {
                        let n = f.seq.map_or(0, |n| n + 1);
                        f.seq = Some(n);
                        format!("{}[{n}]", f.path)
                    }
                    _ => {
                        let parent = stack.last().map(|f| f.path.clone()).unwrap_or_default();
                        stack.push(Frame {
                            col,
                            path: parent.clone(),
                            seq: Some(0),
                        });
                        format!("{parent}[0]")
                    }
                };
                index.lines.entry(item_path.clone()).or_insert(line_no);
                let after = rest[1..].trim_start_matches(' ');
                let item_col = col + (rest.len() - after.len());
                stack.push(Frame {
                    col: col + 1,
                    path: item_path,
                    seq: None,
                });
                col = item_col;
                rest = after;
            }
            let Some((key, value)) = split_key(rest) else {
                continue;
            };
            while stack.last().is_some_and(|f| f.col >= col) {
                stack.pop();
            }
            let parent = stack.last().map(|f| f.path.as_str()).unwrap_or("");
            let path = if parent.is_empty() {
                key.to_string()
            } else {
                format!("{parent}.{key}")
            };
            index.lines.entry(path.clone()).or_insert(line_no);
            let value = strip_comment(value).trim();
            if value.starts_with('|') || value.starts_with('>') {
                block_scalar_col = Some(col);
            } else if value.is_empty() {
                stack.push(Frame {
                    col,
                    path,
                    seq: None,
                });
            }
        }
        index
    }

    /// Whether the document has `path` itself.
    pub fn has(&self, path: &str) -> bool {
        self.lines.contains_key(path)
    }

    /// The line of `path`, or of its nearest ancestor the index knows.
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let mut p = path.to_string();
        loop {
            if let Some(l) = self.lines.get(&p) {
                return Some(*l);
            }
            let cut = p.rfind(['.', '['])?;
            p.truncate(cut);
        }
    }
}

/// Splits `key: value` (the key possibly quoted); `None` when the line is not a mapping entry.
fn split_key(s: &str) -> Option<(&str, &str)> {
    let (key, rest) = if let Some(q) = s.strip_prefix('"').or_else(|| s.strip_prefix('\'')) {
        let quote = s.as_bytes()[0] as char;
        let end = q.find(quote)?;
        (&q[..end], q[end + 1..].trim_start())
    } else {
        if s.starts_with(['{', '[', '#', '&', '*', '!', '|', '>']) {
            return None;
        }
        let colon = s
            .find(": ")
            .or_else(|| s.strip_suffix(':').map(|k| k.len()))?;
        (s[..colon].trim_end(), &s[colon..])
    };
    let value = rest.strip_prefix(':')?;
    Some((key, value))
}

fn strip_comment(v: &str) -> &str {
    match v.find(" #") {
        Some(i) if !v.trim_start().starts_with(['"', '\'']) => &v[..i],
        _ => v,
    }
}

/// Splits on `---` lines; yields each document with the file line it starts on.
pub(crate) fn split_documents(text: &str) -> Vec<(&str, usize)> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut start_line = 1;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_end() == "---" || line.starts_with("--- ") {
            docs.push((&text[start..offset], start_line));
            start = offset + line.len();
            start_line = i + 2;
        }
        offset += line.len();
    }
    docs.push((&text[start..], start_line));
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
spec:
  crds:
    web:
      apiTypes: {group: a.io, version: v1, kind: W, plural: ws}
      operatorBox:
        reconcile:
          remote:
            endpoint: http://x
            script: |
              not: a key
            managedResources:
              - group: apps
                plural: deployments
              - {group: \"\", plural: services}
            timeout: 5s
";

    #[test]
    fn keys_and_sequence_items_have_lines() {
        let idx = LineIndex::build(DOC, 1);
        let r = "spec.crds.web.operatorBox.reconcile.remote";
        assert_eq!(idx.line_of(&format!("{r}.endpoint")), Some(8));
        assert_eq!(
            idx.line_of(&format!("{r}.managedResources[0].plural")),
            Some(13)
        );
        assert_eq!(
            idx.line_of(&format!("{r}.managedResources[1].group")),
            Some(14)
        );
        assert_eq!(idx.line_of(&format!("{r}.timeout")), Some(15));
        assert_eq!(idx.line_of("spec.crds.web.apiTypes.kind"), Some(4));
    }

    #[test]
    fn block_scalars_are_not_read_as_keys() {
        let idx = LineIndex::build(DOC, 1);
        assert_eq!(
            idx.line_of("spec.crds.web.operatorBox.reconcile.remote.script.not"),
            Some(9)
        );
    }

    #[test]
    fn offset_documents_keep_file_lines() {
        let idx = LineIndex::build("spec:\n  crds: {}\n", 10);
        assert_eq!(idx.line_of("spec.crds"), Some(11));
    }
}
