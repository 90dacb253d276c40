//! Resolving the CR type and the managed child types through API discovery.

use std::time::Duration;

use kube::Client;
use kube::discovery::{ApiResource, Discovery, Scope};
use ork_katalog::{ApiTypes, ManagedResource};
use ork_protocol::ManagedType;

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("discovery failed: {0}")]
    Api(#[from] kube::Error),
    #[error("{0} is not served by the API server (is its CRD installed?)")]
    NotServed(String),
}

/// A resolved child type: the protocol's view plus the API resource to call.
#[derive(Clone, Debug)]
pub struct ChildType {
    pub managed: ManagedType,
    pub resource: ApiResource,
}

impl ChildType {
    /// Namespaced core ConfigMaps, served at v1: the child type tests declare.
    #[cfg(test)]
    pub(crate) fn config_maps() -> ChildType {
        ChildType {
            managed: ManagedType {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
                namespaced: true,
                namespaces: vec![],
                cluster_scoped: false,
                bind_roles: Vec::new(),
                service_account_tokens: false,
                role_aggregation: false,
                served_versions: vec!["v1".into()],
            },
            resource: ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
            },
        }
    }
}

/// A type found through discovery: the resource at the chosen version, its scope, and every
/// version the API server serves it in.
struct Found {
    resource: ApiResource,
    namespaced: bool,
    served: Vec<String>,
}

/// How a managed type is named in the Katalog: by plural, or (Orkestra style) only by kind.
#[derive(Clone, Copy)]
enum Name<'a> {
    Plural(&'a str),
    Kind(&'a str),
}

impl Name<'_> {
    fn matches(self, ar: &ApiResource) -> bool {
        match self {
            Name::Plural(p) => ar.plural == p,
            Name::Kind(k) => ar.kind == k,
        }
    }
}

/// Finds `group`/`plural` (at `version` if given, else the preferred version).
async fn find(
    client: &Client,
    group: &str,
    version: Option<&str>,
    plural: &str,
) -> Result<Option<Found>, DiscoveryError> {
    find_named(client, group, version, Name::Plural(plural)).await
}

/// A group its CRD has just made can be listed before its version's path is served; the API
/// server answers that path 404 for a moment, which is "not served" too.
async fn find_named(
    client: &Client,
    group: &str,
    version: Option<&str>,
    name: Name<'_>,
) -> Result<Option<Found>, DiscoveryError> {
    let discovery = match Discovery::new(client.clone()).filter(&[group]).run().await {
        Ok(discovery) => discovery,
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    for g in discovery.groups() {
        if g.name() != group {
            continue;
        }
        let served: Vec<String> = g
            .versions()
            .filter(|v| {
                g.versioned_resources(v)
                    .iter()
                    .any(|(ar, _)| name.matches(ar))
            })
            .map(str::to_string)
            .collect();
        let candidates: Vec<String> = match version {
            Some(v) => vec![v.to_string()],
            None => std::iter::once(g.preferred_version_or_latest().to_string())
                .chain(served.iter().cloned())
                .collect(),
        };
        for v in candidates {
            for (ar, caps) in g.versioned_resources(&v) {
                if name.matches(&ar) {
                    return Ok(Some(Found {
                        resource: ar,
                        namespaced: caps.scope == Scope::Namespaced,
                        served,
                    }));
                }
            }
        }
    }
    Ok(None)
}

/// Resolves `api_version` (`group/version`, or `v1`) and plural `resource`: the resource and
/// whether it is namespaced.
///
/// # Errors
/// Discovery failed, or the API server does not serve the type.
pub async fn resolve(
    client: &Client,
    api_version: &str,
    resource: &str,
) -> Result<(ApiResource, bool), DiscoveryError> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let found = find(client, group, Some(version), resource)
        .await?
        .ok_or_else(|| DiscoveryError::NotServed(format!("{api_version}/{resource}")))?;
    Ok((found.resource, found.namespaced))
}

/// Resolves `api_version` (`group/version`, or `v1`) and `kind`: the resource and whether it
/// is namespaced.
///
/// # Errors
/// Discovery failed, or the API server does not serve the type.
pub async fn resolve_kind(
    client: &Client,
    api_version: &str,
    kind: &str,
) -> Result<(ApiResource, bool), DiscoveryError> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let found = find_named(client, group, Some(version), Name::Kind(kind))
        .await?
        .ok_or_else(|| DiscoveryError::NotServed(format!("{api_version} {kind}")))?;
    Ok((found.resource, found.namespaced))
}

/// Waits (logging every 10 s) until the CR type is served: a CRD applied after ork starts is
/// picked up instead of failing or hot-looping. Returns the resource and whether it is namespaced.
///
/// # Errors
/// Discovery errors other than "not there yet".
pub async fn wait_for_cr_type(
    client: &Client,
    t: &ApiTypes,
    entry: &str,
) -> Result<(ApiResource, bool), DiscoveryError> {
    let mut waited = 0u64;
    loop {
        if let Some(found) = find(client, &t.group, Some(&t.version), &t.plural).await? {
            return Ok((found.resource, found.namespaced));
        }
        if waited.is_multiple_of(10) {
            tracing::info!(entry, group = %t.group, plural = %t.plural, "waiting for the CRD to be established");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        waited += 1;
    }
}

/// Resolves every managed resource of an entry.
///
/// # Errors
/// A managed type the API server does not serve.
pub async fn resolve_managed(
    client: &Client,
    managed: &[ManagedResource],
) -> Result<Vec<ChildType>, DiscoveryError> {
    let mut out = Vec::new();
    for m in managed {
        let name = match (&m.kind, m.needs_discovery()) {
            (Some(kind), true) => Name::Kind(kind),
            _ => Name::Plural(&m.plural),
        };
        let found = find_named(client, &m.group, m.version.as_deref(), name)
            .await?
            .ok_or_else(|| DiscoveryError::NotServed(m.describe()))?;
        let ar = found.resource;
        out.push(ChildType {
            managed: ManagedType {
                group: m.group.clone(),
                version: ar.version.clone(),
                kind: ar.kind.clone(),
                plural: ar.plural.clone(),
                namespaced: found.namespaced,
                namespaces: m.namespaces.clone(),
                cluster_scoped: m.cluster_scoped,
                bind_roles: m.bind_role_pairs(),
                service_account_tokens: m.service_account_tokens,
                role_aggregation: m.role_aggregation,
                served_versions: found.served,
            },
            resource: ar,
        });
    }
    Ok(out)
}
