//! Command-line parsing and dispatch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "ork",
    version,
    about = "Kubernetes operators whose reconcile logic is an HTTP endpoint"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a Katalog and print one line per entry; every problem with file, line and field.
    Validate {
        /// The Katalog file.
        #[arg(short = 'k', long = "katalog")]
        katalog: PathBuf,
    },
    /// Run the remote reconcilers of a Katalog against the cluster.
    Run {
        /// The Katalog file.
        #[arg(short = 'k', long = "katalog")]
        katalog: PathBuf,
        /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Kubeconfig context to use.
        #[arg(long)]
        context: Option<String>,
        /// Log as JSON lines instead of text.
        #[arg(long)]
        log_json: bool,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate { katalog } => crate::validate::run(&katalog),
        Command::Run {
            katalog,
            kubeconfig,
            context,
            log_json,
        } => crate::run::run(&katalog, kubeconfig, context, log_json),
    }
}
