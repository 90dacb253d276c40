//! Intent resources: `{type, fields}` turned into full objects in the CR's namespace (SPEC §2.2).

use serde_json::{Map, Value, json};

pub const INTENT_TYPES: [&str; 10] = [
    "deployment",
    "service",
    "configmap",
    "secret",
    "serviceaccount",
    "ingress",
    "statefulset",
    "job",
    "cronjob",
    "custom",
];

/// Reads typed fields out of an intent's flat map, remembering the first problem.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    allowed: &'static [&'static str],
}

impl<'a> Fields<'a> {
    fn check_known(&self, kind: &str) -> Result<(), String> {
        for key in self.map.keys() {
            if !self.allowed.contains(&key.as_str()) {
                return Err(format!(
                    "{kind} intent has no field \"{key}\" (fields: {})",
                    self.allowed.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn str(&self, key: &str) -> Result<Option<String>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(format!("field \"{key}\" must be a string, got {other}")),
        }
    }

    fn required_str(&self, key: &str) -> Result<String, String> {
        self.str(key)?
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("field \"{key}\" is required"))
    }

    fn int(&self, key: &str) -> Result<Option<i64>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| format!("field \"{key}\" must be an integer")),
            Some(Value::String(s)) => s
                .parse()
                .map(Some)
                .map_err(|_| format!("field \"{key}\" must be an integer, got \"{s}\"")),
            Some(other) => Err(format!("field \"{key}\" must be an integer, got {other}")),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!(
                "field \"{key}\" must be true or false, got {other}"
            )),
        }
    }

    fn string_map(&self, key: &str) -> Result<Option<Map<String, Value>>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => {
                let mut out = Map::new();
                for (k, v) in m {
                    let s = match v {
                        Value::String(s) => s.clone(),
                        Value::Number(_) | Value::Bool(_) => v.to_string(),
                        other => {
                            return Err(format!(
                                "field \"{key}.{k}\" must be a string, got {other}"
                            ));
                        }
                    };
                    out.insert(k.clone(), Value::String(s));
                }
                Ok(Some(out))
            }
            Some(other) => Err(format!(
                "field \"{key}\" must be a map of strings, got {other}"
            )),
        }
    }

    fn string_list(&self, key: &str) -> Result<Option<Vec<Value>>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
                Ok(Some(items.clone()))
            }
            Some(Value::String(s)) => Ok(Some(vec![Value::String(s.clone())])),
            Some(other) => Err(format!(
                "field \"{key}\" must be a list of strings, got {other}"
            )),
        }
    }

    fn object(&self, key: &str) -> Result<Option<Value>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
            Some(other) => Err(format!("field \"{key}\" must be an object, got {other}")),
        }
    }
}

/// Builds the full object for an intent.
///
/// # Errors
/// An unknown type, an unknown or mistyped field, a missing required field.
pub fn build_intent(
    kind: &str,
    fields: &Map<String, Value>,
    namespace: &str,
) -> Result<Value, String> {
    let allowed: &'static [&'static str] = match kind {
        "deployment" => &[
            "name",
            "image",
            "replicas",
            "port",
            "env",
            "command",
            "args",
            "labels",
            "annotations",
        ],
        "service" => &[
            "name",
            "port",
            "targetPort",
            "type",
            "selector",
            "labels",
            "annotations",
        ],
        "configmap" => &["name", "data", "labels", "annotations"],
        "secret" => &[
            "name",
            "data",
            "stringData",
            "secretType",
            "labels",
            "annotations",
        ],
        "serviceaccount" => &["name", "labels", "annotations"],
        "ingress" => &[
            "name",
            "host",
            "serviceName",
            "servicePort",
            "path",
            "pathType",
            "ingressClass",
            "labels",
            "annotations",
        ],
        "statefulset" => &[
            "name",
            "image",
            "replicas",
            "port",
            "serviceName",
            "env",
            "labels",
            "annotations",
        ],
        "job" => &[
            "name",
            "image",
            "command",
            "args",
            "backoffLimit",
            "labels",
            "annotations",
        ],
        "cronjob" => &[
            "name",
            "image",
            "schedule",
            "command",
            "args",
            "concurrencyPolicy",
            "suspend",
            "labels",
            "annotations",
        ],
        "custom" => &[
            "apiVersion",
            "kind",
            "name",
            "namespace",
            "spec",
            "data",
            "labels",
            "annotations",
        ],
        other => {
            return Err(format!(
                "unknown resource type \"{other}\" — use the full apiVersion/kind form or one of: {}",
                INTENT_TYPES.join(", ")
            ));
        }
    };
    let f = Fields {
        map: fields,
        allowed,
    };
    f.check_known(kind)?;
    let name = f.required_str("name")?;
    let mut labels = f.string_map("labels")?.unwrap_or_default();
    let annotations = f.string_map("annotations")?.unwrap_or_default();
    let mut meta = json!({"name": name, "namespace": namespace});
    let app_label = || {
        let mut m = Map::new();
        m.insert("app".into(), Value::String(name.clone()));
        m
    };
    let env = || -> Result<Option<Value>, String> {
        Ok(f.string_map("env")?.map(|m| {
            Value::Array(
                m.into_iter()
                    .map(|(k, v)| json!({"name": k, "value": v}))
                    .collect(),
            )
        }))
    };
    let container = || -> Result<Value, String> {
        let mut c = json!({"name": name, "image": f.required_str("image")?});
        if let Some(port) = f.int("port")? {
            c["ports"] = json!([{"containerPort": port, "protocol": "TCP"}]);
        }
        if let Some(env) = env()? {
            c["env"] = env;
        }
        if let Some(cmd) = f.string_list("command")? {
            c["command"] = Value::Array(cmd);
        }
        if allowed.contains(&"args")
            && let Some(args) = f.string_list("args")?
        {
            c["args"] = Value::Array(args);
        }
        Ok(c)
    };

    let (api_version, kind_name, body) = match kind {
        "deployment" | "statefulset" => {
            let selector = app_label();
            for (k, v) in &selector {
                labels.entry(k.clone()).or_insert(v.clone());
            }
            let replicas = f.int("replicas")?.filter(|r| *r > 0).unwrap_or(1);
            let mut spec = json!({
                "replicas": replicas,
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": selector},
                    "spec": {"containers": [container()?]}
                }
            });
            let k = if kind == "deployment" {
                "Deployment"
            } else {
                spec["serviceName"] =
                    Value::String(f.str("serviceName")?.unwrap_or_else(|| name.clone()));
                "StatefulSet"
            };
            ("apps/v1", k, json!({"spec": spec}))
        }
        "service" => {
            let port = f.int("port")?.ok_or("field \"port\" is required")?;
            let target = f.int("targetPort")?.unwrap_or(port);
            let selector = f.string_map("selector")?.unwrap_or_else(app_label);
            let mut spec = json!({
                "selector": selector,
                "ports": [{"name": "http", "port": port, "targetPort": target, "protocol": "TCP"}]
            });
            if let Some(t) = f.str("type")? {
                spec["type"] = Value::String(t);
            }
            ("v1", "Service", json!({"spec": spec}))
        }
        "configmap" => (
            "v1",
            "ConfigMap",
            json!({"data": f.string_map("data")?.unwrap_or_default()}),
        ),
        "secret" => {
            let mut body = json!({"type": f.str("secretType")?.unwrap_or_else(|| "Opaque".into())});
            if let Some(d) = f.string_map("data")? {
                body["data"] = Value::Object(d);
            }
            if let Some(d) = f.string_map("stringData")? {
                body["stringData"] = Value::Object(d);
            }
            ("v1", "Secret", body)
        }
        "serviceaccount" => ("v1", "ServiceAccount", json!({})),
        "ingress" => {
            let service = f.required_str("serviceName")?;
            let port = f.int("servicePort")?.unwrap_or(80);
            let mut rule = json!({"http": {"paths": [{
                "path": f.str("path")?.unwrap_or_else(|| "/".into()),
                "pathType": f.str("pathType")?.unwrap_or_else(|| "Prefix".into()),
                "backend": {"service": {"name": service, "port": {"number": port}}}
            }]}});
            if let Some(host) = f.str("host")? {
                rule["host"] = Value::String(host);
            }
            let mut spec = json!({"rules": [rule]});
            if let Some(class) = f.str("ingressClass")? {
                spec["ingressClassName"] = Value::String(class);
            }
            ("networking.k8s.io/v1", "Ingress", json!({"spec": spec}))
        }
        "job" | "cronjob" => {
            let mut job_spec = json!({"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [container()?]
            }}});
            if let Some(b) = f.int("backoffLimit")? {
                job_spec["backoffLimit"] = json!(b);
            }
            if kind == "job" {
                ("batch/v1", "Job", json!({"spec": job_spec}))
            } else {
                let mut spec = json!({
                    "schedule": f.required_str("schedule")?,
                    "jobTemplate": {"spec": job_spec}
                });
                if let Some(p) = f.str("concurrencyPolicy")? {
                    spec["concurrencyPolicy"] = Value::String(p);
                }
                if let Some(s) = f.bool("suspend")? {
                    spec["suspend"] = Value::Bool(s);
                }
                ("batch/v1beta1", "CronJob", json!({"spec": spec}))
            }
        }
        _ => {
            let api_version = f.required_str("apiVersion")?;
            let kind_name = f.required_str("kind")?;
            if let Some(ns) = f.str("namespace")? {
                meta["namespace"] = Value::String(ns);
            }
            let mut body = json!({});
            if let Some(spec) = f.object("spec")? {
                body["spec"] = spec;
            }
            if let Some(data) = f.object("data")? {
                body["data"] = data;
            }
            let mut obj = body;
            obj["apiVersion"] = Value::String(api_version);
            obj["kind"] = Value::String(kind_name);
            return Ok(finish(obj, meta, labels, annotations));
        }
    };
    let mut obj = body;
    obj["apiVersion"] = Value::String(api_version.into());
    obj["kind"] = Value::String(kind_name.into());
    Ok(finish(obj, meta, labels, annotations))
}

fn finish(
    mut obj: Value,
    mut meta: Value,
    labels: Map<String, Value>,
    annotations: Map<String, Value>,
) -> Value {
    if !labels.is_empty() {
        meta["labels"] = Value::Object(labels);
    }
    if !annotations.is_empty() {
        meta["annotations"] = Value::Object(annotations);
    }
    obj["metadata"] = meta;
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn deployment_intent_builds_a_runnable_deployment() {
        let d = build_intent(
            "deployment",
            &fields(json!({"name": "web", "image": "nginx", "replicas": 2, "port": 80, "env": {"A": "1"}})),
            "team-a",
        )
        .expect("valid intent");
        assert_eq!(d["apiVersion"], "apps/v1");
        assert_eq!(d["metadata"]["namespace"], "team-a");
        assert_eq!(d["spec"]["replicas"], 2);
        assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["ports"][0]["containerPort"], 80);
        assert_eq!(c["env"][0], json!({"name": "A", "value": "1"}));
    }

    #[test]
    fn service_intent_selects_the_app() {
        let s = build_intent(
            "service",
            &fields(json!({"name": "web", "port": 80, "targetPort": 8080})),
            "ns",
        )
        .expect("valid intent");
        assert_eq!(s["spec"]["selector"]["app"], "web");
        assert_eq!(s["spec"]["ports"][0]["targetPort"], 8080);
    }

    #[test]
    fn every_intent_type_builds_from_its_minimal_fields() {
        let minimal = [
            ("deployment", json!({"name": "a", "image": "i"})),
            ("service", json!({"name": "a", "port": 80})),
            ("configmap", json!({"name": "a", "data": {"k": "v"}})),
            ("secret", json!({"name": "a", "stringData": {"k": "v"}})),
            ("serviceaccount", json!({"name": "a"})),
            ("ingress", json!({"name": "a", "serviceName": "a"})),
            ("statefulset", json!({"name": "a", "image": "i"})),
            ("job", json!({"name": "a", "image": "i"})),
            (
                "cronjob",
                json!({"name": "a", "image": "i", "schedule": "* * * * *"}),
            ),
            (
                "custom",
                json!({"name": "a", "apiVersion": "x.io/v1", "kind": "X", "spec": {"a": 1}}),
            ),
        ];
        for (t, f) in minimal {
            let obj = build_intent(t, &fields(f), "ns").unwrap_or_else(|e| panic!("{t}: {e}"));
            assert_eq!(obj["metadata"]["name"], "a", "{t}");
        }
    }

    #[test]
    fn bad_intents_say_what_is_wrong() {
        let e =
            build_intent("deployment", &fields(json!({"name": "a"})), "ns").expect_err("no image");
        assert_eq!(e, "field \"image\" is required");
        let e = build_intent(
            "deployment",
            &fields(json!({"name": "a", "image": "i", "imag": 1})),
            "ns",
        )
        .expect_err("unknown field");
        assert!(e.contains("no field \"imag\""));
        let e = build_intent("daemonset", &fields(json!({"name": "a"})), "ns")
            .expect_err("unknown type");
        assert!(e.starts_with("unknown resource type \"daemonset\""));
        let e = build_intent("custom", &fields(json!({"name": "a", "kind": "X"})), "ns")
            .expect_err("apiVersion");
        assert_eq!(e, "field \"apiVersion\" is required");
    }
}
