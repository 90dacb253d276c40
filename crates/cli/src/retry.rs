//! `ork retry KIND/NAME [-n NS]`: reconcile a CR now. It sets the CR's
//! `orkestra.orkspace.io/requested-at` annotation to the current time; ork sees the new value,
//! starts the CR's backoff over and reconciles it at once (SPEC §14). Setting the annotation by
//! hand does the same: `kubectl annotate webapp/hello orkestra.orkspace.io/requested-at="$(date)"
//! --overwrite`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use kube::api::{Api, Patch, PatchParams};
use kube::core::DynamicObject;
use kube::discovery::{ApiResource, Discovery, Scope};
use ork_kube::client::Protocol;
use ork_kube::labels::REQUESTED_AT;

pub struct RetryArgs {
    pub target: String,
    pub namespace: Option<String>,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

pub fn retry(args: RetryArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork retry: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(request(args)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ork retry: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A CR named on the command line, found through discovery.
pub(crate) struct Found {
    pub api: Api<DynamicObject>,
    pub resource: ApiResource,
    pub name: String,
}

/// The CR `target` (KIND/NAME; kind, plural or Kind.group) in `namespace` (default: the
/// kubeconfig's), with the API to read and write it.
///
/// # Errors
/// A target that is not KIND/NAME, or a kind the API server does not serve.
pub(crate) async fn find_cr(
    client: kube::Client,
    target: &str,
    namespace: Option<&str>,
) -> Result<Found> {
    let Some((kind, name)) = target
        .split_once('/')
        .filter(|(k, n)| !k.is_empty() && !n.is_empty())
    else {
        bail!("{target:?}: expected KIND/NAME, e.g. webapp/hello");
    };
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .context("discovering the API server's types")?;
    let wanted = kind.to_lowercase();
    let (resource, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| {
            let (kind_only, group) = wanted.split_once('.').unwrap_or((&wanted, ""));
            (r.kind.to_lowercase() == kind_only || r.plural == kind_only)
                && (group.is_empty() || r.group == group)
        })
        .with_context(|| format!("the API server serves no kind {kind:?}"))?;
    let api: Api<DynamicObject> = match (&caps.scope, namespace) {
        (Scope::Cluster, _) => Api::all_with(client, &resource),
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client, ns, &resource),
        (Scope::Namespaced, None) => Api::default_namespaced_with(client, &resource),
    };
    Ok(Found {
        api,
        resource,
        name: name.to_string(),
    })
}

async fn request(args: RetryArgs) -> Result<String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = crate::run::connect(args.kubeconfig, args.context, Protocol::Negotiated).await?;
    let Found {
        api,
        resource,
        name,
    } = find_cr(client, &args.target, args.namespace.as_deref()).await?;
    let name = name.as_str();
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let patch = serde_json::json!({"metadata": {"annotations": {REQUESTED_AT: now}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("annotating {}/{name}", resource.kind))?;
    Ok(format!(
        "{}/{name}: reconcile requested at {now} ({REQUESTED_AT}); ork starts its backoff over and reconciles it now",
        resource.kind
    ))
}
