//! `ork simulate`: the very reconcile code of `ork run` (gates, request, call, response checks,
//! intents, owner references, prune, status, events, health) against an in-memory cluster.
//! Each cycle reconciles every CR once and calls the real service (HTTP or exec), until two
//! cycles in a row change nothing (steady) or the cycle limit is reached.

mod memory;
mod tap;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::core::DynamicObject;
use kube::discovery::ApiResource;
use ork_engine::gate::sentinels;
use ork_engine::queue::Reason;
use ork_katalog::{CrdEntry, Katalog, ManagedResource};
use ork_protocol::ManagedType;
use ork_remote::HttpTransport;
use serde::Serialize;
use serde_json::{Value, json};

pub use memory::{Change, diff, merge};

use crate::auth::CredentialSource;
use crate::controller::{Parts, RunOptions, Shared, key_of};
use crate::discovery::ChildType;
use crate::runtime::Runtime;
use memory::MemoryCluster;
pub(crate) use tap::Tap;

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

/// Core and common built-in types, for managed resources declared without `kind`/`version`.
const BUILTIN: &[(&str, &str, &str, &str, bool)] = &[
    // group, plural, version, kind, namespaced
    ("", "configmaps", "v1", "ConfigMap", true),
    ("", "secrets", "v1", "Secret", true),
    ("", "services", "v1", "Service", true),
    ("", "serviceaccounts", "v1", "ServiceAccount", true),
    (
        "",
        "persistentvolumeclaims",
        "v1",
        "PersistentVolumeClaim",
        true,
    ),
    ("", "namespaces", "v1", "Namespace", false),
    ("apps", "deployments", "v1", "Deployment", true),
    ("apps", "statefulsets", "v1", "StatefulSet", true),
    ("apps", "daemonsets", "v1", "DaemonSet", true),
    ("batch", "jobs", "v1", "Job", true),
    ("batch", "cronjobs", "v1beta1", "CronJob", true),
    ("networking.k8s.io", "ingresses", "v1", "Ingress", true),
    (
        "policy",
        "poddisruptionbudgets",
        "v1beta1",
        "PodDisruptionBudget",
        true,
    ),
    ("rbac.authorization.k8s.io", "roles", "v1", "Role", true),
    (
        "rbac.authorization.k8s.io",
        "rolebindings",
        "v1",
        "RoleBinding",
        true,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        "v1",
        "ClusterRole",
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        "v1",
        "ClusterRoleBinding",
        false,
    ),
];

/// Resolves a managed resource without an API server: the Katalog's own `kind`/`version`, a
/// built-in type, or a `--crd` file.
fn offline_type(
    m: &ManagedResource,
    katalog: &Katalog,
    crds: &[Value],
) -> Result<ChildType, String> {
    let builtin = BUILTIN
        .iter()
        .find(|(g, p, ..)| *g == m.group && *p == m.plural);
    let crd = crds.iter().find(|c| {
        c["spec"]["group"].as_str() == Some(m.group.as_str())
            && c["spec"]["names"]["plural"].as_str() == Some(m.plural.as_str())
    });
    let entry = katalog
        .spec
        .crds
        .values()
        .find(|e| e.api_types.group == m.group && e.api_types.plural == m.plural);
    let kind = m
        .kind
        .clone()
        .or_else(|| builtin.map(|b| b.3.to_string()))
        .or_else(|| crd.and_then(|c| c["spec"]["names"]["kind"].as_str().map(str::to_string)))
        .or_else(|| entry.map(|e| e.api_types.kind.clone()));
    let version = m
        .version
        .clone()
        .or_else(|| builtin.map(|b| b.2.to_string()))
        .or_else(|| {
            crd.and_then(|c| {
                c["spec"]["versions"][0]["name"]
                    .as_str()
                    .map(str::to_string)
            })
        })
        .or_else(|| entry.map(|e| e.api_types.version.clone()));
    let (Some(kind), Some(version)) = (kind, version) else {
        return Err(format!(
            "managed resource {}/{}: declare `kind` and `version` in the Katalog or pass its CRD with --crd to simulate it",
            if m.group.is_empty() { "core" } else { &m.group },
            m.plural
        ));
    };
    let namespaced = builtin.map(|b| b.4).unwrap_or_else(|| {
        crd.and_then(|c| c["spec"]["scope"].as_str())
            .map_or_else(|| entry.is_none_or(|e| e.namespaced), |s| s == "Namespaced")
    }) && !m.cluster_scoped;
    let api_version = if m.group.is_empty() {
        version.clone()
    } else {
        format!("{}/{version}", m.group)
    };
    Ok(ChildType {
        managed: ManagedType {
            group: m.group.clone(),
            version: version.clone(),
            kind: kind.clone(),
            plural: m.plural.clone(),
            namespaced,
            namespaces: m.namespaces.clone(),
            cluster_scoped: m.cluster_scoped,
        },
        resource: ApiResource {
            group: m.group.clone(),
            version,
            api_version,
            kind,
            plural: m.plural.clone(),
        },
    })
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
                transport: transport.clone(),
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

/// `ork check`'s verdict on one CR's answer.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub key: String,
    /// The call itself failed (no answer to check).
    pub call_error: Option<String>,
    pub lint: ork_protocol::Lint,
}

/// Sends the request of each CR to `entry`'s service once and lints every answer.
///
/// # Errors
/// As [`simulate`], or an entry that is not in the Katalog.
pub async fn check(
    katalog: Katalog,
    entry: &str,
    crs: Vec<Value>,
    options: SimulateOptions,
) -> Result<Vec<Checked>, String> {
    if !katalog.spec.crds.contains_key(entry) {
        let names: Vec<&String> = katalog.spec.crds.keys().collect();
        return Err(format!(
            "no entry {entry:?} in the Katalog (entries: {names:?})"
        ));
    }
    let runtime = Runtime::new(&katalog, true);
    let transport = HttpTransport::new().map_err(|e| e.to_string())?;
    let run_options = RunOptions {
        ork_namespace: std::env::var("ORK_NAMESPACE").unwrap_or_else(|_| "default".into()),
        katalog_dir: options.katalog_dir.clone(),
    };
    let mut entries = build_entries(
        &katalog,
        &options,
        &run_options,
        runtime.process(),
        &transport,
        None,
    )?;
    for cr in crs {
        place_cr(&entries, cr)?;
    }
    let sim = entries
        .get_mut(entry)
        .ok_or_else(|| format!("entry {entry:?} has no remote reconciler"))?;
    sync(sim);
    let mut keys: Vec<String> = sim.shared.lock().crs.keys().cloned().collect();
    keys.sort();
    if keys.is_empty() {
        return Err(format!("none of the CRs is reconciled by entry {entry:?}"));
    }
    let mut out = Vec::new();
    for key in keys {
        let checked = match crate::reconcile::probe(&sim.shared, &key).await {
            Ok((answer, policy)) => Checked {
                key,
                call_error: None,
                lint: ork_protocol::lint(&answer, &policy),
            },
            Err(e) => Checked {
                key,
                call_error: Some(e),
                lint: ork_protocol::Lint::default(),
            },
        };
        out.push(checked);
    }
    Ok(out)
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
