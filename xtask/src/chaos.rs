//! `cargo xtask chaos [--crs N] [--scenarios r1,…,r6] [--kills K]`: the reliability suite.
//!
//! Builds ork and `ork-chaos` in release, starts a local cluster of its own
//! (`cluster::start_in`: etcd, kube-apiserver, kube-controller-manager in
//! `<target>/ork-chaos-cluster/`, apart from the shared one of `cargo xtask test`, because R2
//! stops and starts its API server), runs the scenarios and stops exactly the processes it
//! started. Logs, CPU/RSS samples and `report.json` go to `<target>/ork-chaos/`.

use std::fs;
use std::process::Command;
use std::time::Instant;

use crate::cluster;
use crate::tools::{IPTABLES, Result, cargo, ensure_debian, run, target_dir, workspace_root};

pub fn chaos(args: &[&str]) -> Result<()> {
    let mut crs = "2000".to_string();
    let mut pass = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--crs" => crs = it.next().ok_or("--crs needs a number")?.to_string(),
            "--scenarios" | "--kills" => {
                pass.push(a.to_string());
                pass.push(
                    it.next()
                        .ok_or_else(|| format!("{a} needs a value"))?
                        .to_string(),
                );
            }
            other => return Err(format!("chaos: unknown argument {other:?}").into()),
        }
    }
    crs.parse::<usize>()
        .map_err(|_| format!("--crs {crs:?} is not a number"))?;
    ensure_debian(IPTABLES, "iptables", "R5's faults on the test host's link")?;
    run(Command::new(cargo()).current_dir(workspace_root()).args([
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
        "ork-chaos",
    ]))?;
    let dir = target_dir().join("ork-chaos-cluster");
    let out = target_dir().join("ork-chaos");
    let _ = fs::remove_dir_all(&out);
    cluster::stop(&dir);
    let started = Instant::now();
    let result = cluster::start_in(&dir, "ork-chaos", cluster::NEWEST).and_then(|()| {
        eprintln!(
            "chaos: a cluster of its own in {:.1}s ({})",
            started.elapsed().as_secs_f64(),
            dir.display()
        );
        let bin = target_dir().join("release");
        run(Command::new(bin.join("ork-chaos"))
            .env("KUBECONFIG", dir.join("kubeconfig"))
            .arg(bin.join("ork"))
            .args(["--crs", &crs])
            .arg("--apiserver-pids")
            .arg(dir.join("pids"))
            .arg("--out")
            .arg(&out)
            .args(&pass))
    });
    let stopped = cluster::stop(&dir);
    eprintln!("chaos: cluster stopped ({stopped} processes)");
    result
}
