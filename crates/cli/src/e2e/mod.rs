//! `ork e2e [FILE…] [--junit FILE] [--kubeconfig P] [--context C]`: runs Orkestra's `kind: E2E`
//! specs against the kubeconfig's cluster. [`spec`] parses a file once into typed values,
//! [`run`] carries out its steps through [`cluster`] (the API server, no `kubectl`) and checks
//! outputs with [`assert`]; [`crate::junit`] writes the report for CI.

mod assert;
mod cluster;
mod run;
mod spec;

use std::path::PathBuf;
use std::process::ExitCode;

use ork_kube::client::Protocol;

use crate::output::say;
use run::{Shell, SpecReport};
pub use spec::{Meta, parse as parse_yaml};

#[derive(Debug, clap::Args)]
pub struct E2eArgs {
    /// E2E files (default: ./e2e.yaml, else ./test/e2e.yaml, as Orkestra).
    pub files: Vec<PathBuf>,
    /// Also write the results as JUnit XML to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster); also given to
    /// the spec's commands as KUBECONFIG.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context.
    #[arg(long)]
    pub context: Option<String>,
    /// Start no operator: an `ork run` of the spec's Katalog already runs (by default ork e2e
    /// runs `ork run -k KATALOG` itself for each spec that names a Katalog).
    #[arg(long)]
    pub no_operator: bool,
}

pub fn run(args: E2eArgs) -> ExitCode {
    let files = if args.files.is_empty() {
        match ["e2e.yaml", "test/e2e.yaml"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
        {
            Some(f) => vec![f],
            None => {
                eprintln!("ork e2e: no e2e.yaml here or in test/: give the E2E files");
                return ExitCode::from(2);
            }
        }
    } else {
        args.files.clone()
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork e2e: {e}");
            return ExitCode::FAILURE;
        }
    };
    let reports = rt.block_on(run_files(&args, files));
    crate::junit::finish("ork e2e", &reports, args.junit.as_deref())
}

async fn run_files(args: &E2eArgs, files: Vec<PathBuf>) -> Vec<SpecReport> {
    let mut queue: std::collections::VecDeque<PathBuf> = files.into();
    let mut reports = Vec::new();
    let mut cluster = None;
    let shell = Shell {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        operator: !args.no_operator,
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut waits = std::collections::BTreeMap::new();
    while let Some(path) = queue.pop_front() {
        if !seen.insert(path.clone()) {
            continue;
        }
        if let Some(w) = waits.get(&path) {
            tokio::time::sleep(*w).await;
        }
        let e2e = match spec::load(&path) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("ork e2e: {e}");
                reports.push(SpecReport::failed_file(
                    &path,
                    "read the spec",
                    e.to_string(),
                ));
                continue;
            }
        };
        let dir = crate::args::folder_of(&path);
        for import in &e2e.imports {
            if import.fresh_cluster() {
                say!(
                    "note: {}: freshCluster is not honoured: ork e2e runs every file against the kubeconfig's cluster",
                    import.path()
                );
            }
            if let Some(w) = import
                .wait()
                .and_then(|w| humantime::parse_duration(w).ok())
            {
                waits.insert(dir.join(import.path()), w);
            }
            queue.push_back(dir.join(import.path()));
        }
        if cluster.is_none() {
            match crate::run::connect(
                args.kubeconfig.clone(),
                args.context.clone(),
                Protocol::Negotiated,
            )
            .await
            {
                Ok(client) => cluster = Some(cluster::Cluster::new(client)),
                Err(e) => {
                    eprintln!("ork e2e: connecting to the cluster: {e:#}");
                    reports.push(SpecReport::failed_file(
                        &path,
                        "connect to the cluster",
                        format!("{e:#}"),
                    ));
                    return reports;
                }
            }
        }
        if let Some(c) = &cluster {
            reports.push(run::run_spec(c, &shell, &e2e, &path).await);
        }
    }
    reports
}
