//! Built-in Kubernetes kinds, so a managed resource may be named by `kind` alone (as Orkestra's
//! registry allows): group, preferred version, plural and scope.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltinKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
}

const fn k(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> BuiltinKind {
    BuiltinKind {
        group,
        version,
        kind,
        plural,
        namespaced,
    }
}

pub const BUILTIN: &[BuiltinKind] = &[
    k("", "v1", "ConfigMap", "configmaps", true),
    k("", "v1", "Secret", "secrets", true),
    k("", "v1", "Service", "services", true),
    k("", "v1", "ServiceAccount", "serviceaccounts", true),
    k("", "v1", "Pod", "pods", true),
    k(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
    ),
    k("", "v1", "PersistentVolume", "persistentvolumes", false),
    k("", "v1", "Endpoints", "endpoints", true),
    k("", "v1", "Event", "events", true),
    k("", "v1", "LimitRange", "limitranges", true),
    k("", "v1", "ResourceQuota", "resourcequotas", true),
    k(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        true,
    ),
    k("", "v1", "Namespace", "namespaces", false),
    k("", "v1", "Node", "nodes", false),
    k(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        true,
    ),
    k("", "v1", "PodTemplate", "podtemplates", true),
    k("apps", "v1", "Deployment", "deployments", true),
    k("apps", "v1", "StatefulSet", "statefulsets", true),
    k("apps", "v1", "DaemonSet", "daemonsets", true),
    k("apps", "v1", "ReplicaSet", "replicasets", true),
    k(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        true,
    ),
    k("batch", "v1", "Job", "jobs", true),
    k("batch", "v1", "CronJob", "cronjobs", true),
    k("networking.k8s.io", "v1", "Ingress", "ingresses", true),
    k(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
    ),
    k(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        false,
    ),
    k("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
    k(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
    ),
    k(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    k(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    k(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    ),
    k(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
    ),
    k(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
    ),
    k("coordination.k8s.io", "v1", "Lease", "leases", true),
    k(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
    ),
    k("events.k8s.io", "v1", "Event", "events", true),
    k(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        false,
    ),
    k(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
];

/// The built-in kind `kind` (in `group`, when given).
pub fn by_kind(kind: &str, group: Option<&str>) -> Option<&'static BuiltinKind> {
    BUILTIN
        .iter()
        .find(|b| b.kind == kind && group.is_none_or(|g| g == b.group))
}

/// The built-in kind served as `group/plural`.
pub fn by_plural(group: &str, plural: &str) -> Option<&'static BuiltinKind> {
    BUILTIN
        .iter()
        .find(|b| b.group == group && b.plural == plural)
}

/// The plurals of the core group (`""`, `v1`).
pub fn core_plurals() -> impl Iterator<Item = &'static str> + Clone {
    BUILTIN
        .iter()
        .filter(|b| b.group.is_empty())
        .map(|b| b.plural)
}

/// The plural of `known` that `plural` most likely means: the one it is the singular of
/// (`resourcequota` → `resourcequotas`, `ingress` → `ingresses`), else the closest by spelling.
/// `None` when none is near. Used offline for the core group and against discovery.
pub fn plural_meant<'a>(
    plural: &str,
    known: impl IntoIterator<Item = &'a str> + Clone,
) -> Option<&'a str> {
    let plural = plural.to_ascii_lowercase();
    known
        .clone()
        .into_iter()
        .find(|p| {
            p.strip_suffix('s') == Some(plural.as_str())
                || p.strip_suffix("es") == Some(plural.as_str())
        })
        .or_else(|| crate::suggest::closest(&plural, known))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plural_meant_is_the_plural_form_else_the_nearest_spelling() {
        assert_eq!(
            plural_meant("resourcequota", core_plurals()),
            Some("resourcequotas")
        );
        assert_eq!(
            plural_meant("confgmaps", core_plurals()),
            Some("configmaps")
        );
        assert_eq!(
            plural_meant("ingress", ["ingresses", "ingressclasses"]),
            Some("ingresses")
        );
        assert_eq!(plural_meant("banana", core_plurals()), None);
    }

    #[test]
    fn kinds_resolve_to_group_and_plural() {
        let d = by_kind("Deployment", None).expect("built in");
        assert_eq!((d.group, d.plural), ("apps", "deployments"));
        assert!(by_kind("Service", Some("apps")).is_none());
        assert_eq!(
            by_kind("Event", Some("events.k8s.io")).map(|b| b.group),
            Some("events.k8s.io")
        );
        assert_eq!(by_plural("", "services").map(|b| b.kind), Some("Service"));
        assert!(by_kind("Database", None).is_none());
    }
}
