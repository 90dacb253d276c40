//! The processes the bench starts: the reconcile service (Python, the same for every system),
//! `ork run` with a generated Katalog, and the kopf peer in a venv under `target/`. Each is
//! stopped (by its own PID) when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::http1::Conn;

pub const SERVICE_PY: &str = include_str!("service.py");
pub const KOPF_OPERATOR_PY: &str = include_str!("kopf_operator.py");

pub const GROUP: &str = "bench.ork.dev";
pub const KIND: &str = "Widget";
pub const PLURAL: &str = "widgets";

/// The Widget CRD every system reconciles.
pub const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.bench.ork.dev
spec:
  group: bench.ork.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
                color: {type: string}
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
"#;

/// A child process stopped by its PID when dropped.
#[derive(Debug)]
pub struct Proc {
    pub name: &'static str,
    child: Child,
}

impl Proc {
    /// The process `child`, called `name` in the report.
    pub fn new(name: &'static str, child: Child) -> Proc {
        Proc { name, child }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails when the process has already exited (it should run until dropped).
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "{} exited early ({status}); see its log in target/bench/",
                self.name
            );
        }
        Ok(())
    }

    /// SIGTERM, as a kubelet stops a pod, then SIGKILL if it is still there after `limit`;
    /// returns how long it took to exit and whether it exited by itself.
    pub async fn stop(mut self, limit: std::time::Duration) -> (std::time::Duration, bool) {
        let started = std::time::Instant::now();
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        while started.elapsed() < limit {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return (started.elapsed(), true);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        drop(self);
        (started.elapsed(), false)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python reconcile service and its call counter.
#[derive(Debug)]
pub struct Service {
    pub proc: Proc,
    pub addr: SocketAddr,
}

impl Service {
    /// # Errors
    /// When python3 is missing or the service does not print its port.
    pub fn start(work: &Path) -> Result<Service> {
        let script = work.join("service.py");
        std::fs::write(&script, SERVICE_PY)?;
        let mut child = Command::new("python3")
            .arg(&script)
            .stdout(Stdio::piped())
            .stderr(log_file(work, "service")?)
            .spawn()
            .context("starting python3 service.py")?;
        let stdout = child.stdout.take().context("service stdout")?;
        let proc = Proc {
            name: "service",
            child,
        };
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let port: u16 = line
            .trim()
            .parse()
            .with_context(|| format!("service printed {line:?}, not its port"))?;
        Ok(Service {
            proc,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/reconcile", self.addr)
    }

    /// Calls answered so far.
    ///
    /// # Errors
    /// When the service does not answer.
    pub async fn calls(&self) -> Result<u64> {
        let (_, body) = Conn::new(self.addr).request("GET", "/calls", b"").await?;
        let v: Value = serde_json::from_slice(&body)?;
        v["calls"].as_u64().context("calls counter")
    }

    /// When each of the `k`-th to the `m`-th calls was answered, in seconds after the `k`-th,
    /// by the service's clock.
    ///
    /// # Errors
    /// When the service does not answer or has not answered that many calls.
    pub async fn times(&self, k: u64, m: u64) -> Result<Vec<f64>> {
        let (_, body) = Conn::new(self.addr)
            .request("GET", &format!("/times/{k}/{m}"), b"")
            .await?;
        let v: Value = serde_json::from_slice(&body)?;
        v["seconds"]
            .as_array()
            .context("times of calls")?
            .iter()
            .map(|t| t.as_f64().context("a time"))
            .collect()
    }

    /// Seconds from the `k`-th call the service answered to the `m`-th, by the service's clock.
    ///
    /// # Errors
    /// When the service does not answer or has not answered that many calls.
    pub async fn span(&self, k: u64, m: u64) -> Result<f64> {
        let (_, body) = Conn::new(self.addr)
            .request("GET", &format!("/span/{k}/{m}"), b"")
            .await?;
        let v: Value = serde_json::from_slice(&body)?;
        v["seconds"].as_f64().context("span of calls")
    }
}

pub fn log_file(work: &Path, name: &str) -> Result<std::fs::File> {
    Ok(std::fs::File::create(work.join(format!("{name}.log")))?)
}

/// `ork run` on a generated Katalog: one Widget entry in `ns`, `workers` workers, `resync`.
///
/// # Errors
/// When the binary cannot be started.
pub fn start_ork(
    ork: &Path,
    work: &Path,
    kubeconfig: &Path,
    ns: &str,
    service_url: &str,
    workers: usize,
    resync: &str,
) -> Result<Proc> {
    let how = OrkRun {
        resync,
        on_start_call: false,
        http: None,
    };
    start_ork_with(ork, work, kubeconfig, ns, service_url, workers, &how)
}

/// How the bench runs ork besides the job's settings.
pub struct OrkRun<'a> {
    pub resync: &'a str,
    /// `reconcile.onStart: call`: every CR called at start.
    pub on_start_call: bool,
    /// Where ork serves /readyz, its probes' address (else nowhere).
    pub http: Option<std::net::SocketAddr>,
}

/// [`start_ork`] as `how` says.
pub fn start_ork_with(
    ork: &Path,
    work: &Path,
    kubeconfig: &Path,
    ns: &str,
    service_url: &str,
    workers: usize,
    how: &OrkRun<'_>,
) -> Result<Proc> {
    let resync = how.resync;
    let on_start = if how.on_start_call {
        "\n          onStart: call"
    } else {
        ""
    };
    let katalog = format!(
        r#"# Generated by ork-bench.
apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: bench}}
spec:
  crds:
    widget:
      apiTypes: {{group: {GROUP}, version: v1, kind: {KIND}, plural: {PLURAL}}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          workers: {workers}
          resync: {resync}{on_start}
          remote:
            endpoint: "{service_url}"
            managedResources:
              - {{group: "", version: v1, plural: configmaps, kind: ConfigMap}}
"#
    );
    let path = work.join(format!("katalog-{ns}-{resync}-{}.yaml", how.on_start_call));
    std::fs::write(&path, katalog)?;
    let http = how
        .http
        .map_or_else(|| "none".to_string(), |a| a.to_string());
    let child = Command::new(ork)
        .args(["run", "--probe-addr", &http, "--http-addr", "none", "-k"])
        .arg(&path)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("RUST_LOG", "warn,kube_client=off")
        .stdout(Stdio::null())
        .stderr(log_file(work, &format!("ork-{ns}-{resync}"))?)
        .spawn()
        .with_context(|| format!("starting {}", ork.display()))?;
    Ok(Proc { name: "ork", child })
}

/// The venv with kopf from PyPI, created on first use: `target/bench-venv`.
///
/// # Errors
/// When the venv or pip fails.
pub fn ensure_kopf(venv: &Path) -> Result<PathBuf> {
    let kopf = venv.join("bin/kopf");
    if !kopf.exists() {
        eprintln!(
            "ork-bench: installing kopf from PyPI into {}",
            venv.display()
        );
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(venv)
            .status()?
            .success()
            && Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "kopf"])
                .status()?
                .success();
        if !ok {
            bail!("could not install kopf into {}", venv.display());
        }
    }
    Ok(kopf)
}

/// The installed kopf version, for the report.
pub fn kopf_version(venv: &Path) -> String {
    Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('kopf'))",
        ])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "?".into())
}

/// `kopf run --standalone --quiet -n ns` of the bench's operator.
///
/// # Errors
/// When kopf cannot be started.
pub fn start_kopf(
    kopf: &Path,
    work: &Path,
    kubeconfig: &Path,
    ns: &str,
    service_url: &str,
    workers: usize,
    resync_s: Option<f64>,
) -> Result<Proc> {
    let script = work.join("kopf_operator.py");
    std::fs::write(&script, KOPF_OPERATOR_PY)?;
    let mut cmd = Command::new(kopf);
    let verbosity = if std::env::var_os("ORK_BENCH_KOPF_VERBOSE").is_some() {
        "--verbose"
    } else {
        "--quiet"
    };
    cmd.args(["run", "--standalone", verbosity, "-n", ns])
        .arg(&script)
        .env("KUBECONFIG", kubeconfig)
        .env("BENCH_SERVICE", service_url)
        .env("BENCH_WORKERS", workers.to_string())
        .stdout(Stdio::null())
        .stderr(log_file(work, &format!("kopf-{ns}"))?);
    if let Some(r) = resync_s {
        cmd.env("BENCH_RESYNC", r.to_string());
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", kopf.display()))?;
    Ok(Proc {
        name: "kopf",
        child,
    })
}

/// The Widget `w-{i}` every system is given.
pub fn widget(i: usize) -> Value {
    serde_json::json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": KIND,
        "metadata": {"name": format!("w-{i}")},
        "spec": {"size": 1, "color": "blue"}
    })
}

/// The Widget API of a namespace (no discovery needed).
pub fn widgets(client: &kube::Client, ns: &str) -> kube::Api<kube::core::DynamicObject> {
    let gvk = kube::core::GroupVersionKind::gvk(GROUP, "v1", KIND);
    let ar = kube::discovery::ApiResource::from_gvk_with_plural(&gvk, PLURAL);
    kube::Api::namespaced_with(client.clone(), ns, &ar)
}
