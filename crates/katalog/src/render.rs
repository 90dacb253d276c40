//! Rendering at run time: the Katalog's templates over one CR (labels and annotations, the
//! endpoint URL, `args`), with the Katalog's notes. The model only describes; this renders.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::model::{CrdEntry, Remote};
use crate::template::{RenderContext, Template, TemplateError, is_template};

/// Rendered `labels` and `annotations` of one CR.
pub type RenderedMetadata = (BTreeMap<String, String>, BTreeMap<String, String>);

impl CrdEntry {
    /// Renders `labels` and `annotations` for a CR; keys whose value renders empty are left out.
    ///
    /// # Errors
    /// The key and error of the first template that fails.
    pub fn render_metadata(&self, cr: &Value) -> Result<RenderedMetadata, String> {
        let ctx = self.render_context(cr);
        let render = |map: &BTreeMap<String, Template>| {
            map.iter()
                .map(|(k, t)| {
                    t.render_in(&ctx)
                        .map(|v| (k.clone(), v))
                        .map_err(|e| format!("{k}: {e}"))
                })
                .filter(|r| r.as_ref().map_or(true, |(_, v)| !v.is_empty()))
                .collect::<Result<BTreeMap<_, _>, _>>()
        };
        Ok((render(&self.labels)?, render(&self.annotations)?))
    }

    /// A render context over `data` with this entry's notes.
    pub fn render_context<'a>(&'a self, data: &'a Value) -> RenderContext<'a> {
        let ctx = RenderContext::new(data);
        match self.notes() {
            Some(n) => ctx.with_notes(n),
            None => ctx,
        }
    }
}

impl Remote {
    /// The endpoint for one CR (templates rendered with the Katalog's notes).
    ///
    /// # Errors
    /// No endpoint (an exec transport), or a template that fails.
    pub fn render_endpoint(&self, data: &Value) -> Result<String, TemplateError> {
        let endpoint = self
            .endpoint
            .as_ref()
            .ok_or_else(|| TemplateError("the remote block has no endpoint".into()))?;
        endpoint.render_url_in(&self.render_context(data))
    }

    /// `args` for one CR, as Orkestra sends them: string values with templates are rendered
    /// and the result coerced to its JSON type (`"5"` → 5, `"true"` → true, JSON text → the
    /// value); other values pass through.
    ///
    /// # Errors
    /// The key and error of the first template that fails.
    pub fn render_args(&self, data: &Value) -> Result<Map<String, Value>, String> {
        let ctx = self.render_context(data);
        let mut out = Map::new();
        for (key, value) in &self.args {
            let v = match value {
                Value::String(s) if is_template(s) => {
                    let rendered = Template::parse(s)
                        .and_then(|t| t.render_in(&ctx))
                        .map_err(|e| format!("args.{key}: {e}"))?;
                    coerce(rendered)
                }
                other => other.clone(),
            };
            out.insert(key.clone(), v);
        }
        Ok(out)
    }

    /// A render context over `data` with the Katalog's notes.
    pub fn render_context<'a>(&'a self, data: &'a Value) -> RenderContext<'a> {
        let ctx = RenderContext::new(data);
        match self.notes.as_deref() {
            Some(n) => ctx.with_notes(n),
            None => ctx,
        }
    }
}

fn coerce(text: String) -> Value {
    match text.as_str() {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ (Value::Number(_) | Value::Object(_) | Value::Array(_))) => v,
        _ => Value::String(text),
    }
}
