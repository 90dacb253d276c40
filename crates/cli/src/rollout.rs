//! `ork rollout status|promote|abort|resume --entry E --server URL`: where an entry's
//! progressive rollout stands (SPEC §19), or steer it, through the running ork's inspector
//! (`/katalog/{entry}/rollout`). Reading it needs what `/katalog/{entry}` needs; steering it,
//! that the API server allows the caller to patch the entry's CRs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ork_kube::RolloutCommand;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Action {
    Status,
    Promote,
    Abort,
    Resume,
}

pub struct RolloutArgs {
    pub action: Action,
    pub entry: String,
    pub server: Option<String>,
    pub token: Option<String>,
    pub json: bool,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

pub fn run(args: RolloutArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork rollout: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(ask(&args)) {
        Ok(shown) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&shown).unwrap_or_default()
                );
            } else {
                print!("{}", render(&args.entry, &shown));
            }
            // A halted rollout is news for a script polling it.
            if shown["phase"] == "Halted" && args.action != Action::Abort {
                ExitCode::from(3)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("ork rollout: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn ask(args: &RolloutArgs) -> Result<Value> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = crate::inspector_client::server(args.server.clone())?;
    let token = match args.token.clone() {
        Some(t) => Some(t),
        None => {
            match crate::run::kube_config(args.kubeconfig.clone(), args.context.clone()).await {
                Ok(config) => crate::inspector_client::token(None, &config)?,
                // No kubeconfig: an ork that asks no token (a local one) still answers.
                Err(_) => std::env::var("ORK_TOKEN").ok(),
            }
        }
    };
    let ork = crate::inspector_client::Ork::new("ork rollout", server, token)?;
    let entry = ork_protocol::text::percent_encode(&args.entry);
    let command = match args.action {
        Action::Status => return ork.get(&format!("/katalog/{entry}/rollout")).await,
        Action::Promote => RolloutCommand::Promote,
        Action::Abort => RolloutCommand::Abort,
        Action::Resume => RolloutCommand::Resume,
    };
    ork.post(&format!("/katalog/{entry}/rollout/{}", command.name()))
        .await
}

/// The rollout as a few lines.
fn render(entry: &str, r: &Value) -> String {
    let mut out = format!(
        "entry {entry}: rollout {} at {} % to {}\n",
        r["phase"].as_str().unwrap_or("?"),
        r["percent"],
        r["endpoint"].as_str().unwrap_or("?"),
    );
    if let Some(steps) = r["steps"].as_array() {
        let shown: Vec<String> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if Some(i as u64) == r["step"].as_u64() && r["phase"] == "Progressing" {
                    format!("[{s}]")
                } else {
                    s.to_string()
                }
            })
            .collect();
        out.push_str(&format!("  steps: {}\n", shown.join(" → ")));
    }
    if let Some(next) = r["nextStepInSeconds"].as_u64() {
        out.push_str(&format!("  next step in {next} s\n"));
    }
    if let Some(why) = r["halted"].as_str() {
        out.push_str(&format!("  halted: {why}\n"));
    }
    let w = &r["window"];
    out.push_str(&format!(
        "  last {} s: candidate {} reconciles, {} failed; stable {} reconciles, {} failed\n",
        w["seconds"],
        w["candidate"]["reconciles"],
        w["candidate"]["failed"],
        w["stable"]["reconciles"],
        w["stable"]["failed"],
    ));
    out
}
