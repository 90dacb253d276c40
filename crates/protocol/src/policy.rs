//! What an answer may ask for: the CR it is for, the declared child types, ork's namespace and
//! the size limits (SPEC §2.3, §11).

use std::cmp::Ordering;

/// In [`ManagedType::namespaces`]: children of the type may live in any namespace (a
/// Metacontroller parent that is cluster-scoped, SPEC §15); ork's own still needs naming.
pub const ANY_NAMESPACE: &str = "*";

/// A child type the entry may manage, resolved through discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedType {
    pub group: String,
    /// The version the API server prefers for this group/plural.
    pub version: String,
    /// Every version the API server serves for this group/plural. `version` counts as served
    /// even when this list is empty or omits it.
    pub served_versions: Vec<String>,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Namespaces other than the CR's that children of this type may live in (and the only way
    /// to allow ork's own namespace). [`ANY_NAMESPACE`] allows every namespace but ork's own.
    pub namespaces: Vec<String>,
    pub cluster_scoped: bool,
    /// For RoleBindings and ClusterRoleBindings: the `(kind, name)` of each role their
    /// `roleRef` may name (the Katalog's `bindRoles`); any other is refused (SPEC §11).
    pub bind_roles: Vec<(String, String)>,
    /// For Secrets: whether the service may return Secrets of type
    /// `kubernetes.io/service-account-token` (the Katalog's `serviceAccountTokens`).
    pub service_account_tokens: bool,
    /// For ClusterRoles: whether children may aggregate (`aggregate-to-*` labels,
    /// `aggregationRule`; the Katalog's `roleAggregation`).
    pub role_aggregation: bool,
}

impl ManagedType {
    /// A namespaced type whose children stay in the CR's namespace: `version` preferred,
    /// `served` every version the API server serves.
    pub fn namespaced(
        group: &str,
        kind: &str,
        plural: &str,
        version: &str,
        served: &[&str],
    ) -> ManagedType {
        ManagedType {
            group: group.into(),
            version: version.into(),
            served_versions: served.iter().map(|s| (*s).to_string()).collect(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: true,
            namespaces: Vec::new(),
            cluster_scoped: false,
            bind_roles: Vec::new(),
            service_account_tokens: false,
            role_aggregation: false,
        }
    }

    /// `group/version` (`version` alone for the core group) of the preferred version.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// True when the API server serves `version` for this type.
    pub fn serves(&self, version: &str) -> bool {
        self.version == version || self.served_versions.iter().any(|v| v == version)
    }

    /// The version ork builds intents in: the highest served version by Kubernetes' version
    /// priority (GA before beta before alpha, then the higher number), which is the version the
    /// API server itself prefers. A CronJob is `batch/v1` wherever `v1` is served, even when
    /// `version` names `v1beta1`.
    pub fn build_version(&self) -> &str {
        self.served_versions
            .iter()
            .map(String::as_str)
            .fold(self.version.as_str(), |best, v| {
                if version_priority(v, best) == Ordering::Greater {
                    v
                } else {
                    best
                }
            })
    }
}

/// `group/version`, or `version` alone for the core group.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Kubernetes' version priority: `v2` > `v1` > `v1beta2` > `v1beta1` > `v1alpha1` > anything
/// not shaped like a Kubernetes version (those compare alphabetically, the first one higher).
pub(crate) fn version_priority(a: &str, b: &str) -> Ordering {
    match (kube_version(a), kube_version(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

/// `(stability, major, minor)` of `v<major>[(alpha|beta)<minor>]`: GA is stability 2, beta 1,
/// alpha 0.
fn kube_version(v: &str) -> Option<(u8, u64, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (major, rest) = rest.split_at(digits);
    if major.is_empty() || major.starts_with('0') {
        return None;
    }
    let major: u64 = major.parse().ok()?;
    if rest.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, minor) = if let Some(m) = rest.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = rest.strip_prefix("alpha") {
        (0, m)
    } else {
        return None;
    };
    if minor.is_empty() || minor.starts_with('0') || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stability, major, minor.parse().ok()?))
}

/// The CR a response is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// `None` for a cluster-scoped CR.
    pub namespace: Option<String>,
}

impl OwnerRef {
    /// The API group of the CR's type (empty for the core group).
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }

    /// The namespace namespaced children default to: the CR's, or `default` for a
    /// cluster-scoped CR (as Orkestra does).
    pub fn child_namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("default")
    }
}

/// Caps on one answer, each refused with a clear error when exceeded (SPEC §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Entries in `resources`.
    pub children: usize,
    /// Entries in `conditions`.
    pub conditions: usize,
    /// Entries in `events`.
    pub events: usize,
    /// The `status` map, serialised as compact JSON, in bytes.
    pub status_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            children: 1000,
            conditions: 100,
            events: 20,
            status_bytes: 256 * 1024,
        }
    }
}

/// What a response may ask for.
#[derive(Clone, Debug)]
pub struct Policy {
    pub owner: OwnerRef,
    pub managed: Vec<ManagedType>,
    /// ork's own namespace: off limits to children unless a managed resource declares it in
    /// `namespaces:` (even when the CR lives there).
    pub ork_namespace: String,
    pub limits: Limits,
    /// The service may report the `Ready` condition itself (a Metacontroller hook's status
    /// conditions, SPEC §15); ork's own `Ready` then shows a failure only.
    pub service_ready: bool,
    /// The Metacontroller controller the answer is for (`CompositeController web`): a refusal
    /// then names the controller's annotation that allows it, not a Katalog field.
    pub controller: Option<String>,
}

impl Policy {
    /// A policy with the default [`Limits`].
    pub fn new(
        owner: OwnerRef,
        managed: Vec<ManagedType>,
        ork_namespace: impl Into<String>,
    ) -> Self {
        Policy {
            owner,
            managed,
            ork_namespace: ork_namespace.into(),
            limits: Limits::default(),
            service_ready: false,
            controller: None,
        }
    }

    /// The declared managed type of `group`/`kind`.
    pub(crate) fn managed_type(&self, group: &str, kind: &str) -> Option<&ManagedType> {
        self.managed
            .iter()
            .find(|m| m.group == group && m.kind == kind)
    }
}

/// The "not declared" refusal, shared by full objects and intents.
/// Why a child of `group`/`kind` (at `version` when known) is refused, with the Katalog line
/// that allows it.
pub(crate) fn not_declared(group: &str, kind: &str, version: Option<&str>) -> String {
    // The built-in kinds an intent builds all have a v1.
    let version = version.unwrap_or("v1");
    let api_version = api_version(group, version);
    format!(
        "{kind} ({}) is not declared in reconcile.remote.managedResources — add it to the Katalog before the service can create it: `- {{apiVersion: {api_version}, kind: {kind}}}` under managedResources",
        if group.is_empty() { "core" } else { group }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cronjob(version: &str, served: &[&str]) -> ManagedType {
        ManagedType {
            group: "batch".into(),
            version: version.into(),
            served_versions: served.iter().map(|s| s.to_string()).collect(),
            kind: "CronJob".into(),
            plural: "cronjobs".into(),
            namespaced: true,
            namespaces: Vec::new(),
            cluster_scoped: false,
            bind_roles: Vec::new(),
            service_account_tokens: false,
            role_aggregation: false,
        }
    }

    #[test]
    fn intents_are_built_in_the_highest_served_version() {
        assert_eq!(cronjob("v1beta1", &["v1beta1", "v1"]).build_version(), "v1");
        assert_eq!(cronjob("v1", &["v1beta1", "v1"]).build_version(), "v1");
        assert_eq!(cronjob("v1beta1", &["v1beta1"]).build_version(), "v1beta1");
        assert_eq!(cronjob("v1beta1", &[]).build_version(), "v1beta1");
    }

    #[test]
    fn the_preferred_version_is_served_even_when_not_listed() {
        let t = cronjob("v1beta1", &[]);
        assert!(t.serves("v1beta1"));
        assert!(!t.serves("v1"));
    }

    #[test]
    fn kubernetes_version_priority_orders_ga_beta_alpha_then_other_names() {
        let mut versions = vec![
            "v1alpha1",
            "foo",
            "v2",
            "v1beta1",
            "v1",
            "v1beta2",
            "v11alpha2",
            "bar",
            "v10",
        ];
        versions.sort_by(|a, b| version_priority(b, a));
        assert_eq!(
            versions,
            [
                "v10",
                "v2",
                "v1",
                "v1beta2",
                "v1beta1",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo"
            ]
        );
    }

    #[test]
    fn the_owner_knows_its_group_and_where_its_children_go() {
        let mut owner = OwnerRef {
            api_version: "demo.ork.dev/v1".into(),
            kind: "WebApp".into(),
            name: "a".into(),
            namespace: None,
        };
        assert_eq!(owner.group(), "demo.ork.dev");
        assert_eq!(owner.child_namespace(), "default");
        owner.api_version = "v1".into();
        owner.namespace = Some("team".into());
        assert_eq!(owner.group(), "");
        assert_eq!(owner.child_namespace(), "team");
    }
}
