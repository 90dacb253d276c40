//! `cargo xtask`: the one entry point for developer and CI tasks.
//!
//! - `cluster up|down|status [--version X.Y.Z|newest|oldest]` — the local Kubernetes API server
//!   (see `cluster.rs`).
//! - `demo` — a real cluster, a real reconcile service, a CR reconciled.
//! - `docs [--check]` — the book (see `docs.rs`).
//! - `test [--version V] [--e2e]` — every test (or only those against the cluster), including
//!   those against the local cluster.
//!
//! Standard library only, so it builds in seconds before anything else.

mod bench;
mod chaos;
mod cluster;
mod demo;
mod docs;
mod fuzz;
mod helm;
mod tools;

use std::process::{Command, ExitCode};

use tools::{Result, cargo, run, workspace_root};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["cluster", action @ ("up" | "down" | "status"), rest @ ..] => {
            cluster_command(action, rest)
        }
        ["demo"] => demo::run_demo(),
        ["docs", rest @ ..] => docs::docs(rest),
        ["test", rest @ ..] => test(rest),
        ["bench", rest @ ..] => bench::bench(rest),
        ["chaos", rest @ ..] => chaos::chaos(rest),
        ["fuzz", rest @ ..] => fuzz::fuzz(rest),
        ["helm", rest @ ..] => helm::ensure().and_then(|()| {
            run(Command::new(helm::binary())
                .current_dir(workspace_root())
                .args(rest.iter().skip_while(|a| **a == "--")))
        }),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n  cluster up|down|status [--version X.Y.Z|newest|oldest]  the local Kubernetes (default {newest}; oldest {oldest}) on loopback\n  demo                     run the example end to end\n  docs [--check]           the book: reference pages from the code (--check: fail when stale), then mdBook into target/book\n  test [--version V] [--e2e] [-- cargo test args]  all tests (--e2e: only those against the cluster) on the local cluster of version V (default newest)\n  bench [N] [--json] [--rounds K]  baseline, kopf and ork on the same job (release build, N Widgets, default 500; K turns each, medians)\n  chaos [--crs N] [--scenarios r1,r2,r3,r4,r7,r8] [--previous REV]  reliability suite: service faults, API server restart, ork SIGKILLs, leader kill, rolling upgrade from REV, shard rebalancing (own cluster, release build, default N 2000; --help for more)\n  fuzz [--cases N] [--seed S] [--target T] [--case I]  the property/fuzz suite (release build; --help for more)\n  helm [ARGS]              the Helm the chart is tested with (built once per machine)",
                newest = cluster::NEWEST,
                oldest = cluster::OLDEST,
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

fn cluster_command(action: &str, args: &[&str]) -> Result<()> {
    if args.iter().any(|a| matches!(*a, "--help" | "-h")) {
        println!(
            "usage: cargo xtask cluster {action} [--version X.Y.Z|newest|oldest]\n\n  up      build (once per machine, cached under ~/.cache/ork or $ORK_CACHE) and start etcd and kube-apiserver on loopback; prints the kubeconfig\n  down    stop the cluster of that version\n  status  what runs, and the kubeconfig\n\n  --version  the Kubernetes version (default {newest}; oldest {oldest})",
            newest = cluster::NEWEST,
            oldest = cluster::OLDEST,
        );
        return Ok(());
    }
    let (version, rest) = take_version(args)?;
    if let Some(other) = rest.first() {
        return Err(format!("cluster {action}: unknown argument {other:?}").into());
    }
    let cluster = cluster::Cluster::new(&version);
    match action {
        "up" => cluster.up().map(|_| ()),
        "down" => cluster.down(),
        _ => cluster.status(),
    }
}

/// `--version V` from `args` (default the newest), and the other arguments.
fn take_version<'a>(args: &[&'a str]) -> Result<(String, Vec<&'a str>)> {
    let mut version = cluster::NEWEST.to_string();
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("--version=") {
            version = cluster::version_arg(v)?;
        } else if *a == "--version" {
            version = cluster::version_arg(it.next().ok_or("--version needs a value")?)?;
        } else {
            rest.push(*a);
        }
    }
    Ok((version, rest))
}

/// The test targets that run against the cluster (`test --e2e`): package, integration test.
const E2E: [(&str, &str); 18] = [
    ("ork", "core"),
    ("ork", "admission"),
    ("ork", "rollout"),
    ("ork", "metacontroller"),
    ("ork", "inspect"),
    ("ork", "run"),
    ("ork", "orkestra"),
    ("ork", "e2e"),
    ("ork", "production"),
    ("ork", "reliability"),
    ("ork", "shards"),
    ("ork", "simulate"),
    ("ork", "helm"),
    ("ork", "tenancy"),
    ("ork", "validate_cluster"),
    ("ork", "identity"),
    ("ork", "init"),
    ("ork-test-support", "cluster"),
];

/// Brings the cluster of the chosen version up (stopping it afterwards if this run started it)
/// and runs every test, or with `--e2e` only those against the cluster.
fn test(args: &[&str]) -> Result<()> {
    let (version, rest) = take_version(args)?;
    let (ours, extra) = match rest.iter().position(|a| *a == "--") {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (&rest[..], &[][..]),
    };
    let mut e2e = false;
    for a in ours {
        match *a {
            "--e2e" => e2e = true,
            other => return Err(format!("test: unknown argument {other:?}").into()),
        }
    }
    ensure_python_jsonschema()?;
    tools::ensure_debian(CHROMIUM, "chromium", "the status page's browser test")?;
    tools::ensure_debian(
        tools::IPTABLES,
        "iptables",
        "the reliability tests' faults on a test host's link",
    )?;
    tools::ensure_debian(
        "/usr/bin/kubectl",
        "kubectl",
        "the tests that read ork's conditions as `kubectl wait` does",
    )?;
    helm::ensure()?;
    let cluster = cluster::Cluster::new(&version);
    let started = cluster.up()?;
    let mut cmd = Command::new(cargo());
    cmd.current_dir(workspace_root())
        .env("KUBECONFIG", cluster.kubeconfig())
        .env("ORK_HELM", helm::binary())
        .env("ORK_CHROMIUM", CHROMIUM)
        .env("ORK_EXPECT_KUBERNETES", &version)
        .arg("test");
    if e2e {
        for (package, test) in E2E {
            cmd.args(["-p", package, "--test", test]);
        }
    } else {
        cmd.arg("--workspace");
    }
    let status = cmd.args(["--", "--test-threads=4"]).args(extra).status();
    if started {
        cluster.down()?;
    }
    let status = status?;
    if !status.success() {
        return Err(format!("cargo test on Kubernetes {version} failed ({status})").into());
    }
    Ok(())
}

/// The browser the status page is tested in: Debian's Chromium, headless.
const CHROMIUM: &str = "/usr/bin/chromium";

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
