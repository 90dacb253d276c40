//! `ork conform`: one entry's requests built as `ork run` builds them, over CRs placed as
//! `ork simulate` places them, and sent through the entry's real transport as often, in what
//! form and with how many in flight as the caller chooses.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ork_engine::queue::Reason;
use ork_katalog::Katalog;
use ork_protocol::Policy;
use serde_json::Value;

use super::world::{SimEntry, SimulateError, SimulateOptions, build_entries, place_cr};
use crate::error::ReconcileError;
use crate::process::Process;

/// A request as `ork run` would send it, not sent yet.
#[derive(Debug, Clone)]
pub struct Built {
    pub key: String,
    /// The CR as the API server would store it (an endpoint template renders over it).
    pub cr: Value,
    /// The request body.
    pub body: Vec<u8>,
    /// What the answer must satisfy.
    pub policy: Policy,
}

/// How one call went.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The raw answer, or why there is none (the credential redacted).
    pub answer: Result<Vec<u8>, String>,
    pub took: Duration,
}

/// Why no request was built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unbuilt {
    /// A validation rule of the Katalog denies the CR: `ork run` would not call the service.
    #[error("{0}")]
    Denied(String),
    /// No CR under the key, a template that fails, a CR that cannot be encoded.
    #[error("{0}")]
    Failed(String),
}

/// One entry of a Katalog, ready to build and send requests for the CRs it was given.
pub struct Prober {
    sim: SimEntry,
    /// The other entries: `observe.cross` reads their CRs through the registry.
    _others: BTreeMap<String, SimEntry>,
}

impl std::fmt::Debug for Prober {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prober")
            .field("entry", &self.sim.ctx().name)
            .finish_non_exhaustive()
    }
}

impl Prober {
    /// Builds `entry` as `ork simulate` does and stores `crs` in its memory.
    ///
    /// # Errors
    /// As `ork simulate`; an entry that is not in the Katalog or has no remote reconciler; a
    /// CR that entry does not reconcile.
    pub fn new(
        katalog: &Katalog,
        entry: &str,
        crs: Vec<Value>,
        options: &SimulateOptions,
    ) -> Result<Prober, SimulateError> {
        if !katalog.spec.crds.contains_key(entry) {
            let names: Vec<&String> = katalog.spec.crds.keys().collect();
            return Err(SimulateError::Input(format!(
                "no entry {entry:?} in the Katalog (entries: {names:?})"
            )));
        }
        let process = Arc::new(Process::new(true, crate::shard_set::ShardSet::single()));
        let mut entries = build_entries(katalog, options, &process)?;
        for cr in crs {
            let placed = place_cr(&entries, cr)?;
            if placed != entry {
                return Err(SimulateError::Input(format!(
                    "a CR of entry {placed:?}, not of {entry:?}"
                )));
            }
        }
        let mut sim = entries.remove(entry).ok_or_else(|| {
            SimulateError::Input(format!(
                "entry {entry:?} is disabled or has no remote reconciler"
            ))
        })?;
        sim.sync();
        Ok(Prober {
            sim,
            _others: entries,
        })
    }

    /// The keys of the CRs it holds, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys = self.sim.state.keys();
        keys.sort();
        keys
    }

    /// The request `ork run` would send for `key` now: a finalize call when `finalizing`.
    ///
    /// # Errors
    /// No CR under `key`, or a request that cannot be built (a validation rule denies it, a
    /// template fails).
    pub fn build(&mut self, key: &str, finalizing: bool) -> Result<Built, Unbuilt> {
        let job = self
            .sim
            .state
            .job(key, Reason::Create, false)
            .ok_or_else(|| Unbuilt::Failed(format!("no CR {key}")))?;
        let (cr, body, policy) = self
            .sim
            .worker
            .probe_request(&job, finalizing)
            .map_err(|e| match e {
                ReconcileError::Denied(why) => Unbuilt::Denied(why),
                other => Unbuilt::Failed(other.to_string()),
            })?;
        Ok(Built {
            key: key.to_string(),
            cr,
            body,
            policy,
        })
    }

    /// Sends `body` (the request of `cr`, as built or altered) through the entry's transport,
    /// with the entry's timeout and size limit.
    pub async fn send(&self, cr: &Value, body: Vec<u8>) -> Sent {
        let started = Instant::now();
        let answer = self
            .sim
            .worker
            .probe_send(cr, body)
            .await
            .map_err(|e| self.sim.worker.transport.redact(&e.to_string()));
        Sent {
            answer,
            took: started.elapsed(),
        }
    }
}
