//! `ork-bench ORK_BINARY [N]`: how fast `ork run` reconciles N WebApps (2 children each) on the
//! local cluster, against a baseline measured in the same run, and what one CR left alone costs.
//!
//! - Baseline: the same API writes ork makes per CR (create the CR, apply a Deployment and a
//!   Service, patch status) done by a plain client with as many concurrent tasks as ork has
//!   workers. That is the API server's own limit for this work.
//! - ork: the CRs are created with the same concurrency while `ork run` (8 workers) and an
//!   in-process reconcile service run; the clock stops when every CR is Ready=True.
//! - Idle: one CR with `resync: 5s` is created, then left alone for two resync periods; service
//!   calls and mutating API requests (from the API server's own metrics) are counted.
//!
//! Run it through `cargo xtask bench`. Loopback only.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};
use ork_test_support::fake_service::{FakeService, webapp_answer};
use ork_test_support::{TestNamespace, apply_yaml, client, kubeconfig_path, resolve, wait_for};
use serde_json::{Value, json};

const CRD: &str = include_str!("../../../../examples/webapp/crd.yaml");
const WORKERS: usize = 8;

struct Ork(Child);

impl Drop for Ork {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ork = PathBuf::from(args.first().context("usage: ork-bench ORK_BINARY [N]")?);
    let n: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(500);
    let client = client().await?;
    apply_yaml(&client, CRD, "default").await?;
    let (ar, _) = resolve(
        &client,
        &GroupVersionKind::gvk("demo.ork.dev", "v1", "WebApp"),
    )
    .await?;

    println!("ork-bench: {n} WebApps, 2 children each, {WORKERS} concurrent writers / workers");
    // First, while the cluster is quiet: the API server's metrics then count only this CR.
    idle(&client, &ar, &ork).await?;

    let base_ns = TestNamespace::create(&client).await?;
    let baseline = baseline(&client, &ar, &base_ns.name, n).await?;
    println!(
        "baseline (plain client, same writes): {:>6.2}s  {:>7.1} CRs/s",
        baseline.as_secs_f64(),
        n as f64 / baseline.as_secs_f64()
    );

    let svc = FakeService::start(webapp_answer).await?;
    let ork_ns = TestNamespace::create(&client).await?;
    let (elapsed, created) = {
        let _ork = start_ork(&ork, &ork_ns.name, &svc.url, "10m")?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        measure_ork(&client, &ar, &ork_ns.name, n).await?
    };
    println!(
        "ork run:                              {:>6.2}s  {:>7.1} reconciles/s  (creating the CRs alone took {:.2}s)",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        created.as_secs_f64()
    );
    println!(
        "ratio ork / baseline:                 {:>6.2}   (1.0 = as fast as the API server allows for these writes)",
        elapsed.as_secs_f64() / baseline.as_secs_f64()
    );
    println!("service calls: {} for {n} CRs", svc.calls());
    Ok(())
}

fn webapp(name: &str) -> Value {
    json!({
        "apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
        "metadata": {"name": name},
        "spec": {"image": "nginx:1", "replicas": 1, "port": 80}
    })
}

async fn create_all(api: &Api<DynamicObject>, n: usize) -> Result<()> {
    stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let obj: DynamicObject = serde_json::from_value(webapp(&format!("app-{i}")))?;
                api.create(&PostParams::default(), &obj).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(WORKERS)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// The API writes of one reconcile, done directly: create the CR, apply two children, patch
/// status, patch annotations, record one event.
async fn baseline(
    client: &Client,
    ar: &kube::discovery::ApiResource,
    ns: &str,
    n: usize,
) -> Result<Duration> {
    let crs: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, ar);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "bench".into(),
            instance: None,
        },
    );
    let started = Instant::now();
    stream::iter(0..n)
        .map(|i| {
            let (crs, deployments, services, recorder) =
                (crs.clone(), deployments.clone(), services.clone(), recorder.clone());
            async move {
                let name = format!("app-{i}");
                let obj: DynamicObject = serde_json::from_value(webapp(&name))?;
                crs.create(&PostParams::default(), &obj).await?;
                let pp = PatchParams::apply("bench").force();
                let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": name, "image": "nginx:1"}]}}}});
                deployments.patch(&name, &pp, &Patch::Apply(&d)).await?;
                let s = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                    "spec": {"selector": {"app": name}, "ports": [{"port": 80, "protocol": "TCP"}]}});
                services.patch(&name, &pp, &Patch::Apply(&s)).await?;
                let status = json!({"status": {"phase": "Ready"}});
                let cr = crs.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status)).await?;
                let annotations = json!({"metadata": {"annotations": {"bench/metrics": "{\"reconcileCount\":1}"}}});
                crs.patch(&name, &PatchParams::default(), &Patch::Merge(&annotations)).await?;
                let event = Event {
                    type_: EventType::Normal,
                    reason: "WebAppReconciled".into(),
                    note: Some(format!("reconciled {name}")),
                    action: "Reconcile".into(),
                    secondary: None,
                };
                recorder.publish(&event, &cr.object_ref(ar)).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(WORKERS)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(started.elapsed())
}

fn start_ork(ork: &Path, ns: &str, url: &str, resync: &str) -> Result<Ork> {
    let dir = std::env::temp_dir().join(format!("ork-bench-{ns}"));
    std::fs::create_dir_all(&dir)?;
    let katalog = format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: bench}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          workers: {WORKERS}
          resync: {resync}
          remote:
            endpoint: "{url}"
            managedResources:
              - {{group: apps, version: v1, plural: deployments}}
              - {{group: "", version: v1, plural: services}}
"#
    );
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog)?;
    let child = Command::new(ork)
        .args(["run", "-k"])
        .arg(&path)
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .env("RUST_LOG", "warn,kube_client=off")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", ork.display()))?;
    Ok(Ork(child))
}

fn ready_count(list: &[DynamicObject]) -> usize {
    list.iter()
        .filter(|o| {
            o.data["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        })
        .count()
}

async fn measure_ork(
    client: &Client,
    ar: &kube::discovery::ApiResource,
    ns: &str,
    n: usize,
) -> Result<(Duration, Duration)> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, ar);
    let started = Instant::now();
    create_all(&api, n).await?;
    let created = started.elapsed();
    let api = Arc::new(api);
    wait_for(
        &format!("{n} WebApps Ready"),
        Duration::from_secs(600),
        || {
            let api = api.clone();
            async move {
                let list = api.list(&ListParams::default()).await.ok()?;
                (ready_count(&list.items) >= n).then_some(())
            }
        },
    )
    .await?;
    Ok((started.elapsed(), created))
}

/// Sum of mutating requests (POST, PUT, PATCH, APPLY, DELETE) the API server has served.
async fn mutating_requests(client: &Client) -> Result<u64> {
    let req = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(req).await?;
    let mut total = 0u64;
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        // Server-side apply is counted as verb APPLY.
        let mutating = ["POST", "PUT", "PATCH", "APPLY", "DELETE"]
            .iter()
            .any(|v| line.contains(&format!("verb=\"{v}\"")));
        if mutating {
            let value = line.rsplit(' ').next().unwrap_or("0");
            total += value.parse::<f64>().unwrap_or(0.0) as u64;
        }
    }
    Ok(total)
}

/// One CR created and left alone for two resync periods: calls and API writes.
async fn idle(client: &Client, ar: &kube::discovery::ApiResource, ork: &Path) -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let ns = TestNamespace::create(client).await?;
    let _ork = start_ork(ork, &ns.name, &svc.url, "5s")?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, ar);
    let before = mutating_requests(client).await?;
    create_all(&api, 1).await?;
    wait_for("the CR Ready", Duration::from_secs(30), || {
        let api = api.clone();
        async move {
            (ready_count(&api.list(&ListParams::default()).await.ok()?.items) == 1).then_some(())
        }
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let settled = mutating_requests(client).await?;
    let calls_settled = svc.calls();
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    let after = mutating_requests(client).await?;
    println!(
        "one CR, resync 5s: create → settled: {calls_settled} call(s), {} API writes (incl. the user's create); \
         two resyncs left alone: {} more call(s), {} more API writes",
        settled.saturating_sub(before),
        svc.calls() - calls_settled,
        after.saturating_sub(settled)
    );
    if calls_settled != 1 {
        bail!("a create must lead to exactly one call, saw {calls_settled}");
    }
    Ok(())
}
