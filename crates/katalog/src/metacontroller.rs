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
pub use crate::model::composite::{ChildRule, Composite, Hook, UpdateMethod};

/// The API group and version of Metacontroller's objects.
pub const API_VERSION: &str = "metacontroller.k8s.io/v1alpha1";

/// Why a controller object cannot run, with the field it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CompositeController {controller}: {field}: {message}")]
pub struct ControllerError {
    pub controller: String,
    pub field: String,
    pub message: String,
}

/// Metacontroller's default hook timeout.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Composite {
    /// Reads a `CompositeController` object (as JSON).
    ///
    /// # Errors
    /// A missing or misshapen field, or one ork refuses (rolling update strategies, revision
    /// history, child update hooks, label selector expressions), each with the reason.
    pub fn parse(object: &Value) -> Result<Composite, ControllerError> {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let fail = |field: &str, message: String| ControllerError {
            controller: if name.is_empty() {
                "(no name)".into()
            } else {
                name.clone()
            },
            field: field.to_string(),
            message,
        };
        if name.is_empty() {
            return Err(fail("metadata.name", "is required".into()));
        }
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind != "CompositeController" {
            return Err(fail(
                "kind",
                format!("{kind:?} is not run by ork yet (only CompositeController)"),
            ));
        }
        let spec = object
            .get("spec")
            .and_then(Value::as_object)
            .ok_or_else(|| fail("spec", "is required".into()))?;
        known(
            spec,
            &[
                "parentResource",
                "childResources",
                "hooks",
                "resyncPeriodSeconds",
                "generateSelector",
            ],
        )
        .map_err(|k| {
            fail(
                &format!("spec.{k}"),
                "is not a CompositeController field".into(),
            )
        })?;
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
        let text = |m: &Map<String, Value>, k: &str, at: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| fail(&format!("{at}.{k}"), "is required".into()))
        };
        let parent_api_version = text(parent, "apiVersion", "spec.parentResource")?;
        let parent_resource = text(parent, "resource", "spec.parentResource")?;
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
        let ignore_status_changes = parent
            .get("ignoreStatusChanges")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut children = Vec::new();
        for (i, c) in spec
            .get("childResources")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let at = format!("spec.childResources[{i}]");
            let c = c
                .as_object()
                .ok_or_else(|| fail(&at, "must be an object".into()))?;
            known(c, &["apiVersion", "resource", "updateStrategy"])
                .map_err(|k| fail(&format!("{at}.{k}"), "is not a childResources field".into()))?;
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
                api_version: text(c, "apiVersion", &at)?,
                resource: text(c, "resource", &at)?,
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
        Ok(Composite {
            controller: object.clone(),
            version,
            sync,
            finalize,
            customize,
            parent_api_version,
            parent_resource,
            parent_labels,
            ignore_status_changes,
            children,
            generate_selector: spec
                .get("generateSelector")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            resync_period,
            name,
        })
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
    ) -> Result<CrdEntry, String> {
        let managed: Vec<Value> = self
            .children
            .iter()
            .map(|c| {
                let (group, version) = c
                    .api_version
                    .split_once('/')
                    .unwrap_or(("", c.api_version.as_str()));
                let mut m = json!({"group": group, "version": version, "plural": c.resource,
                    "adopt": true});
                if !parent_namespaced {
                    m["namespaces"] = json!([ork_protocol::ANY_NAMESPACE]);
                    m["clusterScoped"] = json!(true);
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
        if let Some(period) = self.resync_period {
            reconcile["resync"] = json!(format!("{}s", period.as_secs()));
        }
        let entry = json!({
            "description": format!("Metacontroller CompositeController {}", self.name),
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
        let e = c.entry("Thing", true).expect("entry");
        assert_eq!(e.api_types.kind, "Thing");
        assert_eq!(e.api_types.group, "ex.io");
        let remote = e.operator_box.reconcile.remote.as_ref().expect("remote");
        assert_eq!(remote.managed_resources[0].plural, "configmaps");
        assert!(e.metacontroller.is_some());
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
    fn a_service_hook_becomes_its_cluster_url() {
        let mut spec = minimal();
        spec["hooks"]["sync"]["webhook"] = json!({"service": {"name": "hooks",
            "namespace": "tools", "port": 8080}, "path": "/sync"});
        let c = Composite::parse(&controller(spec)).expect("parses");
        assert_eq!(c.sync.url, "http://hooks.tools:8080/sync");
        assert_eq!(c.sync.timeout, DEFAULT_TIMEOUT);
    }
}
