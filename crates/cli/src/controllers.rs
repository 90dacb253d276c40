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
        // An entry's name is what config, metrics, records and the inspector's authorization
        // go by: a controller never replaces a Katalog entry or another controller.
        if katalog.spec.crds.contains_key(&name) {
            return Err(anyhow!(
                "controller {name:?}: a Katalog entry or another controller is already named {name:?}; rename one of them"
            ));
        }
        katalog.spec.crds.insert(name, entry);
    }
    Ok(katalog)
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
