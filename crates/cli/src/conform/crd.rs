//! The CRD `ork conform` makes its requests from: a `--crd` file, the entry's `crdFile`, or the
//! CRD the kubeconfig's cluster serves, in that order; and the schema of the entry's version.

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use ork_katalog::CrdEntry;
use ork_kube::client::Protocol;
use serde_json::Value;

/// The entry's CRD as JSON, and where it came from (for the report).
///
/// # Errors
/// No CRD of the entry's group and kind in the files, none to be had from a cluster, or a
/// cluster that cannot be asked.
pub async fn find(entry: &CrdEntry, given: &[Value]) -> Result<(Value, String)> {
    let t = &entry.api_types;
    let matches = |c: &&Value| {
        c["kind"] == "CustomResourceDefinition"
            && c["spec"]["group"].as_str() == Some(t.group.as_str())
            && c["spec"]["names"]["kind"].as_str() == Some(t.kind.as_str())
    };
    if let Some(crd) = given.iter().find(matches) {
        return Ok((crd.clone(), "--crd".into()));
    }
    if let Some(path) = &entry.crd_file {
        let docs = crate::simulate::read_documents(std::slice::from_ref(path))?;
        return docs
            .iter()
            .find(matches)
            .cloned()
            .map(|c| (c, format!("crdFile {}", path.display())))
            .ok_or_else(|| {
                anyhow!(
                    "{} has no CRD of kind {} in group {}",
                    path.display(),
                    t.kind,
                    t.group
                )
            });
    }
    if !crate::secrets::kubeconfig_exists() {
        bail!(
            "no CRD for {}.{}: pass it with --crd FILE, set the entry's crdFile, or give a kubeconfig whose cluster serves it",
            t.plural,
            t.group
        );
    }
    let name = format!("{}.{}", t.plural, t.group);
    let config = kube::Config::infer()
        .await
        .context("reading the kubeconfig to fetch the CRD (or pass --crd FILE)")?;
    let client = ork_kube::client::client(config, Protocol::Negotiated)?;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let crd = crds
        .get_opt(&name)
        .await
        .with_context(|| format!("fetching CRD {name} from the kubeconfig's cluster"))?
        .ok_or_else(|| {
            anyhow!("the kubeconfig's cluster has no CRD {name} (pass it with --crd FILE)")
        })?;
    Ok((
        serde_json::to_value(crd)?,
        format!("the cluster's CRD {name}"),
    ))
}

/// The `openAPIV3Schema` of `version`; an empty schema (anything goes) when the CRD has none.
///
/// # Errors
/// The CRD does not define `version`.
pub fn schema(crd: &Value, version: &str) -> Result<Value> {
    let versions = crd["spec"]["versions"].as_array();
    let v = versions
        .into_iter()
        .flatten()
        .find(|v| v["name"].as_str() == Some(version))
        .ok_or_else(|| {
            let names: Vec<&str> = versions
                .into_iter()
                .flatten()
                .filter_map(|v| v["name"].as_str())
                .collect();
            anyhow!(
                "the CRD has no version {version} (it has {})",
                names.join(", ")
            )
        })?;
    Ok(v.pointer("/schema/openAPIV3Schema")
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default())))
}
