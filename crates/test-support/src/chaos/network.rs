//! R5: the reconcile service on a test host of its own ([`TestHost`]: a network namespace behind
//! a veth pair), its link degraded (latency with jitter, loss, reordering) while CRs are created
//! and edited, then cut for a while, then healed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::service::ChaosService;
use super::stage::{
    CALL_TIMEOUT, Config, Report, Shared, Stage, create_all, edit_for, katalog, names, scope,
    snapshot,
};
use ork_test_support::netns::{Link, TestHost};

/// The degraded link: what the host sends waits 200 ms ± 50 ms, 5 % of packets either way are
/// lost.
const DEGRADED: Link = Link::Degraded {
    delay: Duration::from_millis(200),
    jitter: Duration::from_millis(50),
    loss_pct: 5,
};

pub async fn r5(cfg: &Config) -> Result<Report> {
    let host = TestHost::create(5).context(
        "R5 needs root, iproute2 and iptables-legacy (cargo xtask chaos installs Debian's iptables)",
    )?;
    let stage = Stage::new(cfg, "r5").await?;
    let svc = ChaosService::start_on(host.listen()?, CALL_TIMEOUT, cfg.seed ^ 5)?;
    host.set(DEGRADED);
    let k = stage.katalog(
        "katalog.yaml",
        &katalog(&stage.ns.name, &svc.url, None, false),
    )?;
    let _ork = stage.spawn(cfg, &k, "ork", &[])?;
    let model: Shared = Arc::default();
    let started = Instant::now();
    let all = names("n-", 0..cfg.crs);
    create_all(&stage.crs, &model, &all, cfg.concurrency).await?;
    let edits = edit_for(
        &stage.crs,
        &model,
        &all,
        cfg.concurrency,
        Duration::from_secs(cfg.fault_secs),
    )
    .await?;
    let degraded_s = started.elapsed().as_secs_f64();
    let calls_degraded = svc.call_count();
    // The partition: edits go on; none can reach the service.
    host.set(Link::Partitioned);
    let partition = Duration::from_secs(cfg.partition_secs);
    let thirds: Vec<String> = all.iter().step_by(3).cloned().collect();
    let cut_edits = edit_for(&stage.crs, &model, &thirds, cfg.concurrency, partition).await?;
    let calls_in_partition = svc.call_count() - calls_degraded;
    host.set(Link::Clear);
    let healed = Instant::now();
    let calls_at_heal = svc.call_count();
    let mut report = Report {
        name: "R5".into(),
        title: "network faults between ork and the service".into(),
        load: format!(
            "{} CRs created and {edits} spec edits over a link with 200 ± 50 ms latency and 5 % loss ({degraded_s:.1} s, {calls_degraded} calls), then {cut_edits} edits during a {} s partition ({calls_in_partition} calls arrived), then a clear link",
            cfg.crs, cfg.partition_secs
        ),
        faults: svc.outcomes_since(0),
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
            healed,
            "the link healed",
        )
        .await?;
    report
        .notes
        .push(format!("the link: {}", host.stats.line()));
    report.notes.push(format!(
        "{} calls after the link healed until the end of the idle window",
        svc.call_count() - calls_at_heal
    ));
    stage.teardown(cfg, &scope, &mut report).await?;
    Ok(report)
}
