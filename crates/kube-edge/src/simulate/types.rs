//! Managed types without an API server: the Katalog's own `kind`/`version`, a built-in type, or
//! a CRD passed with `--crd`.

use kube::discovery::ApiResource;
use ork_katalog::{Katalog, ManagedResource};
use ork_protocol::ManagedType;
use serde_json::Value;

use crate::discovery::ChildType;

/// A managed type ork cannot know without an API server.
#[derive(Debug, thiserror::Error)]
#[error(
    "managed resource {group}/{plural}: declare `kind` and `version` in the Katalog or pass its CRD with --crd to simulate it"
)]
pub struct UnknownType {
    group: String,
    plural: String,
}

/// Core and common built-in types at the versions current Kubernetes serves, for managed
/// resources declared without `kind`/`version` (a `--crd` or the Katalog's own version wins).
const BUILTIN: &[(&str, &str, &str, &str, bool)] = &[
    // group, plural, version, kind, namespaced
    ("", "configmaps", "v1", "ConfigMap", true),
    ("", "secrets", "v1", "Secret", true),
    ("", "services", "v1", "Service", true),
    ("", "serviceaccounts", "v1", "ServiceAccount", true),
    (
        "",
        "persistentvolumeclaims",
        "v1",
        "PersistentVolumeClaim",
        true,
    ),
    ("", "namespaces", "v1", "Namespace", false),
    ("apps", "deployments", "v1", "Deployment", true),
    ("apps", "statefulsets", "v1", "StatefulSet", true),
    ("apps", "daemonsets", "v1", "DaemonSet", true),
    ("batch", "jobs", "v1", "Job", true),
    ("batch", "cronjobs", "v1", "CronJob", true),
    ("networking.k8s.io", "ingresses", "v1", "Ingress", true),
    (
        "policy",
        "poddisruptionbudgets",
        "v1",
        "PodDisruptionBudget",
        true,
    ),
    ("rbac.authorization.k8s.io", "roles", "v1", "Role", true),
    (
        "rbac.authorization.k8s.io",
        "rolebindings",
        "v1",
        "RoleBinding",
        true,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        "v1",
        "ClusterRole",
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        "v1",
        "ClusterRoleBinding",
        false,
    ),
];

/// Resolves a managed resource without an API server: the Katalog's own `kind`/`version`, a
/// built-in type, or a `--crd` file.
pub(super) fn offline_type(
    m: &ManagedResource,
    katalog: &Katalog,
    crds: &[Value],
) -> Result<ChildType, UnknownType> {
    let builtin = BUILTIN
        .iter()
        .find(|(g, p, ..)| *g == m.group && *p == m.plural);
    let crd = crds.iter().find(|c| {
        c["spec"]["group"].as_str() == Some(m.group.as_str())
            && c["spec"]["names"]["plural"].as_str() == Some(m.plural.as_str())
    });
    let entry = katalog
        .spec
        .crds
        .values()
        .find(|e| e.api_types.group == m.group && e.api_types.plural == m.plural);
    let kind = m
        .kind
        .clone()
        .or_else(|| builtin.map(|b| b.3.to_string()))
        .or_else(|| crd.and_then(|c| c["spec"]["names"]["kind"].as_str().map(str::to_string)))
        .or_else(|| entry.map(|e| e.api_types.kind.clone()));
    let version = m
        .version
        .clone()
        .or_else(|| builtin.map(|b| b.2.to_string()))
        .or_else(|| {
            crd.and_then(|c| {
                c["spec"]["versions"][0]["name"]
                    .as_str()
                    .map(str::to_string)
            })
        })
        .or_else(|| entry.map(|e| e.api_types.version.clone()));
    let (Some(kind), Some(version)) = (kind, version) else {
        return Err(UnknownType {
            group: if m.group.is_empty() {
                "core".into()
            } else {
                m.group.clone()
            },
            plural: m.plural.clone(),
        });
    };
    let namespaced = builtin.map(|b| b.4).unwrap_or_else(|| {
        crd.and_then(|c| c["spec"]["scope"].as_str())
            .map_or_else(|| entry.is_none_or(|e| e.namespaced), |s| s == "Namespaced")
    }) && !m.cluster_scoped;
    let api_version = if m.group.is_empty() {
        version.clone()
    } else {
        format!("{}/{version}", m.group)
    };
    Ok(ChildType {
        managed: ManagedType {
            group: m.group.clone(),
            version: version.clone(),
            kind: kind.clone(),
            plural: m.plural.clone(),
            namespaced,
            namespaces: m.namespaces.clone(),
            cluster_scoped: m.cluster_scoped,
            served_versions: vec![version.clone()],
        },
        resource: ApiResource {
            group: m.group.clone(),
            version,
            api_version,
            kind,
            plural: m.plural.clone(),
        },
    })
}
