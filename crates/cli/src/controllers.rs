//! Metacontroller's controllers given to `ork run` and `ork generate rbac` (SPEC §15): read
//! from files, and added to a Katalog's entries where only their types matter (RBAC).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use ork_katalog::Katalog;
use ork_katalog::metacontroller::{entries_for_rbac, parse_controller};
use serde_json::Value;

/// The controller objects of `files` (every YAML document with a `kind`).
pub fn objects(files: &[PathBuf]) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for file in files {
        let docs = ork_kube::install::documents(file)
            .with_context(|| format!("reading {}", file.display()))?;
        out.extend(docs.into_iter().filter(|d| d.get("kind").is_some()));
    }
    Ok(out)
}

/// `katalog` with the controllers of `files` as entries of their own, for the permissions
/// they need.
///
/// # Errors
/// A file that cannot be read, or a controller ork cannot run (with the field and the reason).
pub fn with_controllers(mut katalog: Katalog, files: &[PathBuf]) -> Result<Katalog> {
    let mut controllers = Vec::new();
    for object in objects(files)? {
        controllers.extend(parse_controller(&object).map_err(|e| anyhow!("{e}"))?);
    }
    for (name, entry) in entries_for_rbac(&controllers).map_err(|e| anyhow!("{e}"))? {
        add_entry(&mut katalog, name, entry)?;
    }
    Ok(katalog)
}

/// Adds a controller's entry to `katalog`. An entry's name is what config, metrics, records
/// and the inspector's authorization go by: a controller never replaces a Katalog entry or
/// another controller.
///
/// # Errors
/// The name is taken.
fn add_entry(katalog: &mut Katalog, name: String, entry: ork_katalog::CrdEntry) -> Result<()> {
    if katalog.spec.crds.contains_key(&name) {
        return Err(anyhow!(
            "controller {name:?}: a Katalog entry or another controller is already named {name:?}; rename one of them"
        ));
    }
    katalog.spec.crds.insert(name, entry);
    Ok(())
}

/// `katalog` with the controllers of `files` as entries that run offline (`ork simulate`,
/// `check`, `test`, `conform`): each parent's kind and scope come from a CRD of `crds` (the
/// `--crd` files), a built-in kind, or a CR of `crs` of the parent's apiVersion and plural.
///
/// # Errors
/// A file that cannot be read, a controller ork cannot run, one whose parent type is not
/// known offline (with what to give), or a name taken.
pub fn with_controllers_offline(
    mut katalog: Katalog,
    files: &[PathBuf],
    crs: &[Value],
    crds: &[Value],
) -> Result<Katalog> {
    let ork_namespace = std::env::var("ORK_NAMESPACE").unwrap_or_default();
    for object in objects(files)? {
        for c in parse_controller(&object).map_err(|e| anyhow!("{e}"))? {
            let (kind, namespaced) = parent_type(&c, crs, crds).ok_or_else(|| {
                anyhow!(
                    "controller {:?}: the kind of its parent {}/{} is not known offline; give its CRD with --crd FILE",
                    c.name,
                    c.parent_api_version,
                    c.parent_resource
                )
            })?;
            let name = c.entry_name.clone();
            let entry = std::sync::Arc::new(c)
                .entry(&kind, namespaced, &ork_namespace)
                .map_err(|e| anyhow!("controller {name:?}: {e}"))?;
            add_entry(&mut katalog, name, entry)?;
        }
    }
    Ok(katalog)
}

/// The Katalog at `path` (none when controllers come without one) with the controllers of
/// `files` run offline ([`with_controllers_offline`]).
///
/// # Errors
/// The Katalog's problems, or a controller that cannot run offline.
pub fn offline_katalog(
    path: &Path,
    files: &[PathBuf],
    crs: &[Value],
    crds: &[Value],
) -> Result<Katalog> {
    let katalog =
        katalog_or_none(path, !files.is_empty()).map_err(|problems| anyhow!("{problems}"))?;
    with_controllers_offline(katalog, files, crs, crds)
}

/// The kind of `c`'s parent type and whether it is namespaced, known without an API server.
fn parent_type(
    c: &ork_katalog::metacontroller::Composite,
    crs: &[Value],
    crds: &[Value],
) -> Option<(String, bool)> {
    let (group, plural) = (c.parent_group(), c.parent_resource.as_str());
    let from_crd = crds.iter().find_map(|crd| {
        let spec = crd.get("spec")?;
        let names = spec.get("names")?;
        (spec.get("group")?.as_str()? == group && names.get("plural")?.as_str()? == plural).then(
            || {
                let kind = names.get("kind")?.as_str()?.to_string();
                Some((kind, spec.get("scope")?.as_str()? == "Namespaced"))
            },
        )?
    });
    let builtin =
        || ork_katalog::kinds::by_plural(group, plural).map(|b| (b.kind.to_string(), b.namespaced));
    // A CR of the parent's apiVersion whose kind, lower-cased and made plural, is the plural.
    let from_cr = || {
        crs.iter().find_map(|cr| {
            let kind = cr.get("kind")?.as_str()?;
            let lower = kind.to_lowercase();
            let plural_of = [format!("{lower}s"), format!("{lower}es")];
            (cr.get("apiVersion")?.as_str()? == c.parent_api_version
                && plural_of.iter().any(|p| p == plural))
            // A CR alone does not tell its type's scope: namespaced, as most parents are (a
            // cluster-scoped parent's CRD is given with --crd).
            .then(|| (kind.to_string(), true))
        })
    };
    from_crd.or_else(builtin).or_else(from_cr)
}

/// The Katalog at `path`, or none when Metacontroller's controllers come without one
/// (`with_controllers`: `--controllers` or `--metacontroller` was given) and there is no file.
///
/// # Errors
/// The Katalog's problems, each with file, line and field.
pub fn katalog_or_none(path: &Path, with_controllers: bool) -> Result<Katalog, String> {
    if with_controllers && !path.exists() {
        return Ok(no_entries());
    }
    ork_katalog::load_file(path).map_err(|problems| problems.to_string())
}

/// A Katalog without entries.
fn no_entries() -> Katalog {
    serde_json::from_value(serde_json::json!({
        "apiVersion": ork_katalog::API_VERSION,
        "kind": "Katalog",
        "metadata": {"name": "metacontroller"},
        "spec": {"crds": {}}
    }))
    .expect("an empty Katalog always decodes")
}
