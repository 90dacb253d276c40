//! The exchange with the service: the request built, sent through the transport (timed for
//! the metrics), and the whole answer checked.

use std::time::Instant;

use ork_protocol::{Decision, Policy};
use serde_json::Value;

use super::exchange::{Exchange, recordable};
use super::hooks;
use super::job::{Job, Ports};
use super::request;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::ports::{Owner, Transport};

/// Builds the request for `job`, sends it, and checks the whole answer. A finalize call
/// (`finalizing`) skips validation rules: a CR being deleted must be able to go.
pub(super) async fn ask(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    owner: &Owner,
    finalizing: bool,
    exchange: &mut Exchange,
) -> Result<Decision, ReconcileError> {
    let cr = serde_json::to_value(job.cr.as_ref())
        .map_err(|e| ReconcileError::Request(format!("encoding the CR: {e}")))?;
    if let Some(composite) = ctx.composite() {
        let related = hooks::related(ctx, ports, composite, &job.key, &cr).await?;
        let body = hooks::request(ctx, composite, job, &cr, related, finalizing)?;
        let transport = match (&ctx.hooks.finalize, finalizing) {
            (Some(finalize), true) => finalize.as_ref(),
            _ => ports.transport,
        };
        let answer = exchanged(ctx, ports, transport, &cr, body, exchange).await?;
        return hooks::decide(composite, job, &cr, &answer, &ctx.policy(owner), |t| {
            transport.redact(t)
        });
    }
    let body = request::build(ctx, job, &cr, finalizing)?;
    let answer = exchanged(ctx, ports, ports.transport, &cr, body, exchange).await?;
    ork_protocol::decide(&answer, &ctx.policy(owner))
        .map_err(|e| ReconcileError::InvalidResponse(ports.transport.redact(&e.to_string())))
}

/// Sends `body` through `transport`, keeping the request, the answer and the time taken in
/// `exchange` for the flight recorder.
async fn exchanged(
    ctx: &EntryContext,
    ports: Ports<'_>,
    transport: &dyn Transport,
    cr: &Value,
    body: Vec<u8>,
    exchange: &mut Exchange,
) -> Result<Vec<u8>, ReconcileError> {
    exchange.request = Some(recordable(&body, transport));
    let started = Instant::now();
    let answer = call(ctx, ports, transport, cr, body).await;
    exchange.call = Some(started.elapsed());
    let answer = answer?;
    exchange.answer = Some(recordable(&answer, transport));
    Ok(answer)
}

/// Sends `body`, timing the service for the metrics.
async fn call(
    ctx: &EntryContext,
    ports: Ports<'_>,
    transport: &dyn Transport,
    cr: &Value,
    body: Vec<u8>,
) -> Result<Vec<u8>, ReconcileError> {
    let started = Instant::now();
    let answer = transport.call(cr, body).await;
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
    let (cr, body, policy) = probe_request(ctx, job, false)?;
    let answer = call(ctx, ports, ports.transport, &cr, body).await?;
    Ok((answer, policy))
}

/// `ork check` and `ork conform`: the CR as JSON, the request `ork run` would send for `job`
/// (a finalize call when `finalizing`), and the policy its answer must satisfy.
///
/// # Errors
/// A CR without a uid, or a request that cannot be built.
pub(crate) fn probe_request(
    ctx: &EntryContext,
    job: &Job,
    finalizing: bool,
) -> Result<(Value, Vec<u8>, Policy), ReconcileError> {
    let owner = ctx
        .owner(&job.cr)
        .ok_or_else(|| ReconcileError::Request("the CR has no metadata.uid".into()))?;
    let cr = serde_json::to_value(job.cr.as_ref())
        .map_err(|e| ReconcileError::Request(format!("encoding the CR: {e}")))?;
    let body = request::build(ctx, job, &cr, finalizing)?;
    Ok((cr, body, ctx.policy(&owner)))
}

/// `ork conform`: sends `body` (a request [`probe_request`] built, perhaps altered) for `cr`.
///
/// # Errors
/// The call failed.
pub(crate) async fn probe_send(
    ctx: &EntryContext,
    ports: Ports<'_>,
    cr: &Value,
    body: Vec<u8>,
) -> Result<Vec<u8>, ReconcileError> {
    call(ctx, ports, ports.transport, cr, body).await
}
