//! One reconcile over explicit ports: gate, build the request ([`request`]), call the service
//! through the [`Transport`], check the whole answer, apply and prune children ([`children`]),
//! record status, annotations and events ([`record`]); a CR being deleted goes through
//! [`finalize`] instead. It reads a [`Job`] the controller gathered and returns what it did
//! ([`Done`]); it owns no state, so `ork run` and `ork simulate` run exactly this.

mod children;
mod finalize;
mod record;
mod request;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Resource;
use kube::core::DynamicObject;
use ork_engine::health::Health;
use ork_engine::queue::Reason;
use ork_katalog::Sentinel;
use ork_protocol::{Decision, Outcome, Policy};
use serde_json::Value;

use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::{ChildRef, OwnWrites};
use crate::metrics::Metrics;
use crate::ports::{Cluster, Owner, Transport};
use crate::registry::CrossError;

pub(crate) use record::record_failure;

/// Everything one reconcile reads, gathered before it starts.
pub(crate) struct Job {
    pub key: String,
    pub cr: Arc<DynamicObject>,
    pub reason: Reason,
    /// 1 for the first try, n after n-1 failures in a row.
    pub attempt: u32,
    pub sentinels: BTreeMap<Sentinel, bool>,
    /// The children this CR owns, as the watches last saw them.
    pub children: Vec<(ChildRef, Arc<DynamicObject>)>,
    /// `prepared.cross`, or why a selector failed.
    pub cross: Result<BTreeMap<String, Value>, CrossError>,
    /// The entry's health (request, gates).
    pub health: Health,
    /// How many reconciles of this key ran before (for the metrics annotation).
    pub count: u64,
}

/// Looks up any child the watches know, whoever owns it.
pub(crate) trait LiveChildren: Send + Sync {
    fn get(&self, child: &ChildRef) -> Option<Arc<DynamicObject>>;
}

/// What a reconcile works through.
#[derive(Clone, Copy)]
pub(crate) struct Ports<'a> {
    pub cluster: &'a dyn Cluster,
    pub transport: &'a dyn Transport,
    pub live: &'a dyn LiveChildren,
    pub metrics: &'a Metrics,
}

/// How a reconcile that did not fail ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Success {
    /// The service answered; call again after this delay if it asked.
    Reconciled { requeue_after: Option<Duration> },
    /// The reconcile gate was closed (not a failure).
    Gated(String),
    /// A CR being deleted that carries no finalizer of ork's: nothing to do.
    Deleting,
    /// The finalizer is removed.
    Finalized,
    /// The service has not finalized yet: ask again after this delay.
    FinalizePending(Duration),
}

/// What a reconcile did.
#[derive(Debug)]
pub(crate) struct Done {
    pub outcome: Result<Success, ReconcileError>,
    /// ork's own writes, for the index.
    pub own: OwnWrites,
}

/// Runs one reconcile of `job`.
pub(crate) async fn reconcile(ctx: &EntryContext, ports: Ports<'_>, job: &Job) -> Done {
    let started = Instant::now();
    let Some(owner) = ctx.owner(&job.cr) else {
        // The API server always sets a UID; a CR without one cannot own anything.
        let err = ReconcileError::Request("the CR has no metadata.uid".into());
        return Done {
            outcome: Err(err),
            own: OwnWrites::default(),
        };
    };
    if job.cr.meta().deletion_timestamp.is_some() {
        return finalize::finalize(ctx, ports, job, &owner).await;
    }
    let mut own = OwnWrites::default();
    if let Some(gate) = &ctx.reconcile_gate
        && let Err(why) = gate.evaluate(&gate_context(&job.cr, &job.health), &job.sentinels)
    {
        tracing::info!(reason = %why, "gated");
        ports
            .metrics
            .reconciled(&ctx.name, "gated", started.elapsed());
        return Done {
            outcome: Ok(Success::Gated(why)),
            own,
        };
    }
    let result = call_and_apply(ctx, ports, job, &owner, &mut own).await;
    let elapsed = started.elapsed();
    let changed_children = !own.applied.is_empty() || !own.deleted.is_empty();
    let (outcome, decision) = match result {
        Err(e) => (Err(e), None),
        Ok(d) => {
            let outcome = match &d.outcome {
                Outcome::Error { message } => Err(ReconcileError::ServiceReported(
                    ports.transport.redact(message),
                )),
                Outcome::Requeue { after } => Ok(Success::Reconciled {
                    requeue_after: Some(*after),
                }),
                Outcome::Ok { requeue_after } => Ok(Success::Reconciled {
                    requeue_after: *requeue_after,
                }),
            };
            (outcome, Some(d))
        }
    };
    ports.metrics.reconciled(
        &ctx.name,
        if outcome.is_ok() { "ok" } else { "error" },
        elapsed,
    );
    match &outcome {
        Ok(_) => tracing::info!(ms = elapsed.as_millis() as u64, "reconciled"),
        Err(e) => tracing::warn!(ms = elapsed.as_millis() as u64, error = %e, "reconcile failed"),
    }
    record::record(
        ctx,
        ports,
        job,
        record::Outcome {
            error: outcome.as_ref().err(),
            decision: decision.as_ref(),
            changed_children,
            elapsed,
        },
    )
    .await;
    Done { outcome, own }
}

/// Builds the request, calls, checks and applies; an answer with `error` is returned as is (the
/// caller records it), nothing of it applied.
async fn call_and_apply(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    owner: &Owner,
    own: &mut OwnWrites,
) -> Result<Decision, ReconcileError> {
    finalize::ensure_finalizer(ctx, ports, &job.cr).await?;
    let decision = ask(ctx, ports, job, owner, false).await?;
    if !matches!(decision.outcome, Outcome::Error { .. }) {
        children::apply(ctx, ports, job, owner, &decision, own).await?;
    }
    Ok(decision)
}

/// Builds the request for `job`, sends it, and checks the whole answer. A finalize call
/// (`finalizing`) skips validation rules: a CR being deleted must be able to go.
async fn ask(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    owner: &Owner,
    finalizing: bool,
) -> Result<Decision, ReconcileError> {
    let cr = serde_json::to_value(job.cr.as_ref())
        .map_err(|e| ReconcileError::Request(format!("encoding the CR: {e}")))?;
    let body = request::build(ctx, job, &cr, finalizing)?;
    let answer = call(ctx, ports, &cr, body).await?;
    ork_protocol::decide(&answer, &ctx.policy(owner))
        .map_err(|e| ReconcileError::InvalidResponse(ports.transport.redact(&e.to_string())))
}

/// Sends `body`, timing the service for the metrics.
async fn call(
    ctx: &EntryContext,
    ports: Ports<'_>,
    cr: &Value,
    body: Vec<u8>,
) -> Result<Vec<u8>, ReconcileError> {
    let started = Instant::now();
    let answer = ports.transport.call(cr, body).await;
    ports.metrics.remote_call(
        &ctx.name,
        if answer.is_ok() { "ok" } else { "error" },
        started.elapsed(),
    );
    Ok(answer?)
}

/// `ork check`: the request `ork run` would send for `job`, sent once; the raw answer and what
/// it must satisfy, for a lint that reports every problem.
///
/// # Errors
/// A request that cannot be built, or a call that failed.
pub(crate) async fn probe(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
) -> Result<(Vec<u8>, Policy), ReconcileError> {
    let owner = ctx
        .owner(&job.cr)
        .ok_or_else(|| ReconcileError::Request("the CR has no metadata.uid".into()))?;
    let cr = serde_json::to_value(job.cr.as_ref())
        .map_err(|e| ReconcileError::Request(format!("encoding the CR: {e}")))?;
    let body = request::build(ctx, job, &cr, false)?;
    let answer = call(ctx, ports, &cr, body).await?;
    Ok((answer, ctx.policy(&owner)))
}

/// The object a gate sees: the CR plus `health` (the entry's health summary).
pub(crate) fn gate_context(cr: &DynamicObject, health: &Health) -> Value {
    let mut ctx = serde_json::to_value(cr).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut ctx {
        m.insert(
            "health".into(),
            serde_json::to_value(health).unwrap_or(Value::Null),
        );
    }
    ctx
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}
