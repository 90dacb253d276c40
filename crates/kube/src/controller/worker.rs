//! The reconcile side of an entry: runs the [`Work`] the entry loop hands out, through the
//! entry's ports, and gives back how it ended ([`Finished`]). It reads the caches (never writes
//! them) and holds no entry state; a panic in a reconcile is caught and recorded as that
//! reconcile's failure.

use std::sync::Arc;

use futures::FutureExt;

use super::live::LiveView;
use super::rollout::Route;
use super::state::{Finished, Work};
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::ports::{Cluster, Transport};
use crate::process::Process;
use crate::reconcile::{Done, Job, Ports, reconcile, record_failure, sweep};

/// What reconciles of one entry work through.
pub(crate) struct Worker {
    pub ctx: Arc<EntryContext>,
    pub cluster: Arc<dyn Cluster>,
    pub transport: Arc<dyn Transport>,
    /// The transport of the rollout's candidate endpoint, when the entry has one.
    pub candidate: Option<Arc<dyn Transport>>,
    pub live: Arc<LiveView>,
    pub process: Arc<Process>,
}

impl Worker {
    fn ports(&self) -> Ports<'_> {
        self.ports_of(Route::Stable)
    }

    /// The ports of a reconcile served by `route`'s endpoint.
    fn ports_of(&self, route: Route) -> Ports<'_> {
        let transport = match (route, &self.candidate) {
            (Route::Candidate, Some(candidate)) => candidate.as_ref(),
            _ => self.transport.as_ref(),
        };
        Ports {
            cluster: self.cluster.as_ref(),
            transport,
            live: self.live.as_ref(),
            metrics: &self.process.metrics,
        }
    }

    /// Runs `work`: its sweep, then its reconcile.
    pub async fn run(&self, work: Work) -> Finished {
        let started = std::time::Instant::now();
        let Work {
            key,
            reason,
            strays,
            job,
            route,
        } = work;
        // Without a candidate's transport (`ork simulate`, `ork diff`) the stable endpoint
        // serves every reconcile, and says so.
        let route = if self.candidate.is_some() {
            route
        } else {
            Route::Stable
        };
        let swept = if strays.is_empty() {
            None
        } else {
            Some(sweep(&self.ctx, self.ports(), &key, strays).await)
        };
        let done = match &job {
            Some(job) => Some(self.reconcile(job, route).await),
            None => None,
        };
        let error = done
            .as_ref()
            .and_then(|d| d.outcome.as_ref().err())
            .map(|e| self.ports_of(route).transport.redact(&e.to_string()));
        Finished {
            key,
            reason,
            swept,
            done,
            attempt: job.as_ref().map_or(1, |j| j.attempt),
            took: started.elapsed(),
            error,
            route,
        }
    }

    /// One reconcile; a panic is caught and recorded as its failure.
    async fn reconcile(&self, job: &Job, route: Route) -> Done {
        let ports = self.ports_of(route);
        let caught = std::panic::AssertUnwindSafe(reconcile(&self.ctx, ports, job))
            .catch_unwind()
            .await;
        match caught {
            Ok(done) => done,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                tracing::error!(panic = %what, "reconcile panicked; recorded as a failure");
                let error = ReconcileError::Panicked(what);
                let later = record_failure(&self.ctx, ports, job, &error).await;
                Done {
                    later,
                    ..Done::early(Err(error), Default::default())
                }
            }
        }
    }

    /// `ork check`: the request of `job`, sent once, and every way its answer breaks the protocol.
    pub async fn probe(&self, job: &Job) -> Result<ork_protocol::Lint, ReconcileError> {
        crate::reconcile::probe(&self.ctx, self.ports(), job).await
    }

    /// `ork conform`: the CR as JSON, the request of `job` (a finalize call when `finalizing`)
    /// and the policy its answer must satisfy; nothing is sent.
    pub fn probe_request(
        &self,
        job: &Job,
        finalizing: bool,
    ) -> Result<(serde_json::Value, Vec<u8>, ork_protocol::Policy), ReconcileError> {
        crate::reconcile::probe_request(&self.ctx, job, finalizing)
    }

    /// `ork conform`: sends `body`, a request for `cr`, through the entry's transport.
    pub async fn probe_send(
        &self,
        cr: &serde_json::Value,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, ReconcileError> {
        crate::reconcile::probe_send(&self.ctx, self.ports(), cr, body).await
    }

    /// Writes what `lane` holds now, in this task (`ork simulate`: deterministic order).
    pub async fn flush_lane(&self, lane: &super::lane::Lane) {
        for later in lane.take(usize::MAX) {
            later.write(self.cluster.as_ref()).await;
        }
    }
}
