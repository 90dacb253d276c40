//! A document tree that can say what `serde_json::Value` cannot — repeated keys, number text
//! kept as written, verbatim (broken) syntax, YAML anchors — and writers for JSON and YAML.
//! The YAML writer picks block or flow style, plain or quoted scalars and block literals at
//! random, so the same tree reaches the parser in many spellings.

use std::fmt::Write as _;

use crate::generate::Gen;

/// A JSON/YAML document as generated.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    /// A number as written (`1e400`, `-0`, `18446744073709551616`).
    Num(String),
    Str(String),
    Arr(Vec<Node>),
    /// Entries in order; a key may repeat.
    Obj(Vec<(String, Node)>),
    /// Written verbatim: aliases (`*a`), tags, broken syntax.
    Raw(String),
    /// YAML: `&name` before the node. JSON: the node.
    Anchor(String, Box<Node>),
}

impl Node {
    pub fn str(s: impl Into<String>) -> Node {
        Node::Str(s.into())
    }

    pub fn int(n: i64) -> Node {
        Node::Num(n.to_string())
    }

    pub fn obj<K: Into<String>>(entries: impl IntoIterator<Item = (K, Node)>) -> Node {
        Node::Obj(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// The last value of `key` in an object.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match self {
            Node::Obj(entries) => entries
                .iter_mut()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v),
            Node::Anchor(_, inner) => inner.get_mut(key),
            _ => None,
        }
    }

    /// Sets `key` (replacing the last one with that name, else appending).
    pub fn set(&mut self, key: &str, value: Node) {
        if let Some(slot) = self.get_mut(key) {
            *slot = value;
        } else if let Node::Obj(entries) = self {
            entries.push((key.to_string(), value));
        }
    }

    /// Every node of the tree, as paths of child positions, for picking one to mutate.
    pub fn paths(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut path = Vec::new();
        collect_paths(self, &mut path, &mut out);
        out
    }

    /// The node at a path from [`Node::paths`].
    pub fn at_mut(&mut self, path: &[usize]) -> Option<&mut Node> {
        let mut node = self;
        for &i in path {
            node = match node {
                Node::Arr(items) => items.get_mut(i)?,
                Node::Obj(entries) => &mut entries.get_mut(i)?.1,
                Node::Anchor(_, inner) if i == 0 => inner,
                _ => return None,
            };
        }
        Some(node)
    }

    /// Drops every repeated key (the first one stays), at every depth.
    pub fn dedupe_keys(&mut self) {
        match self {
            Node::Obj(entries) => {
                let mut seen = std::collections::BTreeSet::new();
                entries.retain(|(k, _)| seen.insert(k.clone()));
                entries.iter_mut().for_each(|(_, v)| v.dedupe_keys());
            }
            Node::Arr(items) => items.iter_mut().for_each(Node::dedupe_keys),
            Node::Anchor(_, inner) => inner.dedupe_keys(),
            _ => {}
        }
    }

    /// How deep the tree nests (a scalar is 0).
    pub fn depth(&self) -> usize {
        match self {
            Node::Arr(items) => 1 + items.iter().map(Node::depth).max().unwrap_or(0),
            Node::Obj(entries) => 1 + entries.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
            Node::Anchor(_, inner) => inner.depth(),
            _ => 0,
        }
    }

    /// Compact JSON; repeated keys stay repeated, `Raw` goes in verbatim.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Node::Null => out.push_str("null"),
            Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Node::Num(n) | Node::Raw(n) => out.push_str(n),
            Node::Str(s) => json_string(s, out),
            Node::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_json(out);
                }
                out.push(']');
            }
            Node::Obj(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json_string(k, out);
                    out.push(':');
                    v.write_json(out);
                }
                out.push('}');
            }
            Node::Anchor(_, inner) => inner.write_json(out),
        }
    }

    /// `serde_json::Value` of the tree (the last of repeated keys wins; `Raw` and bad numbers
    /// become strings), for handing a generated CR to code that takes a `Value`.
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Num(n) => serde_json::from_str::<Value>(n)
                .ok()
                .filter(Value::is_number)
                .unwrap_or_else(|| Value::String(n.clone())),
            Node::Str(s) | Node::Raw(s) => Value::String(s.clone()),
            Node::Arr(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Obj(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
            Node::Anchor(_, inner) => inner.to_value(),
        }
    }

    /// The tree of a `serde_json::Value`.
    pub fn from_value(v: &serde_json::Value) -> Node {
        use serde_json::Value;
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Num(n.to_string()),
            Value::String(s) => Node::Str(s.clone()),
            Value::Array(items) => Node::Arr(items.iter().map(Node::from_value).collect()),
            Value::Object(m) => Node::Obj(
                m.iter()
                    .map(|(k, v)| (k.clone(), Node::from_value(v)))
                    .collect(),
            ),
        }
    }
}

fn collect_paths(node: &Node, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(path.clone());
    match node {
        Node::Arr(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i);
                collect_paths(item, path, out);
                path.pop();
            }
        }
        Node::Obj(entries) => {
            for (i, (_, v)) in entries.iter().enumerate() {
                path.push(i);
                collect_paths(v, path, out);
                path.pop();
            }
        }
        Node::Anchor(_, inner) => {
            path.push(0);
            collect_paths(inner, path, out);
            path.pop();
        }
        _ => {}
    }
}

/// A JSON string literal of `s` (every character serde_json would escape, escaped).
pub fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// YAML text of `node`, in randomly chosen styles.
pub fn to_yaml(node: &Node, g: &mut Gen) -> String {
    let mut out = String::new();
    match node {
        Node::Obj(e) if !e.is_empty() => block(node, 0, g, &mut out),
        Node::Arr(a) if !a.is_empty() => block(node, 0, g, &mut out),
        other => {
            out.push_str(&flow(other, g));
            out.push('\n');
        }
    }
    out
}

fn pad(indent: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A non-empty mapping or sequence in block style, each entry on its own line at `indent`.
fn block(node: &Node, indent: usize, g: &mut Gen, out: &mut String) {
    match node {
        Node::Obj(entries) => {
            for (k, v) in entries {
                pad(indent, out);
                out.push_str(&scalar(k, g, true));
                out.push(':');
                after_indicator(v, indent, g, out);
            }
        }
        Node::Arr(items) => {
            for v in items {
                pad(indent, out);
                out.push('-');
                after_indicator(v, indent, g, out);
            }
        }
        Node::Anchor(_, inner) => block(inner, indent, g, out),
        other => {
            pad(indent, out);
            out.push_str(&flow(other, g));
            out.push('\n');
        }
    }
}

/// The value after `key:` or `-`: inline, a block literal, or a nested block.
fn after_indicator(v: &Node, indent: usize, g: &mut Gen, out: &mut String) {
    match v {
        Node::Anchor(name, inner) => {
            out.push_str(" &");
            out.push_str(name);
            after_indicator(inner, indent, g, out);
        }
        Node::Obj(e) if !e.is_empty() && !g.one_in(5) => {
            out.push('\n');
            block(v, indent + 2, g, out);
        }
        Node::Arr(a) if !a.is_empty() && !g.one_in(5) => {
            out.push('\n');
            block(v, indent + 2, g, out);
        }
        Node::Str(s) if literal_ok(s) && g.one_in(3) => {
            out.push_str(" |-\n");
            for line in s.split('\n') {
                if !line.is_empty() {
                    pad(indent + 2, out);
                    out.push_str(line);
                }
                out.push('\n');
            }
        }
        Node::Null if g.one_in(3) => out.push('\n'),
        other => {
            out.push(' ');
            out.push_str(&flow(other, g));
            out.push('\n');
        }
    }
}

/// Whether `s` can be written as a `|-` block literal and read back unchanged.
fn literal_ok(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\t', '\n'])
        && !s.ends_with(['\n', ' ', '\t'])
        && !s.split('\n').any(|l| l.ends_with([' ', '\t']))
        && s.chars().all(|c| c == '\n' || !needs_escape(c))
}

/// A node in flow style (one line).
fn flow(node: &Node, g: &mut Gen) -> String {
    match node {
        Node::Null => (*g.pick(&["null", "~", "null"])).to_string(),
        Node::Bool(b) => b.to_string(),
        Node::Num(n) | Node::Raw(n) => n.clone(),
        Node::Str(s) => scalar(s, g, true),
        Node::Arr(items) => {
            let parts: Vec<String> = items.iter().map(|i| flow(i, g)).collect();
            format!("[{}]", parts.join(", "))
        }
        Node::Obj(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(k, g, true), flow(v, g)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Node::Anchor(name, inner) => format!("&{name} {}", flow(inner, g)),
    }
}

/// A string scalar: plain when that reads back as the same string, else single or double
/// quoted.
fn scalar(s: &str, g: &mut Gen, in_flow: bool) -> String {
    if plain_ok(s, in_flow) && !g.one_in(4) {
        return s.to_string();
    }
    if !s.chars().any(needs_escape) && !s.contains('\n') && g.one_in(3) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Characters a YAML scalar must escape (or that a careful writer escapes).
fn needs_escape(c: char) -> bool {
    let n = u32::from(c);
    n < 0x20 || (0x7f..=0x9f).contains(&n) || matches!(n, 0x2028 | 0x2029 | 0xfeff)
}

/// Conservative: letters, digits and `_./-`, starting with a letter or `_`, and no word YAML
/// reads as something other than a string.
fn plain_ok(s: &str, _in_flow: bool) -> bool {
    const SPECIAL: &[&str] = &[
        "true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf",
    ];
    let Some(first) = s.chars().next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'))
        && !SPECIAL.contains(&s.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::Profile;

    #[test]
    fn json_keeps_repeated_keys_and_number_text() {
        let n = Node::obj([
            ("a", Node::Num("1e400".into())),
            ("a", Node::str("x\"\n\u{1}")),
        ]);
        assert_eq!(n.to_json(), r#"{"a":1e400,"a":"x\"\n\u0001"}"#);
    }

    #[test]
    fn yaml_of_a_tree_reads_back_as_the_same_json() {
        for seed in 0..200 {
            let mut g = Gen::new(seed, Profile::Full, false);
            let tree = Node::obj([
                ("name", Node::str(g.hostile_str())),
                (
                    "list",
                    Node::Arr(vec![
                        Node::str("a b"),
                        Node::int(-3),
                        Node::Bool(true),
                        Node::Null,
                        Node::obj([("k", Node::str("line1\nline2"))]),
                    ]),
                ),
                ("empty", Node::Obj(Vec::new())),
                ("s", Node::str("{{ .spec.x }}: #")),
            ]);
            let yaml = to_yaml(&tree, &mut g);
            let read: serde_json::Value = serde_saphyr::from_str(&yaml)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{yaml}"));
            assert_eq!(read, tree.to_value(), "seed {seed}:\n{yaml}");
        }
    }
}
