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

/// One field of an intent type: its name in `fields`, the JSON it takes, whether it is
/// required, and what it becomes in the built object (published as its `description`).
#[derive(Debug)]
pub(crate) struct FieldSpec {
    pub name: &'static str,
    pub kind: FieldKind,
    pub required: bool,
    /// What the field becomes in the object ork builds, and the default ork uses without it.
    pub doc: &'static str,
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

const fn field(name: &'static str, kind: FieldKind, doc: &'static str) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        required: false,
        doc,
    }
}

const fn required(name: &'static str, kind: FieldKind, doc: &'static str) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        required: true,
        doc,
    }
}

use FieldKind::{Flag, Integer, Object, Text, TextList, TextMap};

const NAME: FieldSpec = required("name", Text, "The object's `metadata.name`.");
/// A workload's name, which its one container takes too.
const WORKLOAD_NAME: FieldSpec = required(
    "name",
    Text,
    "The object's `metadata.name`, and its container's name (so a DNS label).",
);
const LABELS: FieldSpec = field(
    "labels",
    TextMap,
    "The object's `metadata.labels`, besides ork's own (`orkestra.orkspace.io/managed: \"true\"`, `orkestra-owner: <CR name>`); not put on pod templates.",
);
const ANNOTATIONS: FieldSpec = field(
    "annotations",
    TextMap,
    "The object's `metadata.annotations`.",
);
const FORCE_CONFLICT: FieldSpec = field(
    "forceConflict",
    Flag,
    "This object's own `forceConflict` (also allowed next to `fields`, where it must agree), over the entry's; not part of the object.",
);
const IMAGE: FieldSpec = required("image", Text, "The container's `image`.");
const REPLICAS: FieldSpec = field("replicas", Integer, "`spec.replicas`; absent or 0: 1.");
const CONTAINER_PORT: FieldSpec = field(
    "port",
    Integer,
    "The container's one port (`containerPort`, TCP), 1 to 65535; absent or 0: none.",
);
const ENV: FieldSpec = field(
    "env",
    TextMap,
    "The container's `env`: variable name → value, in name order.",
);
const COMMAND: FieldSpec = field(
    "command",
    TextList,
    "The container's `command` (a string is a list of one).",
);
const ARGS: FieldSpec = field(
    "args",
    TextList,
    "The container's `args` (a string is a list of one).",
);

/// Every intent type, in the order of SPEC §2.2. The fields are Orkestra's, plus three ork
/// additions: deployment `args`, service `selector` (merged with `orkestra-owner`) and custom
/// `data`; and `forceConflict` everywhere.
pub(crate) const TYPES: &[IntentType] = &[
    IntentType {
        name: "deployment",
        group: "apps",
        kind: "Deployment",
        fields: &[
            WORKLOAD_NAME,
            IMAGE,
            REPLICAS,
            CONTAINER_PORT,
            ENV,
            COMMAND,
            ARGS,
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
            required("port", Integer, "`spec.ports[0].port` (TCP), 1 to 65535."),
            field(
                "targetPort",
                Integer,
                "`spec.ports[0].targetPort`, 1 to 65535; absent or 0: `port`.",
            ),
            field(
                "type",
                Text,
                "`spec.type`: `ClusterIP`, `NodePort` or `LoadBalancer`; absent: `ClusterIP` (also for another value, with a warning).",
            ),
            field(
                "selector",
                TextMap,
                "Labels added to `spec.selector`, which always holds `orkestra-owner: <CR name>` (the pods of the CR's workload intents).",
            ),
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
            field(
                "data",
                TextMap,
                "`data` (numbers and booleans written as strings); absent: none.",
            ),
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
            field(
                "data",
                TextMap,
                "`data`: base64 values (checked); absent: none.",
            ),
            field(
                "stringData",
                TextMap,
                "`stringData`: plain-text values; absent: none.",
            ),
            field(
                "secretType",
                Text,
                "`type`; absent: `Opaque`. `kubernetes.io/service-account-token` needs `serviceAccountTokens` on the managed resource.",
            ),
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
            field("host", Text, "The one rule's `host`; absent: every host."),
            required("serviceName", Text, "The backend Service's name."),
            field(
                "servicePort",
                Integer,
                "The backend Service's port, 1 to 65535; absent or 0: 80.",
            ),
            field("path", Text, "The one path's `path`; absent: `/`."),
            field(
                "pathType",
                Text,
                "The path's `pathType`: `Prefix`, `Exact` or `ImplementationSpecific`; absent: `Prefix` (also for another value, with a warning).",
            ),
            field(
                "ingressClass",
                Text,
                "`spec.ingressClassName`; absent: not set.",
            ),
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
            WORKLOAD_NAME,
            IMAGE,
            REPLICAS,
            CONTAINER_PORT,
            field(
                "serviceName",
                Text,
                "`spec.serviceName` (immutable once created); absent: empty.",
            ),
            ENV,
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
            WORKLOAD_NAME,
            IMAGE,
            COMMAND,
            ARGS,
            field(
                "backoffLimit",
                Integer,
                "`spec.backoffLimit`; absent or 0: 3.",
            ),
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
            WORKLOAD_NAME,
            IMAGE,
            required("schedule", Text, "`spec.schedule`, in cron syntax."),
            COMMAND,
            ARGS,
            field(
                "concurrencyPolicy",
                Text,
                "`spec.concurrencyPolicy`: `Allow`, `Forbid` or `Replace`, case ignored (another value is `Allow`, with a warning); absent: not set.",
            ),
            field("suspend", Flag, "`spec.suspend`; absent: `false`."),
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
            required(
                "apiVersion",
                Text,
                "The object's `apiVersion`, of a type `managedResources` declares.",
            ),
            required("kind", Text, "The object's `kind`."),
            NAME,
            field(
                "namespace",
                Text,
                "`metadata.namespace`; absent: the CR's namespace.",
            ),
            field("spec", Object, "The object's `spec`, as given."),
            field("data", Object, "The object's `data`, as given."),
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
    schema["description"] = json!(f.doc);
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
            "type": {"const": t.name, "description": "The intent type."},
            "fields": {
                "type": "object",
                "properties": properties,
                "required": required,
                "description": "The fields ork builds the object from; a field the type does not know is ignored, with a warning."
            },
            "forceConflict": {
                "type": ["boolean", "null"],
                "description": "This object's own `forceConflict`, over the entry's (as the field of that name)."
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_of_every_intent_type_has_a_doc_and_the_schema_shows_it() {
        for t in TYPES {
            let schema = intent_schema(t);
            for f in t.fields {
                assert!(
                    f.doc.len() > 10 && f.doc.ends_with('.'),
                    "{} intent field {} has no doc: {:?}",
                    t.name,
                    f.name,
                    f.doc
                );
                assert_eq!(
                    schema["properties"]["fields"]["properties"][f.name]["description"], f.doc,
                    "{} intent field {}",
                    t.name, f.name
                );
            }
        }
    }
}
