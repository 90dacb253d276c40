//! `ork run -k FILE`: load the Katalog, connect, serve the probes and the inspector, (with
//! `--leader-elect`) campaign for the Lease, and run every entry until SIGINT/SIGTERM; then stop
//! taking work, let in-flight reconciles finish and write what waits on the lanes within
//! `--shutdown-grace`, release the Lease.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use ork_kube::client::Protocol;
use ork_kube::leader::{Elector, LeaseConfig};
use ork_kube::permissions;
use ork_kube::shards::{ShardManager, ShardSet};
use ork_kube::{RunOptions, Runtime};

use crate::args::RunArgs;

pub fn run(args: RunArgs) -> ExitCode {
    init_logging(args.log_json, &args.log_level);
    let with_controllers = args.metacontroller || !args.controllers.is_empty();
    let katalog = match crate::controllers::katalog_or_none(&args.katalog, with_controllers) {
        Ok(k) => k,
        Err(problems) => {
            eprintln!("{problems}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match async_runtime(args.threads, args.wake_nap) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(katalog, args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The Metacontroller controllers `ork run` was given: read from `--controllers` files, or
/// watched with `--metacontroller`.
fn controllers(args: &RunArgs) -> Result<Option<ork_kube::metacontroller::Controllers>> {
    use ork_kube::metacontroller::{Controllers, TargetSelector};
    let target = args
        .target_label_selector
        .as_deref()
        .map(TargetSelector::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))?;
    if args.metacontroller {
        return Ok(Some(Controllers::Cluster(target)));
    }
    if args.controllers.is_empty() {
        return Ok(None);
    }
    let objects = crate::controllers::objects(&args.controllers)?
        .into_iter()
        .filter(|o| {
            let labels: std::collections::BTreeMap<String, String> = o
                .pointer("/metadata/labels")
                .cloned()
                .and_then(|l| serde_json::from_value(l).ok())
                .unwrap_or_default();
            target.as_ref().is_none_or(|t| t.selects(&labels))
        })
        .collect();
    Ok(Some(Controllers::Files(objects)))
}

/// One thread, as linkerd's proxy by default: ork waits on the API server and the services far
/// more than it computes, and a single-threaded runtime spares every wake-up a hand-off between
/// threads (a tenth of ork's CPU at load with two threads on two cores). That thread also naps
/// for `nap` before it parks while many reconciles are in flight, so that one wake-up handles
/// several answers ([`ork_kube::wake`]).
fn async_runtime(
    threads: u16,
    nap: std::time::Duration,
) -> std::io::Result<tokio::runtime::Runtime> {
    if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_park(move || ork_kube::wake::nap_if_crowded(nap))
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(threads))
            .enable_all()
            .build()
    }
}

async fn serve(katalog: ork_katalog::Katalog, args: RunArgs) -> Result<()> {
    // Exactly one TLS provider in the process; reqwest and kube both need it installed first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = if args.api_http2 && !args.api_http1 {
        Protocol::Negotiated
    } else {
        Protocol::Http1
    };
    let client = connect(args.kubeconfig.clone(), args.context.clone(), protocol).await?;
    let (ork_namespace, chosen) = ork_namespace();
    let options = RunOptions {
        ork_namespace,
        guard_own_namespace: chosen,
        katalog_dir: crate::args::folder_of(&args.katalog),
        dev_files: !args.no_dev_files,
        controller_workers: args.controller_workers,
    };
    // Which API server, over which HTTP; a cluster that keeps `/version` from ork is no reason
    // not to start (the permission check below says whether ork can do its work).
    match ork_kube::client::Server::ask(&client).await {
        Ok(server) => tracing::info!(
            entries = katalog.spec.crds.len(),
            namespace = %options.ork_namespace,
            api_server = %server.version,
            http = ?server.http,
            "ork starting"
        ),
        Err(e) => tracing::info!(
            entries = katalog.spec.crds.len(),
            namespace = %options.ork_namespace,
            api_server = "unknown",
            error = %e,
            "ork starting"
        ),
    }
    // Do not start half-blind: every permission the Katalog implies, or a list of what is missing.
    let mut needed = permissions::rules(
        &crate::controllers::with_controllers(katalog.clone(), &args.controllers)?,
        &options.ork_namespace,
        args.leader_elect || args.shards > 1,
    );
    if args.metacontroller {
        needed.extend(permissions::metacontroller_rules());
    }
    let missing = permissions::missing(&client, &needed)
        .await
        .context("checking ork's permissions (SelfSubjectAccessReview)")?;
    if !missing.is_empty() {
        // Out of a cluster ork's namespace defaults to `default`; the RBAC's defaults to this.
        let home = if chosen {
            options.ork_namespace.as_str()
        } else {
            "ork-system"
        };
        bail!(
            "ork lacks {} permission(s) this Katalog (and its controllers) need:\n  {}\n{}",
            missing.len(),
            missing.join("\n  "),
            crate::hints::run_as_hint(&args.katalog, home)
        );
    }
    let runtime = if args.shards > 1 {
        Runtime::with_shards(&katalog, true, ShardSet::new(args.shards))
    } else {
        Runtime::new(&katalog, !args.leader_elect)
    };
    let limits = |max_connections| crate::listener::Limits {
        max_connections,
        header_read: args.http_header_timeout,
        idle: args.http_idle_timeout,
        // A request whose body is still coming after this long is a client holding a slot.
        request: std::time::Duration::from_secs(30).min(args.http_idle_timeout),
    };
    if let Some(addr) = listen_addr("--probe-addr", &args.probe_addr)? {
        let app = crate::http::probes(runtime.clone());
        let limits = limits(PROBE_CONNECTIONS);
        tokio::spawn(async move {
            if let Err(e) = crate::http::serve(addr, "/healthz /readyz /metrics", app, limits).await
            {
                tracing::error!(%addr, error = %e, "cannot serve the probes");
            }
        });
    }
    if let Some(addr) = listen_addr("--http-addr", &args.http_addr)? {
        let guard = crate::http::Guard {
            reviewer: Some(runtime.reviewer(client.clone())),
            loopback_open: args.unauthenticated_loopback,
        };
        let app = crate::http::inspector(runtime.clone(), guard);
        let limits = limits(args.http_max_connections as usize);
        tokio::spawn(async move {
            if let Err(e) = crate::http::serve(addr, "/katalog /status", app, limits).await {
                tracing::error!(%addr, error = %e, "cannot serve the inspector");
            }
        });
    }
    if runtime.serves_admission()
        && let Some(addr) = listen_addr("--webhook-addr", &args.webhook_addr)?
    {
        crate::webhook::start(&client, &runtime, addr, &args, &options.ork_namespace).await?;
    }
    let elector = args.leader_elect.then(|| {
        Elector::new(
            client.clone(),
            &options.ork_namespace,
            identity(),
            LeaseConfig::with_duration(args.lease_duration),
        )
    });
    let campaign = elector.clone().map(|elector| {
        let runtime = runtime.clone();
        tokio::spawn(async move { elector.campaign(runtime).await })
    });
    let sharder = (args.shards > 1).then(|| {
        ShardManager::new(
            client.clone(),
            &options.ork_namespace,
            identity(),
            LeaseConfig::with_duration(args.lease_duration),
            args.shutdown_grace,
        )
    });
    let shard_task = sharder.clone().map(|sharder| {
        let runtime = runtime.clone();
        tokio::spawn(async move { sharder.run(runtime).await })
    });
    // The entries' loops outlive the signal: they count the reconciles in flight as those
    // finish (dropped, they would leave the count where it stood, and the drain would wait its
    // whole grace period with the Leases held and nothing to wait for).
    let controllers = controllers(&args)?;
    let entries = async {
        let katalog_entries = runtime.run(client.clone(), katalog, options.clone());
        match controllers {
            Some(source) => tokio::try_join!(
                katalog_entries,
                runtime.run_controllers(client.clone(), source, options.clone())
            )
            .map(|_| ()),
            None => katalog_entries.await,
        }
    };
    let mut entries = std::pin::pin!(entries);
    let (result, signalled) = tokio::select! {
        result = &mut entries => (result.map_err(anyhow::Error::from), false),
        () = shutdown_signal() => (Ok(()), true),
    };
    // Stop taking work, let what is in flight finish (bounded), then hand the lease over.
    runtime.set_active(false);
    let left = if signalled {
        tokio::select! {
            left = runtime.drain(args.shutdown_grace) => left,
            _ = &mut entries => runtime.unfinished(),
        }
    } else {
        runtime.drain(args.shutdown_grace).await
    };
    if left.reconciles > 0 {
        tracing::warn!(
            abandoned = left.reconciles,
            "reconciles still in flight at the end of the grace period; their objects are reconciled again by the next leader"
        );
    }
    if left.lane > 0 {
        tracing::warn!(
            unwritten = left.lane,
            "CR annotations and events not written by the end of the grace period; the next start calls those CRs again"
        );
    }
    if let (Some(elector), Some(campaign)) = (elector, campaign) {
        // No renewal may race the release, nor take the lease again after it.
        campaign.abort();
        let _ = campaign.await;
        elector.release().await;
    }
    if let (Some(sharder), Some(task)) = (sharder, shard_task) {
        task.abort();
        sharder.release_all(&runtime).await;
    }
    tracing::info!("stopped");
    result
}

/// This process's name in the Lease: `POD_NAME` in a cluster, else host and process id.
fn identity() -> String {
    std::env::var("POD_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "ork".into());
            format!("{host}-{}", std::process::id())
        })
}

pub(crate) async fn connect(
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    protocol: Protocol,
) -> Result<Client> {
    let config = kube_config(kubeconfig, context).await?;
    Ok(ork_kube::client::client(config, protocol)?)
}

/// The client configuration of `kubeconfig` (default: `$KUBECONFIG`, `~/.kube/config` or in
/// the cluster) and `context`, with ork's user agent.
pub(crate) async fn kube_config(
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
) -> Result<Config> {
    let options = KubeConfigOptions {
        context,
        ..Default::default()
    };
    let mut config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &options).await?
        }
        None if options.context.is_some() => Config::from_kubeconfig(&options).await?,
        None => Config::infer().await?,
    };
    // The API server names the field manager of a write that names none (status, annotations,
    // finalizers, events) after the client's user agent: "ork" in managedFields and the audit
    // log, where kube's client sends none and reads "unknown".
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(concat!("ork/", env!("CARGO_PKG_VERSION"))),
    ));
    Ok(config)
}

/// `ORK_NAMESPACE`, else the in-cluster service-account namespace (either is a choice:
/// `true`), else `default` (`false`).
pub(crate) fn ork_namespace() -> (String, bool) {
    std::env::var("ORK_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .map_or_else(|| ("default".into(), false), |ns| (ns, true))
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

/// ork's own lines at `level`, the libraries' quiet (their debug lines are not ork's story);
/// `RUST_LOG`, when set, says exactly what to show instead. Colour only on a terminal, and
/// never with `NO_COLOR` set.
fn init_logging(json: bool, level: &str) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!(
            "{level},kube_client=off,kube_runtime=warn,hyper=off,hyper_util=off,h2=off,rustls=off,tower=off,reqwest=off"
        ))
    });
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// Connections the probes' listener holds at once: probes and a scraper or two need few.
const PROBE_CONNECTIONS: usize = 64;

/// The address `flag` gives, or `None` for `none`.
fn listen_addr(flag: &str, value: &str) -> Result<Option<SocketAddr>> {
    if value == "none" {
        return Ok(None);
    }
    value
        .parse()
        .map(Some)
        .with_context(|| format!("{flag} {value:?} is not host:port"))
}
