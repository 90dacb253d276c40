//! Typed Katalog structs (SPEC §1, §9), deserialised with unknown fields denied.
//!
//! After [`crate::load_file`] the model is complete: `apiTypes` is filled from `crdFile` when
//! needed, file paths are resolved against the Katalog's folder, managed resources carry what
//! could be derived, and every template and condition knows the Katalog's notes.
//!
//! One module per section of the file, from the root down: `katalog` (the file, metadata,
//! notes), `entry` (`spec.crds.<name>`), `depends_on`, `operator_box`, `gates`, `reconcile`,
//! `remote`, `managed`, `payload` and `auth`; `composite` holds what a Metacontroller
//! controller's entry carries besides. They hold the types and their defaults only;
//! rendering a CR's templates at run time is `crate::render`'s.

mod auth;
pub(crate) mod composite;
mod defaults;
mod depends_on;
mod entry;
mod gates;
mod katalog;
mod managed;
mod operator_box;
mod payload;
mod reconcile;
mod remote;

pub use auth::{Auth, CaSecretRef, SecretRef, Tls, TlsSecretRef};
pub use depends_on::{Dependency, DependencyCondition, DependsOn};
pub use entry::{ApiTypes, CrdEntry, Endpoints, namespace_matches};
pub use gates::{FailPolicy, Gate, PreReconcile, ValidationRules};
pub use katalog::{Katalog, KatalogMeta, KatalogSpec, NoteFunction, NotesBlock};
pub use managed::{BindRole, ManagedResource, ManagedResourceSpec, RBAC_GROUP};
pub use operator_box::{CrossRef, CrossSelector, Observe, OperatorBox, RuntimeBox};
pub use payload::{ChildResourcePayload, ChildrenPayload, ObjectPayload, Payload};
pub use reconcile::{OnStart, Queue, Reconcile, RetryBackoff};
pub use remote::{RateLimit, Remote};

/// Rendered output lives with the rendering; named here too so `model::RenderedMetadata` stays.
pub use crate::render::RenderedMetadata;
pub use crate::sentinel::Sentinel;

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// The `$defs` types whose fields are documented elsewhere: a condition's operators
    /// (`crate::condition`).
    const DOCUMENTED_ELSEWHERE: [&str; 1] = ["Condition"];

    /// The paths of properties, anywhere in `node`, with no `description` (their own, or their
    /// `$ref` target's).
    fn undocumented(root: &Value, node: &Value, path: &str, out: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for (name, p) in properties {
                        let target = p
                            .get("$ref")
                            .and_then(Value::as_str)
                            .and_then(|r| r.strip_prefix('#'))
                            .and_then(|r| root.pointer(r));
                        let described = p.get("description").is_some()
                            || target.is_some_and(|t| t.get("description").is_some());
                        if !described {
                            out.push(format!("{path}.{name}"));
                        }
                    }
                }
                for (key, value) in map {
                    if path == "/$defs" && DOCUMENTED_ELSEWHERE.contains(&key.as_str()) {
                        continue;
                    }
                    undocumented(root, value, &format!("{path}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    undocumented(root, item, &format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_field_of_the_katalog_has_a_description() {
        let schema = schemars::schema_for!(crate::Katalog).to_value();
        let mut out = Vec::new();
        undocumented(&schema, &schema, "", &mut out);
        assert!(out.is_empty(), "fields without a description: {out:#?}");
    }
}
