//! `ork-chaos ORK_BINARY [--crs N] [--scenarios r1,…,r8] [--kills K] [--out DIR]
//! [--apiserver-pids FILE] [--previous-ork PATH]`: the reliability suite against the cluster of
//! `$KUBECONFIG` (see `crates/test-support/src/chaos/mod.rs`). R2 stops and starts the API server
//! recorded in the pids file, so it runs only when one is given (`cargo xtask chaos` starts a
//! cluster of its own and passes it); R7 upgrades from the previous release's `ork`, so it runs
//! only with `--previous-ork` (`cargo xtask chaos` builds it). Exit 1 when any invariant fails.
//! Loopback only, and R5's test host in a network namespace the run creates.

#[path = "../chaos/mod.rs"]
#[allow(dead_code)]
mod chaos;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

fn usage() -> &'static str {
    "usage: ork-chaos ORK_BINARY [--crs N] [--scenarios r1,…,r8] [--kills K] [--out DIR] [--apiserver-pids FILE] [--previous-ork PATH]\n\n  r1 service faults, r2 API server restart (needs --apiserver-pids), r3 ork SIGKILLs,\n  r4 leader SIGKILL, r5 network faults (root, iptables-legacy), r6 API server throttling,\n  r7 rolling upgrade from the previous release (needs --previous-ork), r8 shard rebalancing;\n  default: all of them"
}

#[tokio::main]
async fn main() -> ExitCode {
    match real_main().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("ork-chaos: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn real_main() -> Result<bool> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut ork = None;
    let mut crs = 2000usize;
    let mut kills = None;
    let mut scenarios = "r1,r2,r3,r4,r5,r6,r7,r8".to_string();
    let mut out = std::env::temp_dir().join("ork-chaos");
    let mut pids = None;
    let mut previous = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .with_context(|| format!("{name} needs a value\n{}", usage()))
        };
        match a.as_str() {
            "--crs" => crs = value("--crs")?.parse()?,
            "--kills" => kills = Some(value("--kills")?.parse()?),
            "--scenarios" => scenarios = value("--scenarios")?,
            "--out" => out = PathBuf::from(value("--out")?),
            "--apiserver-pids" => pids = Some(PathBuf::from(value("--apiserver-pids")?)),
            "--previous-ork" => previous = Some(PathBuf::from(value("--previous-ork")?)),
            "-h" | "--help" => {
                println!("{}", usage());
                return Ok(true);
            }
            s if s.starts_with('-') => bail!("unknown option {s}\n{}", usage()),
            s => ork = Some(PathBuf::from(s)),
        }
    }
    let ork = ork.context(usage())?;
    let apiserver = pids.map(|pids_file| chaos::procs::ApiServer { pids_file });
    let mut cfg = chaos::Config::full(ork, crs, out.clone(), apiserver);
    if let Some(k) = kills {
        cfg.kills = k;
    }
    cfg.previous_ork = previous;
    let mut which: Vec<&str> = scenarios
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if cfg.apiserver.is_none() && which.contains(&"r2") {
        eprintln!("ork-chaos: R2 skipped: it needs a cluster of its own (--apiserver-pids)");
        which.retain(|w| *w != "r2");
    }
    if cfg.previous_ork.is_none() && which.contains(&"r7") {
        eprintln!(
            "ork-chaos: R7 skipped: it upgrades from the previous release's ork (--previous-ork)"
        );
        which.retain(|w| *w != "r7");
    }
    println!(
        "ork-chaos: {} CRs per scenario, scenarios {}, logs and samples in {}",
        cfg.crs,
        which.join(","),
        out.display()
    );
    let started = std::time::Instant::now();
    let reports = chaos::run(&cfg, &which).await?;
    let json = chaos::to_json(&reports);
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    let passed = reports.iter().filter(|r| r.passed()).count();
    println!(
        "ork-chaos: {passed} passed, {} failed in {:.0} s (report: {})",
        reports.len() - passed,
        started.elapsed().as_secs_f64(),
        out.join("report.json").display()
    );
    Ok(passed == reports.len())
}
