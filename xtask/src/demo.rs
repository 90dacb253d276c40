//! `cargo xtask demo`: the example, end to end, on the local cluster.

use std::process::Command;

use crate::{Result, cargo, cluster, run, workspace_root};

pub fn run_demo() -> Result<()> {
    cluster::up()?;
    let root = workspace_root();
    let example = root.join("examples/webapp");
    eprintln!("\n== ork validate -k examples/webapp/katalog.yaml");
    run(Command::new(cargo())
        .current_dir(&root)
        .args(["run", "--quiet", "-p", "ork", "--", "validate", "-k"])
        .arg(example.join("katalog.yaml")))?;
    eprintln!("\n== applying the example CRD and CR");
    run(Command::new(cargo())
        .current_dir(&root)
        .env("KUBECONFIG", cluster::kubeconfig())
        .args([
            "run",
            "--quiet",
            "-p",
            "ork-test-support",
            "--bin",
            "ork-dev",
            "--",
            "apply",
            "default",
        ])
        .arg(example.join("crd.yaml"))
        .arg(example.join("cr.yaml")))?;
    Ok(())
}
