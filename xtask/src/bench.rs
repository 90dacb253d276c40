//! `cargo xtask bench [N] [--json] [--systems baseline,baseline-spec,kopf,ork] [--rounds K]
//! [--no-idle] [--no-p5] [--diff]`: release build, then `ork-bench` (crates/test-support/src/bin/ork-bench.rs): the
//! baselines, the kopf peer and ork doing the same job on the local cluster, measured in one run;
//! `--diff` adds `ork diff` over the converged CRs beside a full pass of ork.
//! `cargo xtask bench admission [WRITES] [--concurrency C]`: what ork's admission webhook adds to
//! a write, beside the service's own time (crates/test-support/src/bench/admission.rs).
//!
//! With `KUBECONFIG` set, that cluster is used as it is (one cluster per machine: reuse a running
//! one rather than starting another); otherwise the local cluster is started if needed and
//! stopped afterwards when this run started it.

use std::path::PathBuf;
use std::process::Command;

use crate::cluster;
use crate::tools::{Result, cargo, run, target_dir, workspace_root};

pub fn bench(args: &[&str]) -> Result<()> {
    let given = std::env::var_os("KUBECONFIG")
        .map(PathBuf::from)
        .filter(|p| p.exists());
    let cluster = cluster::Cluster::newest();
    let (kubeconfig, started) = match given {
        Some(path) => {
            eprintln!("bench: using the cluster of KUBECONFIG={}", path.display());
            (path, false)
        }
        None => (cluster.kubeconfig(), cluster.up()?),
    };
    let result = run(Command::new(cargo()).current_dir(workspace_root()).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "ork",
        "-p",
        "ork-test-support",
        "--bin",
        "ork",
        "--bin",
        "ork-bench",
    ]))
    .and_then(|()| {
        let target = target_dir();
        run(Command::new(target.join("release/ork-bench"))
            .current_dir(workspace_root())
            .env("KUBECONFIG", &kubeconfig)
            .arg(target.join("release/ork"))
            .args(args))
    });
    if started {
        cluster.down()?;
    }
    result
}
