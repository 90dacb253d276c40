//! `cargo xtask demo`: the example, end to end, on the local cluster: the example reconcile
//! service (Python, standard library, over HTTP), `ork run`, a CR, and what came of it; then
//! the same with the bash script through the exec transport. Everything the demo starts it
//! stops again; the cluster stays up only if it was already running.

use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::cluster;
use crate::tools::{Result, cargo, run, target_dir, workspace_root};

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
    let cluster = cluster::Cluster::newest();
    let started_cluster = cluster.up()?;
    let result = demo(&cluster);
    if started_cluster {
        cluster.down()?;
    }
    result
}

fn demo(cluster: &cluster::Cluster) -> Result<()> {
    let root = workspace_root();
    let example = root.join("examples/webapp");
    let kubeconfig = cluster.kubeconfig();
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--quiet",
        "-p",
        "ork",
        "-p",
        "ork-test-support",
    ]))?;
    let target = target_dir();
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
    let service = Running(
        "the reconcile service",
        Command::new("python3")
            .arg(example.join("reconciler.py"))
            .env("PORT", "8025")
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start python3: {e}"))?,
    );
    eprintln!("== starting ork run -k examples/webapp/katalog.yaml");
    let ork_http = Running(
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

    show_when_reconciled(
        &ork_dev,
        &kubeconfig,
        "default",
        "demo.ork.dev/v1",
        "Planned",
    )?;
    drop(ork_http);
    drop(service);

    eprintln!(
        "\n== the same in bash: ork run -k examples/webapp/katalog-exec.yaml (exec transport, ./reconcile.sh)"
    );
    let namespace = root.join("target/ork-demo-namespace.yaml");
    std::fs::write(
        &namespace,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: bash-demo}\n",
    )?;
    run(Command::new(&ork_dev)
        .env("KUBECONFIG", &kubeconfig)
        .args(["apply", "default"])
        .arg(&namespace))?;
    let _ork = Running(
        "ork (exec transport)",
        Command::new(&ork)
            .args(["run", "-k"])
            .arg(example.join("katalog-exec.yaml"))
            .env("KUBECONFIG", &kubeconfig)
            .stdin(Stdio::null())
            .spawn()?,
    );
    sleep(Duration::from_secs(2));
    run(Command::new(&ork_dev)
        .env("KUBECONFIG", &kubeconfig)
        .args(["apply", "bash-demo"])
        .arg(example.join("cr.yaml")))?;
    show_when_reconciled(
        &ork_dev,
        &kubeconfig,
        "bash-demo",
        "demo.ork.dev/v1",
        "Planned",
    )?;
    drop(_ork);
    orkestra_style(&ork, &ork_dev, &kubeconfig)?;
    Ok(())
}

/// `examples/orkestra-remote` as a team moving from Orkestra would run it: ork installs the
/// CRD, applies the setup (namespace, token Secret) and the sample CR, and the service checks
/// the Bearer token.
fn orkestra_style(
    ork: &std::path::Path,
    ork_dev: &std::path::Path,
    kubeconfig: &std::path::Path,
) -> Result<()> {
    let example = workspace_root().join("examples/orkestra-remote");
    eprintln!(
        "\n== an Orkestra-style Katalog (examples/orkestra-remote): crdFile, setup, crFiles, auth from a Secret"
    );
    run(Command::new(ork).arg("validate").current_dir(&example))?;
    let _service = Running(
        "the Orkestra-style reconcile service",
        Command::new("python3")
            .arg("reconciler.py")
            .current_dir(&example)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start python3: {e}"))?,
    );
    let _ork = Running(
        "ork (Orkestra-style Katalog)",
        Command::new(ork)
            .arg("run")
            .current_dir(&example)
            .env("KUBECONFIG", kubeconfig)
            .stdin(Stdio::null())
            .spawn()?,
    );
    show_when_reconciled(
        ork_dev,
        kubeconfig,
        "orkestra-remote",
        "migrate.ork.dev/v1alpha1",
        "ReconcileSucceeded",
    )
}

/// Waits (60 s at most) for the WebApp (`group_version`) in `namespace` to be reconciled and
/// `marker` to show, then prints what ork made.
fn show_when_reconciled(
    ork_dev: &std::path::Path,
    kubeconfig: &std::path::Path,
    namespace: &str,
    group_version: &str,
    marker: &str,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new(ork_dev)
            .env("KUBECONFIG", kubeconfig)
            .args(["show", namespace, group_version])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // Annotations and events follow the status; wait until all are there.
        if text.contains("ReconcileSucceeded") && text.contains(marker) {
            eprintln!("\n== what ork made of it (namespace {namespace})");
            println!("{text}");
            return Ok(());
        }
        if Instant::now() > deadline {
            println!("{text}");
            return Err(format!("the WebApp in {namespace} was not reconciled within 60 s").into());
        }
        sleep(Duration::from_millis(500));
    }
}
