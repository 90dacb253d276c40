//! A parsed template and the Katalog's notes bound to it. Notes are templates themselves, so the
//! two types hold each other and live together; rendering is in `eval` (and `Template`'s render
//! methods in the module root).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::TemplateError;
use super::parse::{self, uses_variable};

/// A parsed template and its source. Templates loaded from a Katalog carry the Katalog's notes.
#[derive(Clone)]
pub struct Template {
    source: String,
    nodes: Arc<Vec<parse::Node>>,
    notes: Option<SharedNotes>,
}

/// True when `s` holds template actions (Orkestra's test: it contains `{{`).
pub fn is_template(s: &str) -> bool {
    s.contains("{{")
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

    /// The field chains the template reads from the data it renders over (`{{ .spec.team }}`
    /// and `{{ $.spec.team }}` read `["spec", "team"]`), sorted and unique. Chains inside
    /// `with` and `range` bodies, where `.` is something else, are left out.
    pub fn fields(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        parse::root_fields(&self.nodes, true, &mut out);
        out.sort();
        out.dedup();
        out
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

/// One user note (`notes.functions[]`) compiled: a template evaluated against the same data
/// as the template that calls it.
#[derive(Clone, Debug)]
pub(crate) struct Note {
    pub template: Template,
    /// Whether it reads `$args` (the list of its arguments, made only for notes that do).
    pub uses_args: bool,
}

/// The Katalog's note functions, callable by name (without arguments) in every template.
#[derive(Clone, Debug, Default)]
pub struct Notes {
    notes: BTreeMap<String, Note>,
}

impl Notes {
    /// Compiles `(name, expression)` pairs. The expressions may call each other and the
    /// built-in functions; calls are resolved when a template renders.
    ///
    /// # Errors
    /// The index and error of every expression that does not parse.
    pub fn compile<'a>(
        defs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Notes, Vec<(usize, TemplateError)>> {
        let mut notes = BTreeMap::new();
        let mut errors = Vec::new();
        for (i, (name, expression)) in defs.into_iter().enumerate() {
            match Template::parse(expression) {
                Ok(template) => {
                    let uses_args = uses_variable(template.nodes(), "$args");
                    notes.insert(
                        name.to_string(),
                        Note {
                            template,
                            uses_args,
                        },
                    );
                }
                Err(e) => errors.push((i, e)),
            }
        }
        if errors.is_empty() {
            Ok(Notes { notes })
        } else {
            Err(errors)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.notes.is_empty()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.notes.contains_key(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.notes.keys().map(String::as_str)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Note> {
        self.notes.get(name)
    }
}

/// Shared ownership of a Katalog's notes, bound into the templates loaded with it.
pub(crate) type SharedNotes = Arc<Notes>;
