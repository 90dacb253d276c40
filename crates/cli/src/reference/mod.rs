//! The book's reference pages (`docs/reference/`), generated from the code so they cannot
//! drift: the Katalog's and the protocol's fields from their JSON Schemas, the template
//! functions from their table, the commands from the argument parser, and the metrics, marks,
//! condition and event reasons from the tables ork writes them from.
//!
//! `ork reference DIR` writes them (`cargo xtask docs` does); `ork reference --check DIR` and
//! the test below fail when a page differs from what the code says now.

#[cfg(test)]
mod book;
mod cli_page;
mod katalog_page;
mod markdown;
mod observability_page;
mod protocol_page;
mod schema;
mod templates_page;

use std::path::Path;
use std::process::ExitCode;

/// One generated page: its file name under `docs/reference/` and its text.
pub struct Page {
    pub file: &'static str,
    pub text: String,
}

/// Every reference page, as the code says now.
pub fn pages() -> Vec<Page> {
    vec![
        Page {
            file: "katalog.md",
            text: katalog_page::page(),
        },
        Page {
            file: "protocol.md",
            text: protocol_page::page(),
        },
        Page {
            file: "templates.md",
            text: templates_page::page(),
        },
        Page {
            file: "cli.md",
            text: cli_page::page(),
        },
        Page {
            file: "observability.md",
            text: observability_page::page(),
        },
    ]
}

/// The pages under `dir` that differ from [`pages`] (missing ones included).
pub fn stale(dir: &Path) -> Vec<&'static str> {
    pages()
        .into_iter()
        .filter(|p| std::fs::read_to_string(dir.join(p.file)).ok().as_deref() != Some(&p.text))
        .map(|p| p.file)
        .collect()
}

/// `ork reference [--check] DIR`.
pub fn run(dir: &Path, check: bool) -> ExitCode {
    if check {
        let stale = stale(dir);
        if stale.is_empty() {
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "ork reference: {} differ from the code: {}\n    hint: run `cargo xtask docs` and commit the pages",
            if stale.len() == 1 {
                "this page"
            } else {
                "these pages"
            },
            stale.join(", ")
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("ork reference: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    for page in pages() {
        let path = dir.join(page.file);
        if let Err(e) = std::fs::write(&path, page.text) {
            eprintln!("ork reference: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    fn reference_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference")
    }

    /// Every field the reference lists says what it is: its own doc comment, or its type's.
    /// A condition's operators are documented together on the Katalog page's `Condition`.
    #[test]
    fn every_field_of_the_katalog_the_request_and_the_answer_has_a_description() {
        let mut undocumented = Vec::new();
        for (name, schema) in [
            ("katalog", schemars::schema_for!(ork_katalog::Katalog)),
            ("request", schemars::schema_for!(ork_protocol::Request)),
            ("response", schemars::schema_for!(ork_protocol::Response)),
        ] {
            let schema = schema.to_value();
            let shared = super::schema::shared_types(&schema);
            let mut fields = super::schema::fields(&schema, &schema, "", &shared);
            for ty in shared.iter().filter(|t| *t != "Condition") {
                if let Some(def) = schema.pointer(&format!("/$defs/{ty}")) {
                    fields.extend(super::schema::fields(&schema, def, ty, &shared));
                }
            }
            undocumented.extend(
                fields
                    .into_iter()
                    .filter(|f| f.doc.is_empty() && !f.path.starts_with("resources[]"))
                    .map(|f| format!("{name}: {}", f.path)),
            );
        }
        assert!(
            undocumented.is_empty(),
            "fields without a description: {undocumented:#?}"
        );
    }

    /// Changing a Katalog default, a template function, a flag, a metric or a reason without
    /// regenerating the pages fails here.
    #[test]
    fn the_reference_pages_say_what_the_code_says() {
        let stale = super::stale(&reference_dir());
        assert!(
            stale.is_empty(),
            "stale reference pages: {stale:?}; run `cargo xtask docs` and commit docs/reference"
        );
    }
}
