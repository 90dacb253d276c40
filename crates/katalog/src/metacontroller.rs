//! Metacontroller's `CompositeController` (`metacontroller.k8s.io/v1alpha1`, SPEC §15) as ork
//! runs it: read from the cluster or a file, checked field by field (what ork cannot do is
//! refused with the reason, never ignored), and compiled into a Katalog entry
//! ([`Composite::entry`]) that carries the hook settings the reconcile reads
//! ([`CrdEntry::metacontroller`]). Every guarantee of an entry (whole-answer checks, backoff,
//! health, metrics, inspector, shards) then holds for it unchanged.

use std::collections::BTreeMap;
use std::sync::Arc;

use ork_protocol::metacontroller::HookVersion;
use serde_json::{Map, Value, json};

use crate::model::CrdEntry;
pub use crate::model::composite::{
    BIND_ROLES, CHILDREN_IN_ORK_NAMESPACE, ChildRule, Composite, ControllerGrants, Decoration,
    Hook, RELATED_RESOURCES, RELATED_SECRET_VALUES, RelatedAccess, RelatedRefused, Selector,
    UpdateMethod,
};

/// The API group and version of Metacontroller's objects.
pub const API_VERSION: &str = "metacontroller.k8s.io/v1alpha1";

/// Why a controller object cannot run, with the field it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {controller}: {field}: {message}")]
pub struct ControllerError {
    pub kind: String,
    pub controller: String,
    pub field: String,
    pub message: String,
}

/// Metacontroller's default hook timeout.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads a controller object (as JSON): a `CompositeController` is one entry, a
/// `DecoratorController` one per resource type it decorates.
///
/// # Errors
/// Another kind, a missing or misshapen field, or one ork refuses, with the field and the reason.
pub fn parse_controller(object: &Value) -> Result<Vec<Composite>, ControllerError> {
    match object.get("kind").and_then(Value::as_str) {
        Some("DecoratorController") => Composite::parse_decorator(object),
        _ => Composite::parse(object).map(|c| vec![c]),
    }
}

/// The controllers as Katalog entries, for what needs no API server: the RBAC they need (each
/// parent and child type cluster-wide, as Metacontroller runs them). The parents' kinds are
/// left empty (only discovery knows them), so these entries are not for running.
///
/// # Errors
/// An entry that does not compile.
pub fn entries_for_rbac(controllers: &[Composite]) -> Result<BTreeMap<String, CrdEntry>, String> {
    controllers
        .iter()
        .map(|c| {
            let mut entry = Arc::new(c.clone()).entry("", true, "")?;
            // Only discovery knows the parent's scope: granted as for a cluster-scoped one
            // (cluster-wide, and the key of the marks its namespaced children would carry).
            entry.namespaced = false;
            Ok((c.entry_name.clone(), entry))
        })
        .collect()
}

/// What both controller kinds share, read from `spec`.
struct Common {
    name: String,
    version: HookVersion,
    sync: Hook,
    finalize: Option<Hook>,
    customize: Option<Hook>,
    children: Vec<ChildRule>,
    resync_period: Option<std::time::Duration>,
    related: RelatedAccess,
    grants: ControllerGrants,
}

/// The controller's [`RelatedAccess`] from its annotations.
fn related_access(
    object: &Value,
    fail: impl Fn(&str, String) -> ControllerError,
) -> Result<RelatedAccess, ControllerError> {
    let annotation = |key: &str| {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
    };
    let field = |key: &str| format!("metadata.annotations[{key:?}]");
    let mut access = RelatedAccess::default();
    match annotation(RELATED_RESOURCES) {
        None => {}
        Some(Value::String(list)) => {
            for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                match item.rsplit_once('/') {
                    Some((version, resource)) if !version.is_empty() && !resource.is_empty() => {
                        access
                            .extra
                            .push((version.to_string(), resource.to_string()));
                    }
                    _ => {
                        return Err(fail(
                            &field(RELATED_RESOURCES),
                            format!(
                                "{item:?} is not apiVersion/resource (for example v1/secrets or apps/v1/deployments)"
                            ),
                        ));
                    }
                }
            }
        }
        Some(_) => {
            return Err(fail(&field(RELATED_RESOURCES), "must be a string".into()));
        }
    }
    match annotation(RELATED_SECRET_VALUES) {
        None => {}
        Some(Value::String(v)) if v == "true" || v == "false" => {
            access.secret_values = v == "true";
        }
        Some(other) => {
            return Err(fail(
                &field(RELATED_SECRET_VALUES),
                format!("must be \"true\" or \"false\", got {other}"),
            ));
        }
    }
    Ok(access)
}

/// The controller's [`ControllerGrants`] from its annotations.
fn grants(
    object: &Value,
    fail: impl Fn(&str, String) -> ControllerError,
) -> Result<ControllerGrants, ControllerError> {
    let annotation = |key: &str| {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
    };
    let field = |key: &str| format!("metadata.annotations[{key:?}]");
    let mut grants = ControllerGrants::default();
    match annotation(BIND_ROLES) {
        None => {}
        Some(Value::String(list)) => {
            for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                match item.split_once('/') {
                    Some((kind @ ("ClusterRole" | "Role"), name))
                        if !name.is_empty() && !name.contains(['/', '*']) =>
                    {
                        grants.bind_roles.push(crate::model::BindRole {
                            kind: kind.to_string(),
                            name: name.to_string(),
                        });
                    }
                    _ => {
                        return Err(fail(
                            &field(BIND_ROLES),
                            format!(
                                "{item:?} is not ClusterRole/<name> or Role/<name> (a literal name, for example ClusterRole/view)"
                            ),
                        ));
                    }
                }
            }
        }
        Some(_) => return Err(fail(&field(BIND_ROLES), "must be a string".into())),
    }
    match annotation(CHILDREN_IN_ORK_NAMESPACE) {
        None => {}
        Some(Value::String(v)) if v == "true" || v == "false" => grants.ork_namespace = v == "true",
        Some(other) => {
            return Err(fail(
                &field(CHILDREN_IN_ORK_NAMESPACE),
                format!("must be \"true\" or \"false\", got {other}"),
            ));
        }
    }
    Ok(grants)
}

/// Reports a problem of the controller `name` (of `kind`) at `field`.
fn failure(kind: &str, name: &str, field: &str, message: String) -> ControllerError {
    ControllerError {
        kind: kind.to_string(),
        controller: if name.is_empty() {
            "(no name)".into()
        } else {
            name.to_string()
        },
        field: field.to_string(),
        message,
    }
}

/// The name, hooks, child rules (under `children_key`) and resync of a controller of `kind`.
fn common(
    object: &Value,
    kind: &str,
    fields: &[&str],
    children_key: &str,
) -> Result<(Common, Map<String, Value>), ControllerError> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let fail = |field: &str, message: String| failure(kind, &name, field, message);
    if name.is_empty() {
        return Err(fail("metadata.name", "is required".into()));
    }
    let found = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if found != kind {
        return Err(fail(
            "kind",
            format!(
                "{found:?} is not a Metacontroller controller (CompositeController, DecoratorController)"
            ),
        ));
    }
    let spec = object
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .ok_or_else(|| fail("spec", "is required".into()))?;
    known(&spec, fields)
        .map_err(|k| fail(&format!("spec.{k}"), format!("is not a {kind} field")))?;
    let mut children = Vec::new();
    for (i, c) in spec
        .get(children_key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let at = format!("spec.{children_key}[{i}]");
        let c = c
            .as_object()
            .ok_or_else(|| fail(&at, "must be an object".into()))?;
        known(c, &["apiVersion", "resource", "updateStrategy"]).map_err(|k| {
            fail(
                &format!("{at}.{k}"),
                format!("is not a {children_key} field"),
            )
        })?;
        let method = match c.pointer_str("updateStrategy", "method") {
            None | Some("" | "OnDelete") => UpdateMethod::OnDelete,
            Some("Recreate") => UpdateMethod::Recreate,
            Some("InPlace") => UpdateMethod::InPlace,
            Some(m @ ("RollingRecreate" | "RollingInPlace")) => {
                return Err(fail(
                    &format!("{at}.updateStrategy.method"),
                    format!(
                        "{m} needs Metacontroller's ControllerRevisions, which ork does not support; use {} (the same change, all children at once)",
                        m.trim_start_matches("Rolling")
                    ),
                ));
            }
            Some(other) => {
                return Err(fail(
                    &format!("{at}.updateStrategy.method"),
                    format!("unknown method {other:?} (OnDelete, Recreate or InPlace)"),
                ));
            }
        };
        if c.get("updateStrategy")
            .and_then(|s| s.get("statusChecks"))
            .is_some_and(|v| !v.is_null())
        {
            return Err(fail(
                &format!("{at}.updateStrategy.statusChecks"),
                "only applies to rolling updates, which ork does not support".into(),
            ));
        }
        children.push(ChildRule {
            api_version: text(c, "apiVersion")
                .ok_or_else(|| fail(&format!("{at}.apiVersion"), "is required".into()))?,
            resource: text(c, "resource")
                .ok_or_else(|| fail(&format!("{at}.resource"), "is required".into()))?,
            method,
        });
    }
    let hooks = spec
        .get("hooks")
        .and_then(Value::as_object)
        .ok_or_else(|| fail("spec.hooks", "needs a sync hook".into()))?;
    for k in ["preUpdateChild", "postUpdateChild"] {
        if hooks.get(k).is_some_and(|v| !v.is_null()) {
            return Err(fail(
                &format!("spec.hooks.{k}"),
                "belongs to rolling updates, which ork does not support".into(),
            ));
        }
    }
    known(
        hooks,
        &[
            "sync",
            "finalize",
            "customize",
            "preUpdateChild",
            "postUpdateChild",
        ],
    )
    .map_err(|k| fail(&format!("spec.hooks.{k}"), "is not a hook".into()))?;
    let hook = |k: &str| -> Result<Option<(Hook, HookVersion)>, ControllerError> {
        match hooks.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(h) => parse_hook(h)
                .map(Some)
                .map_err(|(field, message)| fail(&format!("spec.hooks.{k}.{field}"), message)),
        }
    };
    let (sync, version) =
        hook("sync")?.ok_or_else(|| fail("spec.hooks.sync", "is required".into()))?;
    let finalize = hook("finalize")?.map(|(h, _)| h);
    let customize = hook("customize")?.map(|(h, _)| h);
    let resync_period = match spec.get("resyncPeriodSeconds") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(0) => None,
            Some(s) if s <= 365 * 24 * 3600 => Some(std::time::Duration::from_secs(s)),
            _ => {
                return Err(fail(
                    "spec.resyncPeriodSeconds",
                    format!("{v} is not a whole number of seconds up to a year"),
                ));
            }
        },
    };
    let related = related_access(object, fail)?;
    let grants = grants(object, fail)?;
    let common = Common {
        name,
        version,
        sync,
        finalize,
        customize,
        children,
        resync_period,
        related,
        grants,
    };
    Ok((common, spec))
}

fn text(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

impl Composite {
    /// Reads a `CompositeController` object (as JSON).
    ///
    /// # Errors
    /// A missing or misshapen field, or one ork refuses (rolling update strategies, revision
    /// history, child update hooks, label selector expressions), each with the reason.
    pub fn parse(object: &Value) -> Result<Composite, ControllerError> {
        const KIND: &str = "CompositeController";
        let (common, spec) = common(
            object,
            KIND,
            &[
                "parentResource",
                "childResources",
                "hooks",
                "resyncPeriodSeconds",
                "generateSelector",
            ],
            "childResources",
        )?;
        let fail = |field: &str, message: String| failure(KIND, &common.name, field, message);
        let parent = spec
            .get("parentResource")
            .and_then(Value::as_object)
            .ok_or_else(|| fail("spec.parentResource", "is required".into()))?;
        if let Err(k) = known(
            parent,
            &[
                "apiVersion",
                "resource",
                "labelSelector",
                "ignoreStatusChanges",
                "revisionHistory",
            ],
        ) {
            return Err(fail(
                &format!("spec.parentResource.{k}"),
                "is not a parentResource field".into(),
            ));
        }
        if parent.get("revisionHistory").is_some_and(|v| !v.is_null()) {
            return Err(fail(
                "spec.parentResource.revisionHistory",
                "rolling updates through ControllerRevisions are not supported by ork; remove it (children are then updated by their own updateStrategy)".into(),
            ));
        }
        let required = |k: &str| {
            text(parent, k)
                .ok_or_else(|| fail(&format!("spec.parentResource.{k}"), "is required".into()))
        };
        let parent_api_version = required("apiVersion")?;
        let parent_resource = required("resource")?;
        let parent_labels = match parent.get("labelSelector") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(sel)) => {
                if sel.get("matchExpressions").is_some_and(|e| !e.is_null()) {
                    return Err(fail(
                        "spec.parentResource.labelSelector.matchExpressions",
                        "is not supported by ork yet; use matchLabels".into(),
                    ));
                }
                string_map(sel.get("matchLabels"))
                    .map_err(|m| fail("spec.parentResource.labelSelector.matchLabels", m))?
            }
            Some(_) => {
                return Err(fail(
                    "spec.parentResource.labelSelector",
                    "must be an object".into(),
                ));
            }
        };
        Ok(Composite {
            controller: object.clone(),
            entry_name: common.name.clone(),
            name: common.name,
            version: common.version,
            sync: common.sync,
            finalize: common.finalize,
            customize: common.customize,
            parent_api_version,
            parent_resource,
            parent_labels,
            ignore_status_changes: parent
                .get("ignoreStatusChanges")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            children: common.children,
            generate_selector: spec
                .get("generateSelector")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            resync_period: common.resync_period,
            decorator: None,
            related: common.related,
            grants: common.grants,
        })
    }

    /// Reads a `DecoratorController` object (as JSON): one entry per resource rule, each
    /// decorating the objects of its type that its label and annotation selectors select.
    ///
    /// # Errors
    /// A missing or misshapen field, or one ork refuses, with the reason.
    pub fn parse_decorator(object: &Value) -> Result<Vec<Composite>, ControllerError> {
        const KIND: &str = "DecoratorController";
        let (common, spec) = common(
            object,
            KIND,
            &["resources", "attachments", "hooks", "resyncPeriodSeconds"],
            "attachments",
        )?;
        let fail = |field: &str, message: String| failure(KIND, &common.name, field, message);
        let rules = spec
            .get("resources")
            .and_then(Value::as_array)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| fail("spec.resources", "needs at least one resource".into()))?;
        let mut out = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let at = format!("spec.resources[{i}]");
            let r = r
                .as_object()
                .ok_or_else(|| fail(&at, "must be an object".into()))?;
            known(
                r,
                &[
                    "apiVersion",
                    "resource",
                    "labelSelector",
                    "annotationSelector",
                ],
            )
            .map_err(|k| fail(&format!("{at}.{k}"), "is not a resources field".into()))?;
            let required = |k: &str| {
                text(r, k).ok_or_else(|| fail(&format!("{at}.{k}"), "is required".into()))
            };
            let labels = Selector::from_value(r.get("labelSelector"), "matchLabels")
                .map_err(|m| fail(&format!("{at}.labelSelector"), m))?;
            let annotations = Selector::from_value(r.get("annotationSelector"), "matchAnnotations")
                .map_err(|m| fail(&format!("{at}.annotationSelector"), m))?;
            let resource = required("resource")?;
            out.push(Composite {
                controller: object.clone(),
                entry_name: if rules.len() == 1 {
                    common.name.clone()
                } else {
                    format!("{}-{resource}", common.name)
                },
                name: common.name.clone(),
                version: common.version,
                sync: common.sync.clone(),
                finalize: common.finalize.clone(),
                customize: common.customize.clone(),
                parent_api_version: required("apiVersion")?,
                // The watch selects by labels; expressions and annotations are checked per
                // object. With a finalize hook every object is watched: one whose labels stop
                // matching must still be seen, to be finalized (as Metacontroller does).
                parent_labels: if common.finalize.is_some() {
                    BTreeMap::new()
                } else {
                    labels.equals.clone()
                },
                parent_resource: resource,
                ignore_status_changes: true,
                children: common.children.clone(),
                generate_selector: false,
                resync_period: common.resync_period,
                decorator: Some(Decoration {
                    labels,
                    annotations,
                }),
                related: common.related.clone(),
                grants: common.grants.clone(),
            });
        }
        Ok(out)
    }

    /// The entry ork runs for this controller; `parent_kind` and `parent_namespaced` are what
    /// discovery says of the parent type. Children may live anywhere when the parent is
    /// cluster-scoped (as Metacontroller allows), else in the parent's namespace only.
    ///
    /// # Errors
    /// The entry does not load (a hook URL that is not a valid endpoint).
    pub fn entry(
        self: &Arc<Self>,
        parent_kind: &str,
        parent_namespaced: bool,
        ork_namespace: &str,
    ) -> Result<CrdEntry, String> {
        let managed: Vec<Value> = self
            .children
            .iter()
            .map(|c| {
                let (group, version) = c
                    .api_version
                    .split_once('/')
                    .unwrap_or(("", c.api_version.as_str()));
                let mut m = json!({"group": group, "version": version, "plural": c.resource});
                let mut namespaces: Vec<&str> = Vec::new();
                if !parent_namespaced {
                    namespaces.push(ork_protocol::ANY_NAMESPACE);
                    m["clusterScoped"] = json!(true);
                }
                if self.grants.ork_namespace && !ork_namespace.is_empty() {
                    namespaces.push(ork_namespace);
                }
                if !namespaces.is_empty() {
                    m["namespaces"] = json!(namespaces);
                }
                let binding = group == crate::model::RBAC_GROUP
                    && matches!(c.resource.as_str(), "rolebindings" | "clusterrolebindings");
                if binding && !self.grants.bind_roles.is_empty() {
                    m["bindRoles"] = json!(
                        self.grants
                            .bind_roles
                            .iter()
                            .filter(|r| c.resource == "rolebindings" || r.kind == "ClusterRole")
                            .map(|r| json!({"kind": r.kind, "name": r.name}))
                            .collect::<Vec<_>>()
                    );
                }
                m
            })
            .collect();
        let mut reconcile = json!({
            "default": false,
            "remote": {
                "endpoint": self.sync.url,
                "timeout": format!("{}ms", self.sync.timeout.as_millis()),
                "managedResources": managed,
                "finalize": self.finalize.is_some(),
                "maxResponseBytes": 8 * 1024 * 1024,
            }
        });
        // As Metacontroller: a periodic sync only with `resyncPeriodSeconds`.
        reconcile["resync"] = json!(format!(
            "{}s",
            self.resync_period.map_or(0, |p| p.as_secs())
        ));
        let entry = json!({
            "description": format!(
                "Metacontroller {} {}",
                if self.decorator.is_some() { "DecoratorController" } else { "CompositeController" },
                self.name
            ),
            "apiTypes": {"group": self.parent_group(), "version": self.parent_version(),
                "kind": parent_kind, "plural": self.parent_resource},
            "namespaced": parent_namespaced,
            "labelSelector": self.parent_labels,
            "operatorBox": {"reconcile": reconcile},
        });
        let mut entry: CrdEntry =
            serde_json::from_value(entry).map_err(|e| format!("compiling the entry: {e}"))?;
        entry.metacontroller = Some(self.clone());
        Ok(entry)
    }
}

/// The hook of `h`: `webhook.url` (or `service` + `path`), `webhook.timeout`, and `version`.
fn parse_hook(h: &Value) -> Result<(Hook, HookVersion), (String, String)> {
    let h = h
        .as_object()
        .ok_or_else(|| (String::new(), "must be an object".to_string()))?;
    if let Err(k) = known(h, &["webhook", "version"]) {
        return Err((k, "is not a hook field".into()));
    }
    let version = match h.get("version").and_then(Value::as_str) {
        None => HookVersion::V1,
        Some(v) => HookVersion::parse(v)
            .ok_or_else(|| ("version".to_string(), format!("{v:?} is neither v1 nor v2")))?,
    };
    let w = h
        .get("webhook")
        .and_then(Value::as_object)
        .ok_or_else(|| ("webhook".to_string(), "is required".to_string()))?;
    if let Err(k) = known(
        w,
        &[
            "url",
            "timeout",
            "path",
            "service",
            "etag",
            "caBundle",
            "responseUIDCheck",
        ],
    ) {
        return Err((format!("webhook.{k}"), "is not a webhook field".into()));
    }
    for k in ["etag", "caBundle"] {
        if w.get(k).is_some_and(|v| !v.is_null()) {
            return Err((
                format!("webhook.{k}"),
                format!(
                    "is not supported by ork yet; remove it ({})",
                    match k {
                        "etag" => "ork already skips writes when nothing changed",
                        _ => "an https hook is checked against the system's CAs",
                    }
                ),
            ));
        }
    }
    let url = match (w.get("url").and_then(Value::as_str), w.get("service")) {
        (Some(url), None) => url.to_string(),
        (None, Some(Value::Object(s))) => {
            let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
            let namespace = s
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if name.is_empty() || namespace.is_empty() {
                return Err(("webhook.service".into(), "needs name and namespace".into()));
            }
            let protocol = s.get("protocol").and_then(Value::as_str).unwrap_or("http");
            let port = s.get("port").and_then(Value::as_u64).unwrap_or(80);
            let path = w.get("path").and_then(Value::as_str).unwrap_or("/");
            format!("{protocol}://{name}.{namespace}:{port}{path}")
        }
        _ => {
            return Err((
                "webhook".into(),
                "needs exactly one of url and service".into(),
            ));
        }
    };
    let timeout = match w.get("timeout").and_then(Value::as_str) {
        None => DEFAULT_TIMEOUT,
        Some(t) => ork_protocol::parse_go_duration(t)
            .ok()
            .and_then(|d| d.to_std())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                (
                    "webhook.timeout".to_string(),
                    format!("{t:?} is not a duration such as 10s"),
                )
            })?,
    };
    Ok((Hook { url, timeout }, version))
}

/// `Err(key)` for the first key of `m` not in `fields`.
fn known(m: &Map<String, Value>, fields: &[&str]) -> Result<(), String> {
    match m.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(k) => Err(k.clone()),
        None => Ok(()),
    }
}

fn string_map(v: Option<&Value>) -> Result<BTreeMap<String, String>, String> {
    let Some(Value::Object(m)) = v else {
        return Ok(BTreeMap::new());
    };
    m.iter()
        .map(|(k, v)| {
            v.as_str()
                .map(|s| (k.clone(), s.to_string()))
                .ok_or_else(|| format!("{k}: values are strings"))
        })
        .collect()
}

trait PointerStr {
    fn pointer_str(&self, a: &str, b: &str) -> Option<&str>;
}

impl PointerStr for Map<String, Value> {
    fn pointer_str(&self, a: &str, b: &str) -> Option<&str> {
        self.get(a)?.get(b)?.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controller(spec: Value) -> Value {
        json!({"apiVersion": API_VERSION, "kind": "CompositeController",
            "metadata": {"name": "agg"}, "spec": spec})
    }

    fn minimal() -> Value {
        json!({"parentResource": {"apiVersion": "ex.io/v1", "resource": "things"},
            "childResources": [{"apiVersion": "v1", "resource": "configmaps",
                "updateStrategy": {"method": "InPlace"}}],
            "hooks": {"sync": {"version": "v2", "webhook": {"url": "http://127.0.0.1:1/sync", "timeout": "5s"}}},
            "generateSelector": true, "resyncPeriodSeconds": 30})
    }

    #[test]
    fn a_controller_compiles_into_an_entry_with_its_hooks() {
        let c = Arc::new(Composite::parse(&controller(minimal())).expect("parses"));
        assert_eq!(c.version, HookVersion::V2);
        assert_eq!(c.sync.timeout, std::time::Duration::from_secs(5));
        assert_eq!(c.method("", "configmaps"), UpdateMethod::InPlace);
        assert_eq!(c.method("apps", "deployments"), UpdateMethod::OnDelete);
        assert_eq!(c.finalizer(), "metacontroller.io/compositecontroller-agg");
        let e = c.entry("Thing", true, "ork").expect("entry");
        assert_eq!(e.api_types.kind, "Thing");
        assert_eq!(e.api_types.group, "ex.io");
        let remote = e.operator_box.reconcile.remote.as_ref().expect("remote");
        assert_eq!(remote.managed_resources[0].plural, "configmaps");
        assert!(e.metacontroller.is_some());
    }

    /// The Katalog-only rules, opted into on the controller object: the roles its bindings
    /// may name (a ClusterRoleBinding only ClusterRoles), and ork's namespace for children.
    #[test]
    fn a_controller_opts_into_bind_roles_and_ork_s_namespace_by_annotation() {
        let mut spec = minimal();
        spec["childResources"] = json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "resource": "rolebindings"},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "resource": "clusterrolebindings"},
            {"apiVersion": "v1", "resource": "configmaps"}]);
        let managed = |object: &Value| {
            let c = Arc::new(Composite::parse(object).expect("parses"));
            let e = c.entry("Thing", false, "ork-system").expect("entry");
            let remote = e.operator_box.reconcile.remote.expect("remote");
            remote.managed_resources
        };
        let plain = managed(&controller(spec.clone()));
        assert!(plain.iter().all(|m| m.bind_roles.is_empty()));
        assert_eq!(plain[2].namespaces, [ork_protocol::ANY_NAMESPACE]);

        let mut object = controller(spec);
        object["metadata"]["annotations"] = json!({
            BIND_ROLES: "ClusterRole/view, Role/editor",
            CHILDREN_IN_ORK_NAMESPACE: "true"});
        let opted = managed(&object);
        let roles = |i: usize| -> Vec<String> {
            opted[i]
                .bind_roles
                .iter()
                .map(|r| format!("{}/{}", r.kind, r.name))
                .collect()
        };
        assert_eq!(roles(0), ["ClusterRole/view", "Role/editor"]);
        assert_eq!(
            roles(1),
            ["ClusterRole/view"],
            "a ClusterRoleBinding binds ClusterRoles"
        );
        assert!(opted[2].bind_roles.is_empty());
        assert_eq!(
            opted[2].namespaces,
            [ork_protocol::ANY_NAMESPACE, "ork-system"]
        );

        for (key, value, says) in [
            (BIND_ROLES, json!("view"), "ClusterRole/<name>"),
            (BIND_ROLES, json!("ClusterRole/*"), "a literal name"),
            (
                CHILDREN_IN_ORK_NAMESPACE,
                json!("yes"),
                "\"true\" or \"false\"",
            ),
        ] {
            let mut object = controller(minimal());
            object["metadata"]["annotations"] = json!({key: value});
            let e = Composite::parse(&object).expect_err("a bad annotation");
            assert_eq!(e.field, format!("metadata.annotations[{key:?}]"));
            assert!(e.message.contains(says), "{}", e.message);
        }
    }

    #[test]
    fn a_customize_hook_may_relate_the_controllers_types_and_those_it_declares() {
        let c = Composite::parse(&controller(minimal())).expect("parses");
        for (version, resource) in [
            ("ex.io/v1", "things"),
            ("v1", "configmaps"),
            ("v1", "namespaces"),
        ] {
            assert!(
                c.may_relate(version, resource).is_ok(),
                "{version}/{resource}"
            );
        }
        let refused = c.may_relate("v1", "secrets").expect_err("not declared");
        assert!(refused.0.contains("\"v1/secrets\""), "{}", refused.0);
        assert!(!c.related_secret_values());

        let mut object = controller(minimal());
        object["metadata"]["annotations"] = json!({
            RELATED_RESOURCES: "v1/secrets, apps/v1/deployments",
            RELATED_SECRET_VALUES: "true"});
        let c = Composite::parse(&object).expect("parses");
        assert!(c.may_relate("v1", "secrets").is_ok());
        assert!(c.may_relate("apps/v1", "deployments").is_ok());
        assert!(c.may_relate("apps/v1", "statefulsets").is_err());
        assert!(c.related_secret_values());

        for (key, value) in [
            (RELATED_RESOURCES, json!("secrets")),
            (RELATED_SECRET_VALUES, json!("yes")),
        ] {
            let mut object = controller(minimal());
            object["metadata"]["annotations"] = json!({key: value});
            let e = Composite::parse(&object).expect_err("a bad annotation");
            assert_eq!(
                e.field,
                format!("metadata.annotations[{key:?}]"),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn what_ork_cannot_do_is_refused_with_the_field() {
        for (edit, field) in [
            (
                json!({"childResources": [{"apiVersion": "v1", "resource": "pods",
                "updateStrategy": {"method": "RollingRecreate"}}]}),
                "spec.childResources[0].updateStrategy.method",
            ),
            (
                json!({"parentResource": {"apiVersion": "ex.io/v1", "resource": "things",
                "revisionHistory": {"fieldPaths": ["spec"]}}}),
                "spec.parentResource.revisionHistory",
            ),
            (
                json!({"hooks": {"sync": {"webhook": {}}}}),
                "spec.hooks.sync.webhook",
            ),
            (
                json!({"hooks": {"sync": {"version": "v3", "webhook": {"url": "http://x"}}}}),
                "spec.hooks.sync.version",
            ),
            (
                json!({"parentResource": {"apiVersion": "ex.io/v1", "resource": "things",
                "labelSelector": {"matchExpressions": [{}]}}}),
                "spec.parentResource.labelSelector.matchExpressions",
            ),
            (json!({"replicas": 3}), "spec.replicas"),
        ] {
            let mut spec = minimal();
            for (k, v) in edit.as_object().expect("object") {
                spec[k] = v.clone();
            }
            let e = Composite::parse(&controller(spec)).expect_err("refused");
            assert_eq!(e.field, field, "{e}");
        }
    }

    #[test]
    fn a_decorator_is_one_entry_per_resource_with_its_selectors() {
        let object = json!({"apiVersion": API_VERSION, "kind": "DecoratorController",
            "metadata": {"name": "dec"},
            "spec": {"resources": [
                {"apiVersion": "v1", "resource": "services", "labelSelector": {"matchLabels": {"a": "1"}},
                 "annotationSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}},
                {"apiVersion": "apps/v1", "resource": "deployments"}],
             "attachments": [{"apiVersion": "v1", "resource": "configmaps"}],
             "hooks": {"sync": {"webhook": {"url": "http://127.0.0.1:1/sync"}}}}});
        let entries = parse_controller(&object).expect("parses");
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].entry_name, "dec-services");
        assert_eq!(entries[1].parent_api_version, "apps/v1");
        assert_eq!(
            entries[0].finalizer(),
            "metacontroller.io/decoratorcontroller-dec"
        );
        let d = entries[0].decorator.as_ref().expect("decorator");
        assert!(d.labels.matches(|k| (k == "a").then_some("1")));
        assert!(!d.annotations.matches(|k| (k == "skip").then_some("yes")));
        assert_eq!(
            entries[0].parent_labels.get("a").map(String::as_str),
            Some("1")
        );
        // With a finalize hook the watch takes every object: one whose labels stop matching
        // is still seen, and finalized; the labels are checked per object.
        let mut finalizing = object.clone();
        finalizing["spec"]["hooks"]["finalize"] =
            json!({"webhook": {"url": "http://127.0.0.1:1/f"}});
        let entries = parse_controller(&finalizing).expect("parses");
        assert!(entries[0].parent_labels.is_empty());
        let d = entries[0].decorator.as_ref().expect("decorator");
        assert!(!d.labels.matches(|k| (k == "a").then_some("2")));
        let bad = json!({"apiVersion": API_VERSION, "kind": "DecoratorController",
            "metadata": {"name": "dec"}, "spec": {"resources": [],
            "hooks": {"sync": {"webhook": {"url": "http://x"}}}}});
        let e = parse_controller(&bad).expect_err("no resources");
        assert_eq!(e.field, "spec.resources");
    }

    #[test]
    fn a_service_hook_becomes_its_cluster_url() {
        let mut spec = minimal();
        spec["hooks"]["sync"]["webhook"] = json!({"service": {"name": "hooks",
            "namespace": "tools", "port": 8080}, "path": "/sync"});
        let c = Composite::parse(&controller(spec)).expect("parses");
        assert_eq!(c.sync.url, "http://hooks.tools:8080/sync");
        assert_eq!(c.sync.timeout, DEFAULT_TIMEOUT);
    }
}
