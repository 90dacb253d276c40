//! Dispatch of what the command line asked for (`commands.rs` says what it can ask).

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use crate::args::DEFAULT_KATALOG;
use crate::commands::{Cli, Command, Generate};

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(path) = cli.command.katalog()
        && path == Path::new(DEFAULT_KATALOG)
        && !path.exists()
    {
        eprintln!(
            "ork: no Katalog: there is no {DEFAULT_KATALOG} here\n    hint: run ork in the Katalog's folder or give the file with -k FILE"
        );
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Validate {
            katalog,
            cluster,
            kubeconfig,
            context,
        } => crate::validate::run(
            &katalog,
            cluster.then_some(crate::validate::ClusterArgs {
                kubeconfig,
                context,
            }),
        ),
        Command::Init(args) => crate::init::run(args),
        Command::Run(args) => crate::run::run(args),
        // Orkestra's `kind: Simulate` files, named or found next to the Katalog.
        Command::Simulate(args) if !args.files.is_empty() || args.crs.is_empty() => {
            crate::simulate_file::run(&args)
        }
        Command::Simulate(args) => crate::simulate::run(args),
        Command::Check(args) => crate::simulate::check(args),
        Command::Conform(args) => crate::conform::run(args),
        Command::Diff(args) => crate::diff::run(args),
        Command::E2e(args) => crate::e2e::run(args),
        Command::Test(args) => crate::testcase::run(args),
        Command::Schema { what } => {
            let schema = match what.as_str() {
                "katalog" => schemars::schema_for!(ork_katalog::Katalog),
                "request" => schemars::schema_for!(ork_protocol::Request),
                _ => schemars::schema_for!(ork_protocol::Response),
            };
            match serde_json::to_string_pretty(&schema) {
                Ok(text) => {
                    crate::output::say!("{text}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("ork schema: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Generate(Generate::Rbac {
            katalog,
            controllers,
            metacontroller,
            target,
        }) => crate::generate::rbac(&katalog, &target.names(), &controllers, metacontroller),
        Command::Reference { dir, check } => crate::reference::run(&dir, check),
        Command::Rollout {
            action,
            entry,
            server,
            token,
            json,
            kubeconfig,
            context,
        } => crate::rollout::run(crate::rollout::RolloutArgs {
            action,
            entry,
            server,
            token,
            json,
            kubeconfig,
            context,
        }),
        Command::Retry {
            target,
            namespace,
            all,
            selector,
            rate,
            kubeconfig,
            context,
        } => crate::retry::retry(crate::retry::RetryArgs {
            target,
            namespace,
            all,
            selector,
            rate,
            kubeconfig,
            context,
        }),
        Command::Explain {
            target,
            namespace,
            server,
            token,
            save,
            json,
            full,
            kubeconfig,
            context,
        } => crate::explain::explain(crate::explain::ExplainArgs {
            target,
            namespace,
            kubeconfig,
            context,
            server,
            token,
            save,
            json,
            full,
        }),
        Command::Generate(Generate::Bundle(i)) => {
            crate::generate::bundle(&i.katalog, &i.target.names(), &i.image, i.scale())
        }
        Command::Generate(Generate::Kubeconfig(args)) => crate::kubeconfig::run(args),
        Command::Generate(Generate::Values(i)) => {
            crate::generate::values(&i.katalog, &i.target.names(), &i.image, i.scale())
        }
    }
}
