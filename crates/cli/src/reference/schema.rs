//! A JSON Schema (as `schemars` writes it for ork's types) flattened into one row per field:
//! its dotted path, type, default, bounds and description. The Katalog and protocol pages are
//! these rows, so a field, a default or a doc comment changed in the types changes the page.

use serde_json::Value;

/// One field of a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Dotted from the root: `spec.crds.<entry>.operatorBox.reconcile.workers`; `[]` marks a
    /// list's items, `<key>` a map's values.
    pub path: String,
    pub ty: String,
    pub default: Option<String>,
    pub bounds: Vec<String>,
    pub required: bool,
    pub doc: String,
}

/// Deeper than this the schema is not followed (no type of ork's nests so far).
const MAX_DEPTH: usize = 16;

/// Every field under `node` (a schema with `properties`), depth first in declaration order.
/// The fields of a type in `shared` are not followed: the page lists them once.
pub fn fields(root: &Value, node: &Value, prefix: &str, shared: &[String]) -> Vec<Field> {
    let mut walk = Walk {
        root,
        out: Vec::new(),
        refs: Vec::new(),
        shared,
    };
    walk.below(node, prefix, 0);
    walk.out
}

struct Walk<'a> {
    root: &'a Value,
    out: Vec<Field>,
    /// The `$ref`s being expanded, against cycles.
    refs: Vec<&'a str>,
    shared: &'a [String],
}

/// The object types (`$defs`) used in more than one place: a page lists their fields once.
pub fn shared_types(root: &Value) -> Vec<String> {
    fn count(node: &Value, counts: &mut std::collections::BTreeMap<String, usize>) {
        match node {
            Value::Object(map) => {
                if let Some(name) = map
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    *counts.entry(name.to_string()).or_default() += 1;
                }
                map.values().for_each(|v| count(v, counts));
            }
            Value::Array(items) => items.iter().for_each(|v| count(v, counts)),
            _ => {}
        }
    }
    let mut counts = std::collections::BTreeMap::new();
    count(root, &mut counts);
    counts
        .into_iter()
        .filter(|(name, n)| *n > 1 && root.pointer(&format!("/$defs/{name}/properties")).is_some())
        .map(|(name, _)| name)
        .collect()
}

impl<'a> Walk<'a> {
    /// Follows `node`'s `$ref`, unless that type is being expanded already (a type that
    /// contains itself is named once, not followed).
    fn enter(&mut self, node: &'a Value) -> Option<(&'a Value, bool)> {
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) if self.refs.contains(&r) => None,
            Some(r)
                if r.strip_prefix("#/$defs/")
                    .is_some_and(|name| self.shared.iter().any(|s| s == name)) =>
            {
                None
            }
            Some(r) => {
                self.refs.push(r);
                Some((resolve(self.root, node), true))
            }
            None => Some((node, false)),
        }
    }

    fn leave(&mut self, entered: bool) {
        if entered {
            self.refs.pop();
        }
    }

    /// What a value holds: an object's fields, a list's items, a map's values, and those of
    /// each variant of an `anyOf`/`oneOf`.
    fn below(&mut self, node: &'a Value, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some((node, entered)) = self.enter(node) else {
            return;
        };
        if let Some(properties) = node.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, property) in properties {
                let here = join(path, name);
                if self.out.iter().any(|f| f.path == here) {
                    continue;
                }
                let row = row(
                    self.root,
                    property,
                    here.clone(),
                    required.contains(&name.as_str()),
                );
                self.out.push(row);
                self.below(property, &here, depth + 1);
            }
        }
        if let Some(items) = node.get("items") {
            self.below(items, &format!("{path}[]"), depth + 1);
        }
        if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object()) {
            self.below(values, &format!("{path}.<key>"), depth + 1);
        }
        for variant in variants(self.root, node) {
            self.below(variant, path, depth + 1);
        }
        self.leave(entered);
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// The schema a `$ref` names (followed to the end), or the node itself.
pub fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    let mut node = node;
    for _ in 0..8 {
        let Some(target) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        else {
            break;
        };
        node = target;
    }
    node
}

/// The variants of an `anyOf`/`oneOf`/`allOf`, without the `null` an `Option` adds.
fn variants<'a>(root: &'a Value, node: &'a Value) -> Vec<&'a Value> {
    ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|k| node.get(*k).and_then(Value::as_array))
        .flatten()
        .filter(|v| resolve(root, v).get("type").and_then(Value::as_str) != Some("null"))
        .collect()
}

fn row(root: &Value, property: &Value, path: String, required: bool) -> Field {
    let resolved = resolve(root, property);
    let text = |key: &str| {
        property
            .get(key)
            .or_else(|| resolved.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let doc = text("description").unwrap_or_default();
    let default = property
        .get("default")
        .or_else(|| resolved.get("default"))
        .filter(|d| !d.is_null())
        .map(compact);
    let ty = type_of(root, property, 0);
    let mut bounds = bounds(resolved, property);
    // A duration's pattern is Go's grammar, which its description says in words.
    if ty == "duration" {
        bounds.retain(|b| !b.starts_with("matches "));
    }
    Field {
        path,
        ty,
        default,
        bounds,
        required,
        doc: with_variant_docs(doc, root, resolved),
    }
}

/// A JSON value as a reader writes it in YAML: strings bare unless empty.
fn compact(value: &Value) -> String {
    match value {
        Value::String(s) if s.is_empty() => "\"\"".into(),
        Value::String(s) => s.clone(),
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        other => other.to_string(),
    }
}

/// The accepted values and their meaning, for an enum whose variants are documented.
fn with_variant_docs(doc: String, root: &Value, node: &Value) -> String {
    let documented: Vec<String> = variants(root, node)
        .into_iter()
        .filter_map(|v| {
            let v = resolve(root, v);
            let value = v
                .get("const")
                .or_else(|| v.get("enum").and_then(|e| e.get(0)))?;
            let about = v.get("description").and_then(Value::as_str)?;
            Some(format!("`{}`: {}", compact(value), about))
        })
        .collect();
    match (doc.is_empty(), documented.is_empty()) {
        (_, true) => doc,
        (true, false) => documented.join(" "),
        (false, false) => format!("{doc} {}", documented.join(" ")),
    }
}

/// The type in words: `string`, `list of string`, `map of integer`, `one of a, b`.
pub fn type_of(root: &Value, node: &Value, depth: usize) -> String {
    if depth > 6 {
        return "object".into();
    }
    let name = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next());
    let node = resolve(root, node);
    if let Some(value) = node.get("const") {
        return format!("`{}`", compact(value));
    }
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        return one_of(values.iter().filter(|v| !v.is_null()).map(compact));
    }
    let variants = variants(root, node);
    if !variants.is_empty() && node.get("type").is_none() {
        let consts: Option<Vec<String>> = variants
            .iter()
            .map(|v| {
                let v = resolve(root, v);
                v.get("const")
                    .or_else(|| v.get("enum").and_then(|e| e.get(0)))
                    .map(compact)
            })
            .collect();
        if let Some(consts) = consts {
            return one_of(consts.into_iter());
        }
        let mut words: Vec<String> = Vec::new();
        for v in variants {
            let w = type_of(root, v, depth + 1);
            if !words.contains(&w) {
                words.push(w);
            }
        }
        return words.join(" or ");
    }
    let types: Vec<&str> = match node.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect(),
        _ => Vec::new(),
    };
    let words: Vec<String> = types
        .iter()
        .map(|t| match *t {
            "array" => match node.get("items") {
                Some(items) => format!("list of {}", type_of(root, items, depth + 1)),
                None => "list".into(),
            },
            "object" => match node.get("additionalProperties") {
                Some(v @ Value::Object(_)) if node.get("properties").is_none() => {
                    format!("map of {}", type_of(root, v, depth + 1))
                }
                _ => name.map_or("object".into(), |n| format!("object ({n})")),
            },
            "integer" => "integer".into(),
            "string" if name == Some("Duration") => "duration".into(),
            other => other.to_string(),
        })
        .collect();
    if words.is_empty() {
        return "any".into();
    }
    words.join(" or ")
}

fn one_of(values: impl Iterator<Item = String>) -> String {
    let values: Vec<String> = values.map(|v| format!("`{v}`")).collect();
    format!("one of {}", values.join(", "))
}

/// Minimum, maximum, lengths and pattern, as written in the schema.
fn bounds(node: &Value, property: &Value) -> Vec<String> {
    let get = |k: &str| property.get(k).or_else(|| node.get(k));
    let mut out = Vec::new();
    let number = |v: &Value| v.to_string();
    match (get("minimum"), get("maximum")) {
        (Some(lo), Some(hi)) => out.push(format!("{} to {}", number(lo), number(hi))),
        (Some(lo), None) if lo.as_f64() != Some(0.0) => out.push(format!("≥ {}", number(lo))),
        (None, Some(hi)) => out.push(format!("≤ {}", number(hi))),
        _ => {}
    }
    if let Some(v) = get("exclusiveMinimum") {
        out.push(format!("> {}", number(v)));
    }
    for (key, what) in [
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
        ("minProperties", "at least {} keys"),
        ("maxProperties", "at most {} keys"),
    ] {
        if let Some(v) = get(key) {
            let text = what.replace("{}", &number(v));
            // "at least 1 characters" → "at least 1 character".
            let text = if v.as_u64() == Some(1) {
                text.strip_suffix('s').unwrap_or(&text).to_string()
            } else {
                text
            };
            out.push(text);
        }
    }
    if let Some(p) = get("pattern").and_then(Value::as_str) {
        out.push(format!("matches `{p}`"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_flattens_to_one_row_per_field_with_refs_lists_and_maps_followed() {
        let root = json!({
            "type": "object",
            "required": ["spec"],
            "properties": {
                "spec": {"$ref": "#/$defs/Spec"},
                "mode": {"oneOf": [
                    {"const": "a", "description": "the first"},
                    {"const": "b", "description": "the second"}
                ], "default": "a"}
            },
            "$defs": {
                "Spec": {"type": "object", "properties": {
                    "workers": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 64, "default": 4, "description": "Workers."},
                    "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                    "byName": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Item"}},
                    "next": {"anyOf": [{"$ref": "#/$defs/Spec"}, {"type": "null"}]}
                }},
                "Item": {"type": "object", "properties": {"name": {"type": ["string", "null"]}}}
            }
        });
        let rows = fields(&root, &root, "", &[]);
        let paths: Vec<&str> = rows.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            // Keys in order (the schema is a sorted map), each followed by what it holds.
            [
                "mode",
                "spec",
                "spec.byName",
                "spec.byName.<key>.name",
                "spec.items",
                "spec.items[].name",
                "spec.next",
                "spec.workers",
            ]
        );
        let workers = &rows[7];
        assert_eq!(workers.ty, "integer");
        assert_eq!(workers.default.as_deref(), Some("4"));
        assert_eq!(workers.bounds, ["1 to 64"]);
        assert!(rows[1].required && !rows[7].required);
        assert_eq!(rows[4].ty, "list of object (Item)");
        assert_eq!(rows[2].ty, "map of object (Item)");
        assert_eq!(rows[0].ty, "one of `a`, `b`");
        assert_eq!(rows[0].doc, "`a`: the first `b`: the second");
    }
}
