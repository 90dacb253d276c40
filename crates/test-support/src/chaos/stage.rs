//! What every scenario shares: the sizing ([`Config`]), the report, the CR type and the
//! Katalog, the workload's creates and edits, and the [`Stage`] (client, namespaces, sampler,
//! ork's logs) with the common end of every scenario. The scenarios sit above it.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::{Client, ResourceExt};
use ork_test_support::{TestNamespace, apply_yaml, client, resolve};
use serde_json::json;

use super::check::{self, Findings, Model, Scope};
use super::procs::{self, ApiServer, Ork, Sampler, Usage};
use super::service::{self, ChaosService};

pub const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: chaosapps.chaos.ork.dev}
spec:
  group: chaos.ork.dev
  scope: Namespaced
  names: {plural: chaosapps, singular: chaosapp, kind: ChaosApp}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
            status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// ork's per-call timeout in every scenario's Katalog.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// How a run is sized.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `ork` binary.
    pub ork: PathBuf,
    /// CRs per scenario.
    pub crs: usize,
    /// R3: how many times ork is SIGKILLed.
    pub kills: usize,
    /// R3: the pause before each kill is uniform in this range (ms).
    pub kill_gap_ms: (u64, u64),
    /// Logs and samples go here.
    pub out: PathBuf,
    /// R2 needs a cluster of the run's own.
    pub apiserver: Option<ApiServer>,
    /// R1: the faults last at least this long, and until ork has made one call per CR (at most
    /// twelve times this long).
    pub fault_secs: u64,
    /// R2: how long the API server stays down.
    pub outage_secs: u64,
    /// R5: how long the link to the service is cut (after `fault_secs` of a degraded link).
    pub partition_secs: u64,
    /// R6: how long each throttling phase lasts.
    pub throttle_secs: u64,
    /// After convergence: calls, CPU and RSS are watched this long with nothing happening.
    pub idle_secs: u64,
    pub converge_limit: Duration,
    /// R4: `--lease-duration`.
    pub lease: Duration,
    pub seed: u64,
    /// RSS growth after the load counts as a failed invariant (else it is only reported).
    pub assert_memory: bool,
    /// Creates and edits in flight at once.
    pub concurrency: usize,
    /// R7: the `ork` binary of the previous release (None: R7 cannot run).
    pub previous_ork: Option<PathBuf>,
    /// R8: `--shards`.
    pub shards: u32,
    /// R8: how many times a replica is added or removed, and the pause before each.
    pub fleet_steps: usize,
    pub fleet_gap: Duration,
}

impl Config {
    /// The full profile of `cargo xtask chaos`.
    pub fn full(ork: PathBuf, crs: usize, out: PathBuf, apiserver: Option<ApiServer>) -> Config {
        let scale = (crs as u64 / 500).max(1);
        Config {
            ork,
            crs,
            kills: 20,
            // A restarted ork re-lists and reconciles every CR: with more CRs, the kills are
            // spaced so that ork gets some way through its work between two of them.
            kill_gap_ms: (300 * scale, 2500 * scale),
            out,
            apiserver,
            fault_secs: 20,
            outage_secs: 10,
            partition_secs: 20,
            throttle_secs: 20,
            idle_secs: 15,
            converge_limit: Duration::from_secs(300),
            lease: Duration::from_secs(4),
            seed: 0x0c4a_05c4_a05c_a05c,
            assert_memory: true,
            concurrency: 16,
            previous_ork: None,
            shards: 9,
            fleet_steps: 10,
            fleet_gap: Duration::from_secs(3),
        }
    }

    /// The short profile run inside `cargo xtask test`.
    pub fn short(ork: PathBuf, out: PathBuf) -> Config {
        Config {
            ork,
            crs: 30,
            kills: 5,
            kill_gap_ms: (200, 1200),
            out,
            apiserver: None,
            fault_secs: 4,
            outage_secs: 4,
            partition_secs: 4,
            throttle_secs: 4,
            idle_secs: 3,
            converge_limit: Duration::from_secs(90),
            lease: Duration::from_secs(4),
            seed: 0x5eed,
            assert_memory: false,
            concurrency: 8,
            previous_ork: None,
            shards: 9,
            fleet_steps: 6,
            fleet_gap: Duration::from_secs(2),
        }
    }
}

/// What one scenario did and found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub name: String,
    pub title: String,
    pub load: String,
    /// Calls per outcome during the fault period (R1) or the whole run.
    pub faults: BTreeMap<String, u64>,
    /// (what, seconds), reported, never asserted.
    pub timings: Vec<(String, f64)>,
    pub findings: Findings,
    pub usage: Usage,
    pub notes: Vec<String>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.findings.total() == 0
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "PASS" } else { "FAIL" };
        writeln!(f, "== {} {}: {verdict}", self.name, self.title)?;
        writeln!(f, "   load:     {}", self.load)?;
        if !self.faults.is_empty() {
            let list: Vec<String> = self
                .faults
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            writeln!(f, "   calls:    {}", list.join(", "))?;
        }
        for (what, s) in &self.timings {
            writeln!(f, "   time:     {what}: {s:.1} s")?;
        }
        let counts: Vec<String> = self
            .findings
            .counts
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        writeln!(f, "   invariants: {}", counts.join(" "))?;
        for (k, ex) in &self.findings.examples {
            for e in ex {
                writeln!(f, "     ! {k}: {e}")?;
            }
        }
        let u = &self.usage;
        writeln!(
            f,
            "   ork:      RSS peak {:.1} MiB, at convergence {:.1} MiB, after the idle window {:.1} MiB ({:+.1}); CPU {:.1} s over {:.1} s of load ({:.0} %), {:.1} % when idle",
            u.peak_rss_mib,
            u.rss_at_converge_mib,
            u.rss_at_end_mib,
            u.growth_after_load_mib(),
            u.cpu_s_load,
            u.load_s,
            if u.load_s > 0.0 {
                100.0 * u.cpu_s_load / u.load_s
            } else {
                0.0
            },
            u.cpu_pct_idle
        )?;
        let line: Vec<String> = u
            .timeline
            .iter()
            .map(|(t, m)| format!("{t:.0}s:{m:.0}"))
            .collect();
        writeln!(f, "   RSS MiB over time: {}", line.join(" "))?;
        for n in &self.notes {
            writeln!(f, "   note:     {n}")?;
        }
        Ok(())
    }
}

pub(crate) fn katalog(ns: &str, url: &str, cross: Option<&str>, finalize: bool) -> String {
    let namespaces = cross
        .map(|x| format!(", namespaces: [{x}]"))
        .unwrap_or_default();
    let finalize = if finalize {
        "            finalize: true\n"
    } else {
        ""
    };
    format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: chaos}}
spec:
  crds:
    chaos:
      apiTypes: {{group: chaos.ork.dev, version: v1, kind: ChaosApp, plural: chaosapps}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          workers: 8
          resync: 1h  # longer than any convergence limit: a resync must not mend a lost event unseen
          queue: {{retryBackoff: {{initial: 200ms, max: 4s}}}}
          remote:
            endpoint: "{url}"
            timeout: {}s
{finalize}            managedResources:
              - {{group: "", version: v1, plural: configmaps{namespaces}}}
"#,
        CALL_TIMEOUT.as_secs()
    )
}

/// Retries `op` on any error (the API server may be down) until `limit`.
pub(crate) async fn retry<T, F, Fut>(limit: Duration, mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = kube::Result<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() > deadline => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

pub(crate) const OP_LIMIT: Duration = Duration::from_secs(180);

/// Creates or edits a CR to revision `rev` (server-side apply: safe to repeat).
pub(crate) async fn put(crs: &Api<DynamicObject>, name: &str, rev: u64) -> Result<()> {
    let obj = json!({
        "apiVersion": "chaos.ork.dev/v1", "kind": "ChaosApp",
        "metadata": {"name": name},
        "spec": {"rev": rev, "payload": Model::payload(name, rev)},
    });
    let pp = PatchParams::apply("ork-chaos").force();
    let patch = Patch::Apply(&obj);
    retry(OP_LIMIT, || crs.patch(name, &pp, &patch)).await?;
    Ok(())
}

/// Deletes a CR; true when it was held (still there, with a deletion timestamp: a finalizer).
pub(crate) async fn delete(crs: &Api<DynamicObject>, name: &str) -> Result<bool> {
    let deadline = Instant::now() + OP_LIMIT;
    loop {
        match crs.delete(name, &DeleteParams::default()).await {
            Ok(either) => {
                return Ok(either
                    .left()
                    .is_some_and(|o| o.metadata.deletion_timestamp.is_some()));
            }
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(false),
            Err(e) if Instant::now() > deadline => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

pub(crate) type Shared = Arc<Mutex<Model>>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Creates `names` at revision 0, `conc` at a time, recording them in the model.
pub(crate) async fn create_all(
    crs: &Api<DynamicObject>,
    model: &Shared,
    names: &[String],
    conc: usize,
) -> Result<()> {
    let results: Vec<Result<()>> = stream::iter(names.iter().cloned())
        .map(|name| async move {
            put(crs, &name, 0).await?;
            lock(model).live.insert(name, 0);
            Ok(())
        })
        .buffer_unordered(conc)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Moves each of `names` one revision up.
pub(crate) async fn edit_all(
    crs: &Api<DynamicObject>,
    model: &Shared,
    names: &[String],
    conc: usize,
) -> Result<usize> {
    let results: Vec<Result<()>> = stream::iter(names.iter().cloned())
        .map(|name| async move {
            let rev = lock(model).live.get(&name).map(|r| r + 1);
            let Some(rev) = rev else { return Ok(()) };
            put(crs, &name, rev).await?;
            lock(model).live.insert(name, rev);
            Ok(())
        })
        .buffer_unordered(conc)
        .collect()
        .await;
    let n = results.len();
    results.into_iter().collect::<Result<()>>()?;
    Ok(n)
}

/// Edit rounds (all, then a third) until `until` has passed; returns the edits made.
pub(crate) async fn edit_for(
    crs: &Api<DynamicObject>,
    model: &Shared,
    all: &[String],
    conc: usize,
    until: Duration,
) -> Result<usize> {
    let thirds: Vec<String> = all.iter().step_by(3).cloned().collect();
    let started = Instant::now();
    let (mut edits, mut rounds) = (0, 0usize);
    while rounds == 0 || started.elapsed() < until {
        let batch = if rounds.is_multiple_of(2) {
            all
        } else {
            &thirds[..]
        };
        edits += edit_all(crs, model, batch, conc).await?;
        rounds += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok(edits)
}

pub(crate) fn names(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i:05}")).collect()
}

/// What every scenario shares: the client, the CR API, the sampler, ork's logs.
pub(crate) struct Stage {
    pub(crate) client: Client,
    pub(crate) crs: Api<DynamicObject>,
    pub(crate) ns: TestNamespace,
    pub(crate) home: TestNamespace,
    pub(crate) sampler: Sampler,
    pub(crate) t0: f64,
    pub(crate) logs: Arc<Mutex<Vec<PathBuf>>>,
    pub(crate) dir: PathBuf,
}

impl Stage {
    pub(crate) async fn new(cfg: &Config, name: &str) -> Result<Stage> {
        let client = client().await?;
        apply_yaml(&client, CRD, "default").await?;
        let ns = TestNamespace::create(&client).await?;
        // ork's own namespace (the Lease in R4); children never go there.
        let home = TestNamespace::create(&client).await?;
        let (ar, _) = resolve(
            &client,
            &GroupVersionKind::gvk("chaos.ork.dev", "v1", "ChaosApp"),
        )
        .await?;
        let crs = Api::namespaced_with(client.clone(), &ns.name, &ar);
        let sampler = Sampler::start();
        let dir = cfg.out.join(name);
        std::fs::create_dir_all(&dir)?;
        Ok(Stage {
            client,
            crs,
            ns,
            home,
            t0: sampler.now(),
            sampler,
            logs: Arc::default(),
            dir,
        })
    }

    pub(crate) fn katalog(&self, file: &str, text: &str) -> Result<PathBuf> {
        let path = self.dir.join(file);
        std::fs::write(&path, text)?;
        Ok(path)
    }

    pub(crate) fn spawn(
        &self,
        cfg: &Config,
        katalog: &Path,
        label: &str,
        args: &[&str],
    ) -> Result<Ork> {
        let n = lock(&self.logs).len();
        let log = self.dir.join(format!("ork-{label}-{n}.log"));
        let ork = Ork::spawn(&cfg.ork, katalog, &log, label, args, &self.home.name)?;
        self.sampler.watch(ork.pid, label);
        lock(&self.logs).push(log);
        Ok(ork)
    }

    /// Polls the invariant check until nothing is left to do and ork has not called the
    /// service for 2 s (a restarted ork's first pass is part of converging), or the limit
    /// passes. Returns when it converged (the later of the passing check and the last call) and
    /// the last findings.
    pub(crate) async fn converge(
        &self,
        cfg: &Config,
        svc: &ChaosService,
        scope: &Scope,
        model: &Model,
    ) -> (Option<Instant>, Findings) {
        let started = Instant::now();
        let mut last = Findings::new();
        let mut passing_since: Option<Instant> = None;
        loop {
            match check::check(&self.client, &self.crs, scope, model).await {
                Ok(f) if f.converged() => {
                    let since = *passing_since.get_or_insert_with(Instant::now);
                    let last_call = svc.last_call_at().unwrap_or(started);
                    if last_call.elapsed() >= Duration::from_secs(2) {
                        return (Some(since.max(last_call)), f);
                    }
                    last = f;
                }
                Ok(f) => {
                    passing_since = None;
                    last = f;
                }
                Err(_) => passing_since = None,
            }
            if started.elapsed() > cfg.converge_limit {
                return (None, last);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Convergence, the idle window, the final check, panics, CPU/RSS: the common end of every
    /// scenario. `since_converge` gets the convergence time.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn finish(
        &self,
        cfg: &Config,
        svc: &ChaosService,
        scope: &Scope,
        model: &Model,
        report: &mut Report,
        clock: Instant,
        clock_name: &str,
    ) -> Result<Option<Instant>> {
        let (took, mut findings) = self.converge(cfg, svc, scope, model).await;
        let t_conv = self.sampler.now();
        match took {
            Some(at) => report.timings.push((
                format!("converged after {clock_name}"),
                at.saturating_duration_since(clock).as_secs_f64(),
            )),
            None => report.notes.push(format!(
                "did not converge within {:?}; the counts are those of the last check",
                cfg.converge_limit
            )),
        }
        if took.is_some() {
            // Idle: nothing changes, so ork must neither call the service nor grow.
            let calls = svc.call_count();
            tokio::time::sleep(Duration::from_secs(cfg.idle_secs)).await;
            let (late, idle_calls): (Vec<_>, Vec<_>) = svc
                .calls()
                .into_iter()
                .skip(calls)
                .partition(|c| c.outcome == service::LATE);
            if !late.is_empty() {
                report.notes.push(format!(
                    "{} requests reached the service during the idle window after their x-ork-deadline (sent before convergence, delivered late by TCP); the service did nothing for them",
                    late.len()
                ));
            }
            findings = check::check(&self.client, &self.crs, scope, model).await?;
            findings.set(
                "calls_while_idle",
                idle_calls.len() as u64,
                idle_calls
                    .iter()
                    .map(|c| format!("{} {} ({})", c.key, c.outcome, c.replica))
                    .collect(),
            );
        }
        let panics = procs::panics(&lock(&self.logs));
        findings.set("panics", panics.len() as u64, panics);
        tokio::time::sleep(Duration::from_millis(600)).await;
        let end = self.sampler.now();
        report.usage = procs::usage(
            &self.sampler.samples(),
            self.sampler.ticks_per_s,
            self.t0,
            t_conv,
            end,
        );
        let growth = report.usage.growth_after_load_mib();
        let limit = (0.2 * report.usage.rss_at_converge_mib).max(16.0);
        let over = took.is_some() && growth > limit;
        report.notes.push(format!(
            "RSS {growth:+.1} MiB over the {} s idle window after convergence (limit {limit:.0} MiB{})",
            cfg.idle_secs,
            if cfg.assert_memory { "" } else { ", reported only" }
        ));
        if cfg.assert_memory {
            findings.set(
                "rss_growth_after_load",
                u64::from(over),
                if over {
                    vec![format!("{growth:+.1} MiB while idle")]
                } else {
                    Vec::new()
                },
            );
        }
        report.findings = findings;
        self.write_samples(&report.name)?;
        let mut csv = String::from("t_s,key,replica,finalizing,rev,outcome\n");
        let zero = clock;
        for c in svc.calls() {
            let t = if c.at >= zero {
                c.at.duration_since(zero).as_secs_f64()
            } else {
                -zero.duration_since(c.at).as_secs_f64()
            };
            let rev = c.rev.map(|r| r.to_string()).unwrap_or_default();
            csv.push_str(&format!(
                "{t:.3},{},{},{},{rev},{}\n",
                c.key, c.replica, c.finalizing, c.outcome
            ));
        }
        std::fs::write(self.dir.join(format!("{}-calls.csv", report.name)), csv)?;
        Ok(took)
    }

    /// Deletes every CR (ork still running) and waits until they are gone: with `finalize: true`
    /// each goes through ork's finalizer. Leftovers count as stuck finalizers.
    pub(crate) async fn teardown(
        &self,
        cfg: &Config,
        scope: &Scope,
        report: &mut Report,
    ) -> Result<()> {
        let started = Instant::now();
        let (dp, lp) = (DeleteParams::default(), ListParams::default());
        let _ = retry(Duration::from_secs(30), || {
            self.crs.delete_collection(&dp, &lp)
        })
        .await;
        let mut left = Vec::new();
        while started.elapsed() < cfg.converge_limit {
            left = self
                .crs
                .list(&ListParams::default())
                .await
                .map(|l| l.items)
                .unwrap_or_default();
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        report.timings.push((
            "every CR deleted (teardown)".into(),
            started.elapsed().as_secs_f64(),
        ));
        for cr in &left {
            report.findings.add("stuck_finalizers", || {
                format!(
                    "teardown: CR {} still there (finalizers {:?})",
                    cr.name_any(),
                    cr.finalizers()
                )
            });
        }
        if let Some(x) = &scope.cross_ns {
            let lp = ListParams::default().labels(check::MANAGED);
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut stray = Vec::new();
            while Instant::now() < deadline {
                stray = Api::<ConfigMap>::namespaced(self.client.clone(), x)
                    .list(&lp)
                    .await
                    .map(|l| l.items)
                    .unwrap_or_default();
                if stray.is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            for cm in &stray {
                report.findings.add("orphans", || {
                    format!("teardown: ConfigMap {x}/{} left behind", cm.name_any())
                });
            }
        }
        Ok(())
    }

    pub(crate) fn write_samples(&self, name: &str) -> Result<()> {
        let mut csv = String::from("t_s,label,pid,rss_kib,cpu_ticks\n");
        for s in self.sampler.samples() {
            csv.push_str(&format!(
                "{:.2},{},{},{},{}\n",
                s.t - self.t0,
                s.label,
                s.pid,
                s.rss_kib,
                s.cpu_ticks
            ));
        }
        std::fs::write(self.dir.join(format!("{name}-samples.csv")), csv)?;
        Ok(())
    }
}

pub(crate) fn scope(stage: &Stage, cross: Option<&TestNamespace>, writer: &str) -> Scope {
    Scope {
        ns: stage.ns.name.clone(),
        cross_ns: cross.map(|c| c.name.clone()),
        writers: vec![writer.to_string()],
        unstamped: None,
    }
}

pub(crate) fn snapshot(model: &Shared) -> Model {
    lock(model).clone()
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "ork".into())
}
