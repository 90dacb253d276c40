//! Helpers shared by the tests that run `ork run` against the local cluster: start ork on a
//! Katalog (its log captured, its inspector and its probes each on a free loopback port), create WebApps, wait
//! for Ready.
#![allow(dead_code)] // each test file uses a different part

pub mod example;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Result;
use kube::Client;
use kube::api::Api;
use kube::core::{DynamicObject, GroupVersionKind};
use ork_test_support::fake_service::{FakeService, webapp_answer};
use ork_test_support::{TestNamespace, apply_yaml, client, install_crypto, resolve, wait_for};
pub use ork_test_support::{kubeconfig_with_token, service_account_token};

pub const CRD: &str = include_str!("../../../../examples/webapp/crd.yaml");
pub const WAIT: Duration = Duration::from_secs(30);

/// `ork run` on a Katalog for the test namespace; its stderr goes to `log`. Killed when dropped;
/// the log is printed if the test failed.
pub struct Ork {
    pub child: Child,
    pub log: PathBuf,
}

impl Ork {
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Where this ork serves the inspector (/katalog, /status): it binds port 0 (no port
    /// picked ahead can be taken by a parallel test meanwhile) and logs what it bound.
    pub async fn http(&self) -> Result<SocketAddr> {
        self.bound("serving /katalog").await
    }

    /// Where this ork serves its admission webhook (`--webhook-addr=127.0.0.1:0`, logged).
    pub async fn webhook(&self) -> Result<SocketAddr> {
        self.bound("serving the admission webhook").await
    }

    /// Where this ork serves /healthz, /readyz and /metrics (its own port 0, logged).
    pub async fn probes(&self) -> Result<SocketAddr> {
        self.bound("serving /healthz").await
    }

    /// The loopback address on the first log line that says `what`.
    async fn bound(&self, what: &str) -> Result<SocketAddr> {
        wait_for(
            &format!("ork's address ({what}) in its log"),
            WAIT,
            || async {
                let log = self.log();
                let line = log.lines().find(|l| l.contains(what))?;
                let at = line.find("127.0.0.1:")?;
                let port: String = line[at + "127.0.0.1:".len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                format!("127.0.0.1:{port}").parse().ok()
            },
        )
        .await
    }
}

impl Drop for Ork {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- ork log ---\n{}", self.log());
        }
    }
}

/// `ork retry TARGET -n NS` with the cluster's kubeconfig: reconcile that CR now, in every ork
/// that serves it.
pub fn ork_retry(target: &str, ns: &str) -> Result<()> {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["retry", target, "-n", ns])
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "ork retry: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// What a finished `ork` command printed, stdout then stderr, as one text.
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The Katalog line that says where the service is.
pub fn http(url: &str) -> String {
    format!("endpoint: \"{url}\"")
}

pub fn katalog(ns: &str, transport: &str, extra_remote: &str) -> String {
    format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: test}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          resync: 10m
          queue: {{retryBackoff: {{initial: 200ms, max: 2s}}}}
          remote:
            {transport}
            timeout: 2s
            managedResources:
              - {{group: apps, version: v1, plural: deployments}}
              - {{group: "", version: v1, plural: services}}
{extra_remote}"#
    )
}

/// A Katalog for the test namespace whose service (`url`) manages ConfigMaps, with `workers`
/// and `extra` YAML inside the managed resource's flow map (e.g. `, adopt: true`).
pub fn configmap_katalog(ns: &str, url: &str, workers: u32, extra: &str) -> String {
    format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: test}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          workers: {workers}
          queue: {{retryBackoff: {{initial: 200ms, max: 2s}}}}
          remote:
            endpoint: "{url}"
            timeout: 5s
            managedResources:
              - {{group: "", version: v1, plural: configmaps{extra}}}
"#
    )
}

pub async fn start(ns: &TestNamespace, svc: &FakeService) -> Result<(Client, Ork)> {
    start_with(ns, &http(&svc.url), "").await
}

/// Starts `ork run` for the test namespace; `transport` is the `endpoint:` or `command:` line,
/// `extra_remote` YAML added to the `remote` block (12 spaces of indentation).
pub async fn start_with(
    ns: &TestNamespace,
    transport: &str,
    extra_remote: &str,
) -> Result<(Client, Ork)> {
    start_katalog(ns, &katalog(&ns.name, transport, extra_remote)).await
}

/// Starts `ork run` on the given Katalog text (the example CRD is applied first).
pub async fn start_katalog(ns: &TestNamespace, katalog: &str) -> Result<(Client, Ork)> {
    start_katalog_with(ns, katalog, &[]).await
}

/// [`start_katalog`] with more `ork run` arguments. One ork per namespace at a time: its
/// Katalog and log are the namespace's.
pub async fn start_katalog_with(
    ns: &TestNamespace,
    katalog: &str,
    args: &[&str],
) -> Result<(Client, Ork)> {
    let client = client().await?;
    apply_yaml(&client, CRD, &ns.name).await?;
    let dir = std::env::temp_dir().join(format!("ork-run-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog)?;
    let ork = spawn_ork(&path, &dir.join("ork.log"), args, &[])?;
    Ok((client, ork))
}

/// Spawns `ork run -k katalog` with `args` and `env`, its stderr to `log`, its HTTP endpoints on
/// a loopback port of its own choosing ([`Ork::http`]).
pub fn spawn_ork(
    katalog: &std::path::Path,
    log: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Ork> {
    let child = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["run", "-k"])
        .arg(katalog)
        .arg("--http-addr=127.0.0.1:0")
        .arg("--probe-addr=127.0.0.1:0")
        .args(args)
        // The admin kubeconfig unless `args` names another with --kubeconfig.
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .envs(env.iter().copied())
        .env(
            "RUST_LOG",
            "debug,kube_client=off,hyper=off,reqwest=off,tower=off,h2=off,rustls=off",
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()?;
    Ok(Ork {
        child,
        log: log.to_path_buf(),
    })
}

pub async fn create_webapp(client: &Client, ns: &str, name: &str, image: &str) -> Result<()> {
    let yaml = format!(
        "apiVersion: demo.ork.dev/v1\nkind: WebApp\nmetadata: {{name: {name}}}\nspec: {{image: \"{image}\", replicas: 1}}\n"
    );
    apply_yaml(client, &yaml, ns).await?;
    Ok(())
}

pub async fn webapps(client: &Client, ns: &str) -> Result<Api<DynamicObject>> {
    let (ar, _) = resolve(
        client,
        &GroupVersionKind::gvk("demo.ork.dev", "v1", "WebApp"),
    )
    .await?;
    Ok(Api::namespaced_with(client.clone(), ns, &ar))
}

pub fn ready(obj: &DynamicObject) -> Option<(String, String)> {
    ready_in(&obj.data["status"])
}

/// The Ready condition's status and message in a CR's `status`.
pub fn ready_in(status: &serde_json::Value) -> Option<(String, String)> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

pub async fn wait_ready(
    api: &Api<DynamicObject>,
    name: &str,
    want: &str,
) -> Result<(String, String)> {
    wait_for(&format!("{name} Ready={want}"), WAIT, || async {
        let obj = api.get(name).await.ok()?;
        ready(&obj).filter(|(s, _)| s == want)
    })
    .await
}

/// The example answer's WebApp "web" created and reconciled to Ready=True.
pub struct Ready {
    pub svc: FakeService,
    pub ns: TestNamespace,
    pub client: Client,
    pub api: Api<DynamicObject>,
    pub _ork: Ork,
}

impl Ready {
    pub async fn web() -> Result<Ready> {
        let svc = FakeService::start(webapp_answer).await?;
        let ns = TestNamespace::create(&client().await?).await?;
        let (client, ork) = start(&ns, &svc).await?;
        create_webapp(&client, &ns.name, "web", "nginx:1").await?;
        let api = webapps(&client, &ns.name).await?;
        wait_ready(&api, "web", "True").await?;
        Ok(Ready {
            svc,
            ns,
            client,
            api,
            _ork: ork,
        })
    }
}

/// `GET http://{addr}{path}` on one of ork's endpoints: status and body.
pub async fn get(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    install_crypto();
    let resp = reqwest::get(format!("http://{addr}{path}")).await?;
    Ok((resp.status().as_u16(), resp.text().await?))
}

/// [`get`] with `token` as the bearer.
pub async fn get_as(addr: SocketAddr, path: &str, token: &str) -> Result<(u16, String)> {
    install_crypto();
    let resp = reqwest::Client::new()
        .get(format!("http://{addr}{path}"))
        .bearer_auth(token)
        .send()
        .await?;
    Ok((resp.status().as_u16(), resp.text().await?))
}

/// The local cluster's admin token (`system:masters`), from its kubeconfig.
pub fn admin_token() -> Result<String> {
    let text = std::fs::read_to_string(ork_test_support::kubeconfig_path())?;
    let kc: serde_json::Value = serde_saphyr::from_str(&text)?;
    kc["users"][0]["user"]["token"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("the local cluster's kubeconfig has no token"))
}

/// `ork generate rbac -k katalog --namespace ns --name name`.
pub fn generate_rbac(katalog: &std::path::Path, ns: &str, name: &str) -> Result<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["generate", "rbac", "-k"])
        .arg(katalog)
        .args(["--namespace", ns, "--name", name])
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "generate rbac failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Starts `ork run` with the RBAC `ork generate rbac` derives for `katalog` (in namespace
/// `home`, as ServiceAccount `name`) and nothing more: its token, its kubeconfig.
pub async fn spawn_ork_with_generated_rbac(
    admin: &Client,
    katalog: &std::path::Path,
    home: &str,
    name: &str,
) -> Result<Ork> {
    apply_yaml(admin, &generate_rbac(katalog, home, name)?, home).await?;
    let token = service_account_token(admin, home, name).await?;
    let dir = katalog.parent().unwrap_or(std::path::Path::new("."));
    let kubeconfig = dir.join("kubeconfig");
    kubeconfig_with_token(&token, &kubeconfig)?;
    spawn_ork(
        katalog,
        &dir.join("ork.log"),
        &[&format!("--kubeconfig={}", kubeconfig.display())],
        &[("ORK_NAMESPACE", home)],
    )
}

/// Deletes the ClusterRole and ClusterRoleBinding named `name` (`ork generate rbac --name`'s),
/// which outlive a test's namespaces; whatever is already gone is no failure.
pub async fn delete_cluster_rbac(admin: &Client, name: &str) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let params = kube::api::DeleteParams::default();
    let _ = Api::<ClusterRole>::all(admin.clone())
        .delete(name, &params)
        .await;
    let _ = Api::<ClusterRoleBinding>::all(admin.clone())
        .delete(name, &params)
        .await;
}
