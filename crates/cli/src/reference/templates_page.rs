//! `templates.md`: every template function, from the table the evaluator dispatches on.

use std::fmt::Write;

use super::markdown::{cell, code, table};

pub fn page() -> String {
    let mut out = String::from("# Template functions\n\n");
    out.push_str(super::markdown::GENERATED);
    out.push_str(
        "Templated Katalog fields (the endpoint, `args`, labels and annotations, `observe.cross` \
         selectors, gate and validation values…) are Go templates: `{{ .spec.replicas }}`, \
         `{{ .metadata.name | upper }}`. Besides Go's own built-ins, ork provides the pure \
         functions Orkestra registers as notes, and a Katalog may define its own under \
         `notes.functions`. Arguments are converted leniently: a missing value is the zero \
         value where Go would stop with a type error. In a pipeline the piped value is the \
         last argument, as in Go: `{{ .metadata.name | upper }}`. Functions that take their \
         subject first, as Go's `strings` functions do (`trimPrefix S PREFIX`), are called \
         with it first: `{{ trimPrefix .metadata.name \"app-\" }}`.\n\n",
    );
    let mut families: Vec<(&str, Vec<Vec<String>>)> = Vec::new();
    for f in ork_katalog::template::functions() {
        let signature = if f.args.is_empty() {
            f.name.to_string()
        } else {
            format!("{} {}", f.name, f.args)
        };
        let row = vec![code(f.name), code(&signature), cell(f.doc)];
        match families.iter_mut().find(|(family, _)| *family == f.family) {
            Some((_, rows)) => rows.push(row),
            None => families.push((f.family, vec![row])),
        }
    }
    for (family, rows) in &families {
        let _ = writeln!(out, "## {}\n", capitalised(family));
        table(&mut out, &["Function", "Call", "What it does"], rows);
    }
    out.push_str(
        "## Orkestra notes ork does not provide\n\nTemplates are deterministic and pure in ork: \
         a call to one of these fails `ork validate` with the reason below.\n\n",
    );
    let refused: Vec<Vec<String>> = ork_katalog::template::unsupported_families()
        .iter()
        .map(|(prefix, why)| vec![format!("`{prefix}…`"), cell(why)])
        .collect();
    table(&mut out, &["Functions named", "Why"], &refused);
    out
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
