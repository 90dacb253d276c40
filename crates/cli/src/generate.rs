//! `ork generate rbac|bundle -k FILE`: least-privilege RBAC derived from the Katalog, and a
//! bundle that runs ork in a cluster with `kubectl apply -f` alone. Output is deterministic.

use std::path::Path;
use std::process::ExitCode;

use ork_katalog::{Katalog, load_file};
use ork_kube::permissions::{Rule, rules};
use serde_json::{Value, json};

/// What the generated objects are called and where they live.
#[derive(Debug, Clone)]
pub struct Names {
    pub namespace: String,
    pub name: String,
}

pub fn rbac(katalog_path: &Path, names: &Names) -> ExitCode {
    match load_file(katalog_path) {
        Ok(k) => print_documents(&rbac_objects(&k, names)),
        Err(problems) => {
            eprintln!("{problems}");
            ExitCode::FAILURE
        }
    }
}

pub fn bundle(katalog_path: &Path, names: &Names, image: &str) -> ExitCode {
    let (katalog, text) = match (
        load_file(katalog_path),
        std::fs::read_to_string(katalog_path),
    ) {
        (Ok(k), Ok(t)) => (k, t),
        (Err(problems), _) => {
            eprintln!("{problems}");
            return ExitCode::FAILURE;
        }
        (_, Err(e)) => {
            eprintln!("{}: {e}", katalog_path.display());
            return ExitCode::FAILURE;
        }
    };
    print_documents(&bundle_objects(&katalog, &text, names, image))
}

fn print_documents(docs: &[Value]) -> ExitCode {
    let mut out = String::new();
    for doc in docs {
        match serde_saphyr::to_string(doc) {
            Ok(yaml) => {
                out.push_str("---\n");
                out.push_str(&yaml);
            }
            Err(e) => {
                eprintln!("ork: cannot write YAML: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    crate::output::emit(&out);
    ExitCode::SUCCESS
}

fn labels() -> Value {
    json!({"app.kubernetes.io/name": "ork", "app.kubernetes.io/managed-by": "ork-generate"})
}

/// ServiceAccount, ClusterRole (the Katalog's rules, nothing wider) and ClusterRoleBinding, plus
/// a Role and RoleBinding for what is needed in ork's own namespace only (the Lease).
pub fn rbac_objects(katalog: &Katalog, names: &Names) -> Vec<Value> {
    let (local, cluster): (Vec<Rule>, Vec<Rule>) = rules(katalog, &names.namespace, true)
        .into_iter()
        .partition(|r| r.namespace.is_some());
    let rules: Vec<Value> = cluster.iter().map(rule_json).collect();
    let local: Vec<Value> = local.iter().map(rule_json).collect();
    let subjects =
        json!([{"kind": "ServiceAccount", "name": names.name, "namespace": names.namespace}]);
    vec![
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": names.name, "namespace": names.namespace, "labels": labels()},
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": names.name, "labels": labels()},
            "rules": rules,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": names.name, "labels": labels()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": names.name},
            "subjects": subjects,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": names.name, "namespace": names.namespace, "labels": labels()},
            "rules": local,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": names.name, "namespace": names.namespace, "labels": labels()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.name},
            "subjects": subjects,
        }),
    ]
}

fn rule_json(rule: &Rule) -> Value {
    let mut v = json!({
        "apiGroups": [rule.api_group],
        "resources": rule.resources,
        "verbs": rule.verbs,
    });
    if !rule.resource_names.is_empty() {
        v["resourceNames"] = json!(rule.resource_names);
    }
    v
}

/// Namespace, RBAC, the Katalog as a ConfigMap, and a Deployment running `ork run` with leader
/// election, probes, resource requests and a locked-down security context.
pub fn bundle_objects(
    katalog: &Katalog,
    katalog_text: &str,
    names: &Names,
    image: &str,
) -> Vec<Value> {
    let ns = &names.namespace;
    let mut docs = vec![json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": ns, "labels": labels()},
    })];
    docs.extend(rbac_objects(katalog, names));
    docs.push(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{}-katalog", names.name), "namespace": ns, "labels": labels()},
        "data": {"katalog.yaml": katalog_text},
    }));
    let probe = |path: &str| json!({"httpGet": {"path": path, "port": "http"}, "periodSeconds": 10, "failureThreshold": 3});
    docs.push(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": names.name, "namespace": ns, "labels": labels()},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "ork"}},
            "template": {
                "metadata": {"labels": labels()},
                "spec": {
                    "serviceAccountName": names.name,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {
                        "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": "ork",
                        "image": image,
                        "args": [
                            "run", "-k", "/etc/ork/katalog.yaml", "--leader-elect",
                            "--http-addr=0.0.0.0:8080", "--log-json", "--shutdown-grace=20s",
                        ],
                        "env": [
                            {"name": "ORK_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        ],
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                        "livenessProbe": probe("/healthz"),
                        "readinessProbe": probe("/readyz"),
                        "resources": {
                            "requests": {"cpu": "50m", "memory": "64Mi"},
                            "limits": {"memory": "256Mi"},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "volumeMounts": [{"name": "katalog", "mountPath": "/etc/ork", "readOnly": true}],
                    }],
                    "volumes": [{"name": "katalog", "configMap": {"name": format!("{}-katalog", names.name)}}],
                },
            },
        },
    }));
    docs
}
