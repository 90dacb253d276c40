//! `ork diff -k FILE [--entry E] [--endpoint URL] [-n NS] [--selector S] [--json]`: what the
//! Katalog (or a candidate endpoint) would change on every live CR, every write a server-side
//! dry run (SPEC §19). Exits 1 when a CR would be refused or lose a child, 2 when the diff
//! cannot run.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ork_kube::client::Protocol;
use ork_kube::diff::{DiffOptions, Report, render};

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The Katalog to diff with: the running one, or a changed one (new args, endpoint,
    /// managed types, gates).
    #[arg(short = 'k', long = "katalog", default_value = crate::args::DEFAULT_KATALOG)]
    pub katalog: PathBuf,
    /// Only this entry (default: every enabled entry).
    #[arg(long)]
    pub entry: Option<String>,
    /// A candidate endpoint, asked in place of the entry's own (e.g. the new version of the
    /// service, deployed beside the current one).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Only CRs in this namespace.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Only CRs with these labels (a label selector, e.g. `tier=web,env!=prod`).
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// The report as JSON (every CR, unchanged ones included).
    #[arg(long)]
    pub json: bool,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context.
    #[arg(long)]
    pub context: Option<String>,
}

pub fn run(args: DiffArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork diff: {e}");
            return ExitCode::from(2);
        }
    };
    let json = args.json;
    match rt.block_on(diff(args)) {
        Ok(report) => {
            if json {
                match serde_json::to_string_pretty(&report) {
                    Ok(text) => crate::output::say!("{text}"),
                    Err(e) => {
                        eprintln!("ork diff: {e}");
                        return ExitCode::from(2);
                    }
                }
            } else {
                crate::output::emit(&render(&report));
            }
            if report.failed() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("ork diff: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn diff(args: DiffArgs) -> Result<Report> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let katalog = ork_katalog::load_file(&args.katalog).map_err(|problems| {
        anyhow::anyhow!(
            "{problems}\n{}: the Katalog has problems",
            args.katalog.display()
        )
    })?;
    let client = crate::run::connect(args.kubeconfig, args.context, Protocol::Negotiated).await?;
    let (ork_namespace, chosen) = crate::run::ork_namespace();
    let options = DiffOptions {
        katalog_dir: args.katalog.parent().map(PathBuf::from).unwrap_or_default(),
        ork_namespace,
        guard_own_namespace: chosen,
        entry: args.entry,
        endpoint: args.endpoint,
        namespace: args.namespace,
        selector: args.selector,
    };
    // A progress line on a terminal, rewritten in place; nothing when stderr is a file.
    let terminal = std::io::stderr().is_terminal();
    let progress = move |done: usize, total: usize| {
        if terminal && (done == total || done.is_multiple_of(10)) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\rork diff: {done}/{total} CRs");
            if done == total {
                let _ = writeln!(err);
            }
        }
    };
    Ok(ork_kube::diff::diff(client, &katalog, &options, &progress).await?)
}
