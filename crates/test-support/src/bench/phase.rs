//! One measured phase per system: the same N Widgets, the same service; counters read before
//! and after (API server requests, process CPU, service calls), the clock stopped when every
//! Widget carries the service's status. Then the idle-cost and latency (P5) runs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::probe::{self, ApiCounts, CpuSnapshot};
use crate::systems::{self, Proc, Service, widget, widgets};
use crate::watch::{ChildWatch, ReadyWatch};
use ork_test_support::TestNamespace;

/// The label on the bench's namespaces.
const BENCH_LABEL: &str = "ork.dev/bench";

/// Everything the phases share.
#[allow(missing_debug_implementations)] // kube's Client is not Debug
pub struct Bench {
    pub client: Client,
    pub kubeconfig: PathBuf,
    pub work: PathBuf,
    pub ork: PathBuf,
    pub kopf: Option<PathBuf>,
    pub service: Service,
    pub cluster_pids: BTreeMap<String, u32>,
    pub n: usize,
    pub workers: usize,
    /// Kept until the end: deleting thousands of objects would load the API server during the
    /// next phase.
    pub namespaces: Vec<TestNamespace>,
}

/// What one system cost for N Widgets.
#[derive(Clone, Debug, Default)]
pub struct PhaseResult {
    pub system: String,
    pub n: usize,
    pub converge_s: f64,
    /// CPU seconds by process: `process` (the system itself), `service`, and the cluster's.
    pub cpu: BTreeMap<String, f64>,
    /// CPU seconds by process from the start until every Widget carried its status: what the
    /// convergence itself cost, without the lower-priority writes that come after it.
    pub cpu_to_converge: BTreeMap<String, f64>,
    /// The requests the API server served until then (writes of the lower-priority lane that
    /// came before convergence show here).
    pub requests_to_converge: Option<ApiCounts>,
    pub peak_rss_mib: Option<f64>,
    /// Every request the API server served during the phase (reads and writes).
    pub requests: ApiCounts,
    pub calls: u64,
    /// Edit → child updated with nothing else going on.
    pub edit_idle: Option<Latencies>,
    /// How often the bench's own watch of the Widgets failed and listed again.
    pub observer_restarts: usize,
}

/// Latency samples of edit → child updated.
#[derive(Debug, Default, Clone)]
pub struct Latencies {
    pub samples: Vec<Duration>,
    pub missed: usize,
}

impl Latencies {
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        let mut s = self.samples.clone();
        s.sort();
        let i = ((s.len() as f64 * p).ceil() as usize).clamp(1, s.len().max(1)) - 1;
        s.get(i).copied()
    }
}

/// The P5 run: edits during a full resync of all N Widgets (ork only).
#[derive(Debug, Default)]
pub struct ResyncLatency {
    pub resync_s: u64,
    pub startup_wave_s: f64,
    pub wave_s: f64,
    pub edits: Latencies,
    /// During the start-up pass of the restarted ork: service calls, API requests.
    pub startup_calls: u64,
    pub startup_requests: ApiCounts,
    /// During the resync pass (K edits included): service calls, API requests, CPU seconds.
    pub calls: u64,
    pub requests: ApiCounts,
    pub cpu: BTreeMap<String, f64>,
}

/// What a restart cost (R): ork started again on N converged Widgets, `edited` of them edited
/// while it was down, with a resync period of `resync_s`.
#[derive(Debug, Default, Clone)]
pub struct RestartCost {
    pub crs: usize,
    pub edited: usize,
    pub resync_s: u64,
    /// Until /readyz answered 200 (caches synced).
    pub ready_s: f64,
    /// Until the edited Widgets were called, from the start.
    pub reconciled_s: Option<f64>,
    /// From ready to the end of the measured window (the first minute after ready).
    pub window_s: f64,
    /// Calls from the start to the end of the window.
    pub calls: u64,
    /// The resyncs that fall due over the same span as the calls, from the start (the lists
    /// included: resyncs fall due while ork lists and go once it is ready) to the end of the
    /// window: CRs × span / period.
    pub due_resyncs: f64,
    /// The calls after the edited ones, in whole 10-second windows: the busiest window's count
    /// over the mean (1.0: perfectly even).
    pub spread: Option<f64>,
    pub requests: ApiCounts,
    /// The restarted ork's peak RSS (its lists at start included).
    pub peak_rss_mib: Option<f64>,
}

/// Seconds until `GET /readyz` at `addr` answers 200.
async fn wait_ready(addr: std::net::SocketAddr, limit: Duration) -> Result<f64> {
    let started = Instant::now();
    loop {
        let mut conn = crate::http1::Conn::new(addr);
        if let Ok((200, _)) = conn.request("GET", "/readyz", b"").await {
            return Ok(started.elapsed().as_secs_f64());
        }
        if started.elapsed() > limit {
            bail!("ork was not ready at http://{addr}/readyz within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A few Widgets left alone with a short resync.
#[derive(Debug, Default)]
pub struct IdleCost {
    pub system: String,
    pub crs: usize,
    pub resync_s: u64,
    pub resyncs: f64,
    pub calls: u64,
    pub writes: ApiCounts,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum System {
    Baseline,
    /// The baseline plus the requests the contract asks of any remote reconciler.
    BaselineSpec,
    Kopf,
    Ork,
}

impl System {
    /// A long-running operator (kopf, ork), not a client that does its N and exits.
    pub fn is_operator(self) -> bool {
        matches!(self, System::Kopf | System::Ork)
    }

    pub fn name(self) -> &'static str {
        match self {
            System::Baseline => "baseline",
            System::BaselineSpec => "baseline-spec",
            System::Kopf => "kopf",
            System::Ork => "ork",
        }
    }
}

struct Snapshot {
    at: Instant,
    requests: ApiCounts,
    cpu: CpuSnapshot,
    calls: u64,
}

/// Above this many Widgets the bench runs in scale mode: the operators' Widgets are created
/// paced ([`PACE`]), so that the API server keeps up with creation and reconciles at once.
pub const SCALE: usize = 10_000;

/// In scale mode, at most this many Widgets are created and not yet Ready at any time.
pub const PACE: usize = 2_000;

/// How long a stopped ork may take to exit: its `--shutdown-grace` (20 s) and a margin.
pub const STOP_LIMIT: Duration = Duration::from_secs(30);

impl Bench {
    pub(crate) fn limit(&self) -> Duration {
        Duration::from_secs(120 + self.n as u64 / 5)
    }

    /// How long clean-up may take: deleting 300,000 objects takes the API server and etcd
    /// minutes on 2 cores.
    fn cleanup_limit(&self) -> Duration {
        Duration::from_secs(600 + self.n as u64 / 50)
    }

    /// How many Widgets may wait created and not yet Ready (`None`: all at once).
    pub fn pace(&self) -> Option<usize> {
        (self.n > SCALE).then_some(PACE)
    }

    fn pids(&self, system: Option<&Proc>) -> BTreeMap<String, u32> {
        let mut pids = self.cluster_pids.clone();
        pids.insert("service".into(), self.service.proc.pid());
        // The bench itself: it creates the Widgets for the operators (the baseline client does
        // that in its own process) and watches them.
        pids.insert("bench".into(), std::process::id());
        if let Some(p) = system {
            pids.insert("process".into(), p.pid());
        }
        pids
    }

    async fn snapshot(&self, system: Option<&Proc>) -> Result<Snapshot> {
        Ok(Snapshot {
            at: Instant::now(),
            requests: ApiCounts::read(&self.client).await?,
            cpu: CpuSnapshot::read(&self.pids(system)),
            calls: self.service.calls().await?,
        })
    }

    /// Waits until the API server has served no write for 1.5 s (at most 60 s): the work a
    /// phase caused, including low-priority writes after convergence, is then all counted.
    /// Waits until the API server has had no writes for 1.5 s (the lane's annotations and
    /// events written), at most a minute, or a second per 100 CRs in scale mode.
    pub(crate) async fn settle(&self) -> Result<()> {
        let limit = Duration::from_secs(60).max(Duration::from_secs(self.n as u64 / 100));
        let deadline = Instant::now() + limit;
        let mut last = ApiCounts::read(&self.client).await?.writes().total();
        let mut quiet = 0;
        while quiet < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = ApiCounts::read(&self.client).await?.writes().total();
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
        }
        Ok(())
    }

    async fn namespace(&mut self) -> Result<String> {
        let ns = TestNamespace::create(&self.client).await?;
        let name = ns.name.clone();
        self.namespaces.push(ns);
        let label = json!({"metadata": {"labels": {BENCH_LABEL: "true"}}});
        Api::<Namespace>::all(self.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&label))
            .await?;
        Ok(name)
    }

    /// Deletes what an earlier (killed) run left and waits (at most 10 minutes) until the
    /// namespaces of earlier runs are gone: their clean-up would load the API server during
    /// this run.
    pub async fn wait_earlier_runs_gone(&self) -> Result<()> {
        self.wait_namespaces_gone("of an earlier run").await
    }

    /// Deletes the namespaces of the phases so far and waits until they are gone, so that each
    /// system meets a cluster as empty as the first one did: neither their deletion nor their
    /// objects (in etcd, in the API server's watch cache) weigh on the next phase.
    pub async fn clear(&mut self) -> Result<()> {
        // The children go first: deleted with their namespace, after their Widgets, each would
        // be looked up again by the garbage collector (a GET per ConfigMap, at the controller
        // manager's QPS), long after the namespace is gone and in the middle of the next phase.
        for ns in &self.namespaces {
            delete_config_maps(&self.client, &ns.name, self.cleanup_limit()).await?;
        }
        // Dropping a `TestNamespace` deletes it.
        self.namespaces.clear();
        self.wait_namespaces_gone("of the last phase").await
    }

    async fn wait_namespaces_gone(&self, whose: &str) -> Result<()> {
        let api = Api::<Namespace>::all(self.client.clone());
        let lp = ListParams::default().labels(&format!("{BENCH_LABEL}=true"));
        let deadline = Instant::now() + self.cleanup_limit();
        let mut told = false;
        loop {
            let left = api.list(&lp).await?.items;
            if left.is_empty() {
                return Ok(());
            }
            for ns in &left {
                let name = ns.metadata.name.clone().unwrap_or_default();
                // A run that was killed left its namespaces behind.
                if ns.metadata.deletion_timestamp.is_none() {
                    api.delete(&name, &DeleteParams::background()).await?;
                }
                // kopf's finalizers outlive a killed kopf: they would keep the namespace forever.
                self.strip_finalizers(&name).await?;
            }
            let left = left.len();
            if !told {
                eprintln!("ork-bench: waiting for {left} namespace(s) {whose} to be deleted");
                told = true;
            }
            if Instant::now() > deadline {
                bail!(
                    "{left} namespace(s) labelled {BENCH_LABEL} still there after {:?}",
                    self.cleanup_limit()
                );
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }

    fn start(&self, system: System, ns: &str, resync: &str) -> Result<Proc> {
        match system {
            System::Ork => systems::start_ork(
                &self.ork,
                &self.work,
                &self.kubeconfig,
                ns,
                &self.service.url(),
                self.workers,
                resync,
            ),
            System::Kopf => {
                let kopf = self.kopf.as_ref().context("kopf is not installed")?;
                let resync_s = (resync != "0")
                    .then(|| resync.trim_end_matches('s').parse().ok())
                    .flatten();
                systems::start_kopf(
                    kopf,
                    &self.work,
                    &self.kubeconfig,
                    ns,
                    &self.service.url(),
                    self.workers,
                    resync_s,
                )
            }
            System::Baseline | System::BaselineSpec => {
                bail!("the baseline is not a long-running process")
            }
        }
    }

    /// Baseline (`Baseline` or `BaselineSpec`): the plain client as a child process doing all N.
    pub async fn baseline(&mut self, system: System) -> Result<PhaseResult> {
        let ns = self.namespace().await?;
        // The same observer as the operators' phases: the bench's watch of the Widgets costs
        // the API server an encoded event per write and the machine the bench's decoding, and
        // a phase without it would be measured on a lighter cluster.
        let mut ready = ReadyWatch::start(widgets(&self.client, &ns)).await?;
        self.settle().await?;
        let before = self.snapshot(None).await?;
        let mut client = tokio::process::Command::new(std::env::current_exe()?);
        client
            .arg("baseline-client")
            .arg(&ns)
            .arg(self.n.to_string())
            .arg(self.service.addr.to_string())
            .arg(self.workers.to_string());
        if system == System::BaselineSpec {
            client.arg("--spec");
        }
        let out = client
            .env("KUBECONFIG", &self.kubeconfig)
            .stderr(Stdio::inherit())
            .output()
            .await?;
        let at_converge = CpuSnapshot::read(&self.pids(None));
        let requests_at_converge = ApiCounts::read(&self.client).await?;
        if !out.status.success() {
            bail!("baseline client failed ({})", out.status);
        }
        let own: Value = serde_json::from_slice(&out.stdout).context("baseline client output")?;
        ready
            .wait_for(self.n, self.limit())
            .await
            .context("the baseline client ended before every Widget was Ready")?;
        self.settle().await?;
        let after = self.snapshot(None).await?;
        let mut r = self.result(system, &before, &after);
        // The client measures itself, and it ends when it has converged: its CPU is the same
        // for the whole phase and until convergence.
        let own_cpu = own["cpu_s"].as_f64().unwrap_or(f64::NAN);
        r.cpu_to_converge = at_converge.since(&before.cpu).0;
        r.cpu_to_converge.insert("process".into(), own_cpu);
        r.requests_to_converge = Some(requests_at_converge.since(&before.requests));
        r.converge_s = own["elapsed_s"].as_f64().unwrap_or(f64::NAN);
        r.cpu.insert("process".into(), own_cpu);
        r.peak_rss_mib = own["peak_rss_mib"].as_f64();
        r.observer_restarts = ready.restarts();
        Ok(r)
    }

    fn result(&self, system: System, before: &Snapshot, after: &Snapshot) -> PhaseResult {
        PhaseResult {
            system: system.name().into(),
            n: self.n,
            converge_s: (after.at - before.at).as_secs_f64(),
            cpu: after.cpu.since(&before.cpu).0,
            cpu_to_converge: BTreeMap::new(),
            requests_to_converge: None,
            observer_restarts: 0,
            peak_rss_mib: None,
            requests: after.requests.since(&before.requests),
            calls: after.calls - before.calls,
            edit_idle: None,
        }
    }

    /// An operator (ork or kopf) reconciling N Widgets the bench creates with the baseline's
    /// concurrency. One warm-up Widget first, so the clock does not count the operator's start.
    /// Returns the namespace and the running operator for the runs that follow.
    pub async fn operator(&mut self, system: System) -> Result<(PhaseResult, String, Proc)> {
        let ns = self.namespace().await?;
        let api = widgets(&self.client, &ns);
        let mut ready = ReadyWatch::start(api.clone()).await?;
        let mut proc = self.start(system, &ns, "10m")?;
        let warm: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{}/v1", systems::GROUP), "kind": systems::KIND,
            "metadata": {"name": "warm-up"}, "spec": {"size": 1, "color": "blue"}}))?;
        api.create(&PostParams::default(), &warm).await?;
        ready
            .wait_for(1, Duration::from_secs(120))
            .await
            .with_context(|| format!("{} did not reconcile the warm-up Widget", system.name()))?;
        self.settle().await?;
        proc.check_running()?;
        let before = self.snapshot(Some(&proc)).await?;
        let pace = self.pace().map(|window| (ready.count(), window));
        create_all(&api, self.n, self.workers, pace).await?;
        let converged = ready.wait_for(self.n + 1, self.limit()).await?;
        let at_converge = CpuSnapshot::read(&self.pids(Some(&proc)));
        let requests_at_converge = ApiCounts::read(&self.client).await?;
        self.settle().await?;
        eprintln!(
            "ork-bench: {}: writes quiet {:.1} s after converged",
            system.name(),
            converged.elapsed().as_secs_f64()
        );
        let after = self.snapshot(Some(&proc)).await?;
        let mut r = self.result(system, &before, &after);
        r.cpu_to_converge = at_converge.since(&before.cpu).0;
        r.requests_to_converge = Some(requests_at_converge.since(&before.requests));
        r.converge_s = (converged - before.at).as_secs_f64();
        r.peak_rss_mib = probe::peak_rss_mib(proc.pid());
        r.observer_restarts = ready.restarts();
        proc.check_running()?;
        let children = ChildWatch::start(&self.client, &ns).await?;
        let k = edits(self.n);
        let idx: Vec<usize> = (0..k).map(|j| j * self.n / k).collect();
        r.edit_idle = Some(
            edit_latencies(
                &self.client,
                &ns,
                &children,
                &idx,
                "2",
                Duration::from_millis(20),
                self.limit(),
            )
            .await?,
        );
        self.settle().await?;
        Ok((r, ns, proc))
    }

    /// P5: ork restarted with `onStart: call` on the converged namespace, twice: the first
    /// start-up pass (every Widget called) is timed; during the second, K edits land, and
    /// their latency shows whether fresh changes go before the bulk of the pass. (Resyncs no
    /// longer come as one pass: each CR's has its own phase of the period.)
    pub async fn resync_latency(&mut self, ns: &str, converge_s: f64) -> Result<ResyncLatency> {
        let start = self.snapshot(None).await?;
        let calls0 = start.calls;
        let how = systems::OrkRun {
            resync: "10m",
            on_start_call: true,
            http: None,
        };
        let ork = self.start_ork(ns, &how)?;
        let total = (self.n + 1) as u64;
        // The start-up pass: every Widget once (timed by the service: polling it while it is
        // saturated can be served late).
        self.wait_calls(calls0 + total, self.limit()).await?;
        let startup_wave_s = self.service.span(calls0 + 1, calls0 + total).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let started = self.snapshot(None).await?;
        drop(ork);
        let calls1 = started.calls;
        let children = ChildWatch::start(&self.client, ns).await?;
        let ork = self.start_ork(ns, &how)?;
        let wave_start = self
            .wait_calls(calls1 + 1, Duration::from_secs(converge_s as u64 + 60))
            .await?;
        let before = self.snapshot(Some(&ork)).await?;
        let k = edits(self.n);
        let idx: Vec<usize> = (0..k)
            .map(|j| j * self.n / k + 1)
            .filter(|i| *i < self.n)
            .collect();
        let spacing = Duration::from_secs_f64((startup_wave_s / k as f64).max(0.002));
        let edits = edit_latencies(
            &self.client,
            ns,
            &children,
            &idx,
            "3",
            spacing,
            self.limit(),
        )
        .await?;
        let wave_end = self.wait_calls(calls1 + total, self.limit()).await?;
        self.settle().await?;
        let after = self.snapshot(Some(&ork)).await?;
        Ok(ResyncLatency {
            resync_s: 0,
            startup_wave_s,
            wave_s: (wave_end - wave_start).as_secs_f64(),
            edits,
            startup_calls: calls1 - calls0,
            startup_requests: started.requests.since(&start.requests),
            calls: after.calls - calls1,
            requests: after.requests.since(&before.requests),
            cpu: after.cpu.since(&before.cpu).0,
        })
    }

    pub(crate) fn start_ork(&self, ns: &str, how: &systems::OrkRun<'_>) -> Result<Proc> {
        systems::start_ork_with(
            &self.ork,
            &self.work,
            &self.kubeconfig,
            ns,
            &self.service.url(),
            self.workers,
            how,
        )
    }

    /// R: ork restarted with a resync period of `resync_s` on the converged namespace (ork stopped)
    /// after `edited` Widgets were edited while it was down: how long until it is ready, and the
    /// calls and writes until a minute after that (SPEC §17: only what changed is called, and
    /// the resyncs that fall due, evenly spread).
    pub async fn restart_cost(
        &mut self,
        ns: &str,
        edited: usize,
        resync_s: u64,
    ) -> Result<RestartCost> {
        const MINUTE: Duration = Duration::from_secs(60);
        const BUCKET_S: f64 = 10.0;
        let api = widgets(&self.client, ns);
        let k = edited.min(self.n);
        let color = format!("edited-{k}");
        for j in 0..k {
            let name = format!("w-{}", j * self.n / k.max(1));
            let patch = json!({"spec": {"color": color}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        self.settle().await?;
        let before = self.snapshot(None).await?;
        let addr = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let started = Instant::now();
        let ork = self.start_ork(
            ns,
            &systems::OrkRun {
                resync: &format!("{resync_s}s"),
                on_start_call: false,
                http: Some(addr),
            },
        )?;
        let ready_s = wait_ready(addr, self.limit()).await?;
        let ready_at = started + Duration::from_secs_f64(ready_s);
        if k > 0 {
            self.wait_calls(before.calls + k as u64, self.limit())
                .await?;
        }
        let reconciled_s = started.elapsed().as_secs_f64();
        tokio::time::sleep_until((ready_at + MINUTE).into()).await;
        let after = self.snapshot(None).await?;
        let peak_rss_mib = probe::peak_rss_mib(ork.pid());
        let (stop, exited) = ork.stop(STOP_LIMIT).await;
        eprintln!(
            "ork-bench: restarted ork stopped in {:.1} s{}",
            stop.as_secs_f64(),
            if exited { "" } else { " (SIGKILLed)" }
        );
        let window_s = (after.at - ready_at.min(after.at)).as_secs_f64();
        let first = before.calls + k as u64 + 1;
        let spread = if after.calls > first {
            let times = self.service.times(first, after.calls).await?;
            let whole = (times.last().copied().unwrap_or(0.0) / BUCKET_S).floor() as usize;
            let mut buckets = vec![0usize; whole];
            for t in &times {
                if let Some(b) = buckets.get_mut((t / BUCKET_S) as usize) {
                    *b += 1;
                }
            }
            let total: usize = buckets.iter().sum();
            let max = buckets.iter().copied().max().unwrap_or(0);
            (total > 0).then(|| max as f64 * whole as f64 / total as f64)
        } else {
            None
        };
        let crs = self.n + 1;
        Ok(RestartCost {
            crs,
            edited: k,
            resync_s,
            ready_s,
            reconciled_s: (k > 0).then_some(reconciled_s),
            window_s,
            calls: after.calls - before.calls,
            due_resyncs: crs as f64 * after.at.saturating_duration_since(started).as_secs_f64()
                / resync_s.max(1) as f64,
            spread,
            requests: after.requests.since(&before.requests),
            peak_rss_mib,
        })
    }

    pub(crate) async fn wait_calls(&self, at_least: u64, limit: Duration) -> Result<Instant> {
        let deadline = Instant::now() + limit;
        loop {
            if self.service.calls().await? >= at_least {
                return Ok(Instant::now());
            }
            if Instant::now() > deadline {
                bail!("timed out waiting for {at_least} service calls");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Removes the finalizers of every Widget in `ns` (kopf's, once kopf is stopped).
    async fn strip_finalizers(&self, ns: &str) -> Result<()> {
        let api = widgets(&self.client, ns);
        let patch = json!({"metadata": {"finalizers": null}});
        for w in api.list(&ListParams::default()).await?.items {
            if w.metadata
                .finalizers
                .as_ref()
                .is_some_and(|f| !f.is_empty())
            {
                let name = w.metadata.name.clone().unwrap_or_default();
                let _ = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
            }
        }
        Ok(())
    }

    /// A few Widgets left alone for four resync periods of 5 s.
    pub async fn idle_cost(&mut self, system: System) -> Result<IdleCost> {
        const CRS: usize = 5;
        const RESYNC_S: u64 = 5;
        const PERIODS: u64 = 4;
        let ns = self.namespace().await?;
        let api = widgets(&self.client, &ns);
        let mut ready = ReadyWatch::start(api.clone()).await?;
        let proc = self.start(system, &ns, &format!("{RESYNC_S}s"))?;
        create_all(&api, CRS, self.workers, None).await?;
        ready.wait_for(CRS, Duration::from_secs(120)).await?;
        self.settle().await?;
        let before = self.snapshot(None).await?;
        tokio::time::sleep(Duration::from_secs(RESYNC_S * PERIODS)).await;
        let after = self.snapshot(None).await?;
        drop(proc);
        self.strip_finalizers(&ns).await?;
        Ok(IdleCost {
            system: system.name().into(),
            crs: CRS,
            resync_s: RESYNC_S,
            resyncs: (after.at - before.at).as_secs_f64() / RESYNC_S as f64,
            calls: after.calls - before.calls,
            writes: after.requests.since(&before.requests).writes(),
        })
    }
}

/// How many Widgets the latency runs edit: 10% of N, at most 50.
fn edits(n: usize) -> usize {
    (n / 10).clamp(1, 50)
}

/// Creates Widgets `w-0..w-{n-1}` with `workers` concurrent requests; with `pace` (the count
/// of Ready Widgets, a window), at most the window's count created and not yet Ready.
///
/// # Errors
/// On the first refused create.
pub async fn create_all(
    api: &Api<DynamicObject>,
    n: usize,
    workers: usize,
    pace: Option<(tokio::sync::watch::Receiver<usize>, usize)>,
) -> Result<()> {
    stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let pace = pace.clone();
            async move {
                if let Some((mut ready, window)) = pace {
                    ready.wait_for(|r| r + window > i).await?;
                }
                let obj: DynamicObject = serde_json::from_value(widget(i))?;
                api.create(&PostParams::default(), &obj).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(workers)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Edits `spec.size` of Widgets `w-{i}` to `size`, one every `spacing`, and measures each edit
/// → its ConfigMap `w-{i}-config` showing the new size.
async fn edit_latencies(
    client: &Client,
    ns: &str,
    children: &ChildWatch,
    idx: &[usize],
    size: &str,
    spacing: Duration,
    limit: Duration,
) -> Result<Latencies> {
    let api = widgets(client, ns);
    let mut waits = Vec::new();
    let mut tick = tokio::time::interval(spacing);
    for i in idx {
        tick.tick().await;
        let name = format!("w-{i}");
        let rx = children.expect(&format!("{name}-config"), size);
        let patch = json!({"spec": {"size": size.parse::<i64>()?}});
        let sent = Instant::now();
        let api = api.clone();
        waits.push(tokio::spawn(async move {
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            let seen = tokio::time::timeout(limit, rx).await;
            anyhow::Ok(seen.ok().and_then(Result::ok).map(|at| at - sent))
        }));
    }
    let mut out = Latencies::default();
    for w in waits {
        match w.await?? {
            Some(d) => out.samples.push(d),
            None => out.missed += 1,
        }
    }
    Ok(out)
}

/// Deletes every ConfigMap of `ns`. Tens of thousands in one collection can outlast the API
/// server's request timeout (a 500 "context deadline exceeded", or a 504) on a slow machine
/// (20,000 at N = 10,000), and 200,000 the client's own: what the first request did not
/// delete, the next one does.
async fn delete_config_maps(client: &Client, ns: &str, limit: Duration) -> Result<()> {
    let api = Api::<ConfigMap>::namespaced(client.clone(), ns);
    let deadline = Instant::now() + limit;
    loop {
        match api
            .delete_collection(&DeleteParams::background(), &ListParams::default())
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status))
                if matches!(status.code, 500 | 504) && Instant::now() < deadline =>
            {
                eprintln!(
                    "ork-bench: deleting the ConfigMaps of {ns} outlasted the API server's timeout ({}); asking again",
                    status.message
                );
                // A 500 that came at once (not a timeout) must not become a tight loop.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            // The client gave up waiting (its read timeout), or the connection broke: the API
            // server goes on deleting; the next request finds fewer.
            Err(e @ (kube::Error::HyperError(_) | kube::Error::Service(_)))
                if Instant::now() < deadline =>
            {
                eprintln!("ork-bench: deleting the ConfigMaps of {ns}: {e}; asking again");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(e) => return Err(e).with_context(|| format!("deleting the ConfigMaps of {ns}")),
        }
    }
}
