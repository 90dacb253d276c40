//! What `ork run` puts in the cluster itself (SPEC §9): each entry's `crdFile` (installed or
//! updated before its watch starts, then waited on until Established), `setup` files at start and
//! `crFiles` once the CRD is there — development helpers that `--no-dev-files` turns off. The
//! waits of `setup` are [`crate::setup`]'s.
//! Objects are server-side applied with field manager `ork-setup`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::{Discovery, Scope};
use serde_json::Value;

const FIELD_MANAGER: &str = "ork-setup";

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{file}: {reason}")]
    Read { file: String, reason: String },
    #[error(
        "{file}: document {index} is not a Kubernetes object (apiVersion, kind, metadata.name)"
    )]
    NotAnObject { file: String, index: usize },
    #[error("{file}: {kind} ({api_version}) is not served by the API server")]
    NotServed {
        file: String,
        api_version: String,
        kind: String,
    },
    #[error("{file}: applying {kind} {name}: {source}")]
    Apply {
        file: String,
        kind: String,
        name: String,
        source: Box<kube::Error>,
    },
    #[error("CRD {name} from {file} was not Established within {seconds}s")]
    NotEstablished {
        file: String,
        name: String,
        seconds: u64,
    },
    #[error("discovery: {0}")]
    Discovery(Box<kube::Error>),
    #[error(
        "setup.wait: the API server serves no kind {kind:?} (write the kind as it is served, e.g. Deployment, Secret)"
    )]
    WaitKind { kind: String },
    #[error("setup.wait: {what} did not pass within {timeout}: {why}")]
    WaitTimedOut {
        what: String,
        timeout: String,
        why: String,
    },
}

impl From<kube::Error> for InstallError {
    fn from(e: kube::Error) -> Self {
        InstallError::Discovery(Box::new(e))
    }
}

/// The YAML documents of a file, as JSON objects.
///
/// # Errors
/// The file cannot be read or a document is not YAML.
pub fn documents(path: &Path) -> Result<Vec<Value>, InstallError> {
    let read_err = |reason: String| InstallError::Read {
        file: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| read_err(e.to_string()))?;
    let mut out = Vec::new();
    for doc in split_documents(&text) {
        let value: Value = serde_saphyr::from_str(doc).map_err(|e| read_err(e.to_string()))?;
        match value {
            Value::Null => {}
            Value::Array(items) => out.extend(items),
            other => out.push(other),
        }
    }
    Ok(out)
}

fn split_documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            docs.push(&text[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    docs.push(&text[start..]);
    docs.into_iter().filter(|d| !d.trim().is_empty()).collect()
}

/// Applies every object of `files`; namespaced objects without a namespace go to `namespace`.
///
/// # Errors
/// The first file or object that cannot be applied.
pub async fn apply_files(
    client: &Client,
    files: &[PathBuf],
    namespace: &str,
) -> Result<usize, InstallError> {
    let mut applied = 0;
    for file in files {
        let objects = documents(file)?;
        if objects.is_empty() {
            continue;
        }
        let discovery = Discovery::new(client.clone()).run().await?;
        for (index, obj) in objects.into_iter().enumerate() {
            apply_one(client, &discovery, file, index, obj, namespace).await?;
            applied += 1;
        }
    }
    Ok(applied)
}

async fn apply_one(
    client: &Client,
    discovery: &Discovery,
    file: &Path,
    index: usize,
    obj: Value,
    namespace: &str,
) -> Result<(), InstallError> {
    let shown = file.display().to_string();
    let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(api_version), Some(kind), Some(name)) = (
        text("apiVersion"),
        text("kind"),
        obj.pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string),
    ) else {
        return Err(InstallError::NotAnObject { file: shown, index });
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    let gvk = GroupVersionKind::gvk(group, version, &kind);
    let Some((ar, caps)) = discovery.resolve_gvk(&gvk) else {
        return Err(InstallError::NotServed {
            file: shown,
            api_version,
            kind,
        });
    };
    let api: Api<DynamicObject> = if caps.scope == Scope::Namespaced {
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(namespace);
        Api::namespaced_with(client.clone(), ns, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    };
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(&name, &params, &Patch::Apply(&obj))
        .await
        .map_err(|source| InstallError::Apply {
            file: shown,
            kind,
            name: name.clone(),
            source: Box::new(source),
        })?;
    tracing::info!(file = %file.display(), %name, "applied");
    Ok(())
}

/// Installs or updates the CRD in `file` and waits until the API server serves it.
///
/// # Errors
/// The file is not a CRD, the apply is refused, or it is not Established within a minute.
pub async fn install_crd(client: &Client, file: &Path) -> Result<(), InstallError> {
    let shown = file.display().to_string();
    let crd = documents(file)?
        .into_iter()
        .find(|d| d["kind"] == "CustomResourceDefinition")
        .ok_or(InstallError::NotAnObject {
            file: shown.clone(),
            index: 0,
        })?;
    install_crd_object(client, &crd, shown).await
}

/// Installs or updates `crd` (from `shown`, for messages) and waits until the API server
/// serves it.
///
/// # Errors
/// Not a named object, the apply is refused, or it is not Established within a minute.
pub async fn install_crd_object(
    client: &Client,
    crd: &Value,
    shown: String,
) -> Result<(), InstallError> {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or(InstallError::NotAnObject {
            file: shown.clone(),
            index: 0,
        })?
        .to_string();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(&name, &params, &Patch::Apply(crd))
        .await
        .map_err(|source| InstallError::Apply {
            file: shown.clone(),
            kind: "CustomResourceDefinition".into(),
            name: name.clone(),
            source: Box::new(source),
        })?;
    const LIMIT: Duration = Duration::from_secs(60);
    let started = std::time::Instant::now();
    while started.elapsed() < LIMIT {
        if let Ok(c) = api.get(&name).await
            && c.status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        {
            tracing::info!(crd = %name, file = %shown, "CRD installed");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(InstallError::NotEstablished {
        file: shown,
        name,
        seconds: LIMIT.as_secs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_split_on_their_own_separator_lines() {
        let docs = split_documents("a: 1\n---\nb: '---'\n--- \n\n---\nc: 3\n");
        assert_eq!(docs, ["a: 1\n", "b: '---'\n", "c: 3\n"]);
    }
}
