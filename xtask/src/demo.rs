//! `cargo xtask demo`: the example, end to end, on the local cluster: the example reconcile
//! service (Python, standard library), `ork run`, a CR, and what came of it. Everything the demo
//! starts it stops again; the cluster stays up only if it was already running.

use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::{Result, cargo, cluster, run, workspace_root};

/// Kills the child when dropped, so a failing demo leaves nothing running.
struct Running(&'static str, Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.1.kill();
        let _ = self.1.wait();
        eprintln!("demo: stopped {}", self.0);
    }
}

pub fn run_demo() -> Result<()> {
    let started_cluster = cluster::up()?;
    let result = demo();
    if started_cluster {
        cluster::down()?;
    }
    result
}

fn demo() -> Result<()> {
    let root = workspace_root();
    let example = root.join("examples/webapp");
    let kubeconfig = cluster::kubeconfig();
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--quiet",
        "-p",
        "ork",
        "-p",
        "ork-test-support",
    ]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let ork = target.join("debug/ork");
    let ork_dev = target.join("debug/ork-dev");

    eprintln!("\n== ork validate -k examples/webapp/katalog.yaml");
    run(Command::new(&ork)
        .arg("validate")
        .arg("-k")
        .arg(example.join("katalog.yaml")))?;

    eprintln!("\n== the example CRD");
    run(Command::new(&ork_dev)
        .env("KUBECONFIG", &kubeconfig)
        .args(["apply", "default"])
        .arg(example.join("crd.yaml")))?;

    eprintln!(
        "\n== starting the example reconcile service (examples/webapp/reconciler.py) on 127.0.0.1:8025"
    );
    let _service = Running(
        "the reconcile service",
        Command::new("python3")
            .arg(example.join("reconciler.py"))
            .env("PORT", "8025")
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start python3: {e}"))?,
    );
    eprintln!("== starting ork run -k examples/webapp/katalog.yaml");
    let _ork = Running(
        "ork",
        Command::new(&ork)
            .args(["run", "-k"])
            .arg(example.join("katalog.yaml"))
            .env("KUBECONFIG", &kubeconfig)
            .stdin(Stdio::null())
            .spawn()?,
    );
    sleep(Duration::from_secs(2));

    eprintln!("\n== creating the WebApp (examples/webapp/cr.yaml)");
    run(Command::new(&ork_dev)
        .env("KUBECONFIG", &kubeconfig)
        .args(["apply", "default"])
        .arg(example.join("cr.yaml")))?;

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new(&ork_dev)
            .env("KUBECONFIG", &kubeconfig)
            .args(["show", "default"])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("WebAppReconciled") || Instant::now() > deadline {
            eprintln!("\n== what ork made of it");
            println!("{text}");
            if !text.contains("WebAppReconciled") {
                return Err("the WebApp was not reconciled within 30 s".into());
            }
            break;
        }
        sleep(Duration::from_millis(500));
    }
    Ok(())
}
