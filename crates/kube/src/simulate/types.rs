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

/// Resolves a managed resource without an API server: the Katalog's own `kind`/`version`, a
/// built-in type, or a `--crd` file.
pub(super) fn offline_type(
    m: &ManagedResource,
    katalog: &Katalog,
    crds: &[Value],
) -> Result<ChildType, UnknownType> {
    let builtin = ork_katalog::kinds::by_plural(&m.group, &m.plural);
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
        .or_else(|| builtin.map(|b| b.kind.to_string()))
        .or_else(|| crd.and_then(|c| c["spec"]["names"]["kind"].as_str().map(str::to_string)))
        .or_else(|| entry.map(|e| e.api_types.kind.clone()));
    let version = m
        .version
        .clone()
        .or_else(|| builtin.map(|b| b.version.to_string()))
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
    // The type's real scope; `clusterScoped: true` is a permission, and the only hint of scope
    // for a type ork knows nothing else about.
    let namespaced = builtin
        .map(|b| b.namespaced)
        .or_else(|| {
            crd.and_then(|c| c["spec"]["scope"].as_str())
                .map(|s| s == "Namespaced")
        })
        .or_else(|| entry.map(|e| e.namespaced))
        .unwrap_or(!m.cluster_scoped);
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
            bind_roles: m.bind_role_pairs(),
            service_account_tokens: m.service_account_tokens,
            role_aggregation: m.role_aggregation,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn managed(yaml: &str) -> ManagedResource {
        serde_saphyr::from_str(yaml).expect("managed resource")
    }

    fn katalog() -> Katalog {
        let text = "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {name: t}\nspec:\n  crds:\n    w:\n      apiTypes: {group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}\n      operatorBox:\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://127.0.0.1:1/r\", managedResources: [{group: apps, plural: deployments}]}\n";
        ork_katalog::load_str(text, std::path::Path::new("k.yaml")).expect("katalog")
    }

    #[test]
    fn cluster_scoped_does_not_change_a_known_type_s_scope() {
        let k = katalog();
        let d = offline_type(
            &managed("{group: apps, plural: deployments, clusterScoped: true}"),
            &k,
            &[],
        )
        .expect("known");
        assert!(
            d.managed.namespaced,
            "a Deployment is namespaced whatever the Katalog says"
        );
        assert_eq!(d.managed.version, "v1");
        let cj =
            offline_type(&managed("{group: batch, plural: cronjobs}"), &k, &[]).expect("known");
        assert_eq!(cj.resource.api_version, "batch/v1");
    }
}
