//! Starting one entry in `ork run`: resolve its types, build its ports, start the watches into
//! their caches, wait for the initial lists and the entry's dependencies, then dispatch.

use std::path::PathBuf;
use std::sync::Arc;

use kube::Client;
use ork_katalog::CrdEntry;
use ork_remote::HttpTransport;
use tracing::Instrument;

use super::driver::{drive_lane, published};
use super::live::{LiveView, ScopeCaches};
use super::observe::Observer;
use super::state::{EntryState, ScopeWriter};
use super::watch::{Feed, cr_watch, watch_children, watch_crs, watch_holders, watch_input};
use super::worker::Worker;
use crate::auth::{CredentialSource, TransportSource};
use crate::cache::{CacheWriter, Holder};
use crate::discovery::{resolve_managed, wait_for_cr_type};
use crate::entry::{EntryContext, EntryError, Hooks};
use crate::install::{apply_files, install_crd};
use crate::ports::{KubeCluster, Transport, for_remote};
use crate::process::Process;

/// Process-wide settings for `ork run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// ork's own namespace (Lease, default Secret namespace).
    pub ork_namespace: String,
    /// Whether that namespace was chosen (`ORK_NAMESPACE`, or in a cluster ork's service
    /// account's): then children may not go there unless declared (SPEC §2.3). The fallback
    /// `default` of a developer's `ork run` is nobody's namespace to protect.
    pub guard_own_namespace: bool,
    /// The Katalog file's folder: relative `command` paths and `workingDir` start here.
    pub katalog_dir: PathBuf,
    /// Apply the entries' `setup` and `crFiles` (development helpers; `--no-dev-files` off).
    pub dev_files: bool,
    /// Reconciles in flight at once for each Metacontroller controller (Metacontroller's
    /// `--workers`, whose default of 5 is ork's too).
    pub controller_workers: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("the HTTP client for reconcile calls: {0}")]
    Transport(#[from] ork_remote::CallError),
    // `error`, not `source`: the message already says it (no repeat in a cause chain).
    #[error("entry {entry}: {error}")]
    Entry { entry: String, error: EntryError },
    /// A Metacontroller controller that cannot run, or its CRDs or watch.
    #[error("{0}")]
    Controller(String),
}

/// Runs one entry until the process ends.
///
/// # Errors
/// The entry cannot start: a managed type that is not served, a missing credential.
pub(crate) async fn start_entry(
    client: Client,
    name: String,
    entry: CrdEntry,
    http: HttpTransport,
    options: RunOptions,
    process: Arc<Process>,
    katalog_name: String,
) -> Result<(), EntryError> {
    let remote = entry
        .operator_box
        .reconcile
        .remote
        .clone()
        .ok_or(EntryError::NoRemote)?;
    let dev_namespace = entry
        .watched_namespaces()
        .and_then(|n| n.into_iter().next())
        .unwrap_or_else(|| "default".to_string());
    if options.dev_files && entry.setup.has_work() {
        crate::setup::run_setup(&client, &entry.setup, &dev_namespace).await?;
    }
    if let Some(crd) = &entry.crd_file {
        install_crd(&client, crd).await?;
    }
    let (cr_resource, cr_namespaced) = wait_for_cr_type(&client, &entry.api_types, &name).await?;
    if options.dev_files && !entry.cr_files.is_empty() {
        apply_files(&client, &entry.cr_files, &dev_namespace).await?;
    }
    let children = resolve_managed(&client, &remote.managed_resources).await?;
    let credential = CredentialSource::start(&client, remote.auth.as_ref(), &options.ork_namespace)
        .map_err(EntryError::Credential)?;
    let tls = TransportSource::start(&client, &http, remote.tls.as_ref(), &options.ork_namespace)
        .map_err(EntryError::Tls)?;
    let transport: Arc<dyn Transport> =
        Arc::from(for_remote(&remote, &options.katalog_dir, credential, tls)?);
    // A rollout's candidate: the same request, credential and TLS at its own URL (SPEC §19).
    let candidate = remote
        .rollout
        .as_ref()
        .map(|r| {
            let hook = ork_katalog::metacontroller::Hook {
                url: r.endpoint.source().to_string(),
                timeout: remote.timeout.get(),
            };
            hook_transport(&client, &http, &remote, &hook, &options)
        })
        .transpose()?;
    let hooks = match &entry.metacontroller {
        Some(c) => Hooks {
            finalize: c
                .finalize
                .as_ref()
                .map(|h| hook_transport(&client, &http, &remote, h, &options))
                .transpose()?,
            customize: c
                .customize
                .as_ref()
                .map(|h| hook_transport(&client, &http, &remote, h, &options))
                .transpose()?,
        },
        None => Hooks::default(),
    };
    // A customize hook's related objects are watched; a change syncs the parents they relate to.
    let (related, related_requests) = match &hooks.customize {
        Some(_) => {
            let (related, requests) = crate::related::Related::new();
            (Some(Arc::new(related)), Some(requests))
        }
        None => (None, None),
    };
    // Children beyond an owner reference's reach carry ork's mark, with a key every replica
    // shares; an entry without such children needs no key from the cluster.
    let mark_key = if EntryContext::marks_children(&children, cr_namespaced) {
        crate::mark::load_or_create(&client, &options.ork_namespace)
            .await
            .map_err(EntryError::MarkKey)?
    } else {
        crate::mark::MarkKey::ephemeral()
    };
    let ctx = Arc::new(
        EntryContext::build(
            name,
            entry,
            cr_resource.clone(),
            cr_namespaced,
            children,
            if options.guard_own_namespace {
                options.ork_namespace.clone()
            } else {
                String::new()
            },
            mark_key,
        )?
        .of_katalog(&katalog_name)
        .with_hooks(hooks, related.clone()),
    );
    // One watch per namespace when the entry lives in some (so its RBAC can be Roles there),
    // else one cluster-wide watch per type. Per scope, ork's children (label selector) and who
    // holds every object of the type there (metadata only: the adopt check reads it instead of
    // asking the API server per child).
    let scopes: Vec<Vec<Option<String>>> =
        ctx.children.iter().map(|t| watch_scopes(&ctx, t)).collect();
    let mut writers = Vec::new();
    let mut holder_writers = Vec::new();
    let mut caches = Vec::new();
    for type_scopes in &scopes {
        let (mut w, mut h, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for scope in type_scopes {
            let objects = CacheWriter::new();
            let holders = CacheWriter::<Holder>::new();
            c.push(ScopeCaches {
                scope: scope.clone(),
                objects: objects.reader(),
                holders: Some(holders.reader()),
            });
            w.push(ScopeWriter { objects });
            h.push(holders);
        }
        writers.push(w);
        holder_writers.push(h);
        caches.push(c);
    }
    let live = Arc::new(LiveView { scopes: caches });
    let cr_writer = CacheWriter::new();
    let cr_ready = cr_writer.reader().readiness();
    let mut state = EntryState::new(
        ctx.clone(),
        process.clone(),
        cr_writer,
        writers,
        live.clone(),
    );
    let (inputs, received) = tokio::sync::mpsc::unbounded_channel();
    let input_watches = input_watches(&client, &ctx, &mut state).await?;
    // Admission is served by every replica, leader or not, from the start.
    if let Some(admission) = &remote.admission {
        start_admission(&client, &http, &ctx, &remote, admission, &options, &process).await?;
    }
    let mut related_watch = None;
    if let (Some(related), Some(requests)) = (related, related_requests) {
        let inputs = inputs.clone();
        let sync = move |keys: Vec<String>| {
            let _ = inputs.send(super::state::Input::Related(keys));
        };
        related_watch = Some(crate::related::watch(
            client.clone(),
            related,
            requests,
            sync,
        ));
    }
    let feed = Feed {
        observer: Observer::new(ctx.clone()),
        inputs: inputs.clone(),
        ctx: ctx.clone(),
        process: process.clone(),
    };
    let cluster: Arc<dyn crate::ports::Cluster> =
        Arc::new(KubeCluster::new(client.clone(), cr_resource));
    tracing::info!(kind = %ctx.cr_resource.kind, children = ctx.children.len(), "watching");
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(watch) = related_watch {
        tasks.spawn(watch.in_current_span());
    }
    let mut inputs_synced = Vec::new();
    for w in input_watches {
        let (synced, listed) = tokio::sync::oneshot::channel();
        inputs_synced.push(listed);
        let api: kube::Api<kube::core::DynamicObject> = match &w.namespace {
            Some(ns) => kube::Api::namespaced_with(client.clone(), ns, &w.resource),
            None => kube::Api::all_with(client.clone(), &w.resource),
        };
        tracing::info!(kind = %w.resource.kind, namespace = ?w.namespace, name = ?w.name, "watching an input type");
        let watch = watch_input(
            inputs.clone(),
            w.type_index,
            api,
            w.resource,
            w.namespace,
            w.name,
            synced,
        );
        tasks.spawn(watch.in_current_span());
    }
    for (index, (type_scopes, holders)) in scopes.into_iter().zip(holder_writers).enumerate() {
        for (scope_index, (scope, holders)) in type_scopes.into_iter().zip(holders).enumerate() {
            let t = ctx.children[index].clone();
            let names = watch_holders(holders, client.clone(), t, scope.clone());
            tasks.spawn(names.in_current_span());
            let watch = watch_children(feed.clone(), client.clone(), index, scope_index, scope);
            tasks.spawn(watch.in_current_span());
        }
    }
    let (apis, config) = cr_watch(&ctx, &client);
    tasks.spawn(watch_crs(feed, apis, config).in_current_span());
    let published = published(&state, inputs.clone());
    let lane = drive_lane(
        state.lane(),
        cluster.clone(),
        state.load(),
        process.active.clone(),
    );
    let worker = Arc::new(Worker {
        ctx: ctx.clone(),
        cluster,
        transport: transport.clone(),
        candidate,
        live: live.clone(),
        process: process.clone(),
    });
    // The loop reads watch events from now on (a paused queue until active and ready).
    let (standby_tx, standby) = tokio::sync::watch::channel(false);
    let active = process.active.clone();
    tasks.spawn(super::driver::run(state, received, inputs, worker, standby).in_current_span());
    // Ready once every cache holds its initial list.
    for ready in std::iter::once(cr_ready).chain(live.readiness()) {
        if ready.wait().await.is_err() {
            return Ok(());
        }
    }
    // And every input's objects: a CR is never told its input is missing because its watch
    // had not listed it yet.
    for listed in inputs_synced {
        if listed.await.is_err() {
            return Ok(());
        }
    }
    // A credential or TLS Secret is read by then too (a missing one is an error, not a wait).
    for _ in 0..100 {
        if !transport.pending() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    process.mark_synced(&ctx.name);
    tasks.spawn(lane.in_current_span());
    // Workers start once the dependencies are met.
    process
        .registry
        .wait_for_dependencies(&ctx.name, &ctx.entry)
        .await;
    process.registry.register(&ctx.name, published);
    tasks.spawn(follow(active, standby_tx).in_current_span());
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// The entry's admission: its service asked at `admission.path` of the endpoint's host, within
/// `admission.timeout`; its webhook configurations registered when this process does that.
async fn start_admission(
    client: &Client,
    http: &HttpTransport,
    ctx: &EntryContext,
    remote: &ork_katalog::Remote,
    admission: &ork_katalog::Admission,
    options: &RunOptions,
    process: &Process,
) -> Result<(), EntryError> {
    let endpoint = remote
        .endpoint
        .as_ref()
        .map(|t| t.source().to_string())
        .ok_or_else(|| EntryError::Admission("admission needs remote.endpoint".into()))?;
    let hook = ork_katalog::metacontroller::Hook {
        url: crate::admission::url(&endpoint, &admission.path),
        timeout: admission.timeout.0,
    };
    let transport = hook_transport(client, http, remote, &hook, options)?;
    process.add_admitter(
        &ctx.name,
        Arc::new(crate::admission::Admitter {
            entry: ctx.name.clone(),
            transport,
            failure_policy: admission.failure_policy,
            validate: admission.validate,
            mutate: admission.mutate,
            metrics: process.metrics.clone(),
        }),
    );
    tracing::info!(url = %hook.url, validate = admission.validate, mutate = admission.mutate, "admission served");
    if let Some((base, ca_pem)) = process.webhook_registration.get() {
        let r = crate::webhook::Registration {
            entry: ctx.name.clone(),
            cr: ctx.cr_resource.clone(),
            cr_namespaced: ctx.entry.namespaced,
            namespaces: ctx.entry.watched_namespaces(),
            admission: admission.clone(),
        };
        crate::webhook::register(client, &ctx.managed_by, &[r], base, ca_pem)
            .await
            .map_err(|e| EntryError::Admission(e.to_string()))?;
    }
    Ok(())
}

/// The transport of a Metacontroller hook besides sync: the entry's, at the hook's URL and
/// timeout.
fn hook_transport(
    client: &Client,
    http: &HttpTransport,
    remote: &ork_katalog::Remote,
    hook: &ork_katalog::metacontroller::Hook,
    options: &RunOptions,
) -> Result<Arc<dyn Transport>, EntryError> {
    let remote = EntryContext::hook_remote(remote, hook)?;
    let credential = CredentialSource::start(client, remote.auth.as_ref(), &options.ork_namespace)
        .map_err(EntryError::Credential)?;
    let tls = TransportSource::start(client, http, remote.tls.as_ref(), &options.ork_namespace)
        .map_err(EntryError::Tls)?;
    Ok(Arc::from(for_remote(
        &remote,
        &options.katalog_dir,
        credential,
        tls,
    )?))
}

/// Passes the process's switch (leader, not shutting down) on to an entry loop that may start
/// reconciles now.
async fn follow(
    mut active: tokio::sync::watch::Receiver<bool>,
    to: tokio::sync::watch::Sender<bool>,
) {
    loop {
        to.send_replace(*active.borrow_and_update());
        if active.changed().await.is_err() {
            return;
        }
    }
}

/// One watch of an input type: where, and narrowed to which name.
pub(crate) struct InputWatch {
    pub type_index: usize,
    pub resource: kube::discovery::ApiResource,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// The watches of the entry's input types (SPEC §20), each type resolved through discovery
/// (and the state told its scope): a type whose inputs name the namespace it lives in is
/// watched there, one read in the CRs' namespace where the entry lives (every namespace for
/// an entry that lives in all), a cluster-scoped type cluster-wide; a type every input of
/// which names one literal object is watched by that name only (so that RBAC can name it).
pub(crate) async fn input_watches(
    client: &Client,
    ctx: &EntryContext,
    state: &mut EntryState,
) -> Result<Vec<InputWatch>, EntryError> {
    let mut out = Vec::new();
    for (type_index, t) in state.input_types().into_iter().enumerate() {
        let (resource, namespaced) =
            crate::discovery::resolve_kind(client, &t.api_version, &t.kind).await?;
        state.set_input_namespaced(type_index, namespaced);
        // (namespace, name): `None` for every namespace, or any name.
        let mut watches: Vec<(Option<String>, Option<String>)> = Vec::new();
        for (ns, names) in &t.scopes {
            let namespaces: Vec<Option<String>> = match ns {
                _ if !namespaced => vec![None],
                Some(ns) => vec![Some(ns.clone())],
                None => ctx
                    .entry
                    .watched_namespaces()
                    .map_or_else(|| vec![None], |homes| homes.into_iter().map(Some).collect()),
            };
            for namespace in namespaces {
                match names {
                    Some(names) => {
                        watches.extend(names.iter().map(|n| (namespace.clone(), Some(n.clone()))));
                    }
                    None => watches.push((namespace, None)),
                }
            }
        }
        // A watch of every object of a namespace (or of all) sees what narrower ones would.
        let wide: Vec<(Option<String>, Option<String>)> = watches
            .iter()
            .filter(|(_, n)| n.is_none())
            .cloned()
            .collect();
        watches.retain(|(ns, name)| {
            let covered_by =
                |(wns, _): &(Option<String>, Option<String>)| wns.is_none() || wns == ns;
            name.is_none() && (ns.is_none() || !wide.iter().any(|w| w.0.is_none()))
                || name.is_some() && !wide.iter().any(covered_by)
        });
        watches.sort();
        watches.dedup();
        for (namespace, name) in watches {
            out.push(InputWatch {
                type_index,
                resource: resource.clone(),
                namespace,
                name,
            });
        }
    }
    Ok(out)
}

/// Where children of type `t` are watched: each namespace they may live in when the entry
/// watches some namespaces and the type is namespaced, else everywhere (`None`).
pub(crate) fn watch_scopes(
    ctx: &EntryContext,
    t: &crate::discovery::ChildType,
) -> Vec<Option<String>> {
    match ctx.entry.watched_namespaces() {
        Some(homes) if t.managed.namespaced => {
            let mut scopes: Vec<Option<String>> = homes.into_iter().map(Some).collect();
            for extra in &t.managed.namespaces {
                if !scopes.contains(&Some(extra.clone())) {
                    scopes.push(Some(extra.clone()));
                }
            }
            scopes
        }
        _ => vec![None],
    }
}
