//! `ork-bench ORK_BINARY [N] [--json] [--systems baseline,baseline-spec,kopf,ork] [--rounds K]
//! [--no-idle] [--no-p5] [--diff]`: the same job done by four systems on the local cluster, measured in
//! one run. With `--rounds K` the systems take turns K times and the table shows each figure's
//! median, with the ratios of every round: on a machine whose speed drifts, one round's ratio
//! can be off by a fifth either way.
//!
//! The job: N `Widget` CRs; one Python stdlib service on 127.0.0.1 (the same for every system)
//! answers each with two ConfigMaps and a status. The systems:
//! - baseline: a plain client with only the necessary writes per CR (create, call, two applies,
//!   one status write), as many concurrent tasks as ork has workers (`phase.rs`, `baseline.rs`);
//! - baseline-spec: the same client also making the requests the contract asks of any remote
//!   reconciler (a read of each new child, the annotation write, the success event);
//! - kopf (PyPI, installed into `target/bench-venv`), an async operator doing the same
//!   (`kopf_operator.py` says how it is tuned);
//! - `ork run` (release build) with a generated Katalog, 16 workers.
//!
//! Measured from outside the systems: time until every Widget carries the service's status,
//! CPU seconds from `/proc/<pid>/stat` (the system, the service, kube-apiserver, etcd), peak RSS
//! (`VmHWM`), API requests by verb and resource from the API server's `apiserver_request_total`,
//! service calls from the service's own counter; then the idle cost per resync and edit → child
//! updated latencies (P5: during a full resync). Run it through `cargo xtask bench`. Loopback
//! only; nothing here is a pass/fail test.

#[path = "../bench/admission.rs"]
mod admission;
#[path = "../bench/baseline.rs"]
mod baseline;
#[path = "../bench/diff.rs"]
mod diff;
#[path = "../bench/http1.rs"]
mod http1;
#[path = "../bench/phase.rs"]
mod phase;
#[path = "../bench/probe.rs"]
mod probe;
#[path = "../bench/report.rs"]
mod report;
#[path = "../bench/systems.rs"]
mod systems;
#[path = "../bench/watch.rs"]
mod watch;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use ork_test_support::{apply_yaml, client, kubeconfig_path, wait_crd_established};

use crate::phase::{Bench, System};
use crate::report::Report;

const WORKERS: usize = 16;

#[derive(Debug)]
struct Args {
    ork: PathBuf,
    n: usize,
    json: bool,
    systems: Vec<System>,
    idle: bool,
    p5: bool,
    rounds: usize,
    /// `--diff`: `ork diff` over the converged CRs, beside a full pass of ork.
    diff: bool,
}

fn parse_args(args: &[String]) -> Result<Args> {
    let usage = "usage: ork-bench ORK_BINARY [N] [--json] [--systems baseline,baseline-spec,kopf,ork] [--rounds K] [--no-idle] [--no-p5] [--diff]";
    let mut it = args.iter();
    let ork = PathBuf::from(it.next().context(usage)?);
    let mut a = Args {
        ork,
        n: 500,
        json: false,
        systems: vec![
            System::Baseline,
            System::BaselineSpec,
            System::Kopf,
            System::Ork,
        ],
        idle: true,
        p5: true,
        rounds: 1,
        diff: false,
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = true,
            "--no-idle" => a.idle = false,
            "--no-p5" => a.p5 = false,
            "--diff" => a.diff = true,
            "--rounds" => {
                let k = it.next().context(usage)?;
                a.rounds =
                    k.parse().ok().filter(|k| *k >= 1).with_context(|| {
                        format!("--rounds {k:?}: a count of at least 1; {usage}")
                    })?;
            }
            "--systems" => {
                let list = it.next().context(usage)?;
                a.systems = list
                    .split(',')
                    .map(|s| match s {
                        "baseline" => Ok(System::Baseline),
                        "baseline-spec" => Ok(System::BaselineSpec),
                        "kopf" => Ok(System::Kopf),
                        "ork" => Ok(System::Ork),
                        other => bail!("unknown system {other:?}; {usage}"),
                    })
                    .collect::<Result<_>>()?;
            }
            n => {
                a.n = n
                    .parse()
                    .with_context(|| format!("{n:?} is not N; {usage}"))?
            }
        }
    }
    if a.n == 0 {
        bail!("N must be at least 1");
    }
    Ok(a)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("baseline-client") {
        return baseline_client(&args[1..]).await;
    }
    if args.get(1).map(String::as_str) == Some("admission") {
        return admission_bench(&args).await;
    }
    let args = parse_args(&args)?;
    // target/release/ork → target/bench (generated files, logs) and target/bench-venv (kopf).
    let target = args
        .ork
        .parent()
        .and_then(|p| p.parent())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    let work = target.join("bench");
    std::fs::create_dir_all(&work)?;
    let kubeconfig = kubeconfig_path();
    let client = client().await?;
    std::fs::write(work.join("crd.yaml"), systems::CRD)?;
    apply_yaml(&client, systems::CRD, "default").await?;
    wait_crd_established(&client, "widgets.bench.ork.dev").await?;

    let venv = target.join("bench-venv");
    let kopf = if args.systems.contains(&System::Kopf) {
        Some(systems::ensure_kopf(&venv)?)
    } else {
        None
    };
    let mut cluster_pids = probe::cluster_pids(&kubeconfig);
    cluster_pids.retain(|name, _| {
        name == "kube-apiserver" || name == "etcd" || name == "kube-controller-manager"
    });
    let mut report = Report {
        n: args.n,
        workers: WORKERS,
        kopf_version: if kopf.is_some() {
            systems::kopf_version(&venv)
        } else {
            "-".into()
        },
        ..Report::default()
    };
    if cluster_pids.is_empty() {
        report.notes.push(format!(
            "no cluster pids next to {}: API server and etcd CPU not measured",
            kubeconfig.display()
        ));
    }
    let mut bench = Bench {
        client,
        kubeconfig,
        work: work.clone(),
        ork: args.ork.clone(),
        kopf,
        service: systems::Service::start(&work)?,
        cluster_pids,
        n: args.n,
        workers: WORKERS,
        namespaces: Vec::new(),
    };
    eprintln!(
        "ork-bench: N = {}, files and logs in {}",
        args.n,
        work.display()
    );
    bench.wait_earlier_runs_gone().await?;
    for round in 1..=args.rounds {
        let mut phases = Vec::new();
        for system in &args.systems {
            match args.rounds {
                1 => eprintln!("ork-bench: {} …", system.name()),
                k => eprintln!("ork-bench: round {round} of {k}: {} …", system.name()),
            }
            match system {
                System::Baseline | System::BaselineSpec => {
                    let r = bench.baseline(*system).await?;
                    // Each figure as soon as it is measured: a long run that fails later
                    // still leaves them in its log.
                    eprintln!("ork-bench: measured {r:?}");
                    phases.push(r);
                }
                System::Kopf | System::Ork => {
                    let (r, ns, proc) = bench.operator(*system).await?;
                    eprintln!("ork-bench: measured {r:?}");
                    let converge_s = r.converge_s;
                    phases.push(r);
                    // SIGTERM, as a kubelet stops a pod: ork writes what waits on its lane.
                    let (stop, exited) = proc.stop(phase::STOP_LIMIT).await;
                    eprintln!(
                        "ork-bench: {} stopped in {:.1} s{}",
                        system.name(),
                        stop.as_secs_f64(),
                        if exited { "" } else { " (SIGKILLed)" }
                    );
                    if *system == System::Ork && round == args.rounds {
                        // Unchanged, with a period whose due resyncs are under 1 % of the CRs a
                        // minute; then 1 % edited, with the phase's period (the spread of its
                        // resyncs is measured then).
                        for (edited, resync_s) in [(0, 7_200), ((args.n / 100).max(1), 600)] {
                            eprintln!(
                                "ork-bench: ork restarted (resync {resync_s}s), {edited} CRs edited while down …"
                            );
                            let r = bench.restart_cost(&ns, edited, resync_s).await?;
                            eprintln!("ork-bench: measured {r:?}");
                            report.restarts.push(r);
                        }
                    }
                    if *system == System::Ork && args.diff && round == args.rounds {
                        eprintln!("ork-bench: ork diff beside a full pass …");
                        let d = bench.diff_cost(&ns).await?;
                        eprintln!("ork-bench: measured {d:?}");
                        report.diff = Some(d);
                    }
                    if *system == System::Ork && args.p5 && round == args.rounds {
                        eprintln!("ork-bench: ork P5 (edits during an onStart: call pass) …");
                        report.resync = Some(bench.resync_latency(&ns, converge_s).await?);
                    }
                }
            }
            bench.clear().await?;
        }
        report.rounds.push(phases);
    }
    report.phases = report::medians(&report.rounds);
    if args.idle {
        for system in args.systems.iter().filter(|s| s.is_operator()) {
            eprintln!("ork-bench: {} idle cost …", system.name());
            report.idle.push(bench.idle_cost(*system).await?);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.json())?);
    } else {
        print!("{}", report.text());
    }
    eprintln!("ork-bench: deleting the bench namespaces");
    Ok(())
}

/// `ork-bench ORK admission [WRITES] [--concurrency C]` (see `bench/admission.rs`).
async fn admission_bench(args: &[String]) -> Result<()> {
    let usage = "usage: ork-bench ORK_BINARY admission [WRITES] [--concurrency C]";
    let ork = PathBuf::from(args.first().context(usage)?);
    let (mut writes, mut concurrency) = (1000, 50);
    let mut it = args[2..].iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--concurrency" => {
                concurrency = it
                    .next()
                    .and_then(|c| c.parse().ok())
                    .filter(|c| *c >= 1)
                    .context(usage)?;
            }
            n => writes = n.parse().ok().filter(|n| *n >= 1).context(usage)?,
        }
    }
    let target = ork
        .parent()
        .and_then(|p| p.parent())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    let work = target.join("bench");
    std::fs::create_dir_all(&work)?;
    let client = client().await?;
    apply_yaml(&client, systems::CRD, "default").await?;
    wait_crd_established(&client, "widgets.bench.ork.dev").await?;
    eprintln!("ork-bench admission: {writes} writes per path, {concurrency} at once …");
    let r = admission::run(&ork, &work, client, &kubeconfig_path(), writes, concurrency).await?;
    print!("{}", admission::text(&r));
    Ok(())
}

/// `ork-bench baseline-client NS N SERVICE_ADDR WORKERS [--spec]`: the baseline as its own
/// process; prints what it measured on itself as one JSON line.
async fn baseline_client(args: &[String]) -> Result<()> {
    let usage = "usage: ork-bench baseline-client NS N SERVICE_ADDR WORKERS [--spec]";
    let (spec, args) = match args {
        [rest @ .., last] if last == "--spec" => (true, rest),
        all => (false, all),
    };
    let [ns, n, addr, workers] = args else {
        bail!(usage);
    };
    let client = client().await?;
    let (n, addr, workers) = (n.parse()?, addr.parse()?, workers.parse()?);
    let out = baseline::run(client, ns, n, addr, workers, spec).await?;
    println!("{out}");
    Ok(())
}
