//! `ork-dev`: small cluster chores for the demo without kubectl.
//!
//! - `ork-dev apply NAMESPACE FILE...` — server-side apply each YAML file.
//! - `ork-dev show NAMESPACE` — print the WebApps, Deployments, Services and events there.

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Service};
use kube::api::{Api, ListParams};
use kube::core::{DynamicObject, GroupVersionKind};
use ork_test_support::{apply_yaml, client, resolve};

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let client = client().await?;
    match args.as_slice() {
        [cmd, ns, files @ ..] if cmd == "apply" => {
            for f in files {
                let yaml = std::fs::read_to_string(f).with_context(|| format!("reading {f}"))?;
                for o in apply_yaml(&client, &yaml, ns).await? {
                    let kind = o.types.map(|t| t.kind).unwrap_or_default();
                    println!("applied {kind} {}", o.metadata.name.unwrap_or_default());
                }
            }
        }
        [cmd, ns] if cmd == "show" => show(&client, ns, "demo.ork.dev/v1").await?,
        [cmd, ns, group_version] if cmd == "show" => show(&client, ns, group_version).await?,
        _ => bail!("usage: ork-dev apply NAMESPACE FILE... | ork-dev show NAMESPACE"),
    }
    Ok(())
}

async fn show(client: &kube::Client, ns: &str, group_version: &str) -> Result<()> {
    let lp = ListParams::default();
    let (group, version) = group_version.split_once('/').unwrap_or(("", group_version));
    let (ar, _) = resolve(client, &GroupVersionKind::gvk(group, version, "WebApp")).await?;
    for w in Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar)
        .list(&lp)
        .await?
    {
        println!(
            "--- WebApp {} (annotations, status)",
            w.metadata.name.clone().unwrap_or_default()
        );
        let ann: std::collections::BTreeMap<_, _> = w
            .metadata
            .annotations
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k.starts_with("orkestra.orkspace.io/"))
            .collect();
        println!("{}", serde_json::to_string_pretty(&ann)?);
        println!("{}", serde_json::to_string_pretty(&w.data["status"])?);
    }
    for d in Api::<Deployment>::namespaced(client.clone(), ns)
        .list(&lp)
        .await?
    {
        let spec = d.spec.clone().unwrap_or_default();
        let owner = d
            .metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| format!("{}/{}", o.kind, o.name))
            .collect::<Vec<_>>()
            .join(",");
        let image = spec
            .template
            .spec
            .and_then(|p| p.containers.first().and_then(|c| c.image.clone()))
            .unwrap_or_default();
        println!(
            "--- Deployment {}: replicas={} image={image} owner={owner}",
            d.metadata.name.unwrap_or_default(),
            spec.replicas.unwrap_or(0)
        );
    }
    for s in Api::<Service>::namespaced(client.clone(), ns)
        .list(&lp)
        .await?
    {
        let ports: Vec<String> = s
            .spec
            .and_then(|sp| sp.ports)
            .unwrap_or_default()
            .into_iter()
            .map(|p| p.port.to_string())
            .collect();
        println!(
            "--- Service {}: ports={}",
            s.metadata.name.unwrap_or_default(),
            ports.join(",")
        );
    }
    println!("--- Events");
    for e in Api::<Event>::namespaced(client.clone(), ns)
        .list(&lp)
        .await?
    {
        println!(
            "{:<8} {:<24} {:<10} x{} {}",
            e.type_.unwrap_or_default(),
            e.reason.unwrap_or_default(),
            e.involved_object.name.unwrap_or_default(),
            e.count.unwrap_or(1),
            e.message.unwrap_or_default()
        );
    }
    Ok(())
}
