//! Reading a CustomResourceDefinition manifest (`crdFile`) for the API type it defines.

use std::path::Path;

use serde_json::Value;

use crate::model::ApiTypes;

/// What a CRD file defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdInfo {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Served versions in declaration order.
    pub served: Vec<String>,
    /// The storage version, if one is served.
    pub storage: Option<String>,
}

impl CrdInfo {
    /// The version ork watches when `apiTypes.version` is not written: the served storage
    /// version, else the first served one.
    pub fn version(&self) -> Option<&str> {
        self.storage
            .as_deref()
            .or_else(|| self.served.first().map(String::as_str))
    }

    pub fn api_types(&self) -> ApiTypes {
        ApiTypes {
            group: self.group.clone(),
            version: self.version().unwrap_or_default().to_string(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }
}

/// Reads `path` and returns the CRD it defines; with several, the one whose kind is `kind`.
///
/// # Errors
/// A sentence for the user: unreadable, too large, not YAML, no (or no matching) CRD, or a CRD
/// without group, kind, plural or served version.
pub fn read(path: &Path, kind: Option<&str>, max_bytes: u64) -> Result<CrdInfo, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if meta.len() > max_bytes {
        return Err(format!(
            "{} is {} bytes; a CRD file may be at most {max_bytes}",
            path.display(),
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut docs: Vec<Value> = Vec::new();
    for doc in crate::lines::split_documents(&text)
        .into_iter()
        .map(|(d, _)| d)
        .filter(|d| !d.trim().is_empty())
    {
        docs.push(serde_saphyr::from_str(doc).map_err(|e| {
            format!(
                "{} is not valid YAML: {}",
                path.display(),
                first_line(&e.to_string())
            )
        })?);
    }
    let mut crds = Vec::new();
    for value in &docs {
        collect(value, &mut crds);
    }
    let found: Vec<&Value> = match kind {
        Some(k) if crds.len() > 1 => crds
            .iter()
            .copied()
            .filter(|c| c.pointer("/spec/names/kind").and_then(Value::as_str) == Some(k))
            .collect(),
        _ => crds.clone(),
    };
    match found.as_slice() {
        [one] => info(one).map_err(|e| format!("{}: {e}", path.display())),
        [] if crds.is_empty() => Err(format!(
            "{} holds no CustomResourceDefinition",
            path.display()
        )),
        [] => Err(format!(
            "{} defines no CRD of kind {}",
            path.display(),
            kind.unwrap_or_default()
        )),
        _ => Err(format!(
            "{} defines {} CRDs; add apiTypes.kind to pick one",
            path.display(),
            found.len()
        )),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn collect<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v.get("kind").and_then(Value::as_str) {
        Some("CustomResourceDefinition") => out.push(v),
        Some("List") | Some("CustomResourceDefinitionList") => {
            for item in v
                .get("items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                collect(item, out);
            }
        }
        _ => {}
    }
}

fn info(crd: &Value) -> Result<CrdInfo, String> {
    let s = |p: &str| {
        crd.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let group = s("/spec/group");
    let kind = s("/spec/names/kind");
    let plural = s("/spec/names/plural");
    for (name, v) in [
        ("spec.group", &group),
        ("spec.names.kind", &kind),
        ("spec.names.plural", &plural),
    ] {
        if v.is_empty() {
            return Err(format!("the CRD has no {name}"));
        }
    }
    let namespaced = match crd.pointer("/spec/scope").and_then(Value::as_str) {
        None | Some("Namespaced") => true,
        Some("Cluster") => false,
        Some(other) => return Err(format!("unknown scope \"{other}\"")),
    };
    let mut served = Vec::new();
    let mut storage = None;
    if let Some(versions) = crd.pointer("/spec/versions").and_then(Value::as_array) {
        for v in versions {
            let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
            if name.is_empty() || v.get("served").and_then(Value::as_bool) != Some(true) {
                continue;
            }
            served.push(name.to_string());
            if v.get("storage").and_then(Value::as_bool) == Some(true) {
                storage = Some(name.to_string());
            }
        }
    } else if let Some(v) = crd.pointer("/spec/version").and_then(Value::as_str) {
        // apiextensions.k8s.io/v1beta1 with a single version
        served.push(v.to_string());
        storage = Some(v.to_string());
    }
    if served.is_empty() {
        return Err("the CRD serves no version".into());
    }
    Ok(CrdInfo {
        group,
        kind,
        plural,
        namespaced,
        served,
        storage,
    })
}
