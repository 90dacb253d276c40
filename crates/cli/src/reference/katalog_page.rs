//! `katalog.md`: every Katalog field from the Katalog's JSON Schema, with how Orkestra reads
//! it, and the Orkestra fields ork refuses.

use std::fmt::Write;

use ork_katalog::orkestra::{self, Orkestra};
use serde_json::Value;

use super::markdown::{cell, code, table};
use super::schema::{Field, fields, shared_types};

/// Where an entry's fields start.
const ENTRY: &str = "spec.crds.<key>.";

pub fn page() -> String {
    let schema =
        serde_json::to_value(schemars::schema_for!(ork_katalog::Katalog)).unwrap_or(Value::Null);
    let shared = shared_types(&schema);
    let rows = fields(&schema, &schema, "", &shared);
    let mut out = String::from("# Katalog fields\n\n");
    out.push_str(super::markdown::GENERATED);
    out.push_str(
        "A Katalog (`apiVersion: orkestra.orkspace.io/v1`, `kind: Katalog`) names the custom \
         resources ork reconciles and, for each, the service that decides. `ork validate` checks \
         a file against these fields and names the file, line and field of every problem; \
         `ork schema katalog` prints the JSON Schema this page is made from.\n\n\
         The **Orkestra** column says how a field relates to Orkestra's Katalog: *same* (read as \
         Orkestra reads it), *differs* (read, with the difference named), *ork* (an ork \
         addition Orkestra does not have). Fields Orkestra has and ork refuses are listed at the \
         end. `[]` stands for a list's items, `<key>` for a map's keys.\n\n",
    );
    let (top, entry): (Vec<&Field>, Vec<&Field>) = rows
        .iter()
        .filter(|f| f.path != "spec.crds")
        .partition(|f| !f.path.starts_with(ENTRY));
    out.push_str("## The file\n\n");
    section(&mut out, &top, "", &shared);
    out.push_str(
        "## An entry: `spec.crds.<key>`\n\nEach key of `spec.crds` is an entry: one custom \
         resource type and its reconciler. Paths below are relative to the entry, and within \
         a block to the block its heading names.\n\n",
    );
    let mut groups: Vec<(String, Vec<&Field>)> = Vec::new();
    for f in entry {
        let relative = &f.path[ENTRY.len()..];
        let group = group_of(relative);
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, members)) => members.push(f),
            None => groups.push((group, vec![f])),
        }
    }
    for (group, members) in &groups {
        if group.is_empty() {
            out.push_str("### The entry itself\n\n");
        } else {
            let _ = writeln!(out, "### `{group}`\n");
        }
        let strip = if group.is_empty() {
            ENTRY.to_string()
        } else {
            format!("{ENTRY}{group}.")
        };
        section(&mut out, members, &strip, &shared);
    }
    if !shared.is_empty() {
        out.push_str(
            "## Types used in several places\n\nTheir fields are the same wherever they appear; \
             paths are relative to the type.\n\n",
        );
    }
    for name in &shared {
        let Some(def) = schema.pointer(&format!("/$defs/{name}")) else {
            continue;
        };
        let _ = writeln!(out, "### {name}\n");
        if let Some(doc) = def.get("description").and_then(Value::as_str) {
            let _ = writeln!(out, "{}\n", doc.trim());
        }
        let members = fields(&schema, def, name, &shared);
        let members: Vec<&Field> = members.iter().collect();
        section(&mut out, &members, &format!("{name}."), &shared);
    }
    out.push_str(
        "## Orkestra fields ork refuses\n\n`ork validate` fails on each of these wherever it \
         appears, with what to do instead; nothing is ignored silently.\n\n",
    );
    let refused: Vec<Vec<String>> = ork_katalog::REFUSED_FIELDS
        .iter()
        .map(|(name, why)| vec![code(name), cell(why)])
        .collect();
    table(
        &mut out,
        &["Field", "Why, and what to do instead"],
        &refused,
    );
    out
}

/// The subsection a field relative to the entry belongs to: the operator box's blocks (down
/// to `operatorBox.reconcile.remote.auth`), the first segment for other blocks, none for the
/// entry's own fields.
fn group_of(relative: &str) -> String {
    let segments: Vec<&str> = relative.split('.').collect();
    match segments.as_slice() {
        // `remote` and `queue` are blocks of their own, and so are remote's nested blocks.
        ["operatorBox", "reconcile", "remote", block, _, ..] => {
            format!("operatorBox.reconcile.remote.{block}")
        }
        [
            "operatorBox",
            "reconcile",
            block @ ("remote" | "queue"),
            _,
            ..,
        ] => {
            format!("operatorBox.reconcile.{block}")
        }
        ["operatorBox", block, _, ..] => format!("operatorBox.{block}"),
        [block, _, ..] => (*block).to_string(),
        _ => String::new(),
    }
}

/// `object (Condition)` → a link to the type's section, for a type listed once.
fn linked(ty: &str, shared: &[String]) -> String {
    let mut out = ty.to_string();
    for name in shared {
        out = out.replace(
            &format!("object ({name})"),
            &format!("[{name}](#{})", name.to_lowercase()),
        );
    }
    out
}

fn section(out: &mut String, members: &[&Field], strip: &str, shared: &[String]) {
    let rows: Vec<Vec<String>> = members
        .iter()
        .map(|f| {
            // A block's own row keeps its name.
            let relative = match f.path.strip_prefix(strip) {
                Some(r) if !r.is_empty() => r,
                _ => f.path.strip_prefix(ENTRY).unwrap_or(&f.path),
            };
            let mut ty = linked(&cell(&f.ty), shared);
            if f.required {
                ty.push_str(", required");
            }
            for b in &f.bounds {
                let _ = write!(ty, "; {}", cell(b));
            }
            // Shared types are looked up as `Type.field`.
            let key = f.path.strip_prefix(ENTRY).unwrap_or(&f.path);
            let (status, note) = match orkestra::status(key, !strip.is_empty()) {
                Orkestra::Same => ("same".to_string(), ""),
                Orkestra::Differs(note) => ("differs".to_string(), note),
                Orkestra::Ork => ("ork".to_string(), ""),
            };
            let mut doc = cell(&f.doc);
            if !note.is_empty() {
                if !doc.is_empty() {
                    doc.push(' ');
                }
                let _ = write!(doc, "*Unlike Orkestra:* {}", cell(note));
            }
            vec![
                code(relative),
                ty,
                // An object's default is its fields' defaults, shown on their rows.
                f.default
                    .as_deref()
                    .filter(|d| !d.starts_with('{') || *d == "{}")
                    .map(code)
                    .unwrap_or_default(),
                status,
                doc,
            ]
        })
        .collect();
    table(
        out,
        &["Field", "Type", "Default", "Orkestra", "Description"],
        &rows,
    );
}
