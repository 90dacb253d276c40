//! `ork check`: the request `ork run` would send, once per CR, and every way the answer breaks
//! the protocol.

use std::sync::Arc;

use ork_katalog::Katalog;
use serde::Serialize;
use serde_json::Value;

use super::world::{SimulateError, SimulateOptions, build_entries, place_cr};
use crate::error::ReconcileError;
use crate::process::Process;
use ork_engine::queue::Reason;

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
/// As `ork simulate`, or an entry that is not in the Katalog.
pub async fn check(
    katalog: Katalog,
    entry: &str,
    crs: Vec<Value>,
    options: SimulateOptions,
) -> Result<Vec<Checked>, SimulateError> {
    if !katalog.spec.crds.contains_key(entry) {
        let names: Vec<&String> = katalog.spec.crds.keys().collect();
        return Err(SimulateError::Input(format!(
            "no entry {entry:?} in the Katalog (entries: {names:?})"
        )));
    }
    let process = Arc::new(Process::new(true, crate::shard_set::ShardSet::single()));
    let mut entries = build_entries(&katalog, &options, &process)?;
    for cr in crs {
        place_cr(&entries, cr)?;
    }
    let sim = entries
        .get_mut(entry)
        .ok_or_else(|| SimulateError::Input(format!("entry {entry:?} has no remote reconciler")))?;
    sim.sync();
    let mut keys = sim.state.keys();
    keys.sort();
    if keys.is_empty() {
        return Err(SimulateError::Input(format!(
            "none of the CRs is reconciled by entry {entry:?}"
        )));
    }
    let mut out = Vec::new();
    for key in keys {
        let probed = match sim.state.job(&key, Reason::Create, false) {
            Some(job) => sim.worker.probe(&job).await,
            None => Err(ReconcileError::Request(format!("no CR {key}"))),
        };
        let checked = match probed {
            Ok(lint) => Checked {
                key,
                call_error: None,
                lint,
            },
            Err(e) => Checked {
                key,
                call_error: Some(e.to_string()),
                lint: ork_protocol::Lint::default(),
            },
        };
        out.push(checked);
    }
    Ok(out)
}
