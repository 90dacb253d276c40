//! `ork validate --cluster`: what only the kubeconfig's cluster can tell about a valid Katalog
//! (SPEC §16): each entry's CRD installed and serving its version, each managed type served
//! (with the plural meant when it is not), the CR fields the templates read against the
//! cluster's CRD schema (warnings), and the permissions the current identity lacks.

use anyhow::{Context, Result};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::discovery::{ApiGroup, Discovery};
use kube::{Api, Client};
use ork_katalog::{CrdEntry, Finding, Katalog, ManagedResource};
use ork_kube::permissions;
use serde_json::Value;

/// What the cluster says about the Katalog.
#[derive(Debug, Default)]
pub struct ClusterFindings {
    /// What `ork run` against this cluster would stumble on.
    pub problems: Vec<Finding>,
    /// What may be a mistake but does not stop `ork run`.
    pub warnings: Vec<Finding>,
    /// The CRD schema of each entry the cluster serves, for the template check.
    pub schemas: Vec<(String, Value)>,
}

fn finding(path: impl Into<String>, message: impl Into<String>, hint: Option<String>) -> Finding {
    Finding {
        path: path.into(),
        message: message.into(),
        hint,
    }
}

/// Asks the cluster about every entry of `katalog`; `file` names it in hints.
///
/// # Errors
/// Discovery or the permission reviews failed (not a missing type or permission: those are
/// findings).
pub async fn check(client: &Client, katalog: &Katalog, file: &str) -> Result<ClusterFindings> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .context("API discovery on the kubeconfig's cluster")?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut out = ClusterFindings::default();
    for (name, entry) in &katalog.spec.crds {
        let ep = format!("spec.crds.{name}");
        cr_type(&mut out, &discovery, &crds, (&ep, name), entry).await?;
        if let Some(f) = exec_program(&ep, entry) {
            out.warnings.push(f);
        }
        let Some(remote) = &entry.operator_box.reconcile.remote else {
            continue;
        };
        for (i, m) in remote.managed_resources.iter().enumerate() {
            let mp = format!("{ep}.operatorBox.reconcile.remote.managedResources[{i}]");
            if let Some(f) = managed(&discovery, katalog, &mp, m) {
                out.problems.push(f);
            }
        }
    }
    let ork_namespace = std::env::var("ORK_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    let rules = permissions::rules(katalog, &ork_namespace, false);
    let missing = permissions::missing(client, &rules)
        .await
        .context("checking the kubeconfig identity's permissions (SelfSubjectAccessReview)")?;
    if !missing.is_empty() {
        out.problems.push(finding(
            "",
            format!(
                "the kubeconfig's identity lacks {} permission(s) ork needs for this Katalog (ork run with it stops at start):\n      {}",
                missing.len(),
                missing.join("\n      ")
            ),
            // Without ORK_NAMESPACE the RBAC's default namespace, as `ork run` says.
            Some(crate::hints::run_as_hint(
                std::path::Path::new(&file),
                std::env::var("ORK_NAMESPACE")
                    .ok()
                    .filter(|n| !n.is_empty())
                    .as_deref()
                    .unwrap_or("ork-system"),
            )),
        ));
    }
    Ok(out)
}

/// The entry's CR type served at its version (or its CRD installed by `ork run` from
/// `crdFile`), and the CRD's schema when the identity may read it.
async fn cr_type(
    out: &mut ClusterFindings,
    discovery: &Discovery,
    crds: &Api<CustomResourceDefinition>,
    (ep, name): (&str, &str),
    entry: &CrdEntry,
) -> Result<()> {
    let t = &entry.api_types;
    let crd_name = format!("{}.{}", t.plural, t.group);
    let from_file = entry.crd_file.is_some();
    let versions: Vec<String> = discovery
        .groups()
        .filter(|g| g.name() == t.group)
        .flat_map(|g| {
            g.versions()
                .filter(|v| {
                    g.versioned_resources(v)
                        .iter()
                        .any(|(ar, _)| ar.plural == t.plural)
                })
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    if versions.is_empty() {
        if !from_file {
            out.problems.push(finding(
                format!("{ep}.apiTypes"),
                format!("the cluster serves no {crd_name}: its CRD is not installed, and ork run would wait for it"),
                Some("install the CRD, or name its file in the entry's `crdFile` so ork installs it".into()),
            ));
        }
        return Ok(());
    }
    if !versions.contains(&t.version) && !from_file {
        out.problems.push(finding(
            format!("{ep}.apiTypes.version"),
            format!(
                "the cluster serves {crd_name} but not at version {}",
                t.version
            ),
            Some(format!("it serves {}", versions.join(", "))),
        ));
        return Ok(());
    }
    if from_file {
        // Its schema is the file's, checked without a cluster.
        return Ok(());
    }
    let crd = match crds.get_opt(&crd_name).await {
        Ok(Some(crd)) => serde_json::to_value(crd)?,
        Ok(None) => return Ok(()),
        Err(kube::Error::Api(e)) if e.code == 403 => {
            out.warnings.push(finding(
                format!("{ep}.apiTypes"),
                format!("the kubeconfig's identity may not read CRD {crd_name}: the template fields are not checked against its schema"),
                None,
            ));
            return Ok(());
        }
        Err(e) => return Err(e).with_context(|| format!("reading CRD {crd_name}")),
    };
    if let Some(schema) = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"].as_str() == Some(t.version.as_str()))
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
    {
        out.schemas.push((name.to_string(), schema.clone()));
    }
    Ok(())
}

/// A managed type the API server does not serve, with the group or plural meant.
fn managed(
    discovery: &Discovery,
    katalog: &Katalog,
    mp: &str,
    m: &ManagedResource,
) -> Option<Finding> {
    if m.plural.contains("{{") {
        return None;
    }
    // The CR type of another entry with a crdFile: ork installs it before it watches.
    let installed_by_ork = katalog.spec.crds.values().any(|e| {
        e.crd_file.is_some() && e.api_types.group == m.group && e.api_types.plural == m.plural
    });
    let Some(group) = discovery.groups().find(|g| g.name() == m.group) else {
        if installed_by_ork {
            return None;
        }
        let groups: Vec<&str> = discovery.groups().map(ApiGroup::name).collect();
        let hint = ork_katalog::suggest::closest(&m.group, groups.iter().copied())
            .map(|g| format!("did you mean `{g}`?"))
            .unwrap_or_else(|| "install the CRD that defines it".into());
        return Some(finding(
            format!("{mp}.group"),
            format!("the API server serves no group `{}`", m.group),
            Some(hint),
        ));
    };
    let resources: Vec<(String, String, String)> = group
        .versions()
        .flat_map(|v| {
            group
                .versioned_resources(v)
                .into_iter()
                .map(move |(ar, _)| (v.to_string(), ar.plural, ar.kind))
        })
        .collect();
    let kind_only = m.needs_discovery();
    let named = |r: &&(String, String, String)| {
        if kind_only {
            Some(&r.2) == m.kind.as_ref()
        } else {
            r.1 == m.plural
        }
    };
    let shown_group = if m.group.is_empty() {
        "the core group".to_string()
    } else {
        format!("group `{}`", m.group)
    };
    if !resources.iter().any(|r| named(&r)) {
        if installed_by_ork {
            return None;
        }
        let mut plurals: Vec<&str> = resources.iter().map(|r| r.1.as_str()).collect();
        plurals.sort_unstable();
        plurals.dedup();
        let (field, what) = if kind_only {
            (
                "kind",
                format!("kind `{}`", m.kind.clone().unwrap_or_default()),
            )
        } else {
            ("plural", format!("resource `{}`", m.plural))
        };
        let meant = if kind_only {
            let kinds: Vec<&str> = resources.iter().map(|r| r.2.as_str()).collect();
            ork_katalog::suggest::closest(m.kind.as_deref().unwrap_or_default(), kinds)
        } else {
            ork_katalog::kinds::plural_meant(&m.plural, plurals.iter().copied())
        };
        let hint = match meant {
            Some(p) => format!("did you mean `{p}`?"),
            None => format!("{shown_group} serves {}", plurals.join(", ")),
        };
        return Some(finding(
            format!("{mp}.{field}"),
            format!("{shown_group} has no {what} on this cluster"),
            Some(hint),
        ));
    }
    if let Some(version) = &m.version
        && !resources.iter().any(|r| named(&r) && &r.0 == version)
    {
        let versions: Vec<&str> = resources
            .iter()
            .filter(|r| named(r))
            .map(|r| r.0.as_str())
            .collect();
        return Some(finding(
            format!("{mp}.version"),
            format!(
                "{} of {shown_group} is not served at version {version}",
                m.plural
            ),
            Some(format!("it is served at {}", versions.join(", "))),
        ));
    }
    None
}

/// An exec program named without a path (the path form is checked offline): looked up in
/// `PATH`, where `ork run` against this cluster from here would look for it.
fn exec_program(ep: &str, entry: &CrdEntry) -> Option<Finding> {
    let remote = entry.operator_box.reconcile.remote.as_ref()?;
    let program = remote.command.as_ref()?.first()?;
    if program.contains('/') {
        return None;
    }
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(program)).is_ok_and(|m| {
                m.is_file()
                    && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
        })
    });
    (!found).then(|| {
        finding(
            format!("{ep}.operatorBox.reconcile.remote.command"),
            format!("the exec program `{program}` is not in PATH here: ork run from here could not start it"),
            Some("install it, or give its path (./reconcile.sh is found from the Katalog's folder); in a pod it must be in the image".into()),
        )
    })
}
