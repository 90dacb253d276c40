//! `ork retry KIND/NAME [-n NS]`: reconcile a CR now; `ork retry KIND --all [-l SEL] [-n NS]`
//! every CR of the kind (or those selected), at `--rate` per second, not as a herd. It sets the CR's
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
    /// Every CR of the kind `target` names (in `namespace`, else everywhere).
    pub all: bool,
    pub selector: Option<String>,
    /// CRs annotated per second with `all`.
    pub rate: f64,
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
    let (api, resource) = find_kind(client, kind, namespace, false).await?;
    Ok(Found {
        api,
        resource,
        name: name.to_string(),
    })
}

/// The CRs of `kind` (kind, plural or Kind.group) in `namespace`; when none is given, the
/// kubeconfig's, or every namespace when `everywhere`.
///
/// # Errors
/// A kind the API server does not serve.
async fn find_kind(
    client: kube::Client,
    kind: &str,
    namespace: Option<&str>,
    everywhere: bool,
) -> Result<(Api<DynamicObject>, ApiResource)> {
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
        (Scope::Namespaced, None) if everywhere => Api::all_with(client, &resource),
        (Scope::Namespaced, None) => Api::default_namespaced_with(client, &resource),
    };
    Ok((api, resource))
}

/// The annotation that asks for a reconcile now, set to `now`.
fn requested(now: &str) -> serde_json::Value {
    serde_json::json!({"metadata": {"annotations": {REQUESTED_AT: now}}})
}

/// `--all`: every CR of the kind (those the selector selects), annotated at `rate` per second
/// so that ork's queue and the service see a steady stream rather than a herd.
async fn request_all(args: RetryArgs) -> Result<String> {
    if args.target.contains('/') {
        bail!(
            "{:?}: with --all, name the kind alone, e.g. webapp",
            args.target
        );
    }
    if !(args.rate.is_finite() && args.rate > 0.0) {
        bail!("--rate {}: expected CRs per second above 0", args.rate);
    }
    let client = crate::run::connect(args.kubeconfig, args.context, Protocol::Negotiated).await?;
    let (api, resource) = find_kind(client, &args.target, args.namespace.as_deref(), true).await?;
    let mut params = kube::api::ListParams::default();
    if let Some(selector) = &args.selector {
        params = params.labels(selector);
    }
    let crs = api
        .list_metadata(&params)
        .await
        .with_context(|| format!("listing {}", resource.plural))?;
    if crs.items.is_empty() {
        return Ok(format!(
            "no {} {}",
            resource.plural,
            args.selector
                .as_deref()
                .map_or_else(|| "found".to_string(), |s| format!("match {s}"))
        ));
    }
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let patch = requested(&now);
    let mut pace = tokio::time::interval(std::time::Duration::from_secs_f64(1.0 / args.rate));
    let mut done = 0;
    for cr in &crs.items {
        pace.tick().await;
        let name = cr.metadata.name.as_deref().unwrap_or_default();
        let at: Api<DynamicObject> = match cr.metadata.namespace.as_deref() {
            Some(ns) => Api::namespaced_with(api.clone().into_client(), ns, &resource),
            None => api.clone(),
        };
        match at
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => done += 1,
            // Deleted since the list: nothing to reconcile.
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "annotating {}/{name} ({done} requested before it)",
                        resource.kind
                    )
                });
            }
        }
    }
    Ok(format!(
        "{done} {}: reconcile requested at {now} ({REQUESTED_AT}), {} per second; ork starts each one's backoff over and reconciles it",
        resource.plural, args.rate
    ))
}

async fn request(args: RetryArgs) -> Result<String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    if args.all {
        return request_all(args).await;
    }
    let client = crate::run::connect(args.kubeconfig, args.context, Protocol::Negotiated).await?;
    let Found {
        api,
        resource,
        name,
    } = find_cr(client, &args.target, args.namespace.as_deref()).await?;
    let name = name.as_str();
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(&requested(&now)),
    )
    .await
    .with_context(|| format!("annotating {}/{name}", resource.kind))?;
    Ok(format!(
        "{}/{name}: reconcile requested at {now} ({REQUESTED_AT}); ork starts its backoff over and reconciles it now",
        resource.kind
    ))
}
