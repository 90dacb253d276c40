//! Tests of whole answers through `decide` and `lint`, sharing one policy.

mod answers;
mod children;
mod intents;
mod limits;
mod schema;

use serde_json::Value;

use crate::{Decision, Lint, ManagedType, OwnerRef, Policy, ResponseError, decide, lint};

/// A WebApp `team/hello`; ork lives in `ork-system`. Declared: Deployment, Service,
/// StatefulSet, Job, CronJob (v1beta1 and v1 served), Ingress, Secret, ServiceAccount,
/// ClusterRole (not allowed cluster-scoped) and WebApp itself. Not declared: ConfigMap.
pub(crate) fn policy() -> Policy {
    let mut cluster_role = ManagedType::namespaced(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        "v1",
        &["v1"],
    );
    cluster_role.namespaced = false;
    Policy::new(
        OwnerRef {
            api_version: "demo.ork.dev/v1".into(),
            kind: "WebApp".into(),
            name: "hello".into(),
            namespace: Some("team".into()),
        },
        vec![
            ManagedType::namespaced("apps", "Deployment", "deployments", "v1", &["v1"]),
            ManagedType::namespaced("", "Service", "services", "v1", &["v1"]),
            ManagedType::namespaced("apps", "StatefulSet", "statefulsets", "v1", &["v1"]),
            ManagedType::namespaced("batch", "Job", "jobs", "v1", &["v1"]),
            ManagedType::namespaced(
                "batch",
                "CronJob",
                "cronjobs",
                "v1beta1",
                &["v1beta1", "v1"],
            ),
            ManagedType::namespaced("networking.k8s.io", "Ingress", "ingresses", "v1", &["v1"]),
            ManagedType::namespaced("", "Secret", "secrets", "v1", &["v1"]),
            ManagedType::namespaced("", "ServiceAccount", "serviceaccounts", "v1", &["v1"]),
            cluster_role,
            ManagedType::namespaced("demo.ork.dev", "WebApp", "webapps", "v1", &["v1"]),
        ],
        "ork-system",
    )
}

fn decide_json(v: Value) -> Result<Decision, ResponseError> {
    decide(v.to_string().as_bytes(), &policy())
}

fn decide_with(policy: &Policy, v: Value) -> Result<Decision, ResponseError> {
    decide(v.to_string().as_bytes(), policy)
}

fn lint_json(v: Value) -> Lint {
    lint(v.to_string().as_bytes(), &policy())
}

/// The error message `decide` gives for `v`.
fn refusal(v: Value) -> String {
    match decide_json(v) {
        Ok(d) => panic!("accepted: {d:?}"),
        Err(e) => e.to_string(),
    }
}
