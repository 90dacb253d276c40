//! The simulated world: one controller per enabled entry over an in-memory cluster, with the
//! writers of its stores, the CRs placed as the API server would store them, and each cycle's
//! re-list of the memory into the stores and the index.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use kube::core::DynamicObject;
use kube::discovery::ApiResource;
use kube::runtime::watcher;
use ork_engine::queue::Reason;
use ork_katalog::Katalog;
use ork_remote::HttpTransport;
use serde_json::{Value, json};

use super::memory::{self, MemoryCluster};
use super::types::offline_type;
use crate::auth::{CredentialSource, OfflineSecrets, TransportSource};
use crate::cache::CacheWriter;
use crate::controller::{
    EntryState, Input, LiveView, Observer, ScopeCaches, ScopeWriter, Worker, published,
};
use crate::entry::Hooks;
use crate::entry::{EntryContext, EntryError};
use crate::error::ReconcileError;
use crate::ports::{Cluster, Tap, Timed, Transport, for_remote};
use crate::process::Process;
use crate::reconcile::Success;

/// Why a simulation could not run. Failed reconciles are not errors: they are in the report.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    // `error`, not `source`: the message already says it (no repeat in a cause chain).
    #[error("entry {entry}: {error}")]
    Entry { entry: String, error: EntryError },
    #[error("the HTTP client: {0}")]
    Client(#[from] ork_remote::CallError),
    #[error("--record {dir}: {error}")]
    Record { dir: String, error: std::io::Error },
    #[error("{0}")]
    Input(String),
}

/// How to simulate.
#[derive(Debug, Clone)]
pub struct SimulateOptions {
    pub cycles: usize,
    /// Relative exec commands start here.
    pub katalog_dir: PathBuf,
    /// CRDs (`--crd`): the scope of custom types ork cannot otherwise know offline.
    pub crds: Vec<Value>,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    /// The values of `auth.secretRef` Secrets (`--secret`, or read once from a cluster).
    pub secrets: OfflineSecrets,
}

/// One entry of the simulation: the entry loop's state and what its reconciles work through,
/// over its memory.
pub(crate) struct SimEntry {
    pub state: EntryState,
    pub worker: Worker,
    observer: Observer,
    pub memory: Arc<MemoryCluster>,
    pub timed: Arc<Timed>,
}

impl SimEntry {
    pub(crate) fn ctx(&self) -> &Arc<EntryContext> {
        self.state.ctx()
    }

    /// Delivers the in-memory state to the entry, as a watch re-list would.
    pub(crate) fn sync(&mut self) {
        let crs: Vec<DynamicObject> = self
            .memory
            .crs()
            .into_iter()
            .filter_map(|(key, v)| {
                serde_json::from_value(v)
                    .inspect_err(|e| tracing::error!(%key, error = %e, "the simulated CR is not a Kubernetes object; skipped"))
                    .ok()
            })
            .collect();
        let children = self
            .ctx()
            .children
            .iter()
            .map(|t| {
                self.memory
                    .children_of_type(t)
                    .into_iter()
                    .filter_map(|v| serde_json::from_value(v).ok())
                    .collect()
            })
            .collect();
        relist_into(&mut self.state, &self.observer, crs, children);
    }

    /// Gives the entry's input watches `objects` (those of its input types), as their first
    /// lists would.
    pub(crate) fn hold_inputs(&mut self, objects: &[Value]) {
        for (type_index, t) in self.state.input_types().into_iter().enumerate() {
            let of_type: Vec<Value> = objects
                .iter()
                .filter(|o| {
                    o["apiVersion"] == t.api_version.as_str() && o["kind"] == t.kind.as_str()
                })
                .cloned()
                .collect();
            let event = crate::inputs::InputEvent::Reset {
                namespace: None,
                name: None,
                objects: of_type,
            };
            let input = Input::Inputs {
                type_index,
                event,
                synced: None,
            };
            self.state.handle(input, Instant::now());
        }
    }

    /// The keys to reconcile this cycle, sorted: what the index triggered, and in a resync
    /// cycle every CR.
    pub(crate) fn due(&mut self, first: bool) -> Vec<(String, Reason)> {
        self.state.take_due(Instant::now(), !first)
    }

    /// Reconciles `key` now, as the entry loop would; how it ended, `None` when there was no
    /// reconcile (the CR is gone, or only a sweep).
    pub(crate) async fn run(
        &mut self,
        key: String,
        reason: Reason,
    ) -> Option<Result<Success, ReconcileError>> {
        let work = self.state.work(key, reason)?;
        let finished = self.worker.run(work).await;
        let outcome = self
            .state
            .handle(Input::Finished(Box::new(finished)), Instant::now());
        self.worker.flush_lane(&self.state.lane()).await;
        outcome
    }
}

/// Delivers `crs` and each child type's `children` (by type index) to `state`, as the re-list
/// of every watch would.
pub(crate) fn relist_into(
    state: &mut EntryState,
    observer: &Observer,
    crs: Vec<DynamicObject>,
    children: Vec<Vec<DynamicObject>>,
) {
    let now = Instant::now();
    for event in relist(crs) {
        if let Some(step) = observer.cr(&event) {
            state.handle(Input::Cr(step), now);
        }
    }
    for (type_index, objects) in children.into_iter().enumerate() {
        for event in relist(objects) {
            let step = observer.child(type_index, &event);
            let input = Input::Child {
                type_index,
                scope: 0,
                step,
            };
            state.handle(input, now);
        }
    }
}

/// The events of a watch's re-list of `objects`.
fn relist(objects: Vec<DynamicObject>) -> Vec<watcher::Event<DynamicObject>> {
    std::iter::once(watcher::Event::Init)
        .chain(objects.into_iter().map(watcher::Event::InitApply))
        .chain(std::iter::once(watcher::Event::InitDone))
        .collect()
}

/// One simulated entry per enabled Katalog entry, registered for `observe.cross`.
pub(crate) fn build_entries(
    katalog: &Katalog,
    options: &SimulateOptions,
    process: &Arc<Process>,
) -> Result<BTreeMap<String, SimEntry>, SimulateError> {
    let http = HttpTransport::new()?;
    // Off limits to children only when it was chosen, as in `ork run`.
    let ork_namespace = std::env::var("ORK_NAMESPACE").unwrap_or_default();
    let mut entries = BTreeMap::new();
    for (name, entry) in katalog.spec.crds.iter().filter(|(_, e)| e.enabled) {
        let Some(remote) = entry.operator_box.reconcile.remote.clone() else {
            continue;
        };
        let fail = |error: EntryError| SimulateError::Entry {
            entry: name.clone(),
            error,
        };
        let children = remote
            .managed_resources
            .iter()
            .map(|m| offline_type(m, katalog, &options.crds))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| fail(EntryError::Offline(e.to_string())))?;
        // A replay sends nothing: no credential or TLS material is needed for it.
        let tapped: Box<dyn Transport> = match (&options.record, &options.replay) {
            (None, Some(dir)) => Box::new(Tap::replay(dir.clone())),
            (record, _) => {
                let base =
                    offline_transport(&remote, options, &http, &ork_namespace).map_err(fail)?;
                match record {
                    Some(dir) => Box::new(Tap::record(dir.clone(), base).map_err(|error| {
                        SimulateError::Record {
                            dir: dir.display().to_string(),
                            error,
                        }
                    })?),
                    None => base,
                }
            }
        };
        let timed = Arc::new(Timed {
            nanos: AtomicU64::new(0),
            inner: tapped,
        });
        let t = &entry.api_types;
        let cr_resource = ApiResource {
            group: t.group.clone(),
            version: t.version.clone(),
            // The core group's objects (a DecoratorController's Services) are plain `v1`.
            api_version: if t.group.is_empty() {
                t.version.clone()
            } else {
                format!("{}/{}", t.group, t.version)
            },
            kind: t.kind.clone(),
            plural: t.plural.clone(),
        };
        let (hooks, related) =
            offline_hooks(entry, &remote, &options.katalog_dir, &http).map_err(fail)?;
        let ctx = Arc::new(
            EntryContext::build(
                name.clone(),
                entry.clone(),
                cr_resource.clone(),
                entry.namespaced,
                children,
                ork_namespace.clone(),
                crate::mark::MarkKey::ephemeral(),
            )
            .map_err(fail)?
            .of_katalog(&katalog.metadata.name)
            .with_hooks(hooks, related),
        );
        let memory = Arc::new(MemoryCluster::default());
        let (state, worker, observer) =
            assemble(ctx, memory.clone(), timed.clone(), process.clone());
        process
            .registry
            .register(name, published(&state, inputs_nobody_reads()));
        entries.insert(
            name.clone(),
            SimEntry {
                state,
                worker,
                observer,
                memory,
                timed,
            },
        );
    }
    Ok(entries)
}

/// An entry's loop state, its worker over `cluster` and `transport`, and the observer that
/// turns watch events into the loop's inputs: one cache scope per child type, no holder
/// caches (who holds a name is asked of the cluster).
pub(crate) fn assemble(
    ctx: Arc<EntryContext>,
    cluster: Arc<dyn Cluster>,
    transport: Arc<dyn Transport>,
    process: Arc<Process>,
) -> (EntryState, Worker, Observer) {
    let mut writers = Vec::new();
    let mut scopes = Vec::new();
    for _ in &ctx.children {
        let objects = CacheWriter::new();
        scopes.push(vec![ScopeCaches {
            scope: None,
            objects: objects.reader(),
            holders: None,
        }]);
        writers.push(vec![ScopeWriter { objects }]);
    }
    let live = Arc::new(LiveView { scopes });
    let state = EntryState::new(
        ctx.clone(),
        process.clone(),
        CacheWriter::new(),
        writers,
        live.clone(),
    );
    let worker = Worker {
        ctx: ctx.clone(),
        cluster,
        transport,
        candidate: None,
        live,
        process,
    };
    (state, worker, Observer::new(ctx))
}

/// The input channel of an entry whose events are handed to it directly: nothing reads it.
pub(crate) fn inputs_nobody_reads() -> tokio::sync::mpsc::UnboundedSender<Input> {
    tokio::sync::mpsc::unbounded_channel().0
}

/// Stores a CR as the API server would: namespace defaulted, uid, generation, resourceVersion.
/// Returns the name of the entry that reconciles it.
pub(crate) fn place_cr(
    entries: &BTreeMap<String, SimEntry>,
    mut cr: Value,
) -> Result<String, SimulateError> {
    let api_version = cr["apiVersion"].as_str().unwrap_or_default().to_string();
    let kind = cr["kind"].as_str().unwrap_or_default().to_string();
    let Some((entry_name, sim)) = entries.iter().find(|(_, s)| {
        let r = &s.ctx().cr_resource;
        r.api_version == api_version && r.kind == kind
    }) else {
        return Err(SimulateError::Input(format!(
            "no entry of the Katalog reconciles {kind} ({api_version})"
        )));
    };
    let name = cr["metadata"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| SimulateError::Input("a CR without metadata.name".into()))?
        .to_string();
    let entry = &sim.ctx().entry;
    if entry.namespaced
        && cr["metadata"]["namespace"]
            .as_str()
            .is_none_or(str::is_empty)
    {
        cr["metadata"]["namespace"] = json!(
            entry
                .namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".into())
        );
    }
    let ns = cr["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    cr["metadata"]["uid"] = json!(format!("sim-{}-{ns}-{name}", kind.to_lowercase()));
    cr["metadata"]["generation"] = json!(1);
    cr["metadata"]["resourceVersion"] = json!("1");
    cr["metadata"]["creationTimestamp"] = json!(memory::SIMULATED_TIME);
    let key = if ns.is_empty() {
        name
    } else {
        format!("{ns}/{name}")
    };
    sim.memory.add_cr(&key, cr);
    Ok(entry_name.clone())
}

/// Stores an object that exists before the first cycle in the memory of every entry that
/// manages its type (namespace `default` when a namespaced object names none).
pub(crate) fn place_child(
    entries: &BTreeMap<String, SimEntry>,
    object: Value,
) -> Result<(), SimulateError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| SimulateError::Input(format!("a given {kind} without metadata.name")))?
        .to_string();
    let mut placed = false;
    for sim in entries.values() {
        for t in &sim.ctx().children {
            if t.resource.api_version != api_version || t.resource.kind != kind {
                continue;
            }
            let mut object = object.clone();
            let namespace = t.managed.namespaced.then(|| {
                let ns = object["metadata"]["namespace"]
                    .as_str()
                    .filter(|n| !n.is_empty())
                    .unwrap_or("default")
                    .to_string();
                object["metadata"]["namespace"] = json!(ns);
                ns
            });
            sim.memory.add_child(t, namespace.as_deref(), &name, object);
            placed = true;
        }
    }
    if placed {
        Ok(())
    } else {
        Err(SimulateError::Input(format!(
            "no entry of the Katalog manages {kind} ({api_version}): a given object must be of a managed type"
        )))
    }
}

/// The transport of `remote` without a cluster: its credential from the offline Secrets (one
/// that is missing is named in `ork_namespace`, else `default`, as `ork run` would read it),
/// inline TLS material only.
pub(crate) fn offline_transport(
    remote: &ork_katalog::Remote,
    options: &SimulateOptions,
    http: &HttpTransport,
    ork_namespace: &str,
) -> Result<Box<dyn Transport>, EntryError> {
    let secret_ns = if ork_namespace.is_empty() {
        "default"
    } else {
        ork_namespace
    };
    let credential = CredentialSource::offline(remote.auth.as_ref(), &options.secrets, secret_ns)
        .map_err(EntryError::Credential)?;
    let tls = TransportSource::offline(http, remote.tls.as_ref()).map_err(EntryError::Tls)?;
    Ok(for_remote(remote, &options.katalog_dir, credential, tls)?)
}

/// A Metacontroller controller's finalize and customize hooks, called as `ork run` calls them
/// (the sync hook is the entry's endpoint); nothing for a Katalog entry. Related objects a
/// customize hook asks for are read from the simulated cluster.
fn offline_hooks(
    entry: &ork_katalog::CrdEntry,
    remote: &ork_katalog::Remote,
    katalog_dir: &std::path::Path,
    http: &HttpTransport,
) -> Result<(Hooks, Option<Arc<crate::related::Related>>), EntryError> {
    let Some(controller) = &entry.metacontroller else {
        return Ok((Hooks::default(), None));
    };
    let transport =
        |hook: &ork_katalog::metacontroller::Hook| -> Result<Arc<dyn Transport>, EntryError> {
            let remote = EntryContext::hook_remote(remote, hook)?;
            let credential = CredentialSource::offline(None, &OfflineSecrets::default(), "default")
                .map_err(EntryError::Credential)?;
            let tls = TransportSource::offline(http, None).map_err(EntryError::Tls)?;
            Ok(Arc::from(for_remote(
                &remote,
                katalog_dir,
                credential,
                tls,
            )?))
        };
    let hooks = Hooks {
        finalize: controller.finalize.as_ref().map(transport).transpose()?,
        customize: controller.customize.as_ref().map(transport).transpose()?,
    };
    let related = hooks
        .customize
        .is_some()
        .then(|| Arc::new(crate::related::Related::new().0));
    Ok((hooks, related))
}
