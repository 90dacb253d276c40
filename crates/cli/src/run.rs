//! `ork run -k FILE`: load the Katalog, connect, run every entry until SIGINT/SIGTERM.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use ork_katalog::load_file;
use ork_kube::RunOptions;

pub fn run(
    path: &Path,
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    log_json: bool,
) -> ExitCode {
    init_logging(log_json);
    let katalog = match load_file(path) {
        Ok(k) => k,
        Err(problems) => {
            eprintln!("{problems}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let katalog_dir = path
        .parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    match runtime.block_on(serve(katalog, katalog_dir, kubeconfig, context)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(
    katalog: ork_katalog::Katalog,
    katalog_dir: PathBuf,
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
) -> Result<()> {
    // Exactly one TLS provider in the process; reqwest and kube both need it installed first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = connect(kubeconfig, context).await?;
    let options = RunOptions {
        ork_namespace: ork_namespace(),
        katalog_dir,
    };
    tracing::info!(entries = katalog.spec.crds.len(), namespace = %options.ork_namespace, "ork starting");
    tokio::select! {
        result = ork_kube::run(client, katalog, options) => result.map_err(Into::into),
        () = shutdown_signal() => {
            tracing::info!("shutting down");
            Ok(())
        }
    }
}

async fn connect(kubeconfig: Option<PathBuf>, context: Option<String>) -> Result<Client> {
    let options = KubeConfigOptions {
        context,
        ..Default::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &options).await?
        }
        None if options.context.is_some() => Config::from_kubeconfig(&options).await?,
        None => Config::infer().await?,
    };
    Ok(Client::try_from(config)?)
}

/// `ORK_NAMESPACE`, else the in-cluster service-account namespace, else `default`.
fn ork_namespace() -> String {
    std::env::var("ORK_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "default".into())
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("info,kube_client=off,kube_runtime=warn")
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}
