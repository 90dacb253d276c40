//! One entry of `resources`: a full object or an intent built into one, then checked against
//! the policy (SPEC §2.3, §11). Every problem of the entry is reported, not just the first.

use serde_json::{Map, Value};

use crate::intent::{Intent, short, type_builds};
use crate::metacontroller::{BIND_ROLES, CHILDREN_IN_ORK_NAMESPACE};
use crate::names::{
    check_label_value, check_qualified_name, is_dns_subdomain, is_dns1035_label, parse_api_version,
};
use crate::policy::{Policy, not_declared};
use crate::response::DesiredChild;

/// Fields the API server owns or ork sets itself; dropped from what the service sends.
const SERVER_OWNED: [&str; 7] = [
    "ownerReferences",
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "selfLink",
];

/// The Kubernetes limit on all annotations of an object, keys and values together.
const ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Checks one `resources` entry; warnings (ignored fields, replaced values) go to `warnings`.
///
/// # Errors
/// Every problem found, as messages without the `resources[i]` prefix.
pub(crate) fn check_entry(
    entry: &Value,
    policy: &Policy,
    warnings: &mut Vec<String>,
) -> Result<DesiredChild, Vec<String>> {
    let Value::Object(map) = entry else {
        return Err(vec![format!("expected an object, got {}", short(entry))]);
    };
    if map.contains_key("apiVersion") {
        let mut object = map.clone();
        let force = force_conflict(object.remove("forceConflict").as_ref());
        match (force, check_object(object, policy)) {
            (Ok(force), Ok(child)) => Ok(DesiredChild {
                force_conflict: force,
                ..child
            }),
            (force, checked) => {
                let mut problems: Vec<String> = force.err().into_iter().collect();
                problems.extend(checked.err().into_iter().flatten());
                Err(problems)
            }
        }
    } else if map.contains_key("type") || map.contains_key("fields") {
        let built = from_intent(map, policy, warnings)?;
        let child = check_object(built.object, policy)?;
        Ok(DesiredChild {
            force_conflict: built.force_conflict,
            ..child
        })
    } else {
        Err(vec![
            "expected 'apiVersion' (full form) or 'type'+'fields' (intent form)".into(),
        ])
    }
}

/// A resource's own `forceConflict`: a boolean, or absent/`null`.
fn force_conflict(value: Option<&Value>) -> Result<Option<bool>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(format!(
            "forceConflict must be true or false, got {}",
            short(other)
        )),
    }
}

/// The object an intent entry built, and its `forceConflict`.
struct Built {
    object: Map<String, Value>,
    force_conflict: Option<bool>,
}

/// Builds the object of an intent entry `{type, fields, forceConflict}`.
fn from_intent(
    map: &Map<String, Value>,
    policy: &Policy,
    warnings: &mut Vec<String>,
) -> Result<Built, Vec<String>> {
    for key in map
        .keys()
        .filter(|k| !matches!(k.as_str(), "type" | "fields" | "forceConflict"))
    {
        warnings.push(format!(
            "\"{key}\" next to an intent's type and fields is unknown to ork and ignored"
        ));
    }
    let mut problems = Vec::new();
    let type_name = match map.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(other) => {
            problems.push(format!("'type' must be a string, got {}", short(other)));
            None
        }
        None => {
            problems.push("an intent needs 'type' next to 'fields'".into());
            None
        }
    };
    let fields = match map.get("fields") {
        Some(Value::Object(fields)) => Some(fields),
        Some(other) => {
            problems.push(format!("'fields' must be an object, got {}", short(other)));
            None
        }
        None => {
            problems.push("an intent needs 'fields' next to 'type'".into());
            None
        }
    };
    let entry_force = force_conflict(map.get("forceConflict"))
        .map_err(|e| problems.push(e))
        .ok()
        .flatten();
    let (Some(type_name), Some(fields)) = (type_name, fields) else {
        return Err(problems);
    };
    // Named even when the fields are wrong too, so `ork check` shows both at once.
    if let Some((group, kind)) = type_builds(type_name)
        && policy.managed_type(group, kind).is_none()
    {
        problems.push(not_declared(group, kind, None));
    }
    let intent = match Intent::parse(type_name, fields) {
        Ok(intent) => intent,
        Err(e) => {
            warnings.extend(e.warnings);
            problems.extend(
                e.problems
                    .into_iter()
                    .map(|p| format!("{type_name} intent: {p}")),
            );
            return Err(problems);
        }
    };
    warnings.extend(intent.warnings.iter().cloned());
    if !problems.is_empty() {
        return Err(problems);
    }
    let force = match (entry_force, intent.force_conflict) {
        (Some(outside), Some(inside)) if outside != inside => {
            return Err(vec![format!(
                "forceConflict is {outside} next to 'fields' but {inside} inside them"
            )]);
        }
        (outside, inside) => outside.or(inside),
    };
    match intent
        .build(&policy.owner, &policy.managed)
        .map_err(|e| vec![e])?
    {
        Value::Object(object) => Ok(Built {
            object,
            force_conflict: force,
        }),
        other => Err(vec![format!("the intent built {}", short(&other))]),
    }
}

/// The checks every child passes, however it was written (`force_conflict` left unset).
fn check_object(
    mut object: Map<String, Value>,
    policy: &Policy,
) -> Result<DesiredChild, Vec<String>> {
    let mut problems = Vec::new();
    let api_version = non_empty_text(&object, "apiVersion", &mut problems);
    let group_version = api_version
        .as_deref()
        .and_then(|a| parse_api_version(a).map_err(|e| problems.push(e)).ok());
    let kind = non_empty_text(&object, "kind", &mut problems);
    if let Some(k) = &kind
        && !(k.starts_with(|c: char| c.is_ascii_alphabetic())
            && k.chars().all(|c| c.is_ascii_alphanumeric()))
    {
        problems.push(format!("kind {k:?} must be a type name such as Deployment"));
    }
    let (name, child_namespace) = match object.get("metadata") {
        Some(Value::Object(meta)) => (
            name_of(meta, &mut problems),
            namespace_of(meta, &mut problems),
        ),
        None | Some(Value::Null) => {
            problems.push("metadata.name is required".into());
            (None, None)
        }
        Some(other) => {
            problems.push(format!("metadata must be an object, got {}", short(other)));
            (None, None)
        }
    };
    let (Some((group, version)), Some(kind), Some(name)) = (group_version, kind, name) else {
        return Err(problems);
    };
    let owner = &policy.owner;
    let names_owner_namespace = match &owner.namespace {
        None => true,
        Some(ns) => child_namespace.as_deref().unwrap_or(ns) == ns,
    };
    if group == owner.group() && kind == owner.kind && name == owner.name && names_owner_namespace {
        return Err(vec![
            "the response names the CR itself; return its status in `status` instead".into(),
        ]);
    }
    if group.is_empty() && kind == "Service" {
        if !is_dns1035_label(&name) {
            problems.push(format!(
                "metadata.name {name:?} is not a valid Service name: lowercase letters, digits and '-', starting with a letter, at most 63 characters"
            ));
        }
    } else if !is_dns_subdomain(&name) {
        problems.push(format!(
            "metadata.name \"{name}\" is not a valid Kubernetes name"
        ));
    }
    if let Some(Value::Object(meta)) = object.get("metadata") {
        check_string_map(meta, "labels", &mut problems);
        check_string_map(meta, "annotations", &mut problems);
    }
    let Some(managed) = policy.managed_type(&group, &kind) else {
        problems.push(not_declared(&group, &kind, Some(&version)));
        return Err(problems);
    };
    if !managed.serves(&version) {
        let mut served: Vec<&str> = managed.served_versions.iter().map(String::as_str).collect();
        if !served.contains(&managed.version.as_str()) {
            served.insert(0, &managed.version);
        }
        problems.push(format!(
            "{kind} {}: the API server serves {}/{} in {}, not {version}",
            api_version.as_deref().unwrap_or_default(),
            if group.is_empty() { "core" } else { &group },
            managed.plural,
            served.join(", ")
        ));
    }
    if group == RBAC_GROUP && matches!(kind.as_str(), "RoleBinding" | "ClusterRoleBinding") {
        check_role_ref(&object, &kind, &name, managed, policy, &mut problems);
    }
    if group == RBAC_GROUP && kind == "ClusterRole" && !managed.role_aggregation {
        check_no_aggregation(&object, &name, &mut problems);
    }
    if group.is_empty()
        && kind == "Secret"
        && object.get("type").and_then(Value::as_str) == Some(SERVICE_ACCOUNT_TOKEN)
        && !managed.service_account_tokens
    {
        // The cluster would fill it with a token of any ServiceAccount it names.
        problems.push(format!(
            "Secret {name} is of type {SERVICE_ACCOUNT_TOKEN}, which the cluster fills with a ServiceAccount's token; refused unless its managedResources entry sets `serviceAccountTokens: true`"
        ));
    }
    let namespace = if managed.namespaced {
        let owner_ns = owner.child_namespace();
        let ns = child_namespace.unwrap_or_else(|| owner_ns.to_string());
        let named = managed.namespaces.contains(&ns);
        let declared = named
            || managed
                .namespaces
                .iter()
                .any(|n| n == crate::policy::ANY_NAMESPACE);
        if ns == policy.ork_namespace && !policy.ork_namespace.is_empty() && !named {
            problems.push(match &policy.controller {
                Some(controller) => format!(
                    "{kind} {name} is in ork's own namespace \"{ns}\", which children may only use when the controller allows it: annotate {controller} with `{CHILDREN_IN_ORK_NAMESPACE}: \"true\"` (in its manifest)"
                ),
                None => format!(
                    "{kind} {name} is in ork's own namespace \"{ns}\", which children may only use when managedResources declares `namespaces: [{ns}]` (even when the CR lives there)"
                ),
            });
        } else if owner.namespace.is_none() && !declared {
            // Garbage collection cannot follow a cluster-scoped owner into a namespace it was
            // not told about, and "default" is nobody's choice: say where, explicitly.
            problems.push(format!(
                "{kind} {name}: the CR is cluster-scoped, so a namespaced child needs metadata.namespace set to a namespace that managedResources declares in `namespaces:` (got \"{ns}\")"
            ));
        } else if ns != owner_ns && !declared {
            problems.push(format!(
                "{kind} {name} is in namespace \"{ns}\"; children live in the CR's namespace \"{owner_ns}\" unless managedResources declares `namespaces: [{ns}]`"
            ));
        }
        Some(ns)
    } else {
        if !managed.cluster_scoped {
            problems.push(format!(
                "{kind} is cluster-scoped; declare `clusterScoped: true` on its managedResources entry to allow it"
            ));
        }
        None
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut managed = managed.clone();
    managed.version = version;
    object.remove("status");
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        for field in SERVER_OWNED {
            meta.remove(field);
        }
        for field in ["labels", "annotations"] {
            if meta.get(field).is_some_and(Value::is_null) {
                meta.remove(field);
            }
        }
        match &namespace {
            Some(ns) => {
                meta.insert("namespace".into(), Value::String(ns.clone()));
            }
            None => {
                meta.remove("namespace");
            }
        }
    }
    Ok(DesiredChild {
        managed,
        name,
        namespace,
        object: Value::Object(object),
        force_conflict: None,
    })
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";

/// The label prefix that makes a ClusterRole part of an aggregated one (`view`, `edit`, `admin`
/// and any role aggregating on such labels).
const AGGREGATE_LABEL: &str = "rbac.authorization.k8s.io/aggregate-to-";

/// A ClusterRole child neither joins an aggregated role (its rules would reach everyone bound
/// to `view`, `edit` or `admin`, with no binding and no `bind`) nor gathers other roles' rules,
/// unless its managed resource sets `roleAggregation: true` (SPEC §11).
fn check_no_aggregation(object: &Map<String, Value>, name: &str, problems: &mut Vec<String>) {
    let labels = object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    for key in labels
        .into_iter()
        .flat_map(|l| l.keys())
        .filter(|k| k.starts_with(AGGREGATE_LABEL))
    {
        problems.push(format!(
            "ClusterRole {name} carries the label {key}, which adds its rules to an aggregated role (such as view, edit or admin) without any binding; refused unless its managedResources entry sets `roleAggregation: true`"
        ));
    }
    if object.get("aggregationRule").is_some_and(|v| !v.is_null()) {
        problems.push(format!(
            "ClusterRole {name} has an aggregationRule, which gathers the rules of other roles into it; refused unless its managedResources entry sets `roleAggregation: true`"
        ));
    }
}

/// A binding may name only a role its managed resource lists in `bindRoles` (SPEC §11): ork
/// holds `bind` on exactly those, and nothing else may be granted through it.
fn check_role_ref(
    object: &Map<String, Value>,
    kind: &str,
    name: &str,
    managed: &crate::ManagedType,
    policy: &Policy,
    problems: &mut Vec<String>,
) {
    let text = |key: &str| {
        object
            .get("roleRef")
            .and_then(|r| r.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(role_kind), Some(role)) = (text("kind"), text("name")) else {
        problems.push(format!("{kind} {name}: roleRef needs kind and name"));
        return;
    };
    if text("apiGroup").is_some_and(|g| g != RBAC_GROUP) {
        problems.push(format!(
            "{kind} {name}: roleRef.apiGroup must be {RBAC_GROUP}"
        ));
    }
    let declared = managed
        .bind_roles
        .iter()
        .any(|(k, n)| k == role_kind && n == role);
    if !declared && let Some(controller) = &policy.controller {
        problems.push(format!(
            "{kind} {name} binds {role_kind} {role}, which the controller does not allow; ork may bind only the roles a controller names: annotate {controller} with `{BIND_ROLES}: \"{role_kind}/{role}\"` (comma-separated for more, in its manifest) and regenerate the RBAC"
        ));
    } else if !declared {
        problems.push(format!(
            "{kind} {name} binds {role_kind} {role}, which the managed resource's bindRoles does not list; ork may bind only the roles declared there: add `bindRoles: [{{kind: {role_kind}, name: {role}}}]` to its managedResources entry (and regenerate the RBAC)"
        ));
    }
}

fn non_empty_text(
    object: &Map<String, Value>,
    key: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    match object.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => {
            problems.push(format!("{key} must be a non-empty string"));
            None
        }
    }
}

fn name_of(meta: &Map<String, Value>, problems: &mut Vec<String>) -> Option<String> {
    match meta.get("name") {
        Some(Value::String(n)) if !n.is_empty() => Some(n.clone()),
        None | Some(Value::Null | Value::String(_)) => {
            problems.push("metadata.name is required".into());
            None
        }
        Some(other) => {
            problems.push(format!(
                "metadata.name must be a string, got {}",
                short(other)
            ));
            None
        }
    }
}

/// `metadata.namespace` when given (`None` when absent, `null` or empty).
fn namespace_of(meta: &Map<String, Value>, problems: &mut Vec<String>) -> Option<String> {
    match meta.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => {
            if !is_dns_subdomain(s) {
                problems.push(format!(
                    "metadata.namespace {s:?} is not a valid namespace name"
                ));
            }
            Some(s.clone())
        }
        Some(other) => {
            problems.push(format!(
                "metadata.namespace must be a string, got {}",
                short(other)
            ));
            None
        }
    }
}

/// `metadata.labels` / `metadata.annotations`: absent, `null`, or a map of string to string
/// with valid keys (and, for labels, valid values).
fn check_string_map(meta: &Map<String, Value>, field: &str, problems: &mut Vec<String>) {
    let labels = field == "labels";
    let map = match meta.get(field) {
        None | Some(Value::Null) => return,
        Some(Value::Object(map)) => map,
        Some(other) => {
            problems.push(format!(
                "metadata.{field} must be a map of strings, got {}",
                short(other)
            ));
            return;
        }
    };
    let mut size = 0;
    for (key, value) in map {
        let Value::String(value) = value else {
            problems.push(format!(
                "metadata.{field}.{key:?} must be a string, got {}",
                short(value)
            ));
            continue;
        };
        size += key.len() + value.len();
        if let Err(e) = check_qualified_name(key) {
            problems.push(format!("metadata.{field}: {e}"));
        } else if labels && let Err(e) = check_label_value(key, value) {
            problems.push(format!("metadata.{field}: {e}"));
        }
    }
    if !labels && size > ANNOTATIONS_BYTES {
        problems.push(format!(
            "metadata.annotations are {size} bytes, more than Kubernetes' limit of {ANNOTATIONS_BYTES}"
        ));
    }
}
