//! Go `text/template` over JSON, as Orkestra's resolver evaluates Katalog templates: fields,
//! variables, pipelines, `if`/`with`/`range`, Go's built-in functions and Orkestra's notes.
//!
//! Missing keys render as empty text (Go's `missingkey=zero` with `<no value>` stripped) and a
//! rendered template is trimmed of surrounding whitespace, so a Katalog written for Orkestra
//! renders the same here. What a template sees is a [`RenderContext`]: the object's fields at
//! the top level, the runtime [`Facts`] under `.ork`, the Katalog's [`Notes`] and the event's
//! sentinels as functions.

mod context;
mod eval;
mod funcs;
mod parse;
mod pick;
mod print;
mod value;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

pub(crate) use context::SharedNotes;
pub use context::{Facts, Notes, RenderContext};
pub use funcs::{NAMES as BUILTIN_FUNCTIONS, truthy};
pub use parse::MAX_DEPTH;
pub use print::text as print_value;

pub(crate) use funcs::{type_name, unsupported_reason};

/// A parsed template and its source. Templates loaded from a Katalog carry the Katalog's notes.
#[derive(Clone)]
pub struct Template {
    source: String,
    nodes: Arc<Vec<parse::Node>>,
    notes: Option<SharedNotes>,
}

/// Why a template failed to parse or render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

/// True when `s` holds template actions (Orkestra's test: it contains `{{`).
pub fn is_template(s: &str) -> bool {
    s.contains("{{")
}

/// Orkestra trims a rendered template of surrounding whitespace (not a literal value).
pub(crate) fn trim_result(s: &str) -> &str {
    s.trim()
}

impl Template {
    /// Parses a template (syntax only: function names are resolved when it renders, and
    /// checked by Katalog validation against the built-ins, notes and sentinels).
    ///
    /// # Errors
    /// Unbalanced `{{ }}` or parentheses, a block without `end`, a stray `else`/`end`,
    /// nesting deeper than [`MAX_DEPTH`], an unsupported action (`define`, `template`).
    pub fn parse(source: &str) -> Result<Template, TemplateError> {
        let nodes = parse::parse(source)?;
        Ok(Template {
            source: source.to_string(),
            nodes: Arc::new(nodes),
            notes: None,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// True when the source has no actions: it renders to itself.
    pub fn is_literal(&self) -> bool {
        !is_template(&self.source)
    }

    /// The names of the functions the template calls, sorted and unique.
    pub fn functions(&self) -> Vec<String> {
        let mut out = Vec::new();
        parse::called_functions(&self.nodes, &mut out);
        out.sort();
        out.dedup();
        out
    }

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
            return Ok(self.source.clone());
        }
        let cells = eval::Cells::default();
        let mut eval = eval::Eval::new(ctx, self.notes.as_deref(), &cells);
        let out = eval.render(&self.nodes)?;
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
            self.source.clone()
        } else {
            let cells = eval::Cells::default();
            let mut eval = eval::Eval::new(ctx, self.notes.as_deref(), &cells).for_url();
            trim_result(&eval.render(&self.nodes)?).to_string()
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

    /// The notes this template was loaded with, if any.
    pub fn notes(&self) -> Option<&Notes> {
        self.notes.as_deref()
    }

    /// Binds `notes` so that [`Template::render`] resolves them.
    pub fn with_notes(mut self, notes: Arc<Notes>) -> Template {
        self.notes = Some(notes);
        self
    }

    pub(crate) fn bind(&mut self, notes: &SharedNotes) {
        self.notes = Some(notes.clone());
    }

    pub(crate) fn nodes(&self) -> &[parse::Node] {
        &self.nodes
    }
}

impl PartialEq for Template {
    fn eq(&self, other: &Template) -> bool {
        self.source == other.source
    }
}

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Template({:?})", self.source)
    }
}

impl schemars::JsonSchema for Template {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Template".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "Text with Go template actions over the CR, e.g. \"{{ .metadata.name }}-svc\"; `.ork.inCluster`, `.ork.namespace`, `.ork.version`, Go's built-in functions, Orkestra's notes and the Katalog's notes.functions are available.",
        })
    }
}

impl<'de> Deserialize<'de> for Template {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Template::parse(&s).map_err(|e| serde::de::Error::custom(format!("invalid template: {e}")))
    }
}

impl Serialize for Template {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
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
