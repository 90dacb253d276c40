//! The fields each intent type takes, as one table that drives both the reader (what `decide`
//! accepts) and the JSON Schema (what `ork schema response` publishes).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The JSON a field takes. Numbers are accepted for text and numeric strings for integers, as
/// ork always has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldKind {
    Text,
    Integer,
    Flag,
    /// An object of strings (numbers and booleans are written as strings).
    TextMap,
    /// A list of strings, or one string.
    TextList,
    /// Any object, passed through.
    Object,
}

#[derive(Debug)]
pub(crate) struct FieldSpec {
    pub name: &'static str,
    pub kind: FieldKind,
    pub required: bool,
}

/// One intent type: its name on the wire, the Kubernetes type it builds (empty for `custom`,
/// which names its own) and its fields.
#[derive(Debug)]
pub(crate) struct IntentType {
    pub name: &'static str,
    pub group: &'static str,
    pub kind: &'static str,
    pub fields: &'static [FieldSpec],
}

const fn field(name: &'static str, kind: FieldKind) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        required: false,
    }
}

const fn required(name: &'static str, kind: FieldKind) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        required: true,
    }
}

use FieldKind::{Flag, Integer, Object, Text, TextList, TextMap};

const NAME: FieldSpec = required("name", Text);
const LABELS: FieldSpec = field("labels", TextMap);
const ANNOTATIONS: FieldSpec = field("annotations", TextMap);
const FORCE_CONFLICT: FieldSpec = field("forceConflict", Flag);

/// Every intent type, in the order of SPEC §2.2. The fields are Orkestra's, plus three ork
/// additions: deployment `args`, service `selector` (merged with `orkestra-owner`) and custom
/// `data`; and `forceConflict` everywhere.
pub(crate) const TYPES: &[IntentType] = &[
    IntentType {
        name: "deployment",
        group: "apps",
        kind: "Deployment",
        fields: &[
            NAME,
            required("image", Text),
            field("replicas", Integer),
            field("port", Integer),
            field("env", TextMap),
            field("command", TextList),
            field("args", TextList),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
    IntentType {
        name: "service",
        group: "",
        kind: "Service",
        fields: &[
            NAME,
            required("port", Integer),
            field("targetPort", Integer),
            field("type", Text),
            field("selector", TextMap),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
    IntentType {
        name: "configmap",
        group: "",
        kind: "ConfigMap",
        fields: &[
            NAME,
            field("data", TextMap),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
    IntentType {
        name: "secret",
        group: "",
        kind: "Secret",
        fields: &[
            NAME,
            field("data", TextMap),
            field("stringData", TextMap),
            field("secretType", Text),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
    IntentType {
        name: "serviceaccount",
        group: "",
        kind: "ServiceAccount",
        fields: &[NAME, LABELS, ANNOTATIONS, FORCE_CONFLICT],
    },
    IntentType {
        name: "ingress",
        group: "networking.k8s.io",
        kind: "Ingress",
        fields: &[
            NAME,
            field("host", Text),
            required("serviceName", Text),
            field("servicePort", Integer),
            field("path", Text),
            field("pathType", Text),
            field("ingressClass", Text),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
    IntentType {
        name: "statefulset",
        group: "apps",
        kind: "StatefulSet",
        fields: &[
            NAME,
            required("image", Text),
            field("replicas", Integer),
            field("port", Integer),
            field("serviceName", Text),
            field("env", TextMap),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
    IntentType {
        name: "job",
        group: "batch",
        kind: "Job",
        fields: &[
            NAME,
            required("image", Text),
            field("command", TextList),
            field("args", TextList),
            field("backoffLimit", Integer),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
    IntentType {
        name: "cronjob",
        group: "batch",
        kind: "CronJob",
        fields: &[
            NAME,
            required("image", Text),
            required("schedule", Text),
            field("command", TextList),
            field("args", TextList),
            field("concurrencyPolicy", Text),
            field("suspend", Flag),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
    IntentType {
        name: "custom",
        group: "",
        kind: "",
        fields: &[
            required("apiVersion", Text),
            required("kind", Text),
            NAME,
            field("namespace", Text),
            field("spec", Object),
            field("data", Object),
            LABELS,
            ANNOTATIONS,
            FORCE_CONFLICT,
        ],
    },
];

/// The intent type called `name`.
pub(crate) fn intent_type(name: &str) -> Option<&'static IntentType> {
    TYPES.iter().find(|t| t.name == name)
}

/// Reads typed values out of an intent's `fields`, collecting every problem rather than
/// stopping at the first.
pub(crate) struct Reader<'a> {
    map: &'a Map<String, Value>,
    ty: &'static IntentType,
    pub problems: Vec<String>,
}

impl<'a> Reader<'a> {
    pub fn new(map: &'a Map<String, Value>, ty: &'static IntentType) -> Self {
        Reader {
            map,
            ty,
            problems: Vec::new(),
        }
    }

    /// Fields the type does not know, which are ignored (as Orkestra ignores them).
    pub fn unknown_fields(&self) -> Vec<&'a str> {
        self.map
            .keys()
            .filter(|k| !self.ty.fields.iter().any(|f| f.name == k.as_str()))
            .map(String::as_str)
            .collect()
    }

    pub fn known_names(&self) -> String {
        self.ty
            .fields
            .iter()
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The value of a declared field; `null` counts as absent.
    fn raw(&mut self, name: &str, kind: FieldKind) -> Option<&'a Value> {
        let spec = self.ty.fields.iter().find(|f| f.name == name);
        debug_assert!(
            spec.is_some_and(|s| s.kind == kind),
            "{} intent reads {name} as {kind:?}, unlike its table",
            self.ty.name
        );
        let value = self.map.get(name).filter(|v| !v.is_null());
        if value.is_none() && spec.is_some_and(|s| s.required) {
            self.problems.push(format!("field \"{name}\" is required"));
        }
        value
    }

    fn wrong(&mut self, name: &str, what: &str, got: &Value) {
        self.problems.push(format!(
            "field \"{name}\" must be {what}, got {}",
            short(got)
        ));
    }

    pub fn text(&mut self, name: &str) -> Option<String> {
        let value = match self.raw(name, FieldKind::Text)? {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                self.wrong(name, "a string", other);
                return None;
            }
        };
        if value.is_empty() && self.is_required(name) {
            self.problems.push(format!("field \"{name}\" is required"));
            return None;
        }
        Some(value)
    }

    pub fn integer(&mut self, name: &str) -> Option<i64> {
        let raw = self.raw(name, FieldKind::Integer)?;
        let n = match raw {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        };
        if n.is_none() {
            self.wrong(name, "an integer", raw);
        }
        n
    }

    /// An integer that must lie in `range`; `0` is "absent", as Go's zero value is.
    pub fn integer_in(&mut self, name: &str, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
        let n = self.integer(name)?;
        if n == 0 {
            if self.is_required(name) {
                self.problems.push(format!("field \"{name}\" is required"));
            }
            return None;
        }
        if range.contains(&n) {
            Some(n)
        } else {
            self.problems.push(format!(
                "field \"{name}\" must be between {} and {}, got {n}",
                range.start(),
                range.end()
            ));
            None
        }
    }

    pub fn flag(&mut self, name: &str) -> Option<bool> {
        match self.raw(name, FieldKind::Flag)? {
            Value::Bool(b) => Some(*b),
            other => {
                self.wrong(name, "true or false", other);
                None
            }
        }
    }

    pub fn text_map(&mut self, name: &str) -> Option<BTreeMap<String, String>> {
        let raw = self.raw(name, FieldKind::TextMap)?;
        let Value::Object(m) = raw else {
            self.wrong(name, "a map of strings", raw);
            return None;
        };
        let mut out = BTreeMap::new();
        for (k, v) in m {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(_) | Value::Bool(_) => v.to_string(),
                other => {
                    self.wrong(&format!("{name}.{k}"), "a string", other);
                    continue;
                }
            };
            out.insert(k.clone(), s);
        }
        Some(out)
    }

    pub fn text_list(&mut self, name: &str) -> Option<Vec<String>> {
        let raw = self.raw(name, FieldKind::TextList)?;
        match raw {
            Value::String(s) => Some(vec![s.clone()]),
            Value::Array(items) => {
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect();
                if strings.is_none() {
                    self.wrong(name, "a list of strings", raw);
                }
                strings
            }
            other => {
                self.wrong(name, "a list of strings", other);
                None
            }
        }
    }

    pub fn object(&mut self, name: &str) -> Option<Map<String, Value>> {
        match self.raw(name, FieldKind::Object)? {
            Value::Object(m) => Some(m.clone()),
            other => {
                self.wrong(name, "an object", other);
                None
            }
        }
    }

    /// True when the type has a field called `name`.
    pub fn declares(&self, name: &str) -> bool {
        self.ty.fields.iter().any(|f| f.name == name)
    }

    fn is_required(&self, name: &str) -> bool {
        self.ty.fields.iter().any(|f| f.name == name && f.required)
    }
}

/// A value for an error message: JSON, cut short.
pub(crate) fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(59).collect::<String>())
    } else {
        text
    }
}

/// The JSON Schema of one field as the reader accepts it.
fn field_schema(f: &FieldSpec) -> Value {
    let mut schema = match f.kind {
        Text if f.required => {
            json!({"anyOf": [{"type": "string", "minLength": 1}, {"type": "number"}]})
        }
        Text => json!({"type": ["string", "number"]}),
        Integer => json!({"anyOf": [
            {"type": "integer"},
            {"type": "string", "pattern": "^[+-]?[0-9]+$"}
        ]}),
        Flag => json!({"type": "boolean"}),
        TextMap => {
            json!({"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}})
        }
        TextList => {
            json!({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]})
        }
        Object => json!({"type": "object"}),
    };
    if !f.required {
        schema = json!({"anyOf": [schema, {"type": "null"}]});
    }
    schema
}

/// The schema of one intent type's `{type, fields}` entry. Fields ork does not know are allowed
/// (they are ignored with a warning).
pub(crate) fn intent_schema(t: &IntentType) -> Value {
    let properties: Map<String, Value> = t
        .fields
        .iter()
        .map(|f| (f.name.to_string(), field_schema(f)))
        .collect();
    let required: Vec<&str> = t
        .fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.name)
        .collect();
    json!({
        "title": format!("{} intent", t.name),
        "type": "object",
        "required": ["type", "fields"],
        "properties": {
            "type": {"const": t.name},
            "fields": {"type": "object", "properties": properties, "required": required},
            "forceConflict": {"type": ["boolean", "null"]}
        }
    })
}
