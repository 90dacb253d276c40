//! `ork simulate`: the very reconcile code of `ork run` (gates, request, call, response checks,
//! intents, owner references, prune, status, events, health) against an in-memory cluster.
//! Each cycle reconciles every CR once and calls the real service (HTTP or exec), until two
//! cycles in a row change nothing (steady) or the cycle limit is reached.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::core::DynamicObject;
use kube::discovery::ApiResource;
use ork_engine::gate::sentinels;
use ork_engine::queue::Reason;
use ork_katalog::{CrdEntry, Katalog};
use ork_remote::HttpTransport;
use serde::Serialize;
use serde_json::{Value, json};

use crate::auth::{CredentialSource, TransportSource};
use crate::controller::{Parts, RunOptions, Shared, key_of};
use crate::runtime::Runtime;

mod check;
mod memory;
mod tap;
mod types;

pub use check::{Checked, check};
use memory::MemoryCluster;
pub use memory::{Change, diff, merge};
pub(crate) use tap::Tap;
use types::offline_type;

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
}

/// One reconcile of one CR in a cycle.
#[derive(Debug, Clone, Serialize)]
pub struct Call {
    pub entry: String,
    pub key: String,
    /// `ok`, `gated: <why>` or `error: <message>`.
    pub result: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cycle {
    pub cycle: usize,
    pub calls: Vec<Call>,
    pub changes: Vec<Change>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub cycles: Vec<Cycle>,
    /// Two cycles in a row changed nothing.
    pub steady: bool,
    /// Some reconcile failed.
    pub failed: bool,
    /// The children at the end, as `Kind namespace/name` → manifest.
    pub objects: BTreeMap<String, Value>,
    /// ork's own time: the whole run minus the time spent in the service.
    #[serde(skip)]
    pub ork_time: Duration,
}

struct SimEntry {
    shared: Arc<Shared>,
    memory: Arc<MemoryCluster>,
    previous: HashMap<String, Value>,
}

/// Runs the simulation.
///
/// # Errors
/// A CR no entry reconciles, a managed type that cannot be resolved offline, a credential that
/// needs a cluster, or a record folder that cannot be created. Failed reconciles are not errors:
/// they are in the report.
pub async fn simulate(
    katalog: Katalog,
    crs: Vec<Value>,
    options: SimulateOptions,
) -> Result<Report, String> {
    let started = Instant::now();
    let runtime = Runtime::new(&katalog, true);
    let process = runtime.process();
    let transport = HttpTransport::new().map_err(|e| e.to_string())?;
    let tap = match (&options.record, &options.replay) {
        (Some(dir), _) => Some(Arc::new(
            Tap::record(dir.clone()).map_err(|e| format!("--record {}: {e}", dir.display()))?,
        )),
        (None, Some(dir)) => Some(Arc::new(Tap::replay(dir.clone()))),
        (None, None) => None,
    };
    let run_options = RunOptions {
        ork_namespace: std::env::var("ORK_NAMESPACE").unwrap_or_else(|_| "default".into()),
        katalog_dir: options.katalog_dir.clone(),
    };
    let mut entries = build_entries(&katalog, &options, &run_options, process, &transport, tap)?;
    for cr in crs {
        place_cr(&entries, cr)?;
    }

    let mut cycles = Vec::new();
    let mut quiet = 0;
    let mut failed = false;
    for cycle in 1..=options.cycles.max(1) {
        for sim in entries.values_mut() {
            sync(sim);
        }
        let mut calls = Vec::new();
        for (name, sim) in &entries {
            let keys: Vec<String> = {
                let mut k: Vec<String> = sim.shared.lock().crs.keys().cloned().collect();
                k.sort();
                k
            };
            for key in keys {
                let before = sim
                    .shared
                    .lock()
                    .stats
                    .get(&key)
                    .map_or(0, |s| s.reconciles);
                let reason = if cycle == 1 {
                    Reason::Create
                } else {
                    Reason::Resync
                };
                crate::reconcile::reconcile(&sim.shared, &key, reason).await;
                let st = sim.shared.lock();
                let stats = st.stats.get(&key);
                let result = match stats {
                    Some(s) if s.reconciles > before && s.last_result == "ok" => "ok".to_string(),
                    Some(s) if s.reconciles > before => {
                        failed = true;
                        format!(
                            "error: {}",
                            st.health.last_error.clone().unwrap_or_default()
                        )
                    }
                    _ => format!(
                        "gated: {}",
                        st.health.gated_reason.clone().unwrap_or_default()
                    ),
                };
                calls.push(Call {
                    entry: name.clone(),
                    key,
                    result,
                });
            }
        }
        let changes: Vec<Change> = entries
            .values()
            .flat_map(|s| s.memory.take_journal())
            .collect();
        let moved = changes.iter().any(Change::is_state);
        cycles.push(Cycle {
            cycle,
            calls,
            changes,
        });
        quiet = if moved { 0 } else { quiet + 1 };
        if quiet >= 2 {
            break;
        }
    }
    let service: u64 = entries
        .values()
        .map(|s| {
            s.shared
                .service_nanos
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum();
    let mut objects = BTreeMap::new();
    for sim in entries.values() {
        for t in &sim.shared.children {
            for obj in sim.memory.children_of_type(t) {
                let name = obj["metadata"]["name"].as_str().unwrap_or_default();
                let shown = match obj["metadata"]["namespace"].as_str() {
                    Some(ns) => format!("{} {ns}/{name}", t.managed.kind),
                    None => format!("{} {name}", t.managed.kind),
                };
                objects.insert(shown, memory::without_server_fields(&obj));
            }
        }
    }
    Ok(Report {
        cycles,
        steady: quiet >= 2,
        failed,
        objects,
        ork_time: started
            .elapsed()
            .saturating_sub(Duration::from_nanos(service)),
    })
}

/// One in-memory entry per enabled Katalog entry, registered for `observe.cross`.
fn build_entries(
    katalog: &Katalog,
    options: &SimulateOptions,
    run_options: &RunOptions,
    process: Arc<crate::runtime::Process>,
    transport: &HttpTransport,
    tap: Option<Arc<Tap>>,
) -> Result<BTreeMap<String, SimEntry>, String> {
    let mut entries: BTreeMap<String, SimEntry> = BTreeMap::new();
    for (name, entry) in katalog.spec.crds.iter().filter(|(_, e)| e.enabled) {
        let Some(remote) = entry.operator_box.reconcile.remote.clone() else {
            continue;
        };
        let children = remote
            .managed_resources
            .iter()
            .map(|m| offline_type(m, katalog, &options.crds))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("entry {name}: {e}"))?;
        let credential = CredentialSource::offline(remote.auth.as_ref())
            .map_err(|e| format!("entry {name}: {e}"))?;
        let entry_transport = TransportSource::offline(transport, remote.tls.as_ref())
            .map_err(|e| format!("entry {name}: {e}"))?;
        let memory = Arc::new(MemoryCluster::default());
        let t = &entry.api_types;
        let mut shared = Shared::build(
            Parts {
                name: name.clone(),
                entry: entry.clone(),
                remote,
                cr_resource: ApiResource {
                    group: t.group.clone(),
                    version: t.version.clone(),
                    api_version: format!("{}/{}", t.group, t.version),
                    kind: t.kind.clone(),
                    plural: t.plural.clone(),
                },
                children,
                transport: entry_transport,
                credential,
                cluster: memory.clone(),
            },
            run_options,
            process.clone(),
        )?;
        shared.tap = tap.clone();
        let shared = Arc::new(shared);
        process.registry.register(shared.clone());
        entries.insert(
            name.clone(),
            SimEntry {
                shared,
                memory,
                previous: HashMap::new(),
            },
        );
    }
    Ok(entries)
}

/// Stores a CR as the API server would: namespace defaulted, uid, generation, resourceVersion.
fn place_cr(entries: &BTreeMap<String, SimEntry>, mut cr: Value) -> Result<(), String> {
    let api_version = cr["apiVersion"].as_str().unwrap_or_default().to_string();
    let kind = cr["kind"].as_str().unwrap_or_default().to_string();
    let Some(sim) = entries.values().find(|s| {
        let t = &s.shared.entry.api_types;
        format!("{}/{}", t.group, t.version) == api_version && t.kind == kind
    }) else {
        return Err(format!(
            "no entry of the Katalog reconciles {kind} ({api_version})"
        ));
    };
    let name = cr["metadata"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .ok_or("a CR without metadata.name")?
        .to_string();
    let entry: &CrdEntry = &sim.shared.entry;
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
    Ok(())
}

/// Delivers the in-memory state to the entry's caches, as its watches would.
fn sync(sim: &mut SimEntry) {
    let declared = sim
        .shared
        .entry
        .operator_box
        .pre_reconcile
        .sentinels
        .clone();
    let crs = sim.memory.crs();
    let children: Vec<Vec<Value>> = sim
        .shared
        .children
        .iter()
        .map(|t| sim.memory.children_of_type(t))
        .collect();
    let mut st = sim.shared.lock();
    st.crs.clear();
    for (key, value) in crs {
        let s = sentinels(&declared, sim.previous.get(&key), &value);
        st.sentinels.insert(key.clone(), s);
        sim.previous.insert(key.clone(), value.clone());
        match serde_json::from_value::<DynamicObject>(value) {
            Ok(obj) => {
                st.crs.insert(key, obj);
            }
            Err(e) => {
                tracing::error!(%key, error = %e, "the simulated CR is not a Kubernetes object; skipped")
            }
        }
    }
    for (i, list) in children.into_iter().enumerate() {
        st.children[i] = list
            .into_iter()
            .filter_map(|v| {
                serde_json::from_value::<DynamicObject>(v)
                    .inspect_err(|e| tracing::error!(error = %e, "a simulated child is not a Kubernetes object; skipped"))
                    .ok()
            })
            .map(|o| (key_of(&o), o))
            .collect();
    }
}
