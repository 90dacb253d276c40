//! Test support for integration tests against the local cluster (`cargo xtask cluster up`):
//! a client, a fresh random namespace per test (deleted when dropped), YAML apply, waits.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use kube::{Client, Config, ResourceExt};
use rand::Rng;

pub mod fake_service;
pub mod netns;
pub mod pki;

/// Installs the one TLS provider (ring) for rustls; safe to call many times.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The kubeconfig of the local cluster: `$KUBECONFIG`, else `target/ork-cluster/kubeconfig`.
pub fn kubeconfig_path() -> PathBuf {
    std::env::var_os("KUBECONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/ork-cluster/kubeconfig")
        })
}

/// A client for the local cluster.
///
/// # Errors
/// When there is no local cluster: run the tests through `cargo xtask test`.
pub async fn client() -> Result<Client> {
    install_crypto();
    let path = kubeconfig_path();
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).with_context(|| {
        format!(
            "no local cluster kubeconfig at {} — run tests with `cargo xtask test`",
            path.display()
        )
    })?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(Client::try_from(config)?)
}

/// A kubeconfig at `path` for the local cluster that authenticates with `token`.
pub fn kubeconfig_with_token(token: &str, path: &std::path::Path) -> Result<()> {
    let mut kc = kube::config::Kubeconfig::read_from(kubeconfig_path())?;
    for user in &mut kc.auth_infos {
        if let Some(info) = user.auth_info.as_mut() {
            info.token = Some(token.to_string().into());
        }
    }
    std::fs::write(path, serde_json::to_string(&kc)?)?;
    Ok(())
}

/// A token of ServiceAccount `ns/name` from the TokenRequest API (1.24+ no longer gives every
/// ServiceAccount a token Secret).
pub async fn service_account_token(admin: &Client, ns: &str, name: &str) -> Result<String> {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), ns);
    let request: TokenRequest = serde_json::from_value(serde_json::json!({
        "spec": {"audiences": [], "expirationSeconds": 3600}
    }))?;
    wait_for(
        "the ServiceAccount token",
        Duration::from_secs(30),
        || async {
            let answer = accounts
                .create_token_request(name, &Default::default(), &request)
                .await
                .ok()?;
            Some(answer.status?.token)
        },
    )
    .await
}

/// A namespace with a random name, deleted (with everything in it) when dropped.
pub struct TestNamespace {
    pub name: String,
}

impl std::fmt::Debug for TestNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestNamespace")
            .field("name", &self.name)
            .finish()
    }
}

impl TestNamespace {
    /// # Errors
    /// When the API server refuses the namespace.
    pub async fn create(client: &Client) -> Result<TestNamespace> {
        let suffix: u32 = rand::rng().random();
        let name = format!("ork-test-{suffix:08x}");
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"ork.dev/test": "true"}}
        }))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await?;
        Ok(TestNamespace { name })
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop cannot await, and the test's client is bound to the test's runtime (blocked here),
        // so delete with a new client on a short-lived runtime of its own thread.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(rt) = rt {
                rt.block_on(async {
                    if let Ok(client) = client().await {
                        let _ = Api::<Namespace>::all(client)
                            .delete(&name, &DeleteParams::background())
                            .await;
                    }
                });
            }
        })
        .join();
    }
}

/// Polls `check` every 100 ms until it yields `Some`, for at most `limit`.
///
/// # Errors
/// When `limit` passes first; the message names `what`.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return Ok(v);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {limit:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the CRD `name` is Established.
///
/// # Errors
/// When it is not established within 30 s.
pub async fn wait_crd_established(client: &Client, name: &str) -> Result<()> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    wait_for(
        &format!("CRD {name} Established"),
        Duration::from_secs(30),
        || {
            let api = api.clone();
            async move {
                let crd = api.get_opt(name).await.ok().flatten()?;
                let established = crd
                    .status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                established.then_some(())
            }
        },
    )
    .await
}

/// Server-side applies every document of `yaml` (field manager `ork-test`); namespaced objects
/// without a namespace go to `namespace`. CRDs are waited for until Established.
///
/// # Errors
/// A document that is not an object, an unknown type, or a refused apply.
pub async fn apply_yaml(
    client: &Client,
    yaml: &str,
    namespace: &str,
) -> Result<Vec<DynamicObject>> {
    let mut applied = Vec::new();
    for doc in yaml.split("\n---") {
        if doc.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_saphyr::from_str(doc)?;
        let mut obj: DynamicObject = serde_json::from_value(value)?;
        let types = obj
            .types
            .clone()
            .context("object without apiVersion/kind")?;
        let gvk = GroupVersionKind::try_from(&types)?;
        let (ar, caps) = resolve(client, &gvk).await?;
        let api: Api<DynamicObject> = if caps.scope == Scope::Namespaced {
            let ns = obj.namespace().unwrap_or_else(|| namespace.to_string());
            obj.metadata.namespace = Some(ns.clone());
            Api::namespaced_with(client.clone(), &ns, &ar)
        } else {
            Api::all_with(client.clone(), &ar)
        };
        let name = obj.name_any();
        let out = api
            .patch(
                &name,
                &PatchParams::apply("ork-test").force(),
                &Patch::Apply(&obj),
            )
            .await
            .with_context(|| format!("applying {} {name}", gvk.kind))?;
        if gvk.kind == "CustomResourceDefinition" {
            wait_crd_established(client, &name).await?;
        }
        applied.push(out);
    }
    Ok(applied)
}

/// Finds the API resource of a kind, re-running discovery (a new CRD appears within seconds).
///
/// A group just made by a CRD can be listed before its version's path is served: the API
/// server answers that path 404 for a moment, so a failed discovery is tried again too.
///
/// # Errors
/// When discovery still fails, or the kind is still not served, after ten seconds.
pub async fn resolve(
    client: &Client,
    gvk: &GroupVersionKind,
) -> Result<(ApiResource, ApiCapabilities)> {
    let mut last_error = None;
    for _ in 0..50 {
        match Discovery::new(client.clone())
            .filter(&[gvk.group.as_str()])
            .run()
            .await
        {
            Ok(discovery) => {
                if let Some(found) = discovery.resolve_gvk(gvk) {
                    return Ok(found);
                }
                last_error = None;
            }
            Err(error) => last_error = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    match last_error {
        Some(error) => Err(error).with_context(|| format!("discovering {gvk:?}")),
        None => bail!("the API server does not serve {gvk:?}"),
    }
}

/// The field managers recorded on an object (who wrote which fields, server-side apply).
pub fn field_managers(meta: &kube::core::ObjectMeta) -> Vec<String> {
    meta.managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect()
}
