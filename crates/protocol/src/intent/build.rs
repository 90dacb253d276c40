//! The object Orkestra builds for each intent (its `pkg/resources/*` builders): the same labels,
//! selectors, defaults and pod templates, so objects Orkestra created can be adopted (selectors
//! are immutable) and a `service` intent routes to the CR's pods.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Container, Intent, IntentSpec};
use crate::policy::{ManagedType, OwnerRef, api_version, not_declared};

/// Orkestra's label naming the CR an object belongs to; workload selectors and the `service`
/// intent's selector use it.
const OWNER_LABEL: &str = "orkestra-owner";
const MANAGED_LABEL: &str = "orkestra.orkspace.io/managed";

impl Intent {
    /// The full object for this intent, for the CR `owner`, in the CR's namespace (`default`
    /// for a cluster-scoped CR; a custom intent may name another). Every object is labelled
    /// `orkestra.orkspace.io/managed: "true"` and `orkestra-owner: <CR name>` before the
    /// intent's own labels; workloads select and label their pods with both. The API version
    /// is the highest one the API server serves for the declared type (a custom intent keeps
    /// its own, checked like a full object afterwards).
    ///
    /// # Errors
    /// The intent's type is not in `managed`, or the server serves an Ingress version ork
    /// cannot build.
    pub fn build(&self, owner: &OwnerRef, managed: &[ManagedType]) -> Result<Value, String> {
        let version = match &self.spec {
            IntentSpec::Custom { .. } => String::new(),
            _ => {
                let (group, kind) = self.group_kind();
                managed
                    .iter()
                    .find(|m| m.group == group && m.kind == kind)
                    .ok_or_else(|| not_declared(group, kind, None))?
                    .build_version()
                    .to_string()
            }
        };
        let pod_labels = owner_labels(owner);
        let pod = |container: &Container, restart: Option<&str>| {
            let mut spec = json!({"containers": [container_json(&self.name, container)]});
            if let Some(policy) = restart {
                spec["restartPolicy"] = json!(policy);
            }
            json!({"metadata": {"labels": pod_labels}, "spec": spec})
        };
        let selector = json!({"matchLabels": {OWNER_LABEL: owner.name}});
        let (api_version, kind, body) = match &self.spec {
            IntentSpec::Deployment {
                container,
                replicas,
            } => (
                api_version("apps", &version),
                "Deployment",
                json!({"spec": {
                    "replicas": replicas,
                    "selector": selector,
                    "template": pod(container, None)
                }}),
            ),
            IntentSpec::StatefulSet {
                container,
                replicas,
                service_name,
            } => (
                api_version("apps", &version),
                "StatefulSet",
                json!({"spec": {
                    "replicas": replicas,
                    "serviceName": service_name,
                    "selector": selector,
                    "template": pod(container, None),
                    "updateStrategy": {"type": "OnDelete"},
                    "podManagementPolicy": "Parallel"
                }}),
            ),
            IntentSpec::Job {
                container,
                backoff_limit,
            } => (
                api_version("batch", &version),
                "Job",
                json!({"spec": {
                    "backoffLimit": backoff_limit,
                    "template": pod(container, Some("OnFailure"))
                }}),
            ),
            IntentSpec::CronJob {
                container,
                schedule,
                concurrency_policy,
                suspend,
            } => {
                let mut spec = json!({
                    "schedule": schedule,
                    "suspend": suspend,
                    "jobTemplate": {
                        "metadata": {"labels": pod_labels},
                        "spec": {"template": pod(container, Some("OnFailure"))}
                    }
                });
                if let Some(policy) = concurrency_policy {
                    spec["concurrencyPolicy"] = json!(policy);
                }
                (
                    api_version("batch", &version),
                    "CronJob",
                    json!({ "spec": spec }),
                )
            }
            IntentSpec::Service {
                port,
                target_port,
                service_type,
                selector,
            } => {
                let mut selector = selector.clone();
                selector.insert(OWNER_LABEL.into(), owner.name.clone());
                (
                    api_version("", &version),
                    "Service",
                    json!({"spec": {
                        "type": service_type,
                        "selector": selector,
                        "ports": [{"port": port, "targetPort": target_port, "protocol": "TCP"}]
                    }}),
                )
            }
            IntentSpec::ConfigMap { data } => {
                let mut body = json!({});
                if let Some(data) = data {
                    body["data"] = json!(data);
                }
                (api_version("", &version), "ConfigMap", body)
            }
            IntentSpec::Secret {
                data,
                string_data,
                secret_type,
            } => {
                let mut body = json!({ "type": secret_type });
                if let Some(data) = data {
                    body["data"] = json!(data);
                }
                if let Some(data) = string_data {
                    body["stringData"] = json!(data);
                }
                (api_version("", &version), "Secret", body)
            }
            IntentSpec::ServiceAccount => (api_version("", &version), "ServiceAccount", json!({})),
            IntentSpec::Ingress {
                host,
                service_name,
                service_port,
                path,
                path_type,
                ingress_class,
            } => {
                let backend = match version.as_str() {
                    "v1" => {
                        json!({"service": {"name": service_name, "port": {"number": service_port}}})
                    }
                    "v1beta1" => json!({"serviceName": service_name, "servicePort": service_port}),
                    other => {
                        return Err(format!(
                            "ork builds Ingress intents as networking.k8s.io/v1 or v1beta1, and the API server serves {other}: use the full form"
                        ));
                    }
                };
                let mut rule = json!({"http": {"paths": [
                    {"path": path, "pathType": path_type, "backend": backend}
                ]}});
                if let Some(host) = host {
                    rule["host"] = json!(host);
                }
                let mut spec = json!({ "rules": [rule] });
                if let Some(class) = ingress_class {
                    spec["ingressClassName"] = json!(class);
                }
                (
                    api_version("networking.k8s.io", &version),
                    "Ingress",
                    json!({ "spec": spec }),
                )
            }
            IntentSpec::Custom {
                api_version,
                kind,
                namespace,
                spec,
                data,
            } => {
                let mut body = json!({});
                if let Some(spec) = spec {
                    body["spec"] = Value::Object(spec.clone());
                }
                if let Some(data) = data {
                    body["data"] = Value::Object(data.clone());
                }
                let namespace = namespace.as_deref().unwrap_or(owner.child_namespace());
                return Ok(self.finish(body, api_version, kind, owner, namespace));
            }
        };
        Ok(self.finish(body, &api_version, kind, owner, owner.child_namespace()))
    }

    /// Adds `apiVersion`, `kind` and the metadata: Orkestra's labels, then the intent's own
    /// labels and annotations (which win, as in Orkestra).
    fn finish(
        &self,
        mut body: Value,
        api_version: &str,
        kind: &str,
        owner: &OwnerRef,
        namespace: &str,
    ) -> Value {
        let mut labels = owner_labels(owner);
        labels.extend(self.labels.clone());
        let mut metadata = json!({"name": self.name, "namespace": namespace, "labels": labels});
        if !self.annotations.is_empty() {
            metadata["annotations"] = json!(self.annotations);
        }
        if let Some(obj) = body.as_object_mut() {
            obj.insert("apiVersion".into(), json!(api_version));
            obj.insert("kind".into(), json!(kind));
            obj.insert("metadata".into(), metadata);
        }
        body
    }
}

fn owner_labels(owner: &OwnerRef) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_LABEL.to_string(), "true".to_string()),
        (OWNER_LABEL.to_string(), owner.name.clone()),
    ])
}

fn container_json(name: &str, c: &Container) -> Value {
    let mut v = Map::new();
    v.insert("name".into(), json!(name));
    v.insert("image".into(), json!(c.image));
    if let Some(port) = c.port {
        v.insert(
            "ports".into(),
            json!([{"containerPort": port, "protocol": "TCP"}]),
        );
    }
    if !c.env.is_empty() {
        let env: Vec<Value> = c
            .env
            .iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect();
        v.insert("env".into(), Value::Array(env));
    }
    if let Some(command) = &c.command {
        v.insert("command".into(), json!(command));
    }
    if let Some(args) = &c.args {
        v.insert("args".into(), json!(args));
    }
    Value::Object(v)
}
