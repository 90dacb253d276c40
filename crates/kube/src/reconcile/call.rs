//! The exchange with the service: the request built, sent through the transport (timed for
//! the metrics), and the whole answer checked.

use std::time::Instant;

use ork_protocol::{Decision, Policy};
use serde_json::Value;

use super::exchange::{Exchange, recordable};
use super::job::{Job, Ports};
use super::protocol;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::ports::{Owner, Transport};

/// What a call to the service left: the exchange (request, answer and time, for the flight
/// recorder, whatever the outcome) and the answer checked whole.
pub(super) struct Asked {
    pub exchange: Exchange,
    pub decision: Result<Decision, ReconcileError>,
}

/// Builds the request for `job`, sends it, and checks the whole answer. A finalize call
/// (`finalizing`) skips validation rules: a CR being deleted must be able to go.
pub(super) async fn ask(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    owner: &Owner,
    finalizing: bool,
) -> Asked {
    let protocol = protocol::of(ctx);
    let built = async {
        let cr = serde_json::to_value(job.cr.as_ref())
            .map_err(|e| ReconcileError::Request(format!("encoding the CR: {e}")))?;
        let related = protocol.related(ports, job, &cr).await?;
        let body = protocol.request(job, &cr, related, finalizing)?;
        Ok::<_, ReconcileError>((cr, body))
    }
    .await;
    let (cr, body) = match built {
        Ok(built) => built,
        Err(e) => {
            return Asked {
                exchange: Exchange::default(),
                decision: Err(e),
            };
        }
    };
    let transport = protocol.transport(ports, finalizing);
    let (exchange, answer) = exchanged(ctx, ports, transport, &cr, body).await;
    let redact = |t: &str| transport.redact(t);
    let decision =
        answer.and_then(|a| protocol.decide(job, &cr, &a, &protocol.policy(owner), &redact));
    Asked { exchange, decision }
}

/// Sends `body` through `transport`; the request, the answer and the time taken as the
/// flight recorder keeps them, with the answer.
async fn exchanged(
    ctx: &EntryContext,
    ports: Ports<'_>,
    transport: &dyn Transport,
    cr: &Value,
    body: Vec<u8>,
) -> (Exchange, Result<Vec<u8>, ReconcileError>) {
    let mut exchange = Exchange {
        request: Some(recordable(&body, transport)),
        ..Exchange::default()
    };
    let started = Instant::now();
    let answer = call(ctx, ports, transport, cr, body).await;
    exchange.call = Some(started.elapsed());
    if let Ok(a) = &answer {
        exchange.answer = Some(recordable(a, transport));
    }
    (exchange, answer)
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

/// `ork check`: the request `ork run` would send for `job` (with what the protocol reads for
/// it), sent once; every way its answer breaks the protocol.
///
/// # Errors
/// A request that cannot be built, or a call that failed.
pub(crate) async fn probe(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
) -> Result<ork_protocol::Lint, ReconcileError> {
    let owner = owner_of(ctx, job)?;
    let cr = serde_json::to_value(job.cr.as_ref())
        .map_err(|e| ReconcileError::Request(format!("encoding the CR: {e}")))?;
    let protocol = protocol::of(ctx);
    let related = protocol.related(ports, job, &cr).await?;
    let body = protocol.request(job, &cr, related, false)?;
    let answer = call(ctx, ports, protocol.transport(ports, false), &cr, body).await?;
    Ok(protocol.lint(&answer, &protocol.policy(&owner)))
}

fn owner_of(ctx: &EntryContext, job: &Job) -> Result<Owner, ReconcileError> {
    ctx.owner(&job.cr)
        .ok_or_else(|| ReconcileError::Request("the CR has no metadata.uid".into()))
}

/// `ork conform`: the CR as JSON, the request `ork run` would send for `job` (a finalize call
/// when `finalizing`; nothing read beside it), and the policy its answer must satisfy.
///
/// # Errors
/// A CR without a uid, or a request that cannot be built.
pub(crate) fn probe_request(
    ctx: &EntryContext,
    job: &Job,
    finalizing: bool,
) -> Result<(Value, Vec<u8>, Policy), ReconcileError> {
    let owner = owner_of(ctx, job)?;
    let cr = serde_json::to_value(job.cr.as_ref())
        .map_err(|e| ReconcileError::Request(format!("encoding the CR: {e}")))?;
    let protocol = protocol::of(ctx);
    let body = protocol.request(job, &cr, Default::default(), finalizing)?;
    Ok((cr, body, protocol.policy(&owner)))
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
