//! R7 rolling upgrade and R8 shard rebalancing: a fleet of `ork run` replicas that changes under
//! load. Who wrote what is read from the cluster's own order: every child write and every Lease
//! write is watched with its resourceVersion (one etcd orders them all), so a child written by a
//! replica while another held the Lease that governs it is found exactly, whatever the watch
//! lag; and the service's call log shows calls of one key in flight from two replicas at once.

mod ledger;
mod replica;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::check::Scope;
use super::service::{ChaosService, Rng};
use super::stage::{
    CALL_TIMEOUT, Config, Report, Shared, Stage, create_all, edit_all, lock, names, put, snapshot,
};
use ledger::{Ledger, calls_at_once, calls_by_replica};
use replica::{
    Exit, LEADER_LEASE, Replica, abandoned, knows_flags, settled, shard_holders, shard_of, start,
    terminate, wait_ready,
};

/// How long the service holds every call in R7 and R8: two replicas calling one key at once
/// would overlap for at least this long.
const CALL_DELAY: Duration = Duration::from_millis(50);

/// What differs between two versions of a child: data, labels, annotations, field managers.
fn difference(old: &ConfigMap, new: &ConfigMap) -> String {
    fn diff(what: &str, a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
        let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        keys.into_iter()
            .filter(|k| a.get(*k) != b.get(*k))
            .map(|k| format!("{what} {k}: {:?} -> {:?}", a.get(k), b.get(k)))
            .collect()
    }
    let data = |c: &ConfigMap| c.data.clone().unwrap_or_default();
    let mut out = diff("data", &data(old), &data(new));
    out.extend(diff("label", old.labels(), new.labels()));
    out.extend(diff("annotation", old.annotations(), new.annotations()));
    if out.is_empty() {
        let managers = |c: &ConfigMap| -> Vec<String> {
            c.managed_fields()
                .iter()
                .map(|m| {
                    format!(
                        "{}/{} at {:?}",
                        m.manager.clone().unwrap_or_default(),
                        m.operation.clone().unwrap_or_default(),
                        m.time.as_ref().map(|t| t.0.to_string())
                    )
                })
                .collect()
        };
        out.push(format!(
            "same data, labels and annotations; managers {:?} -> {:?}",
            managers(old),
            managers(new)
        ));
    }
    out.join("; ")
}

/// R8: `--shards N` replicas added and removed every few seconds (SIGTERM and SIGKILL) while
/// CRs are created and edited; every CR converges, no key is reconciled by two replicas at once.
pub async fn r8(cfg: &Config) -> Result<Report> {
    let stage = Stage::new(cfg, "r8").await?;
    let svc = ChaosService::start(CALL_TIMEOUT, cfg.seed ^ 8).await?;
    svc.set_delay(CALL_DELAY);
    let ledger = Ledger::start(&stage).await?;
    let shards_arg = format!("--shards={}", cfg.shards);
    let lease_arg = format!("--lease-duration={}s", cfg.lease.as_secs());
    let args = [shards_arg.as_str(), lease_arg.as_str()];
    let leases: Api<Lease> = Api::namespaced(stage.client.clone(), &stage.home.name);
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut alive: Vec<Replica> = Vec::new();
    let mut next = 1usize;
    let mut add =
        |alive: &mut Vec<Replica>, labels: &mut BTreeMap<String, String>| -> Result<String> {
            let label = format!("r{next}");
            next += 1;
            let r = start(&stage, &svc, &cfg.ork, &label, &args, false)?;
            labels.insert(r.identity.clone(), label.clone());
            alive.push(r);
            Ok(label)
        };
    add(&mut alive, &mut labels)?;
    let t = Instant::now();
    while shard_holders(&leases).await.len() < cfg.shards as usize {
        if t.elapsed() > Duration::from_secs(60) {
            bail!(
                "r8: the first replica did not hold all {} shards within 60 s",
                cfg.shards
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let model: Shared = Arc::default();
    let started = Instant::now();
    let churn_done = AtomicBool::new(false);
    let mut stopping: Vec<tokio::task::JoinHandle<Exit>> = Vec::new();
    // (SIGTERM or SIGKILL, label, identity, when)
    let mut removed: Vec<(&str, String, String, Instant)> = Vec::new();
    let mut steps: Vec<String> = vec!["r1 at 0.0s".into()];
    let mut last_change = Instant::now();
    // Add, add, SIGTERM one, SIGKILL one, again: 1, 2, 3, 2, 1, 2, 3, … replicas.
    let churn = async {
        let mut rng = Rng(cfg.seed ^ 0xf1ee7);
        for i in 0..cfg.fleet_steps {
            tokio::time::sleep(cfg.fleet_gap).await;
            let at = started.elapsed().as_secs_f64();
            match i % 4 {
                0 | 1 => match add(&mut alive, &mut labels) {
                    Ok(label) => steps.push(format!("+{label} {at:.1}s")),
                    Err(e) => eprintln!("r8: cannot start a replica: {e:#}"),
                },
                2 => {
                    let r = alive.remove(rng.below(alive.len() as u64) as usize);
                    steps.push(format!("TERM {} {at:.1}s", r.label));
                    removed.push((
                        "SIGTERM",
                        r.label.clone(),
                        r.identity.clone(),
                        Instant::now(),
                    ));
                    stopping.push(terminate(&stage, r));
                }
                _ => {
                    let mut r = alive.remove(rng.below(alive.len() as u64) as usize);
                    r.ork.kill();
                    stage.sampler.unwatch(r.ork.pid);
                    steps.push(format!("KILL {} {at:.1}s", r.label));
                    removed.push((
                        "SIGKILL",
                        r.label.clone(),
                        r.identity.clone(),
                        Instant::now(),
                    ));
                }
            }
            last_change = Instant::now();
        }
        churn_done.store(true, Ordering::SeqCst);
    };
    let load = async {
        let all = names("c-", 0..cfg.crs);
        let chunk = (cfg.crs / 10).max(1);
        let batch = (cfg.crs / 20).max(2);
        let mut rng = Rng(cfg.seed ^ 0x10ad);
        let (mut created, mut edits, mut rounds) = (0usize, 0usize, 0usize);
        loop {
            rounds += 1;
            if created < all.len() {
                let upto = (created + chunk).min(all.len());
                create_all(&stage.crs, &model, &all[created..upto], cfg.concurrency).await?;
                created = upto;
            }
            let live: Vec<String> = lock(&model).live.keys().cloned().collect();
            let mut picked = BTreeSet::new();
            while picked.len() < batch.min(live.len()) {
                picked.insert(live[rng.below(live.len() as u64) as usize].clone());
            }
            let picked: Vec<String> = picked.into_iter().collect();
            edits += edit_all(&stage.crs, &model, &picked, cfg.concurrency).await?;
            if (created == all.len() && churn_done.load(Ordering::SeqCst)) || rounds >= 1000 {
                return anyhow::Ok((edits, rounds));
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    let ((), loaded) = tokio::join!(churn, load);
    let (edits, rounds) = loaded?;
    let load_s = started.elapsed().as_secs_f64();
    // The SIGTERMed replicas drain and give their Leases up; a kubelet would SIGKILL them after
    // the pod's grace period.
    let mut shutdowns = Vec::new();
    for exit in stopping {
        shutdowns.push(exit.await?.describe());
    }
    let identities: Vec<String> = alive.iter().map(|r| r.identity.clone()).collect();
    let t = Instant::now();
    let mut holders = shard_holders(&leases).await;
    while !settled(&holders, &identities, cfg.shards) && t.elapsed() < cfg.converge_limit {
        tokio::time::sleep(Duration::from_millis(200)).await;
        holders = shard_holders(&leases).await;
    }
    let settled_s = last_change.elapsed().as_secs_f64();
    let is_settled = settled(&holders, &identities, cfg.shards);
    let mut report = Report {
        name: "R8".into(),
        title: format!("shard rebalancing ({} shards)", cfg.shards),
        load: format!(
            "{} CRs created and {edits} spec edits in {rounds} rounds over {load_s:.1} s, the service holding each call {} ms; `ork run {shards_arg} {lease_arg}` replicas: {}; {} alive at the end",
            cfg.crs,
            CALL_DELAY.as_millis(),
            steps.join(", "),
            alive.len()
        ),
        ..Report::default()
    };
    report.timings.push((
        "every shard held by a live replica, evenly, after the last fleet change".into(),
        settled_s,
    ));
    let writers: Vec<String> = labels.values().cloned().collect();
    let scope = Scope {
        writers,
        ..super::stage::scope(&stage, None, "")
    };
    stage
        .finish(
            cfg,
            &svc,
            &scope,
            &snapshot(&model),
            &mut report,
            last_change,
            "the last fleet change",
        )
        .await?;
    let split: Vec<String> = holders
        .iter()
        .map(|(s, h)| format!("{s}:{}", labels.get(h).unwrap_or(h)))
        .collect();
    let unsettled = if is_settled {
        Vec::new()
    } else {
        vec![format!(
            "after {:?}: holders {} for live {:?}",
            cfg.converge_limit,
            split.join(" "),
            alive.iter().map(|r| &r.label).collect::<Vec<_>>()
        )]
    };
    report
        .findings
        .set("shards_not_settled", u64::from(!is_settled), unsettled);
    report
        .notes
        .push(format!("shard holders at the end: {}", split.join(" ")));
    report.faults = svc.outcomes_since(0);
    let calls = svc.calls();
    let at_once = calls_at_once(&calls, started);
    let ns = stage.ns.name.clone();
    let total = cfg.shards;
    let (checked, under_other) = ledger.written_without_the_lease(
        |cm| {
            let cr = cm.strip_suffix("-cfg").unwrap_or(cm);
            format!(
                "{LEADER_LEASE}-shard-{}",
                shard_of(&format!("{ns}/{cr}"), total)
            )
        },
        &labels,
    );
    report
        .findings
        .set("calls_in_flight_at_once", at_once.len() as u64, at_once);
    report
        .findings
        .set("written_by_both", under_other.len() as u64, under_other);
    report.notes.push(format!(
        "calls per replica: {}; {} shard Lease moves; {checked} stamped child writes checked against their shard's Lease",
        calls_by_replica(&calls),
        ledger.moves(&format!("{LEADER_LEASE}-shard-"))
    ));
    report.notes.push(format!(
        "SIGTERMed replicas exited after: {}",
        shutdowns.join(", ")
    ));
    let mut takeovers = Vec::new();
    let mut longest: BTreeMap<&str, f64> = BTreeMap::new();
    for (how, label, identity, at) in &removed {
        match ledger.taken_over(identity, *at) {
            Some((0, _)) => takeovers.push(format!("{how} {label}: held no shard")),
            Some((n, d)) => {
                let s = d.as_secs_f64();
                let shards = if n == 1 { "shard" } else { "shards" };
                takeovers.push(format!("{how} {label}: {n} {shards}, {s:.1}s"));
                let l = longest.entry(how).or_insert(0.0);
                *l = l.max(s);
            }
            None => takeovers.push(format!("{how} {label}: a shard never taken over")),
        }
    }
    for (how, s) in longest {
        report.timings.push((
            format!(
                "longest wait for another replica to hold the shards of a replica stopped by {how}"
            ),
            s,
        ));
    }
    report.notes.push(format!(
        "shards of a removed replica held by others after: {}",
        takeovers.join(", ")
    ));
    for line in abandoned(&stage) {
        report.notes.push(line);
    }
    drop(ledger);
    stage.teardown(cfg, &scope, &mut report).await?;
    drop(alive);
    Ok(report)
}

/// R7: two `--leader-elect` replicas of the previous release (what `ork generate bundle` runs
/// by default) replaced one by one by the current build, as a Deployment's rolling update does
/// (maxSurge 1, maxUnavailable 0: a new pod ready, then an old one terminated), while half the
/// CRs are edited; the other half, left alone, must not see a child rewritten.
pub async fn r7(cfg: &Config) -> Result<Report> {
    let Some(previous) = cfg.previous_ork.clone() else {
        bail!("R7 upgrades from a previous release: it needs --previous-ork");
    };
    // Only flags both releases know.
    let lease_arg = format!("--lease-duration={}s", cfg.lease.as_secs());
    let flags = [
        "--leader-elect",
        "--lease-duration",
        "--http-addr",
        "--no-dev-files",
    ];
    knows_flags(&previous, &flags)?;
    knows_flags(&cfg.ork, &flags)?;
    let args = ["--leader-elect", lease_arg.as_str()];
    let stage = Stage::new(cfg, "r7").await?;
    let svc = ChaosService::start(CALL_TIMEOUT, cfg.seed ^ 7).await?;
    svc.set_delay(CALL_DELAY);
    // Quiet CRs get the same answer whoever calls: a new child version is ork's doing.
    svc.set_unstamped(Some("q-".into()));
    let ledger = Ledger::start(&stage).await?;
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut spawn = |bin: &Path, label: &str| -> Result<Replica> {
        let r = start(&stage, &svc, bin, label, &args, true)?;
        labels.insert(r.identity.clone(), label.to_string());
        Ok(r)
    };
    let mut olds = vec![spawn(&previous, "old-a")?, spawn(&previous, "old-b")?];
    for r in &mut olds {
        wait_ready(r, Duration::from_secs(60)).await?;
    }
    let leases: Api<Lease> = Api::namespaced(stage.client.clone(), &stage.home.name);
    let holder = || async {
        leases
            .get_opt(LEADER_LEASE)
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec?.holder_identity)
            .unwrap_or_default()
    };
    let t = Instant::now();
    loop {
        let h = holder().await;
        if olds.iter().any(|r| r.identity == h) {
            break;
        }
        if t.elapsed() > Duration::from_secs(60) {
            bail!("r7: no leader among the old replicas within 60 s (holder {h:?})");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let model: Shared = Arc::default();
    let quiet = names("q-", 0..cfg.crs / 2);
    let edited = names("e-", 0..cfg.crs - cfg.crs / 2);
    let started = Instant::now();
    create_all(&stage.crs, &model, &quiet, cfg.concurrency).await?;
    create_all(&stage.crs, &model, &edited, cfg.concurrency).await?;
    let before_scope = Scope {
        writers: vec!["old-a".into(), "old-b".into()],
        unstamped: Some("q-".into()),
        ..super::stage::scope(&stage, None, "")
    };
    let (converged, findings) = stage
        .converge(cfg, &svc, &before_scope, &snapshot(&model))
        .await;
    let first_s = started.elapsed().as_secs_f64();
    let cms = Api::<ConfigMap>::namespaced(stage.client.clone(), &stage.ns.name);
    let children = |list: Vec<ConfigMap>| -> BTreeMap<String, ConfigMap> {
        list.into_iter()
            .filter(|c| c.name_any().starts_with("q-"))
            .map(|c| (c.name_any(), c))
            .collect()
    };
    let before = children(cms.list(&ListParams::default()).await?.items);
    let calls_before = svc.call_count();
    // The rollout, with four editors over the edited half from 2 s before it until 2 s after
    // (a rollout of replicas that are ready at once takes well under a second).
    let stop = Arc::new(AtomicBool::new(false));
    let editors: Vec<_> = (0..4usize)
        .map(|e| {
            let (crs, model, stop) = (stage.crs.clone(), model.clone(), stop.clone());
            let mine: Vec<String> = edited.iter().skip(e).step_by(4).cloned().collect();
            tokio::spawn(async move {
                let (mut i, mut n) = (0usize, 0usize);
                while !stop.load(Ordering::SeqCst) && !mine.is_empty() {
                    let name = &mine[i % mine.len()];
                    let rev = lock(&model).live.get(name).map_or(1, |r| r + 1);
                    if put(&crs, name, rev).await.is_ok() {
                        lock(&model).live.insert(name.clone(), rev);
                        n += 1;
                    }
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                n
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rollout_start = Instant::now();
    let at = |t: Instant| t.saturating_duration_since(started).as_secs_f64();
    let mut steps = Vec::new();
    let mut news = vec![spawn(&cfg.ork, "new-c")?];
    let ready_c = wait_ready(&mut news[0], Duration::from_secs(60)).await?;
    steps.push(format!("new-c ready after {ready_c:.1}s"));
    // The first old pod to go: the leader (a Deployment picks either; this one moves the Lease).
    let h = holder().await;
    let first = olds.iter().position(|r| r.identity == h).unwrap_or(0);
    let gone = olds.remove(first);
    let last = olds.remove(0);
    // A Deployment terminates an old pod and creates the next new one at once (the old one no
    // longer counts), and the last old pod once that new one is ready.
    let gone_at = Instant::now();
    steps.push(format!(
        "SIGTERM {} (the leader) at {:.1}s",
        gone.label,
        at(gone_at)
    ));
    let gone_label = gone.label.clone();
    let gone = terminate(&stage, gone);
    news.push(spawn(&cfg.ork, "new-d")?);
    let ready_d = wait_ready(&mut news[1], Duration::from_secs(60)).await?;
    steps.push(format!("new-d ready after {ready_d:.1}s"));
    steps.push(format!(
        "SIGTERM {} at {:.1}s",
        last.label,
        at(Instant::now())
    ));
    let last = terminate(&stage, last);
    let exits = [gone.await?.describe(), last.await?.describe()];
    let rollout_done = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::SeqCst);
    let mut edits = 0;
    for e in editors {
        edits += e.await?;
    }
    let mut report = Report {
        name: "R7".into(),
        title: "rolling upgrade".into(),
        load: format!(
            "2 replicas `ork run --leader-elect {lease_arg}` of the previous release ({}) replaced one by one by the current build: {}; {} CRs ({} left alone, {} edited: {edits} spec edits by 4 editors from 2 s before the rollout until 2 s after it), the service holding each call {} ms",
            previous.display(),
            steps.join(", "),
            cfg.crs,
            quiet.len(),
            edited.len(),
            CALL_DELAY.as_millis()
        ),
        ..Report::default()
    };
    match converged {
        Some(at) => report.timings.push((
            "the previous release converged on every CR before the upgrade".into(),
            at.saturating_duration_since(started).as_secs_f64(),
        )),
        None => report.notes.push(format!(
            "the previous release did not converge before the upgrade within {:?} ({first_s:.0} s; counts {:?})",
            cfg.converge_limit, findings.counts
        )),
    }
    report.timings.push((
        "rollout: first new replica started to last old replica gone".into(),
        rollout_done
            .saturating_duration_since(rollout_start)
            .as_secs_f64(),
    ));
    let scope = Scope {
        writers: labels.values().cloned().collect(),
        unstamped: Some("q-".into()),
        ..super::stage::scope(&stage, None, "")
    };
    stage
        .finish(
            cfg,
            &svc,
            &scope,
            &snapshot(&model),
            &mut report,
            rollout_done,
            "the last old replica was gone",
        )
        .await?;
    report.faults = svc.outcomes_since(0);
    // Children of the CRs left alone: the same resourceVersion as before the upgrade.
    let after = children(cms.list(&ListParams::default()).await?.items);
    let mut rewritten = Vec::new();
    for (name, old) in &before {
        let Some(new) = after.get(name) else {
            rewritten.push(format!("ConfigMap {name} gone"));
            continue;
        };
        if new.metadata.resource_version != old.metadata.resource_version {
            rewritten.push(format!(
                "ConfigMap {name}: resourceVersion {:?} -> {:?}; {}",
                old.metadata.resource_version,
                new.metadata.resource_version,
                difference(old, new)
            ));
        }
    }
    report
        .findings
        .set("rewritten_by_upgrade", rewritten.len() as u64, rewritten);
    let calls = svc.calls();
    let quiet_calls: BTreeMap<&str, usize> = calls[calls_before..]
        .iter()
        .filter(|c| c.key.contains("/q-"))
        .fold(BTreeMap::new(), |mut m, c| {
            *m.entry(c.replica.as_str()).or_insert(0) += 1;
            m
        });
    let at_once = calls_at_once(&calls, started);
    let (checked, under_other) = ledger.written_without_the_lease(|_| LEADER_LEASE.into(), &labels);
    report
        .findings
        .set("calls_in_flight_at_once", at_once.len() as u64, at_once);
    report
        .findings
        .set("written_by_both", under_other.len() as u64, under_other);
    let handovers = ledger.handovers(LEADER_LEASE, &labels);
    let mut leaderless = 0.0f64;
    for w in handovers.windows(2) {
        if w[0].1 == "nobody" {
            leaderless = leaderless.max(w[1].0.saturating_duration_since(w[0].0).as_secs_f64());
        }
    }
    report.timings.push((
        "longest time without a leader (Lease released to taken)".into(),
        leaderless,
    ));
    report.notes.push(format!(
        "leaders: {}",
        handovers
            .iter()
            .map(|(t, h)| format!("{h} {:.1}s", at(*t)))
            .collect::<Vec<_>>()
            .join(" -> ")
    ));
    report.notes.push(format!(
        "calls per replica: {}; during and after the upgrade the {} CRs left alone were called {:?} times (a new leader reconciles every CR once), {} of their children rewritten; {checked} stamped child writes checked against the Lease",
        calls_by_replica(&calls),
        quiet.len(),
        quiet_calls,
        report.findings.get("rewritten_by_upgrade")
    ));
    report.notes.push(format!(
        "SIGTERMed old replicas exited after: {}",
        exits.join(", ")
    ));
    if let Some(first) = calls
        .iter()
        .find(|c| c.at > gone_at && c.replica != gone_label)
    {
        report.timings.push((
            format!("the leader {gone_label} SIGTERMed to the next leader's first call"),
            first.at.saturating_duration_since(gone_at).as_secs_f64(),
        ));
    }
    for line in abandoned(&stage) {
        report.notes.push(line);
    }
    drop(ledger);
    stage.teardown(cfg, &scope, &mut report).await?;
    drop(news);
    Ok(report)
}
