//! The reliability suite (`cargo xtask chaos`, and a short profile in `cargo xtask test`): real
//! `ork run` processes against the local cluster and a fault-injecting reconcile service on
//! loopback, six scenarios, each ending with the same invariant check ([`check`]).
//!
//! - R1 service faults: a share of calls fail in eight ways, then the service recovers.
//! - R2 API server restart: kube-apiserver stopped mid-run while CRs keep being edited, started
//!   again (only on a cluster of the run's own: [`procs::ApiServer`]).
//! - R3 ork SIGKILL × k while CRs with cross-namespace children and `finalize: true` are created,
//!   edited and deleted.
//! - R4 two `--leader-elect` replicas, the leader SIGKILLed mid-run.
//! - R5 network faults: the service on a test host of its own (a network namespace behind a
//!   veth pair), its link slow, lossy and reordering, then cut, then healed
//!   ([`ork_test_support::netns`]).
//! - R6 API server throttling: a FlowSchema rejects ork's requests with 429, then (on a cluster
//!   of the run's own) the API server runs short of seats for everybody.
//! - R7 rolling upgrade: two `--leader-elect` replicas of the previous release replaced one by
//!   one by the current build while CRs are edited (only with [`Config::previous_ork`]).
//! - R8 shard rebalancing: `--shards N` replicas added, SIGTERMed and SIGKILLed every few seconds
//!   while CRs are created and edited ([`fleet`]).
//!
//! Included by path from `src/bin/ork-chaos.rs` and `crates/cli/tests/reliability.rs`: it names
//! the library as `ork_test_support`, never `crate`.

pub mod check;
pub mod fleet;
mod network;
pub mod procs;
pub mod service;
mod stage;
mod throttle;

pub use stage::{CALL_TIMEOUT, Config, Report};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::{StreamExt, stream};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use ork_test_support::TestNamespace;
use serde_json::json;

use procs::Ork;
use service::{ChaosService, Rng};
use stage::{
    Shared, Stage, create_all, delete, edit_all, hostname, katalog, lock, names, put, retry, scope,
    snapshot,
};

/// Runs the named scenarios in order ("r1".."r4", "r7", "r8"); R2 needs an [`ApiServer`] and R7
/// [`Config::previous_ork`].
///
/// # Errors
/// When the cluster cannot be reached or a scenario cannot be set up (invariant failures are
/// in the reports, not errors).
pub async fn run(cfg: &Config, which: &[&str]) -> Result<Vec<Report>> {
    std::fs::create_dir_all(&cfg.out)?;
    let mut reports = Vec::new();
    for w in which {
        let report = match *w {
            "r1" => r1(cfg).await?,
            "r2" => r2(cfg).await?,
            "r3" => r3(cfg).await?,
            "r4" => r4(cfg).await?,
            "r5" => network::r5(cfg).await?,
            "r6" => throttle::r6(cfg).await?,
            "r7" => fleet::r7(cfg).await?,
            "r8" => fleet::r8(cfg).await?,
            other => bail!("no scenario {other:?} (r1 … r8)"),
        };
        println!("{report}");
        reports.push(report);
    }
    Ok(reports)
}

/// R1: 30 % of calls fail in eight ways while N CRs are created and edited; then the service
/// recovers and everything must converge with nothing from a rejected answer anywhere.
pub async fn r1(cfg: &Config) -> Result<Report> {
    let stage = Stage::new(cfg, "r1").await?;
    let svc = ChaosService::start(CALL_TIMEOUT, cfg.seed).await?;
    svc.set_fault_rate(30);
    let k = stage.katalog(
        "katalog.yaml",
        &katalog(&stage.ns.name, &svc.url, None, false),
    )?;
    let _ork = stage.spawn(cfg, &k, "ork", &[])?;
    let model: Shared = Arc::default();
    let started = Instant::now();
    let all = names("c-", 0..cfg.crs);
    create_all(&stage.crs, &model, &all, cfg.concurrency).await?;
    // Edit rounds (all CRs, then every third, alternately) for as long as the faults last.
    let thirds: Vec<String> = all.iter().step_by(3).cloned().collect();
    let min = Duration::from_secs(cfg.fault_secs);
    let (mut edits, mut rounds) = (0, 0);
    // Faults for at least `fault_secs` and until ork has made as many calls as there are CRs
    // (bounded): most reconciles then meet the faults, not only the first few.
    let busy =
        |elapsed: Duration| (elapsed < min || svc.call_count() < cfg.crs) && elapsed < min * 12;
    while rounds == 0 || busy(started.elapsed()) {
        let batch = if rounds % 2 == 0 { &all } else { &thirds };
        edits += edit_all(&stage.crs, &model, batch, cfg.concurrency).await?;
        rounds += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let load_s = started.elapsed().as_secs_f64();
    let faults = svc.outcomes_since(0);
    let fault_calls: u64 = faults.values().sum();
    let failed: u64 = faults
        .iter()
        .filter(|(k, _)| service::FAULTS.contains(&k.as_str()))
        .map(|(_, v)| v)
        .sum();
    svc.set_fault_rate(0);
    let recovered = Instant::now();
    let calls_at_recovery = svc.call_count();
    let mut report = Report {
        name: "R1".into(),
        title: "service faults".into(),
        load: format!(
            "{} CRs created and {edits} spec edits in {rounds} rounds ({load_s:.1} s), faults on throughout ({:.1} s: {fault_calls} calls, {failed} failed = {:.0} %), then none",
            cfg.crs,
            started.elapsed().as_secs_f64(),
            100.0 * failed as f64 / fault_calls.max(1) as f64
        ),
        faults,
        ..Report::default()
    };
    let scope = scope(&stage, None, "ork");
    stage
        .finish(
            cfg,
            &svc,
            &scope,
            &snapshot(&model),
            &mut report,
            recovered,
            "the service recovered",
        )
        .await?;
    report.notes.push(format!(
        "{} calls after recovery until the end of the idle window",
        svc.call_count() - calls_at_recovery
    ));
    stage.teardown(cfg, &scope, &mut report).await?;
    Ok(report)
}

/// R2: kube-apiserver stopped mid-run while CRs keep being edited, then started again.
pub async fn r2(cfg: &Config) -> Result<Report> {
    let Some(apiserver) = cfg.apiserver.clone() else {
        bail!(
            "R2 stops the API server: it runs only on a cluster of its own (`cargo xtask chaos`)"
        );
    };
    let stage = Stage::new(cfg, "r2").await?;
    let svc = ChaosService::start(CALL_TIMEOUT, cfg.seed ^ 2).await?;
    let k = stage.katalog(
        "katalog.yaml",
        &katalog(&stage.ns.name, &svc.url, None, false),
    )?;
    let _ork = stage.spawn(cfg, &k, "ork", &[])?;
    let model: Shared = Arc::default();
    let half = cfg.crs / 2;
    let first = names("c-", 0..half);
    let second = names("c-", half..cfg.crs);
    let started = Instant::now();
    create_all(&stage.crs, &model, &first, cfg.concurrency).await?;
    // Four editors that never stop trying, each over its share of the first half, round robin;
    // every edit's start and end is kept.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spans: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let editors: Vec<_> = (0..4usize)
        .map(|e| {
            let (crs, model, stop, spans) = (
                stage.crs.clone(),
                model.clone(),
                stop.clone(),
                spans.clone(),
            );
            let mine: Vec<String> = first.iter().skip(e).step_by(4).cloned().collect();
            tokio::spawn(async move {
                let mut i = 0usize;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) && !mine.is_empty() {
                    let name = &mine[i % mine.len()];
                    let rev = lock(&model).live.get(name).map_or(1, |r| r + 1);
                    let began = Instant::now();
                    if put(&crs, name, rev).await.is_ok() {
                        lock(&model).live.insert(name.clone(), rev);
                        lock(&spans).push((began, Instant::now()));
                    }
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let down_at = Instant::now();
    let (argv, sigkilled) = {
        let a = apiserver.clone();
        tokio::task::spawn_blocking(move || a.stop()).await??
    };
    let stopped_s = down_at.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(cfg.outage_secs)).await;
    apiserver.start(&argv)?;
    let restarted = Instant::now();
    retry(Duration::from_secs(120), || {
        stage.client.apiserver_version()
    })
    .await?;
    let serving_s = restarted.elapsed().as_secs_f64();
    let outage_s = down_at.elapsed().as_secs_f64();
    // The first CR created once the API server serves again: how soon does ork see it?
    let probe_created = Instant::now();
    if let Some(first) = second.first() {
        put(&stage.crs, first, 0).await?;
        lock(&model).live.insert(first.clone(), 0);
    }
    create_all(&stage.crs, &model, &second, cfg.concurrency).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for e in editors {
        e.await?;
    }
    let spans = lock(&spans).clone();
    let through = spans
        .iter()
        .filter(|(b, e)| *b < restarted && *e > down_at)
        .count();
    let after = spans.iter().filter(|(b, _)| *b >= restarted).count();
    let load_done = Instant::now();
    let mut report = Report {
        name: "R2".into(),
        title: "API server restart".into(),
        load: format!(
            "{half} CRs created; kube-apiserver stopped ({} after {stopped_s:.1} s) and started again, {outage_s:.1} s without an API server; {} more CRs created after; {} spec edits by 4 editors that never stopped ({} before the stop, {through} issued before the restart and retried through the outage, {after} after the restart); load {:.1} s",
            if sigkilled {
                "SIGTERM, then SIGKILL"
            } else {
                "SIGTERM"
            },
            cfg.crs - half,
            spans.len(),
            spans.len() - through - after,
            started.elapsed().as_secs_f64()
        ),
        faults: svc.outcomes_since(0),
        timings: vec![("API server serving again after its start".into(), serving_s)],
        ..Report::default()
    };
    let scope = scope(&stage, None, "ork");
    let converged = stage
        .finish(
            cfg,
            &svc,
            &scope,
            &snapshot(&model),
            &mut report,
            restarted,
            "the API server's restart",
        )
        .await?;
    report.faults = svc.outcomes_since(0);
    if let Some(at) = converged {
        report.timings.push((
            "converged after the last edit".into(),
            at.saturating_duration_since(load_done).as_secs_f64(),
        ));
    }
    if let Some(first) = second.first() {
        let key = format!("{}/{first}", stage.ns.name);
        if let Some(call) = svc.calls().iter().find(|c| c.key == key) {
            report.timings.push((
                "a CR created as soon as the API server served again reached the service after"
                    .into(),
                call.at
                    .saturating_duration_since(probe_created)
                    .as_secs_f64(),
            ));
        }
    }
    stage.teardown(cfg, &scope, &mut report).await?;
    Ok(report)
}

/// R3: ork SIGKILLed `kills` times at random points while CRs with a cross-namespace child and
/// `finalize: true` are created, edited and deleted.
pub async fn r3(cfg: &Config) -> Result<Report> {
    let stage = Stage::new(cfg, "r3").await?;
    let cross = TestNamespace::create(&stage.client).await?;
    let svc = ChaosService::start(CALL_TIMEOUT, cfg.seed ^ 3).await?;
    svc.set_cross_namespace(Some(cross.name.clone()));
    let k = stage.katalog(
        "katalog.yaml",
        &katalog(&stage.ns.name, &svc.url, Some(&cross.name), true),
    )?;
    let ork = Arc::new(Mutex::new(stage.spawn(cfg, &k, "ork", &[])?));
    let model: Shared = Arc::default();
    let killer_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let started = Instant::now();
    // The killer: SIGKILL at a random moment, start again at once, `kills` times.
    let killer = {
        let (ork, done, stage_logs, sampler, dir) = (
            ork.clone(),
            killer_done.clone(),
            stage.logs.clone(),
            stage.sampler.clone(),
            stage.dir.clone(),
        );
        let (bin, home, k, kills, gap, seed) = (
            cfg.ork.clone(),
            stage.home.name.clone(),
            k.clone(),
            cfg.kills,
            cfg.kill_gap_ms,
            cfg.seed,
        );
        tokio::spawn(async move {
            let mut rng = Rng(seed ^ 0x4b11);
            let mut when = Vec::new();
            for i in 0..kills {
                tokio::time::sleep(rng.millis(gap.0, gap.1)).await;
                let mut guard = lock(&ork);
                guard.kill();
                sampler.unwatch(guard.pid);
                when.push(started.elapsed().as_secs_f64());
                let log = dir.join(format!("ork-ork-{}.log", i + 1));
                match Ork::spawn(&bin, &k, &log, "ork", &[], &home) {
                    Ok(new) => {
                        sampler.watch(new.pid, "ork");
                        lock(&stage_logs).push(log);
                        *guard = new;
                    }
                    Err(e) => eprintln!("r3: cannot restart ork: {e:#}"),
                }
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            when
        })
    };
    let all = names("c-", 0..cfg.crs);
    create_all(&stage.crs, &model, &all, cfg.concurrency).await?;
    let mut rng = Rng(cfg.seed ^ 0xd1e);
    let (mut edits, mut deletes, mut rounds) = (0usize, 0usize, 0usize);
    let max_deletes = cfg.crs / 4;
    loop {
        rounds += 1;
        let live: Vec<String> = lock(&model).live.keys().cloned().collect();
        let batch = (cfg.crs / 10).max(2);
        let mut picked = BTreeSet::new();
        while picked.len() < batch.min(live.len()) {
            picked.insert(live[rng.below(live.len() as u64) as usize].clone());
        }
        // Deletes go mostly to CRs that already carry ork's finalizer (the path with a finalize
        // call and cross-namespace cleanup), a few to CRs ork has not reached yet; spread over
        // about 30 rounds.
        let finalized: BTreeSet<String> = stage
            .crs
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.finalizers().iter().any(|f| f == check::FINALIZER))
            .map(|c| c.name_any())
            .collect();
        let (mut to_edit, mut to_delete) = (Vec::new(), Vec::new());
        for name in picked {
            let odds = if finalized.contains(&name) { 12 } else { 60 };
            if deletes + to_delete.len() < max_deletes && rng.below(odds) == 0 {
                to_delete.push(name);
            } else {
                to_edit.push(name);
            }
        }
        edits += edit_all(&stage.crs, &model, &to_edit, cfg.concurrency).await?;
        let results: Vec<Result<(String, bool)>> = stream::iter(to_delete)
            .map(|name| {
                let crs = stage.crs.clone();
                async move { Ok((name.clone(), delete(&crs, &name).await?)) }
            })
            .buffer_unordered(cfg.concurrency)
            .collect()
            .await;
        for r in results {
            let (name, held) = r?;
            let mut m = lock(&model);
            m.live.remove(&name);
            m.deleted.insert(name.clone());
            if held {
                m.held.insert(name);
            }
            deletes += 1;
        }
        let killing = !killer_done.load(std::sync::atomic::Ordering::SeqCst);
        if (!killing && rounds >= 3) || rounds >= 60 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let kill_times = killer.await?;
    let last_restart = Instant::now();
    let m = snapshot(&model);
    let mut report = Report {
        name: "R3".into(),
        title: format!("ork SIGKILL x{}", kill_times.len()),
        load: format!(
            "{} CRs (a same-namespace and a cross-namespace child each, finalize: true) created, {edits} spec edits and {deletes} deletes ({} held by the finalizer) in {rounds} rounds over {:.1} s; ork SIGKILLed and restarted at {}",
            cfg.crs,
            m.held.len(),
            started.elapsed().as_secs_f64(),
            kill_times
                .iter()
                .map(|t| format!("{t:.1}s"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        faults: svc.outcomes_since(0),
        ..Report::default()
    };
    let scope = scope(&stage, Some(&cross), "ork");
    stage
        .finish(
            cfg,
            &svc,
            &scope,
            &m,
            &mut report,
            last_restart,
            "the last restart",
        )
        .await?;
    report.faults = svc.outcomes_since(0);
    // The finalize call the protocol promises to every CR held by the finalizer.
    let calls = svc.calls();
    let finalized: BTreeSet<String> = calls
        .iter()
        .filter(|c| c.finalizing)
        .map(|c| c.key.clone())
        .collect();
    let missing: Vec<String> = m
        .held
        .iter()
        .filter(|n| !finalized.contains(&format!("{}/{n}", stage.ns.name)))
        .cloned()
        .collect();
    report.findings.set(
        "released_without_finalize_call",
        missing.len() as u64,
        missing
            .iter()
            .map(|n| format!("CR {n} was held, deleted, never finalized"))
            .collect(),
    );
    let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
    for c in calls.iter().filter(|c| c.finalizing) {
        *per_key.entry(c.key.as_str()).or_insert(0) += 1;
    }
    let repeated = per_key.values().filter(|n| **n > 1).count();
    let after_restart = calls
        .iter()
        .filter(|c| c.at >= last_restart && !c.finalizing)
        .count();
    report.notes.push(format!(
        "{after_restart} reconcile calls after the last restart, for {} live CRs (each is reconciled once when a new ork starts)",
        m.live.len()
    ));
    report.notes.push(format!(
        "finalize calls: {} CRs finalized, {repeated} of them more than once (a kill between the call and the finalizer's removal repeats it: at-least-once, as the protocol promises)",
        per_key.len()
    ));
    stage.teardown(cfg, &scope, &mut report).await?;
    drop(ork);
    Ok(report)
}

/// R4: two replicas with `--leader-elect`; the leader SIGKILLed halfway through the load.
pub async fn r4(cfg: &Config) -> Result<Report> {
    let stage = Stage::new(cfg, "r4").await?;
    let svc = ChaosService::start(CALL_TIMEOUT, cfg.seed ^ 4).await?;
    // Each replica calls its own path, so the service (and the children) know who wrote.
    let ka = stage.katalog(
        "katalog-a.yaml",
        &katalog(&stage.ns.name, &format!("{}/a", svc.url), None, false),
    )?;
    let kb = stage.katalog(
        "katalog-b.yaml",
        &katalog(&stage.ns.name, &format!("{}/b", svc.url), None, false),
    )?;
    let lease_arg = format!("--lease-duration={}s", cfg.lease.as_secs());
    let args = ["--leader-elect", lease_arg.as_str()];
    let mut a = stage.spawn(cfg, &ka, "a", &args)?;
    let mut b = stage.spawn(cfg, &kb, "b", &args)?;
    let host = hostname();
    let leases: Api<Lease> = Api::namespaced(stage.client.clone(), &stage.home.name);
    let holder = || async {
        leases
            .get_opt("orkestra-konductor")
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec?.holder_identity)
            .unwrap_or_default()
    };
    let t = Instant::now();
    let leader = loop {
        let h = holder().await;
        if h == format!("{host}-{}", a.pid) {
            break "a";
        }
        if h == format!("{host}-{}", b.pid) {
            break "b";
        }
        if t.elapsed() > Duration::from_secs(60) {
            bail!("no leader within 60 s (holder {h:?})");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let survivor = if leader == "a" { "b" } else { "a" };
    // Every write to a child, with the replica stamped in it, as the watch sees them.
    let writes: Arc<Mutex<Vec<(String, String, Instant)>>> = Arc::default();
    let watch = {
        let writes = writes.clone();
        let cms = Api::<ConfigMap>::namespaced(stage.client.clone(), &stage.ns.name);
        tokio::spawn(async move {
            use kube::runtime::watcher;
            let mut s = std::pin::pin!(watcher(cms, watcher::Config::default()));
            while let Some(ev) = s.next().await {
                if let Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) = ev {
                    let writer = cm
                        .data
                        .as_ref()
                        .and_then(|d| d.get("writer").cloned())
                        .unwrap_or_default();
                    lock(&writes).push((cm.name_any(), writer, Instant::now()));
                }
            }
        })
    };
    let model: Shared = Arc::default();
    let half = cfg.crs / 2;
    let started = Instant::now();
    create_all(&stage.crs, &model, &names("c-", 0..half), cfg.concurrency).await?;
    // Let the leader get going, then kill it while a round of edits is in flight.
    let t = Instant::now();
    while svc.calls().iter().filter(|c| c.replica == leader).count() < half / 2
        && t.elapsed() < Duration::from_secs(60)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let victim = if leader == "a" { &mut a } else { &mut b };
    let mut killed_at = Instant::now();
    let mut kill_offset = 0.0;
    let kill = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        killed_at = Instant::now();
        kill_offset = started.elapsed().as_secs_f64();
        victim.kill();
        stage.sampler.unwatch(victim.pid);
    };
    let first_edits = names("c-", 0..half / 2);
    let (edited, ()) = tokio::join!(
        edit_all(&stage.crs, &model, &first_edits, cfg.concurrency),
        kill
    );
    edited?;
    let survivor_pid = if leader == "a" { b.pid } else { a.pid };
    // Keep going through the takeover.
    let load = async {
        create_all(
            &stage.crs,
            &model,
            &names("c-", half..cfg.crs),
            cfg.concurrency,
        )
        .await?;
        edit_all(
            &stage.crs,
            &model,
            &names("c-", half / 2..half),
            cfg.concurrency,
        )
        .await
    };
    let takeover = async {
        loop {
            if holder().await == format!("{host}-{survivor_pid}")
                || killed_at.elapsed() > Duration::from_secs(120)
            {
                return killed_at.elapsed().as_secs_f64();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let (edits2, takeover_s) = tokio::join!(load, takeover);
    edits2?;
    let load_done = Instant::now();
    let mut report = Report {
        name: "R4".into(),
        title: "leader SIGKILL".into(),
        load: format!(
            "2 replicas (--leader-elect, {lease_arg}); {half} CRs created and {} edited, leader {leader} SIGKILLed at {kill_offset:.1} s, then {} more CRs created and {} edited",
            half / 2,
            cfg.crs - half,
            half - half / 2
        ),
        faults: svc.outcomes_since(0),
        ..Report::default()
    };
    report.timings.push((
        format!(
            "takeover: lease held by {survivor} after the SIGKILL (lease duration {} s)",
            cfg.lease.as_secs()
        ),
        takeover_s,
    ));
    let scope = scope(&stage, None, survivor);
    stage
        .finish(
            cfg,
            &svc,
            &scope,
            &snapshot(&model),
            &mut report,
            load_done,
            "the last write of the load",
        )
        .await?;
    report.faults = svc.outcomes_since(0);
    let calls = svc.calls();
    if let Some(first) = calls.iter().find(|c| c.replica == survivor) {
        report.timings.push((
            format!("first call by {survivor} after the SIGKILL"),
            first.at.saturating_duration_since(killed_at).as_secs_f64(),
        ));
    }
    // No object written by both: the standby called nobody while the leader lived, the killed
    // leader nobody after the standby's first call, and no child's stamp goes back from the new
    // leader to the old one.
    let mut both = Vec::new();
    for c in calls
        .iter()
        .filter(|c| c.replica == survivor && c.at < killed_at)
    {
        both.push(format!(
            "{} called by standby {survivor} before the leader died",
            c.key
        ));
    }
    let first_survivor = calls
        .iter()
        .filter(|c| c.replica == survivor)
        .map(|c| c.at)
        .min();
    if let Some(fs) = first_survivor {
        for c in calls.iter().filter(|c| c.replica == leader && c.at > fs) {
            both.push(format!(
                "{} called by killed leader {leader} after {survivor} took over",
                c.key
            ));
        }
    }
    let mut seq: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, writer, _) in lock(&writes).iter() {
        let v = seq.entry(name.clone()).or_default();
        if v.last() != Some(writer) {
            v.push(writer.clone());
        }
    }
    let mut interleaved = 0;
    for (name, v) in &seq {
        if let Some(i) = v.iter().position(|w| w == survivor)
            && v[i..].iter().any(|w| w == leader)
        {
            interleaved += 1;
            both.push(format!("ConfigMap {name}: writers {v:?}"));
        }
    }
    let per_writer = seq.values().filter(|v| v.len() > 1).count();
    report.notes.push(format!(
        "{} children written in all; {per_writer} rewritten by {survivor} after {leader} (in that order), {interleaved} interleaved",
        seq.len()
    ));
    report
        .findings
        .set("written_by_both", both.len() as u64, both);
    watch.abort();
    stage.teardown(cfg, &scope, &mut report).await?;
    drop((a, b));
    Ok(report)
}

/// Every report as one JSON document (for tooling and the README figures).
pub fn to_json(reports: &[Report]) -> serde_json::Value {
    json!(reports
        .iter()
        .map(|r| json!({
            "scenario": r.name,
            "title": r.title,
            "passed": r.passed(),
            "load": r.load,
            "calls": r.faults,
            "timings_s": r.timings.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "invariants": r.findings.counts,
            "examples": r.findings.examples,
            "ork": {
                "rss_peak_mib": r.usage.peak_rss_mib,
                "rss_at_convergence_mib": r.usage.rss_at_converge_mib,
                "rss_after_idle_mib": r.usage.rss_at_end_mib,
                "cpu_s_load": r.usage.cpu_s_load,
                "load_s": r.usage.load_s,
                "cpu_pct_idle": r.usage.cpu_pct_idle,
                "rss_timeline_mib": r.usage.timeline,
            },
            "notes": r.notes,
        }))
        .collect::<Vec<_>>())
}
