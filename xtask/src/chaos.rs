//! `cargo xtask chaos [--crs N] [--scenarios r1,…,r8] [--kills K] [--previous REV]`: the
//! reliability suite.
//!
//! Builds ork and `ork-chaos` in release, starts a local cluster of its own
//! (`cluster::start_in`: etcd, kube-apiserver, kube-controller-manager in
//! `<target>/ork-chaos-cluster/`, apart from the shared one of `cargo xtask test`, because R2
//! stops and starts its API server), runs the scenarios and stops exactly the processes it
//! started. Logs, CPU/RSS samples and `report.json` go to `<target>/ork-chaos/`.
//!
//! R7 (rolling upgrade) starts from the `ork` of an earlier commit, `--previous REV` (default
//! [`PREVIOUS`]): its tracked files are exported with `git archive` into
//! `<target>/ork-previous/src/` and built there with a target folder of its own; the binary is
//! kept as `<target>/ork-previous/<full sha>/ork`, and a later run with the same commit builds
//! nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cluster;
use crate::tools::{IPTABLES, Result, cargo, ensure_debian, run, target_dir, workspace_root};

/// The release R7 upgrades from by default: the last commit landed on main when R7 was written
/// (`Read-through mends: ork e2e runs its set-up and its expectations as two functions…`).
/// Move it forward with each release worth upgrading from.
pub(crate) const PREVIOUS: &str = "c9f5a25";

/// What `--scenarios` takes; without it, every one.
const SCENARIOS: &str = "r1 service faults, r2 API server restart, r3 ork SIGKILLs, r4 leader SIGKILL, r5 network faults, r6 API server throttling, r7 rolling upgrade from --previous, r8 shard rebalancing";

pub fn chaos(args: &[&str]) -> Result<()> {
    let mut crs = "2000".to_string();
    let mut previous = PREVIOUS.to_string();
    let mut scenarios: Option<String> = None;
    let mut pass = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .map(|v| v.to_string())
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match *a {
            "--crs" => crs = value()?,
            "--previous" => previous = value()?,
            "--scenarios" => {
                let v = value()?;
                pass.extend(["--scenarios".to_string(), v.clone()]);
                scenarios = Some(v);
            }
            "--kills" => pass.extend(["--kills".to_string(), value()?]),
            "-h" | "--help" => {
                eprintln!(
                    "usage: cargo xtask chaos [--crs N] [--scenarios r1,…,r8] [--kills K] [--previous REV]\n  scenarios: {SCENARIOS} (default: all)\n  --previous: the commit R7 upgrades from (default {PREVIOUS})"
                );
                return Ok(());
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
    let wants_r7 = scenarios
        .as_deref()
        .is_none_or(|s| s.split(',').any(|w| w.trim() == "r7"));
    if wants_r7 {
        let previous_ork = build_previous(&previous)?;
        pass.push("--previous-ork".into());
        pass.push(previous_ork.display().to_string());
    }
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

/// The release `ork` of commit `rev`, built once per commit under `<target>/ork-previous/`.
fn build_previous(rev: &str) -> Result<PathBuf> {
    let sha = git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")])
        .map_err(|e| format!("--previous {rev:?} is not a commit here: {e}"))?;
    let home = target_dir().join("ork-previous");
    let bin = home.join(&sha).join("ork");
    if bin.is_file() {
        eprintln!(
            "chaos: previous release {sha} already built ({})",
            bin.display()
        );
        return Ok(bin);
    }
    let started = Instant::now();
    let src = home.join("src");
    let _ = fs::remove_dir_all(&src);
    fs::create_dir_all(&src)?;
    export(&sha, &src)?;
    // A target folder of its own: the previous release's dependencies and profile are its own,
    // and its build never evicts the current one's.
    run(Command::new(cargo())
        .current_dir(&src)
        .env("CARGO_TARGET_DIR", home.join("target"))
        .args([
            "build",
            "--release",
            "--quiet",
            "--locked",
            "-p",
            "ork",
            "--bin",
            "ork",
        ]))?;
    fs::create_dir_all(home.join(&sha))?;
    fs::copy(home.join("target").join("release").join("ork"), &bin)?;
    eprintln!(
        "chaos: previous release {sha} built in {:.0}s ({})",
        started.elapsed().as_secs_f64(),
        bin.display()
    );
    Ok(bin)
}

/// The tracked files of commit `sha` into `dest` (`git archive | tar -x`): nothing of the
/// repository's worktrees or branches changes.
fn export(sha: &str, dest: &Path) -> Result<()> {
    let mut archive = Command::new("git")
        .current_dir(workspace_root())
        .args(["archive", "--format=tar", sha])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("git archive: {e}"))?;
    let tar = archive.stdout.take().ok_or("git archive: no output")?;
    let untar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dest)
        .stdin(tar)
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    let archived = archive.wait()?;
    if !archived.success() || !untar.success() {
        return Err(format!("exporting {sha}: git archive {archived}, tar {untar}").into());
    }
    Ok(())
}

/// `git ARGS` in the workspace; its output, trimmed.
fn git(args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .current_dir(workspace_root())
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr)
            .trim()
            .to_string()
            .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
