//! Markdown pieces the reference pages are made of.

/// The first lines of every generated page.
pub const GENERATED: &str = "<!-- Generated from the code by `cargo xtask docs` (`ork reference`); do not edit. A test fails when this page is stale. -->\n\n";

/// A table cell: one line, pipes escaped, and `<`/`>` outside code spans written as entities
/// so that `<nil>` is text, not an HTML tag.
pub fn cell(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '|' => out.push_str("\\|"),
            '<' if !in_code => out.push_str("&lt;"),
            '>' if !in_code => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Code in a cell.
pub fn code(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("`{}`", text.replace('|', "\\|"))
    }
}

/// A table with a header row.
pub fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    if rows.is_empty() {
        return;
    }
    out.push_str(&format!("| {} |\n", header.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out.push('\n');
}
