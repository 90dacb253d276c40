//! One controller per Katalog entry: watchers ([`watch`]) feed the work queue, a dispatcher
//! ([`dispatch`]) hands keys to at most `workers` concurrent reconciles, never two for one
//! object; [`state`] is what they share.

use std::path::PathBuf;
use std::sync::Arc;

use kube::core::DynamicObject;
use kube::{Client, ResourceExt};
use ork_engine::health::Health;
use ork_katalog::CrdEntry;
use ork_remote::HttpTransport;
use serde_json::Value;
use tracing::Instrument;

use crate::auth::{CredentialSource, TransportSource};
use crate::cluster::KubeCluster;
use crate::discovery::{resolve_managed, wait_for_cr_type};
use crate::runtime::Process;

mod dispatch;
mod state;
mod watch;

pub(crate) use dispatch::Next;
use dispatch::{dispatch, resync};
pub(crate) use state::{KeyStats, Parts, Shared, State};
use watch::{watch_children, watch_crs};

/// Process-wide settings for `ork run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// ork's own namespace (Lease, default Secret namespace, off limits to children).
    pub ork_namespace: String,
    /// The Katalog file's folder: relative `command` paths and `workingDir` start here.
    pub katalog_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("the HTTP client for reconcile calls: {0}")]
    Transport(String),
    #[error("entry {entry}: {message}")]
    Entry { entry: String, message: String },
}

/// The queue key of an object: `namespace/name`, or `name` when cluster-scoped.
pub(crate) fn key_of(obj: &DynamicObject) -> String {
    match obj.namespace() {
        Some(ns) => format!("{ns}/{}", obj.name_any()),
        None => obj.name_any(),
    }
}

pub(crate) async fn start_entry(
    client: Client,
    name: String,
    entry: CrdEntry,
    transport: HttpTransport,
    options: RunOptions,
    process: Arc<Process>,
) -> Result<(), String> {
    let remote = entry
        .operator_box
        .reconcile
        .remote
        .clone()
        .ok_or("no remote block")?;
    let cr_resource = wait_for_cr_type(&client, &entry.api_types, &name)
        .await
        .map_err(|e| e.to_string())?;
    let children = resolve_managed(&client, &remote.managed_resources)
        .await
        .map_err(|e| e.to_string())?;
    let credential =
        CredentialSource::start(&client, remote.auth.as_ref(), &options.ork_namespace)?;
    let transport = TransportSource::start(
        &client,
        &transport,
        remote.tls.as_ref(),
        &options.ork_namespace,
    )?;
    let cluster = Arc::new(KubeCluster::new(client.clone(), cr_resource.clone()));
    let shared = Arc::new(Shared::build(
        Parts {
            name,
            entry,
            remote,
            cr_resource,
            children,
            transport,
            credential,
            cluster,
        },
        &options,
        process.clone(),
    )?);
    tracing::info!(kind = %shared.cr_resource.kind, children = shared.children.len(), "watching");
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..shared.children.len() {
        tasks.spawn(watch_children(shared.clone(), client.clone(), index).in_current_span());
    }
    tasks.spawn(watch_crs(shared.clone(), client.clone()).in_current_span());
    tasks.spawn(resync(shared.clone()).in_current_span());
    // Watches fill the caches meanwhile; workers start once the dependencies are met.
    process
        .registry
        .wait_for_dependencies(&shared.name, &shared.entry)
        .await;
    process.registry.register(shared.clone());
    tasks.spawn(dispatch(shared).in_current_span());
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// The object a gate sees: the CR plus `health` (the entry's health summary).
pub(crate) fn gate_context(cr: &Value, health: &Health) -> Value {
    let mut ctx = cr.clone();
    if let Value::Object(m) = &mut ctx {
        m.insert(
            "health".into(),
            serde_json::to_value(health).unwrap_or(Value::Null),
        );
    }
    ctx
}
