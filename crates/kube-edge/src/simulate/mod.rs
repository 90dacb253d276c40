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

use crate::process::Process;
use crate::reconcile::Success;

mod check;
mod memory;
mod types;
mod world;

pub use check::{Checked, check};
#[cfg(test)]
pub(crate) use memory::MemoryCluster;
pub use memory::{Change, diff, merge};
pub use world::{SimulateError, SimulateOptions};
use world::{build_entries, place_cr};

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
    let started = Instant::now();
    let process = Arc::new(Process::new(true, crate::shard_set::ShardSet::single()));
    let mut entries = build_entries(&katalog, &options, &process)?;
    for cr in crs {
        place_cr(&entries, cr)?;
    }
    let mut cycles = Vec::new();
    let mut quiet = 0;
    let mut failed = false;
    for cycle in 1..=options.cycles.max(1) {
        let mut calls = Vec::new();
        for (name, sim) in &mut entries {
            sim.sync();
            for (key, reason) in sim.due(cycle == 1) {
                let ran = sim.run(key.clone(), reason).await;
                let (result, called) = match ran {
                    None => continue,
                    Some(Ok(Success::Gated(why))) => (format!("gated: {why}"), false),
                    Some(Ok(_)) => ("ok".to_string(), true),
                    Some(Err(e)) => {
                        failed = true;
                        (format!("error: {e}"), e.reached_the_service())
                    }
                };
                calls.push(Call {
                    entry: name.clone(),
                    key,
                    result,
                    called,
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
    let service: Duration = entries.values().map(|s| s.timed.spent()).sum();
    let mut objects = BTreeMap::new();
    for sim in entries.values() {
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
        objects,
        ork_time: started.elapsed().saturating_sub(service),
    })
}
