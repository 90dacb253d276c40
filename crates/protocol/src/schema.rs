//! JSON Schema pieces for [`crate::Response`] that serde's types cannot express: accepted
//! values, patterns and caps, taken from the same constants and tables `decide` uses. (The
//! schemas of the condition and event lists sit beside their types in `response`.)

use schemars::{Schema, SchemaGenerator};
use serde_json::{Value, json};

use crate::intent::{TYPES, intent_schema};
use crate::policy::Limits;

/// Go's duration grammar (`time.ParseDuration`), or empty.
pub(crate) const DURATION_PATTERN: &str =
    r"^$|^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$";
/// `group/version` or a core `version`.
const API_VERSION_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z]([-a-z0-9]*[a-z0-9])?$";
const NAME_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

pub(crate) fn schema(value: Value) -> Schema {
    match value {
        Value::Object(map) => Schema::from(map),
        _ => Schema::default(),
    }
}

pub(crate) fn result(_: &mut SchemaGenerator) -> Schema {
    schema(json!({"enum": ["", "ok", "requeue", "error", null]}))
}

pub(crate) fn requeue_after(_: &mut SchemaGenerator) -> Schema {
    schema(json!({"type": ["string", "null"], "pattern": DURATION_PATTERN}))
}

pub(crate) fn condition_type(_: &mut SchemaGenerator) -> Schema {
    schema(json!({"type": "string", "minLength": 1, "not": {"const": "Ready"}}))
}

pub(crate) fn condition_status(_: &mut SchemaGenerator) -> Schema {
    schema(json!({"enum": ["True", "False", "Unknown"]}))
}

pub(crate) fn event_type(_: &mut SchemaGenerator) -> Schema {
    schema(json!({"enum": ["Normal", "Warning"], "default": "Normal"}))
}

pub(crate) fn event_reason(_: &mut SchemaGenerator) -> Schema {
    schema(json!({"type": "string", "minLength": 1}))
}

/// A list of full objects or intents; an entry with `apiVersion` is a full object.
pub(crate) fn resources(_: &mut SchemaGenerator) -> Schema {
    let full = json!({
        "title": "full object",
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "properties": {
            "apiVersion": {
                "type": "string",
                "pattern": API_VERSION_PATTERN,
                "description": "A version the API server serves for a type the entry's `managedResources` declares."
            },
            "kind": {
                "type": "string",
                "pattern": "^[A-Za-z][A-Za-z0-9]*$",
                "description": "The object's kind, of a type `managedResources` declares."
            },
            "metadata": {
                "type": "object",
                "required": ["name"],
                "description": "The object's metadata; `ownerReferences`, `managedFields`, `resourceVersion`, `uid` and the other fields the server sets are dropped, and ork adds its own labels, annotations and (in the CR's namespace) an owner reference to the CR.",
                "properties": {
                    "name": {
                        "type": "string",
                        "maxLength": 253,
                        "pattern": NAME_PATTERN,
                        "description": "The object's name; not the CR itself, and no other entry of `resources` may name the same object."
                    },
                    "namespace": {
                        "type": ["string", "null"],
                        "description": "Absent: the CR's namespace. Another one (ork's own included) only when the type's `managedResources` entry lists it in `namespaces`."
                    },
                    "labels": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": "string", "maxLength": 63},
                        "description": "The object's labels: valid label keys and values."
                    },
                    "annotations": {
                        "type": ["object", "null"],
                        "additionalProperties": {"type": "string"},
                        "description": "The object's annotations: valid keys, at most 256 KiB in all."
                    }
                }
            },
            "forceConflict": {
                "type": ["boolean", "null"],
                "description": "This object's own `forceConflict` (taken off before it is applied), over the entry's."
            }
        }
    });
    let mut variants = vec![full];
    for t in TYPES {
        let mut intent = intent_schema(t);
        intent["not"] = json!({"required": ["apiVersion"]});
        variants.push(intent);
    }
    schema(json!({
        "type": ["array", "null"],
        "maxItems": Limits::default().children,
        "items": {"oneOf": variants}
    }))
}
