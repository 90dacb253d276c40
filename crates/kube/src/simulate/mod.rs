//! `ork simulate`: the controller of `ork run` (index, enqueue gate, reconcile, response checks,
//! intents, owner references, prune, status, events, health) against an in-memory cluster. Each
//! cycle delivers the in-memory state to the stores and the index as a watch re-list would,
//! then reconciles: in the first cycle what the index triggered (the enqueue gate applies), in
//! later ones every CR, as a resync. It calls the real service (HTTP or exec) until two cycles
//! in a row change nothing (steady) or the cycle limit is reached.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ork_katalog::Katalog;
use serde::Serialize;
use serde_json::Value;

use crate::error::ReconcileError;
use crate::ports::{CallFailed, ReplayError};
use crate::process::Process;
use crate::reconcile::Success;

mod admission;
mod check;
pub(crate) mod memory;
mod probe;
mod types;
pub(crate) mod world;

pub use crate::auth::OfflineSecrets;
pub use admission::{Admitted, OfflineAdmission, Write};
pub use check::{Checked, check};
#[cfg(test)]
pub(crate) use memory::MemoryCluster;
pub use memory::{Change, diff, merge};
pub use probe::{Built, Prober, Sent, Unbuilt};
pub use world::{SimulateError, SimulateOptions};
use world::{build_entries, place_child, place_cr};

/// One reconcile of one CR in a cycle.
#[derive(Debug, Clone, Serialize)]
pub struct Call {
    pub entry: String,
    pub key: String,
    /// `ok`, `gated: <why>` or `error: <message>`.
    pub result: String,
    /// Whether the service was called (not when a gate, a validation rule or the request
    /// itself stopped the reconcile before).
    pub called: bool,
    /// For an error, the condition reason naming the step that failed (`AnswerRejected`,
    /// `NotOwned`…), as `Ready=False` carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
    /// The CRs at the end (status and all), as `Kind namespace/name` → object. Not in the JSON
    /// report: condition times differ run to run.
    #[serde(skip)]
    pub crs: BTreeMap<String, Value>,
    /// ork's own time: the whole run minus the time spent in the service.
    #[serde(skip)]
    pub ork_time: Duration,
    /// With `--replay`: the recording ended after this many exchanges, and the run with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_ended: Option<usize>,
}

/// What is in the cluster before the first cycle.
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// The CRs to reconcile.
    pub crs: Vec<Value>,
    /// Objects already in the cluster (a child someone else owns, one left from before), in
    /// the memory of every entry that manages their type.
    pub children: Vec<Value>,
    /// Other entries' CRs, for `observe.cross`: in their entry's store, never reconciled,
    /// unless their entry also reconciles one of `crs`.
    pub cross: Vec<Value>,
    /// Objects the entries' `observe.inputs` read (a Secret, a ConfigMap, a Namespace): what
    /// each entry's input watches would hold.
    pub inputs: Vec<Value>,
}

/// Runs the simulation.
///
/// # Errors
/// A CR no entry reconciles, a managed type that cannot be resolved offline, a credential that
/// needs a cluster, or a record folder that cannot be created.
pub async fn simulate(
    katalog: Katalog,
    crs: Vec<Value>,
    options: SimulateOptions,
) -> Result<Report, SimulateError> {
    let given = Given {
        crs,
        ..Given::default()
    };
    simulate_given(katalog, given, options).await
}

/// Runs the simulation from `given`: its children and cross objects placed first, then its
/// CRs reconciled cycle by cycle as [`simulate`] does. Only entries that hold one of
/// `given.crs` reconcile; the others only publish their CRs to `observe.cross`.
///
/// # Errors
/// As [`simulate`], or a given object no entry manages or that has no name.
pub async fn simulate_given(
    katalog: Katalog,
    given: Given,
    options: SimulateOptions,
) -> Result<Report, SimulateError> {
    let started = Instant::now();
    let process = Arc::new(Process::new(true, crate::shard_set::ShardSet::single()));
    let mut entries = build_entries(&katalog, &options, &process)?;
    for child in given.children {
        place_child(&entries, child)?;
    }
    for sim in entries.values_mut() {
        sim.hold_inputs(&given.inputs);
    }
    let mut tested = std::collections::BTreeSet::new();
    for cr in given.crs {
        tested.insert(place_cr(&entries, cr)?);
    }
    for cr in given.cross {
        place_cr(&entries, cr)?;
    }
    let mut cycles = Vec::new();
    let mut quiet = 0;
    let mut failed = false;
    let mut replay_ended = None;
    for cycle in 1..=options.cycles.max(1) {
        let mut calls = Vec::new();
        for (name, sim) in &mut entries {
            sim.sync();
            if !tested.contains(name) {
                continue;
            }
            for (key, reason) in sim.due(cycle == 1) {
                let ran = sim.run(key.clone(), reason).await;
                let (result, called, reason) = match ran {
                    None => continue,
                    Some(Err(ReconcileError::CallFailed(CallFailed::Replay(
                        ReplayError::Exhausted { recorded },
                    )))) => {
                        // The recording is over: not a failure of the service's or ork's.
                        replay_ended = Some(recorded);
                        continue;
                    }
                    Some(Ok(Success::Gated(why))) => (format!("gated: {why}"), false, None),
                    Some(Ok(_)) => ("ok".to_string(), true, None),
                    Some(Err(e)) => {
                        failed = true;
                        (
                            format!("error: {e}"),
                            e.reached_the_service(),
                            Some(e.reason().to_string()),
                        )
                    }
                };
                calls.push(Call {
                    entry: name.clone(),
                    key,
                    result,
                    called,
                    reason,
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
        if quiet >= 2 || replay_ended.is_some() {
            break;
        }
    }
    let service: Duration = entries.values().map(|s| s.timed.spent()).sum();
    let mut objects = BTreeMap::new();
    let mut crs = BTreeMap::new();
    for sim in entries.values() {
        let kind = &sim.ctx().cr_resource.kind;
        for (key, cr) in sim.memory.crs() {
            crs.insert(format!("{kind} {key}"), cr);
        }
        for t in &sim.ctx().children {
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
        replay_ended,
        objects,
        crs,
        ork_time: started.elapsed().saturating_sub(service),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `web` answers one Deployment `app` and whether `observe.cross` sent it the Database
    /// `shared-db`; `db` fails every call it gets.
    fn katalog() -> Katalog {
        let text = r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {name: t}
spec:
  crds:
    web:
      apiTypes: {group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}
      operatorBox:
        observe:
          cross: [{crd: db, as: dbs}]
        reconcile:
          default: false
          remote:
            command: ["sh", "-c", "case \"$(cat)\" in *shared-db*) saw=true;; *) saw=false;; esac; echo \"{\\\"result\\\":\\\"ok\\\",\\\"status\\\":{\\\"sawDb\\\":$saw},\\\"resources\\\":[{\\\"type\\\":\\\"deployment\\\",\\\"fields\\\":{\\\"name\\\":\\\"app\\\",\\\"image\\\":\\\"nginx\\\"}}]}\""]
            managedResources: [{group: apps, version: v1, plural: deployments, kind: Deployment}]
    db:
      apiTypes: {group: demo.ork.dev, version: v1, kind: Database, plural: databases}
      operatorBox:
        reconcile:
          default: false
          remote:
            command: ["false"]
            managedResources: [{group: "", version: v1, plural: configmaps, kind: ConfigMap}]
"#;
        ork_katalog::load_str(text, std::path::Path::new("k.yaml")).expect("katalog")
    }

    fn options() -> SimulateOptions {
        // The HTTP client the simulation builds needs a TLS provider, as in the binary.
        let _ = rustls::crypto::ring::default_provider().install_default();
        SimulateOptions {
            cycles: 5,
            katalog_dir: ".".into(),
            crds: vec![],
            record: None,
            replay: None,
            secrets: OfflineSecrets::default(),
        }
    }

    fn given(children: Vec<Value>) -> Given {
        Given {
            crs: vec![
                json!({"apiVersion": "demo.ork.dev/v1", "kind": "WebApp", "metadata": {"name": "a"}}),
            ],
            children,
            cross: vec![
                json!({"apiVersion": "demo.ork.dev/v1", "kind": "Database", "metadata": {"name": "shared-db"}}),
            ],
            inputs: vec![],
        }
    }

    /// `web` reads its Secret `<name>-db` with its values; its service says whether the value
    /// came.
    fn input_katalog() -> Katalog {
        let text = r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {name: t}
spec:
  crds:
    web:
      apiTypes: {group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}
      operatorBox:
        observe:
          inputs:
            - {name: db, apiVersion: v1, kind: Secret, matchName: "{{ .metadata.name }}-db", values: true}
        reconcile:
          default: false
          remote:
            command: ["sh", "-c", "case \"$(cat)\" in *czNjcmV0*) saw=true;; *) saw=false;; esac; echo \"{\\\"result\\\":\\\"ok\\\",\\\"status\\\":{\\\"sawValue\\\":$saw}}\""]
"#;
        ork_katalog::load_str(text, std::path::Path::new("k.yaml")).expect("katalog")
    }

    #[tokio::test]
    async fn given_inputs_reach_the_service_and_a_missing_one_holds_the_cr_back() {
        let cr =
            json!({"apiVersion": "demo.ork.dev/v1", "kind": "WebApp", "metadata": {"name": "a"}});
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "a-db", "namespace": "default"}, "data": {"password": "czNjcmV0"}});
        let given = Given {
            crs: vec![cr.clone()],
            inputs: vec![secret],
            ..Given::default()
        };
        let report = simulate_given(input_katalog(), given, options())
            .await
            .expect("runs");
        assert!(!report.failed, "{:?}", report.cycles);
        assert_eq!(report.crs["WebApp default/a"]["status"]["sawValue"], true);
        let given = Given {
            crs: vec![cr],
            ..Given::default()
        };
        let report = simulate_given(input_katalog(), given, options())
            .await
            .expect("runs");
        let call = &report.cycles[0].calls[0];
        assert_eq!(call.reason.as_deref(), Some("InputMissing"), "{call:?}");
    }

    #[tokio::test]
    async fn cross_objects_reach_the_service_and_are_never_reconciled() {
        let report = simulate_given(katalog(), given(vec![]), options())
            .await
            .expect("runs");
        assert!(!report.failed && report.steady, "{:?}", report.cycles);
        let calls: Vec<&Call> = report.cycles.iter().flat_map(|c| &c.calls).collect();
        assert!(calls.iter().all(|c| c.entry == "web"), "{calls:?}");
        assert_eq!(report.crs["WebApp default/a"]["status"]["sawDb"], true);
        assert!(report.crs.contains_key("Database default/shared-db"));
        assert!(report.objects.contains_key("Deployment default/app"));
    }

    #[tokio::test]
    async fn a_given_child_someone_else_created_is_refused_and_kept() {
        let theirs = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"}, "spec": {"replicas": 7}});
        let report = simulate_given(katalog(), given(vec![theirs]), options())
            .await
            .expect("runs");
        let call = &report.cycles[0].calls[0];
        assert_eq!(call.reason.as_deref(), Some("NotOwned"), "{call:?}");
        assert_eq!(
            report.objects["Deployment default/app"]["spec"]["replicas"],
            7
        );
    }

    #[tokio::test]
    async fn a_given_object_of_a_type_no_entry_manages_is_an_input_error() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
        let err = simulate_given(katalog(), given(vec![secret]), options())
            .await
            .expect_err("refused");
        assert!(
            err.to_string()
                .contains("no entry of the Katalog manages Secret (v1)"),
            "{err}"
        );
    }
}
