//! The example `examples/orkestra-remote` for the tests that run it: its fixed names, its
//! Python service (started on a port of the test's choice) and the cleanup of what running it
//! creates.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams};
use ork_test_support::{client, wait_for};
use serde_json::Value;

pub const CRD_NAME: &str = "webapps.migrate.ork.dev";
pub const NAMESPACE: &str = "orkestra-remote";
pub const PORT: u16 = 8026;

pub fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/orkestra-remote")
}

/// The example's Python service; killed when dropped.
pub struct Reconciler {
    child: Child,
    pub log: PathBuf,
    /// The port it listens on.
    pub port: u16,
}

impl Reconciler {
    /// Starts `reconciler.py` in `folder` on `port` (0: one the system chooses, so no parallel
    /// test can take it between choosing and binding) and waits until it listens.
    pub fn start(folder: &Path, port: u16, log: PathBuf) -> Result<Reconciler> {
        let child = Command::new("python3")
            .arg(folder.join("reconciler.py"))
            .args(["--port", &port.to_string()])
            .env_remove("RECONCILER_TOKEN")
            .stdout(std::fs::File::create(&log)?)
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting python3 reconciler.py")?;
        let mut service = Reconciler { child, log, port };
        for _ in 0..100 {
            // Its first line names the port it bound.
            let text = std::fs::read_to_string(&service.log).unwrap_or_default();
            if let Some(bound) = text
                .lines()
                .next()
                .and_then(|l| l.rsplit_once("127.0.0.1:"))
                .and_then(|(_, p)| p.trim().parse::<u16>().ok())
                && (port == 0 || bound == port)
                && TcpStream::connect(("127.0.0.1", bound)).is_ok()
            {
                service.port = bound;
                return Ok(service);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("reconciler.py did not listen (port {port})")
    }

    /// One JSON object per call the service received.
    pub fn calls(&self) -> Vec<Value> {
        let Ok(file) = std::fs::File::open(&self.log) else {
            return Vec::new();
        };
        BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .collect()
    }

    pub fn calls_for(&self, key: &str) -> Vec<Value> {
        self.calls()
            .into_iter()
            .filter(|c| c["key"] == key)
            .collect()
    }
}

impl Drop for Reconciler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Removes what running the example creates — its namespace and its CRD — and waits until both
/// are gone; on drop too, so a failed run leaves a clean cluster for the next.
pub struct ExampleCleanup;

impl ExampleCleanup {
    pub async fn now(client: &Client) -> Result<()> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let _ = namespaces
            .delete(NAMESPACE, &DeleteParams::background())
            .await;
        let _ = crds.delete(CRD_NAME, &DeleteParams::background()).await;
        // A namespace takes a while to empty; the next run must start without either.
        wait_for(
            "the example's namespace and CRD gone",
            Duration::from_secs(90),
            || async {
                let ns = namespaces.get_opt(NAMESPACE).await.ok()?;
                let crd = crds.get_opt(CRD_NAME).await.ok()?;
                (ns.is_none() && crd.is_none()).then_some(())
            },
        )
        .await
    }
}

impl Drop for ExampleCleanup {
    fn drop(&mut self) {
        // Drop cannot await: a client of its own on a short-lived runtime of its own thread.
        let _ = std::thread::spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(rt) = rt {
                rt.block_on(async {
                    if let Ok(client) = client().await {
                        let _ = ExampleCleanup::now(&client).await;
                    }
                });
            }
        })
        .join();
    }
}

/// The example's Katalog with the service on `port` (its endpoint and `allowedHosts`).
pub fn katalog_on_port(port: u16) -> Result<String> {
    let text = std::fs::read_to_string(example().join("katalog.yaml"))?;
    Ok(text.replace(&PORT.to_string(), &port.to_string()))
}

/// The example's Katalog with the token from the environment instead of a Secret and the
/// service on `port`.
pub fn offline_katalog(port: u16) -> Result<String> {
    let text = katalog_on_port(port)?;
    let auth = "            auth:\n              secretRef:\n                name: webapp-reconciler-token\n                namespace: orkestra-remote\n                key: token       # sent as \"Authorization: Bearer <token>\"\n";
    ensure!(text.contains(auth), "the example's auth block changed");
    Ok(text.replace(auth, "            auth: {env: RECONCILER_TOKEN}\n"))
}
