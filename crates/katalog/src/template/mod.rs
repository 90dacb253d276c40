//! Go `text/template` over JSON, as Orkestra's resolver evaluates Katalog templates: fields,
//! variables, pipelines, `if`/`with`/`range`, Go's built-in functions and Orkestra's notes.
//!
//! Missing keys render as empty text (Go's `missingkey=zero` with `<no value>` stripped) and a
//! rendered template is trimmed of surrounding whitespace, so a Katalog written for Orkestra
//! renders the same here. What a template sees is a [`RenderContext`]: the object's fields at
//! the top level, the runtime [`Facts`] under `.ork`, the Katalog's [`Notes`] and the event's
//! sentinels as functions.

mod args;
mod compiled;
mod context;
mod error;
mod eval;
mod funcs;
mod parse;
mod pick;
mod print;
mod value;

use serde_json::Value;

pub use args::truthy;
pub(crate) use compiled::SharedNotes;
pub use compiled::{Notes, Template, is_template};
pub use context::{Facts, RenderContext};
pub use error::TemplateError;
pub use funcs::NAMES as BUILTIN_FUNCTIONS;
pub use funcs::{FunctionDoc, functions, unsupported_families};
pub use parse::MAX_DEPTH;
pub use print::text as print_value;

pub(crate) use args::type_name;
pub(crate) use funcs::unsupported_reason;

use eval::trim_result;

/// Rendering: the evaluator over a [`RenderContext`].
impl Template {
    /// Renders over `data` (usually the CR as JSON) with the process [`Facts`] and the notes
    /// of the Katalog this template was loaded from.
    ///
    /// # Errors
    /// A function that fails (e.g. `div` by zero), an undefined function or variable, or a
    /// render over its step or output budget.
    pub fn render(&self, data: &Value) -> Result<String, TemplateError> {
        self.render_in(&RenderContext::new(data))
    }

    /// Renders in `ctx`; the context's notes (if any) replace the bound ones.
    ///
    /// # Errors
    /// As [`Template::render`].
    pub fn render_in(&self, ctx: &RenderContext<'_>) -> Result<String, TemplateError> {
        if self.is_literal() {
            return Ok(self.source().to_string());
        }
        let cells = eval::Cells::default();
        let mut eval = eval::Eval::new(ctx, self.notes(), &cells);
        let out = eval.render(self.nodes())?;
        Ok(trim_result(&out).to_string())
    }

    /// Renders a URL (an endpoint) in `ctx`: what an action prints into the path, query or
    /// fragment is percent-encoded, so a CR's value stays one path segment; a path that then
    /// holds a dot-segment (`.`, `..`, also encoded as `%2e`) is refused (SPEC §11).
    ///
    /// # Errors
    /// As [`Template::render`], and a dot-segment in the rendered path.
    pub fn render_url_in(&self, ctx: &RenderContext<'_>) -> Result<String, TemplateError> {
        let url = if self.is_literal() {
            self.source().to_string()
        } else {
            let cells = eval::Cells::default();
            let mut eval = eval::Eval::new(ctx, self.notes(), &cells).for_url();
            trim_result(&eval.render(self.nodes())?).to_string()
        };
        refuse_dot_segments(&url)?;
        Ok(url)
    }

    /// [`Template::render_url_in`] over `data`.
    ///
    /// # Errors
    /// As [`Template::render_url_in`].
    pub fn render_url(&self, data: &Value) -> Result<String, TemplateError> {
        self.render_url_in(&RenderContext::new(data))
    }
}

#[cfg(test)]
mod tests;

/// Refuses a URL whose path has a `.` or `..` segment, written plainly or percent-encoded.
fn refuse_dot_segments(url: &str) -> Result<(), TemplateError> {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return Ok(());
    };
    let rest = &url[start..];
    let Some(path_start) = rest.find('/') else {
        return Ok(());
    };
    let path = &rest[path_start..];
    let path = &path[..path.find(['?', '#']).unwrap_or(path.len())];
    for segment in path.split('/') {
        let decoded = segment.replace("%2e", ".").replace("%2E", ".");
        if decoded == "." || decoded == ".." {
            return Err(TemplateError(format!(
                "the endpoint renders to a path with the dot-segment \"{segment}\", which could reach another path on the host: refused"
            )));
        }
    }
    Ok(())
}
