//! Metacontroller's hook protocol (SPEC §15), translated at the edge: a CompositeController's
//! sync and finalize requests are built here, and a hook's answer becomes the answer of SPEC
//! §2.2, so [`crate::decide`] checks it whole as it checks any other (nothing is written
//! before every child passed).
//!
//! The shapes are Metacontroller's: the request is `{controller, parent, children, related,
//! finalizing}` with `children` and `related` keyed `Kind.group/version` (`ConfigMap.v1`,
//! `Deployment.apps/v1`), then by the object's key ([`object_key`]); the answer is `{status,
//! children, resyncAfterSeconds, finalized}`. A missing `children` is an empty desired set, and
//! `status` replaces the parent's status (ork keeps `observedGeneration` and its own
//! conditions). ork adds `events`, which Metacontroller hooks cannot send.

/// On a controller object: the roles its RoleBinding and ClusterRoleBinding children may bind,
/// `Kind/name` comma-separated (`ClusterRole/view, Role/editor`), as a Katalog's `bindRoles`.
pub const BIND_ROLES: &str = "orkestra.orkspace.io/bind-roles";
/// On a controller object: `"true"` lets its children live in ork's own namespace too (a
/// Katalog declares that namespace in `namespaces:`); without it a child there is refused.
pub const CHILDREN_IN_ORK_NAMESPACE: &str = "orkestra.orkspace.io/children-in-ork-namespace";

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::intent::short;
use crate::json;
pub use crate::response::Decoration;
use crate::response::ResponseError;

/// The hook API version of a controller's hooks (`hooks.sync.version`): how `children` and
/// `related` key their objects, and how strictly answers are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookVersion {
    /// Objects keyed by name, or `namespace/name` when not in the parent's namespace; unknown
    /// answer fields are ignored.
    #[default]
    V1,
    /// Objects keyed `namespace/name` (cluster-scoped: `name`); unknown answer fields are an
    /// error, as Metacontroller decodes v2 answers strictly.
    V2,
}

impl HookVersion {
    /// `v1` or `v2` as a controller writes it; `None` for anything else.
    pub fn parse(text: &str) -> Option<HookVersion> {
        match text {
            "" | "v1" => Some(HookVersion::V1),
            "v2" => Some(HookVersion::V2),
            _ => None,
        }
    }
}

/// The key of an object's type in `children` and `related`: `Kind.group/version`, or
/// `Kind.version` for the core group (`ConfigMap.v1`).
pub fn type_key(api_version: &str, kind: &str) -> String {
    format!("{kind}.{api_version}")
}

/// The key of an object within its type in `children` and `related`.
pub fn object_key(
    version: HookVersion,
    parent_namespace: Option<&str>,
    namespace: Option<&str>,
    name: &str,
) -> String {
    match (version, namespace) {
        (_, None) => name.to_string(),
        (HookVersion::V1, Some(ns)) if Some(ns) == parent_namespace => name.to_string(),
        (_, Some(ns)) => format!("{ns}/{name}"),
    }
}

/// Objects grouped as `children` and `related` are: type key, then object key.
pub type ObjectMap = Map<String, Value>;

/// Puts `object` into `map` under its type and key (the object's own `apiVersion`, `kind`,
/// namespace and name).
pub fn insert(
    map: &mut ObjectMap,
    version: HookVersion,
    parent_namespace: Option<&str>,
    object: Value,
) {
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let (Some(api_version), Some(kind), Some(name)) =
        (text("/apiVersion"), text("/kind"), text("/metadata/name"))
    else {
        return;
    };
    let namespace = text("/metadata/namespace").filter(|n| !n.is_empty());
    let key = object_key(version, parent_namespace, namespace.as_deref(), &name);
    let group = map
        .entry(type_key(&api_version, &kind))
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(g) = group {
        g.insert(key, object);
    }
}

/// A sync or finalize request (`finalizing`) for `parent`, as a CompositeController's hooks
/// receive it.
pub fn sync_request(
    controller: &Value,
    parent: &Value,
    children: ObjectMap,
    related: ObjectMap,
    finalizing: bool,
) -> Value {
    json!({
        "controller": controller,
        "parent": parent,
        "children": children,
        "related": related,
        "finalizing": finalizing,
    })
}

/// A customize request: which related objects the hook wants to see for `parent`.
pub fn customize_request(controller: &Value, parent: &Value) -> Value {
    json!({"controller": controller, "parent": parent})
}

/// The fields of a CompositeController's sync hook answer; `events` is ork's addition.
const FIELDS: [&str; 5] = [
    "status",
    "children",
    "resyncAfterSeconds",
    "finalized",
    "events",
];

/// The fields of a DecoratorController's sync hook answer; `events` is ork's addition.
const DECORATOR_FIELDS: [&str; 7] = [
    "labels",
    "annotations",
    "status",
    "attachments",
    "resyncAfterSeconds",
    "finalized",
    "events",
];

/// The condition fields ork keeps from a hook's `status.conditions` (the time stamps are
/// ork's to write).
const CONDITION_FIELDS: [&str; 4] = ["type", "status", "reason", "message"];

/// A CompositeController's sync hook answer as the answer of SPEC §2.2: `children` →
/// `resources` (missing: none), `status` whole (missing: empty, so the keys it held go), its
/// `conditions` list merged by type, `resyncAfterSeconds` → `requeueAfter` (at least a
/// second), `finalized` as is.
///
/// # Errors
/// Not a JSON object, a repeated key, a field of the wrong type, or (v2) an unknown field.
pub fn answer(body: &[u8], version: HookVersion) -> Result<Vec<u8>, ResponseError> {
    let mut top = object_of(body, version, &FIELDS)?;
    let mut out = Map::new();
    let mut status = match top.remove("status") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(wrong("status", "an object", &other)),
    };
    match status.remove("conditions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            let conditions = list
                .into_iter()
                .enumerate()
                .map(|(i, c)| match c {
                    Value::Object(mut c) => {
                        c.retain(|k, _| CONDITION_FIELDS.contains(&k.as_str()));
                        Ok(Value::Object(c))
                    }
                    other => Err(wrong(
                        &format!("status.conditions[{i}]"),
                        "an object",
                        &other,
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.insert("conditions".into(), Value::Array(conditions));
        }
        Some(other) => return Err(wrong("status.conditions", "a list", &other)),
    }
    out.insert("status".into(), Value::Object(status));
    out.insert(
        "resources".into(),
        Value::Array(list_of(&mut top, "children")?),
    );
    finish(top, out)
}

/// A DecoratorController's sync hook answer: the answer of SPEC §2.2 (`attachments` →
/// `resources`, missing: none; `status` only when given, as Metacontroller leaves it alone on
/// `null`) and the labels and annotations for the decorated object.
///
/// # Errors
/// Not a JSON object, a repeated key, a field of the wrong type (a label that is neither a
/// string nor `null`), or (v2) an unknown field.
pub fn decorator_answer(
    body: &[u8],
    version: HookVersion,
) -> Result<(Vec<u8>, Decoration), ResponseError> {
    let mut top = object_of(body, version, &DECORATOR_FIELDS)?;
    let mut out = Map::new();
    match top.remove("status") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            out.insert("status".into(), Value::Object(m));
        }
        Some(other) => return Err(wrong("status", "an object", &other)),
    }
    out.insert(
        "resources".into(),
        Value::Array(list_of(&mut top, "attachments")?),
    );
    let mut strings = |field: &str| -> Result<Map<String, Value>, ResponseError> {
        match top.remove(field) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(m)) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !(v.is_string() || v.is_null())) {
                    return Err(wrong(&format!("{field}.{k}"), "a string or null", v));
                }
                Ok(m)
            }
            Some(other) => Err(wrong(field, "an object", &other)),
        }
    };
    let decoration = Decoration {
        labels: strings("labels")?,
        annotations: strings("annotations")?,
    };
    Ok((finish(top, out)?, decoration))
}

/// A decorator's sync or finalize request for `object`.
pub fn decorator_request(
    controller: &Value,
    object: &Value,
    attachments: ObjectMap,
    related: ObjectMap,
    finalizing: bool,
) -> Value {
    json!({
        "controller": controller,
        "object": object,
        "attachments": attachments,
        "related": related,
        "finalizing": finalizing,
    })
}

/// The answer's top-level object; v2 refuses fields other than `fields`.
fn object_of(
    body: &[u8],
    version: HookVersion,
    fields: &[&str],
) -> Result<Map<String, Value>, ResponseError> {
    let parsed = json::parse(body).map_err(|e| ResponseError::Malformed(e.to_string()))?;
    if let Some(place) = parsed.repeated_keys.first() {
        return Err(ResponseError::Malformed(format!(
            "{place} appears twice; a JSON object must not repeat a key (the last one would silently win)"
        )));
    }
    let Value::Object(top) = parsed.value else {
        return Err(ResponseError::Malformed(format!(
            "the hook's answer must be a JSON object, got {}",
            short(&parsed.value)
        )));
    };
    if version == HookVersion::V2
        && let Some(key) = top.keys().find(|k| !fields.contains(&k.as_str()))
    {
        return Err(ResponseError::Malformed(format!(
            "unknown field \"{key}\" in a v2 hook answer (fields: {})",
            fields.join(", ")
        )));
    }
    Ok(top)
}

/// The list under `field` (missing or `null`: empty).
fn list_of(top: &mut Map<String, Value>, field: &str) -> Result<Vec<Value>, ResponseError> {
    match top.remove(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => Ok(list),
        Some(other) => Err(wrong(field, "a list", &other)),
    }
}

/// `resyncAfterSeconds`, `finalized` and `events` of `top` into `out`, encoded.
fn finish(
    mut top: Map<String, Value>,
    mut out: Map<String, Value>,
) -> Result<Vec<u8>, ResponseError> {
    match top.remove("resyncAfterSeconds") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) => {
            let seconds = n.as_f64().unwrap_or(0.0);
            if !seconds.is_finite() || seconds < 0.0 {
                return Err(ResponseError::Invalid(format!(
                    "resyncAfterSeconds {n} is not a number of seconds of at least 0"
                )));
            }
            if seconds > 0.0 {
                // ork's shortest requeue is a second; a longer one is kept to the millisecond.
                let millis = (seconds * 1000.0)
                    .ceil()
                    .clamp(1000.0, 365.0 * 24.0 * 3600e3);
                out.insert("requeueAfter".into(), json!(format!("{millis}ms")));
            }
        }
        Some(other) => return Err(wrong("resyncAfterSeconds", "a number", &other)),
    }
    match top.remove("finalized") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => {
            out.insert("finalized".into(), Value::Bool(b));
        }
        Some(other) => return Err(wrong("finalized", "true or false", &other)),
    }
    if let Some(events) = top.remove("events") {
        out.insert("events".into(), events);
    }
    serde_json::to_vec(&Value::Object(out))
        .map_err(|e| ResponseError::Malformed(format!("re-encoding the answer: {e}")))
}

/// A related-resource rule of a customize hook's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct RelatedRule {
    pub api_version: String,
    pub resource: String,
    /// `matchLabels` of `labelSelector`; `None` selects by namespace and names.
    pub match_labels: Option<Map<String, Value>>,
    pub namespace: Option<String>,
    pub names: Vec<String>,
}

impl RelatedRule {
    /// Whether `object` (of this rule's type) is selected.
    pub fn selects(&self, object: &Value) -> bool {
        let meta = |k: &str| object.pointer(&format!("/metadata/{k}"));
        let ns = meta("namespace").and_then(Value::as_str);
        if let Some(labels) = &self.match_labels {
            // v2: a label selector is scoped by `namespace` when the rule names one.
            return self
                .namespace
                .as_deref()
                .is_none_or(|want| ns == Some(want))
                && labels
                    .iter()
                    .all(|(k, v)| meta("labels").and_then(|l| l.get(k)) == Some(v));
        }
        if self
            .namespace
            .as_deref()
            .is_some_and(|want| ns != Some(want))
        {
            return false;
        }
        let name = meta("name").and_then(Value::as_str).unwrap_or_default();
        self.names.is_empty() || self.names.iter().any(|n| n == name)
    }
}

/// A customize hook's answer: `{relatedResources: [{apiVersion, resource, labelSelector |
/// namespace + names}]}`.
///
/// # Errors
/// Not that shape, a rule with both a label selector and names, or `matchExpressions` or
/// `namespaceSelector` (not supported yet: refused, never ignored).
pub fn related_rules(body: &[u8]) -> Result<Vec<RelatedRule>, ResponseError> {
    let parsed = json::parse(body).map_err(|e| ResponseError::Malformed(e.to_string()))?;
    let rules = match parsed.value.get("relatedResources") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list.clone(),
        Some(other) => return Err(wrong("relatedResources", "a list", other)),
    };
    rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let at = format!("relatedResources[{i}]");
            let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
            let (Some(api_version), Some(resource)) = (text("apiVersion"), text("resource")) else {
                return Err(ResponseError::Invalid(format!(
                    "{at} needs apiVersion and resource"
                )));
            };
            let namespace = text("namespace").filter(|n| !n.is_empty());
            let names: Vec<String> = match r.get("names") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|n| n.as_str().map(str::to_string))
                    .collect::<Option<_>>()
                    .ok_or_else(|| wrong(&format!("{at}.names"), "a list of names", r))?,
                Some(other) => return Err(wrong(&format!("{at}.names"), "a list", other)),
            };
            let match_labels = match r.get("labelSelector") {
                None | Some(Value::Null) => None,
                Some(Value::Object(sel)) => {
                    if sel.get("matchExpressions").is_some_and(|e| !e.is_null()) {
                        return Err(ResponseError::Invalid(format!(
                            "{at}.labelSelector.matchExpressions is not supported by ork yet; use matchLabels"
                        )));
                    }
                    Some(
                        sel.get("matchLabels")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                    )
                }
                Some(other) => return Err(wrong(&format!("{at}.labelSelector"), "an object", other)),
            };
            // As Metacontroller decides: names go with no selector; a label selector may be
            // scoped by a namespace.
            if match_labels.is_some() && !names.is_empty() {
                return Err(ResponseError::Invalid(format!(
                    "{at} has both labelSelector and names; Metacontroller allows one or the other"
                )));
            }
            if r.get("namespaceSelector").is_some_and(|v| !v.is_null()) {
                return Err(ResponseError::Invalid(format!(
                    "{at}.namespaceSelector is not supported by ork yet; use labelSelector with namespace, or one rule per namespace"
                )));
            }
            Ok(RelatedRule {
                api_version,
                resource,
                match_labels: match_labels.or_else(|| {
                    (namespace.is_none() && names.is_empty()).then(Map::new)
                }),
                namespace,
                names,
            })
        })
        .collect()
}

fn wrong(field: &str, expected: &str, found: &Value) -> ResponseError {
    ResponseError::Malformed(format!(
        "{field}: expected {expected}, got {}",
        short(found)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn translated(body: Value, version: HookVersion) -> Value {
        serde_json::from_slice(&answer(body.to_string().as_bytes(), version).expect("accepted"))
            .expect("JSON")
    }

    #[test]
    fn keys_follow_the_hook_version() {
        assert_eq!(type_key("apps/v1", "Deployment"), "Deployment.apps/v1");
        assert_eq!(type_key("v1", "ConfigMap"), "ConfigMap.v1");
        let same = object_key(HookVersion::V1, Some("ns"), Some("ns"), "a");
        assert_eq!(same, "a");
        let other = object_key(HookVersion::V1, None, Some("ns"), "a");
        assert_eq!(other, "ns/a");
        assert_eq!(
            object_key(HookVersion::V2, Some("ns"), Some("ns"), "a"),
            "ns/a"
        );
        assert_eq!(object_key(HookVersion::V2, Some("ns"), None, "a"), "a");
    }

    #[test]
    fn an_answer_becomes_ork_s_with_the_whole_status_and_every_child() {
        let got = translated(
            json!({"status": {"replicas": 2, "conditions": [{"type": "Synced", "status": "True",
                "lastTransitionTime": "x"}]},
                "children": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}],
                "resyncAfterSeconds": 0.25}),
            HookVersion::V2,
        );
        assert_eq!(got["status"], json!({"replicas": 2}));
        assert_eq!(
            got["conditions"],
            json!([{"type": "Synced", "status": "True"}])
        );
        assert_eq!(got["resources"][0]["metadata"]["name"], "a");
        assert_eq!(got["requeueAfter"], "1000ms");
    }

    #[test]
    fn a_bare_answer_empties_children_and_status() {
        let got = translated(json!({}), HookVersion::V1);
        assert_eq!(got["resources"], json!([]));
        assert_eq!(got["status"], json!({}));
        assert!(got.get("requeueAfter").is_none());
    }

    #[test]
    fn v2_refuses_unknown_fields_and_v1_ignores_them() {
        let body = json!({"childs": []}).to_string();
        let e = answer(body.as_bytes(), HookVersion::V2).expect_err("strict");
        assert!(e.to_string().contains("unknown field \"childs\""), "{e}");
        assert!(answer(body.as_bytes(), HookVersion::V1).is_ok());
    }

    #[test]
    fn misshapen_fields_are_named() {
        for (body, field) in [
            (json!({"children": {}}), "children"),
            (json!({"status": 3}), "status"),
            (json!({"resyncAfterSeconds": "5"}), "resyncAfterSeconds"),
            (json!({"finalized": "yes"}), "finalized"),
        ] {
            let e = answer(body.to_string().as_bytes(), HookVersion::V1).expect_err("refused");
            assert!(e.to_string().contains(field), "{e}");
        }
    }

    #[test]
    fn a_decorator_answer_keeps_status_alone_unless_given_and_names_bad_labels() {
        let body = json!({"labels": {"a": "1", "gone": null}, "annotations": {"n": "x"},
            "attachments": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]});
        let (bytes, d) =
            decorator_answer(body.to_string().as_bytes(), HookVersion::V2).expect("accepted");
        let got: Value = serde_json::from_slice(&bytes).expect("JSON");
        assert!(got.get("status").is_none(), "{got}");
        assert_eq!(got["resources"][0]["metadata"]["name"], "c");
        assert_eq!(d.labels["gone"], Value::Null);
        assert_eq!(d.annotations["n"], "x");
        let bad = json!({"labels": {"a": 1}});
        let e = decorator_answer(bad.to_string().as_bytes(), HookVersion::V1).expect_err("refused");
        assert!(e.to_string().contains("labels.a"), "{e}");
    }

    #[test]
    fn related_rules_select_by_labels_or_by_names() {
        let rules = related_rules(
            json!({"relatedResources": [
                {"apiVersion": "v1", "resource": "namespaces", "labelSelector": {"matchLabels": {"team": "a"}}},
                {"apiVersion": "v1", "resource": "configmaps", "namespace": "src", "names": ["x"]}
            ]})
            .to_string()
            .as_bytes(),
        )
        .expect("rules");
        let ns = json!({"metadata": {"name": "n1", "labels": {"team": "a"}}});
        assert!(rules[0].selects(&ns));
        assert!(!rules[0].selects(&json!({"metadata": {"name": "n2"}})));
        assert!(rules[1].selects(&json!({"metadata": {"name": "x", "namespace": "src"}})));
        assert!(!rules[1].selects(&json!({"metadata": {"name": "x", "namespace": "other"}})));
        let both = json!({"relatedResources": [{"apiVersion": "v1", "resource": "configmaps",
            "labelSelector": {"matchLabels": {}}, "names": ["x"]}]});
        assert!(related_rules(both.to_string().as_bytes()).is_err());
        // Issue 49 (configmap-list-v2): v2 scopes a label selector by a namespace.
        let scoped = related_rules(
            json!({"relatedResources": [{"apiVersion": "v1", "resource": "configmaps",
                "namespace": "src", "labelSelector": {"matchLabels": {"team": "a"}}}]})
            .to_string()
            .as_bytes(),
        )
        .expect("labelSelector with namespace");
        let cm = |ns: &str, team: &str| json!({"metadata": {"name": "c", "namespace": ns, "labels": {"team": team}}});
        assert!(scoped[0].selects(&cm("src", "a")));
        assert!(!scoped[0].selects(&cm("other", "a")), "another namespace");
        assert!(!scoped[0].selects(&cm("src", "b")), "other labels");
    }
}
