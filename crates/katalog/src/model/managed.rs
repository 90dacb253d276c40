//! `remote.managedResources`: a child type as written (`ManagedResourceSpec`) and as ork uses
//! it (`ManagedResource`, with group and plural derived), and the RBAC roles a binding type may
//! bind.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::kinds;

/// A child type the service may return, given as Orkestra allows: `group`/`plural`, `kind`
/// (built-in kinds resolve to their group and plural) or `apiVersion` + `kind`.
///
/// After loading, `group` is always known. `plural` is empty only for a `kind` that is neither
/// built in nor an entry of the Katalog: discovery resolves it by kind ([`Self::needs_discovery`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedResource {
    pub group: String,
    pub version: Option<String>,
    pub plural: String,
    pub kind: Option<String>,
    /// `apiVersion` as written.
    pub api_version: Option<String>,
    /// Orkestra's per-resource `name`: checked to be a literal name, not otherwise used by ork.
    pub name: Option<String>,
    /// Orkestra's per-resource `namespace` (also added to `namespaces`).
    pub namespace: Option<String>,
    /// Other namespaces children of this type may be written to.
    pub namespaces: Vec<String>,
    pub cluster_scoped: bool,
    /// ork may take over an existing object of this type that this CR does not own (SPEC §11);
    /// without it such an object is a failed reconcile that names it.
    pub adopt: bool,
    /// For RoleBindings and ClusterRoleBindings: the only roles their `roleRef` may name
    /// (SPEC §11). ork's RBAC gets `bind` on exactly these; an answer binding another role is
    /// rejected whole.
    pub bind_roles: Vec<BindRole>,
    /// Secrets only: the service may return Secrets of type
    /// `kubernetes.io/service-account-token`, which the cluster fills with a token (SPEC §11).
    pub service_account_tokens: bool,
    /// ClusterRoles only: children may aggregate (an `aggregate-to-*` label joins a role such as
    /// `view`, `edit` or `admin` without any binding; an `aggregationRule` gathers other roles'
    /// rules). Refused without it (SPEC §11).
    pub role_aggregation: bool,
}

/// A role that children of a binding type may bind: `kind` is `ClusterRole` or `Role`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BindRole {
    /// `ClusterRole` or `Role` (a ClusterRoleBinding binds ClusterRoles only).
    pub kind: String,
    /// The role's name, a literal.
    pub name: String,
}

/// The RBAC group, whose binding types may carry `bindRoles`.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

impl ManagedResource {
    /// True for RoleBindings and ClusterRoleBindings.
    pub fn is_binding(&self) -> bool {
        self.group == RBAC_GROUP
            && (matches!(self.plural.as_str(), "rolebindings" | "clusterrolebindings")
                || matches!(
                    self.kind.as_deref(),
                    Some("RoleBinding" | "ClusterRoleBinding")
                ))
    }

    /// `bindRoles` as `(kind, name)` pairs, as the answer check takes them.
    pub fn bind_role_pairs(&self) -> Vec<(String, String)> {
        self.bind_roles
            .iter()
            .map(|r| (r.kind.clone(), r.name.clone()))
            .collect()
    }

    /// True for Roles and ClusterRoles, whose rules grant what ork holds.
    pub fn is_role(&self) -> bool {
        self.group == RBAC_GROUP
            && (matches!(self.plural.as_str(), "roles" | "clusterroles")
                || matches!(self.kind.as_deref(), Some("Role" | "ClusterRole")))
    }

    /// True when `plural` must still be found through discovery (by `kind`).
    pub fn needs_discovery(&self) -> bool {
        self.plural.is_empty()
    }

    /// `group/plural` (or `group/Kind` before discovery), `core` for the core group.
    pub fn describe(&self) -> String {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        if self.plural.is_empty() {
            format!("{group}/{}", self.kind.as_deref().unwrap_or("?"))
        } else {
            format!("{group}/{}", self.plural)
        }
    }
}

/// `managedResources[]` as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedResourceSpec {
    /// The API group (`""` for the core group); absent: taken from `apiVersion`, or from a
    /// built-in `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The version ork watches the children in; absent: from `apiVersion`, else the one the
    /// API server prefers. An answer may use any version the server serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The resource name, lowercase plural (`deployments`); absent: from a built-in `kind`,
    /// else found through discovery by `kind` when ork starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plural: Option<String>,
    /// The children's kind (`Deployment`); a built-in kind alone names the type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `group/version` (`v1` for the core group), naming the type with `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Orkestra's object name for this type: ork checks it is a literal name and does not use
    /// it otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One more namespace children of this type may be written to (added to `namespaces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Namespaces other than the CR's that children of this type may be written to; the only
    /// way to allow ork's own namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Allows children of a cluster-scoped type; without it an answer with one is refused.
    /// Built-in cluster-scoped kinds set it themselves.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster_scoped: bool,
    /// ork may take over an existing object of this type that this CR does not own; without
    /// it such an object fails the reconcile, named.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopt: bool,
    /// RoleBindings and ClusterRoleBindings only: the roles (`{kind: ClusterRole|Role, name}`)
    /// their `roleRef` may name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bind_roles: Vec<BindRole>,
    /// Secrets only: allow Secrets of type `kubernetes.io/service-account-token`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub service_account_tokens: bool,
    /// ClusterRoles only: allow `rbac.authorization.k8s.io/aggregate-to-*` labels and
    /// `aggregationRule`, which grant or gather rights without a binding.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub role_aggregation: bool,
}

impl TryFrom<ManagedResourceSpec> for ManagedResource {
    type Error = String;

    fn try_from(s: ManagedResourceSpec) -> Result<Self, String> {
        let (av_group, av_version) = match &s.api_version {
            Some(av) => match av.split_once('/') {
                Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => {
                    (Some(g.to_string()), Some(v.to_string()))
                }
                None if !av.is_empty() => (Some(String::new()), Some(av.clone())),
                _ => return Err(format!("apiVersion \"{av}\" is not group/version or v1")),
            },
            None => (None, None),
        };
        if let (Some(g), Some(ag)) = (&s.group, &av_group)
            && g != ag
        {
            return Err(format!(
                "group \"{g}\" does not match apiVersion \"{}\"",
                s.api_version.as_deref().unwrap_or_default()
            ));
        }
        if let (Some(v), Some(av)) = (&s.version, &av_version)
            && v != av
        {
            return Err(format!(
                "version \"{v}\" does not match apiVersion \"{}\"",
                s.api_version.as_deref().unwrap_or_default()
            ));
        }
        let given_group = s.group.clone().or(av_group);
        let plural = s.plural.clone().filter(|p| !p.is_empty());
        let builtin = match (&s.kind, &plural) {
            (Some(kind), _) => kinds::by_kind(kind, given_group.as_deref()),
            (None, Some(p)) => given_group.as_deref().and_then(|g| kinds::by_plural(g, p)),
            (None, None) => None,
        };
        let group = match (given_group, builtin) {
            (Some(g), _) => g,
            (None, Some(b)) => b.group.to_string(),
            (None, None) => {
                return Err(match &s.kind {
                    Some(kind) => format!(
                        "kind \"{kind}\" is not a built-in Kubernetes kind: add its apiVersion (e.g. example.com/v1) or group"
                    ),
                    None => {
                        "a managed resource needs group and plural, a kind, or apiVersion and kind"
                            .into()
                    }
                });
            }
        };
        if plural.is_none() && s.kind.is_none() {
            return Err(format!(
                "give plural (or kind) for group \"{}\"",
                if group.is_empty() { "core" } else { &group }
            ));
        }
        if let (Some(p), Some(b)) = (&plural, builtin)
            && p != b.plural
            && s.kind.is_some()
        {
            return Err(format!(
                "kind {} is plural \"{}\", not \"{p}\"",
                b.kind, b.plural
            ));
        }
        let mut namespaces = s.namespaces.clone();
        if let Some(ns) = &s.namespace
            && !namespaces.contains(ns)
        {
            namespaces.push(ns.clone());
        }
        ManagedResource {
            plural: plural
                .or_else(|| builtin.map(|b| b.plural.to_string()))
                .unwrap_or_default(),
            kind: s
                .kind
                .clone()
                .or_else(|| builtin.map(|b| b.kind.to_string())),
            cluster_scoped: s.cluster_scoped || builtin.is_some_and(|b| !b.namespaced),
            version: s.version.clone().or(av_version),
            group,
            api_version: s.api_version,
            name: s.name,
            namespace: s.namespace,
            namespaces,
            adopt: s.adopt,
            bind_roles: Vec::new(),
            service_account_tokens: s.service_account_tokens,
            role_aggregation: s.role_aggregation,
        }
        .with_bind_roles(s.bind_roles)
        .and_then(ManagedResource::checked_token_opt_in)
        .and_then(ManagedResource::checked_aggregation_opt_in)
    }
}

impl ManagedResource {
    fn checked_aggregation_opt_in(self) -> Result<ManagedResource, String> {
        let cluster_roles = self.group == RBAC_GROUP
            && (self.plural == "clusterroles" || self.kind.as_deref() == Some("ClusterRole"));
        if self.role_aggregation && !cluster_roles {
            return Err(format!(
                "roleAggregation is for ClusterRoles ({RBAC_GROUP}/clusterroles), not {}",
                self.describe()
            ));
        }
        Ok(self)
    }

    fn checked_token_opt_in(self) -> Result<ManagedResource, String> {
        let secrets = self.group.is_empty()
            && (self.plural == "secrets" || self.kind.as_deref() == Some("Secret"));
        if self.service_account_tokens && !secrets {
            return Err(format!(
                "serviceAccountTokens is for Secrets (core/secrets), not {}",
                self.describe()
            ));
        }
        Ok(self)
    }

    /// `bindRoles` checked against the type: bindings only, ClusterRoleBindings bind
    /// ClusterRoles only, role names as Kubernetes names them.
    fn with_bind_roles(mut self, roles: Vec<BindRole>) -> Result<ManagedResource, String> {
        if roles.is_empty() {
            return Ok(self);
        }
        if !self.is_binding() {
            return Err(format!(
                "bindRoles is for rolebindings and clusterrolebindings ({RBAC_GROUP}), not {}",
                self.describe()
            ));
        }
        let cluster_binding = self.plural == "clusterrolebindings"
            || self.kind.as_deref() == Some("ClusterRoleBinding");
        for r in &roles {
            match r.kind.as_str() {
                "ClusterRole" => {}
                "Role" if !cluster_binding => {}
                "Role" => {
                    return Err(format!(
                        "bindRoles: a ClusterRoleBinding binds ClusterRoles only, not Role {}",
                        r.name
                    ));
                }
                other => {
                    return Err(format!(
                        "bindRoles: kind must be ClusterRole or Role, got \"{other}\""
                    ));
                }
            }
            if r.name.is_empty() || r.name.contains('/') || r.name.contains("{{") {
                return Err(format!(
                    "bindRoles: \"{}\" is not a role name (a literal name, no template)",
                    r.name
                ));
            }
        }
        let mut roles = roles;
        roles.sort();
        roles.dedup();
        self.bind_roles = roles;
        Ok(self)
    }
}

impl From<&ManagedResource> for ManagedResourceSpec {
    fn from(m: &ManagedResource) -> Self {
        ManagedResourceSpec {
            group: Some(m.group.clone()),
            version: m.version.clone(),
            plural: Some(m.plural.clone()).filter(|p| !p.is_empty()),
            kind: m.kind.clone(),
            api_version: m.api_version.clone(),
            name: m.name.clone(),
            namespace: m.namespace.clone(),
            namespaces: m.namespaces.clone(),
            cluster_scoped: m.cluster_scoped,
            adopt: m.adopt,
            bind_roles: m.bind_roles.clone(),
            service_account_tokens: m.service_account_tokens,
            role_aggregation: m.role_aggregation,
        }
    }
}

impl<'de> Deserialize<'de> for ManagedResource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spec = ManagedResourceSpec::deserialize(d)?;
        ManagedResource::try_from(spec).map_err(serde::de::Error::custom)
    }
}

impl Serialize for ManagedResource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ManagedResourceSpec::from(self).serialize(s)
    }
}

impl JsonSchema for ManagedResource {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ManagedResource".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        ManagedResourceSpec::json_schema(g)
    }
}
