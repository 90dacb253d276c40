//! `cargo xtask`: the one entry point for developer and CI tasks.
//!
//! - `cluster up|down|status` — the local Kubernetes API server (see `cluster.rs`).
//! - `demo` — a real cluster, a real reconcile service, a CR reconciled.
//! - `test` — every test, including those against the local cluster.
//!
//! Standard library only, so it builds in seconds before anything else.

mod bench;
mod chaos;
mod cluster;
mod demo;
mod fuzz;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["cluster", "up"] => cluster::up().map(|_| ()),
        ["cluster", "down"] => cluster::down(),
        ["cluster", "status"] => cluster::status(),
        ["demo"] => demo::run_demo(),
        ["test", rest @ ..] => test(rest),
        ["bench", rest @ ..] => bench::bench(rest),
        ["chaos", rest @ ..] => chaos::chaos(rest),
        ["fuzz", rest @ ..] => fuzz::fuzz(rest),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n  cluster up|down|status   the local kube-apiserver 1.20.2 on loopback\n  demo                     run the example end to end\n  test [-- cargo test args] all tests, including those against the local cluster\n  bench [N] [--json] [--rounds K]  baseline, kopf and ork on the same job (release build, N Widgets, default 500; K turns each, medians)\n  chaos [--crs N]          reliability suite: service faults, API server restart, ork SIGKILLs, leader kill (own cluster, release build, default N 2000)\n  fuzz [--cases N] [--seed S] [--target T] [--case I]  the property/fuzz suite (release build; --help for more)"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Brings the cluster up (stopping it afterwards if this run started it) and runs every test.
fn test(extra: &[&str]) -> Result<()> {
    ensure_python_jsonschema()?;
    let started = cluster::up()?;
    let extra: Vec<&str> = extra.iter().copied().skip_while(|a| *a == "--").collect();
    let status = Command::new(cargo())
        .current_dir(workspace_root())
        .env("KUBECONFIG", cluster::kubeconfig())
        .args(["test", "--workspace", "--", "--test-threads=4"])
        .args(&extra)
        .status();
    if started {
        cluster::down()?;
    }
    let status = status?;
    if !status.success() {
        return Err(format!("cargo test failed ({status})").into());
    }
    Ok(())
}

/// The schema tests check `ork schema` with an independent validator, Python's `jsonschema`.
fn ensure_python_jsonschema() -> Result<()> {
    let present = Command::new("python3")
        .args(["-c", "import jsonschema"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        eprintln!("test: installing Python's jsonschema for the schema tests");
        run(Command::new("python3").args(["-m", "pip", "install", "--quiet", "jsonschema"]))?;
    }
    Ok(())
}

pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Where cargo puts binaries: `$CARGO_TARGET_DIR`, else `target/` in the workspace.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

pub(crate) fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Runs a command to completion; non-zero exit is an error naming the command.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().map_err(|e| format!("{cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed: {status}", cmd.get_program()).into())
    }
}
