//! One reconcile over explicit ports: gate, build the request ([`request`]), call the service
//! through the [`Transport`](crate::ports::Transport), check the whole answer, apply and prune children ([`children`]),
//! record status, annotations and events ([`record`]); a CR being deleted goes through
//! [`finalize`] instead. It reads a [`Job`] the controller gathered and returns what it did
//! ([`Done`]); it owns no state, so `ork run` and `ork simulate` run exactly this.

mod call;
mod children;
mod exchange;
mod finalize;
mod job;
mod plan;
pub(crate) mod protocol;
mod record;
mod request;
mod sweep;

use std::time::Instant;

use kube::Resource;
use kube::core::DynamicObject;
use ork_engine::health::Health;
use ork_protocol::{Decision, Outcome};
use serde_json::Value;

use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::OwnWrites;
use crate::ports::Owner;

use call::ask;
pub(crate) use call::{probe, probe_request, probe_send};
pub(crate) use exchange::Exchange;
pub(crate) use job::{Done, Job, Later, LiveChildren, Ports, Presence, Success};
pub(crate) use plan::{Fate, Plan};
pub(crate) use record::{last_seal, record_failure};
pub(crate) use sweep::{Swept, sweep};

/// How soon a reconcile that deleted a child to recreate it (update strategy `Recreate`) runs
/// again to create it.
const RECREATE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs one reconcile of `job`.
pub(crate) async fn reconcile(ctx: &EntryContext, ports: Ports<'_>, job: &Job) -> Done {
    // The Secret values the request carries stay out of whatever ork keeps of the answer.
    let keeps;
    let ports = match &job.inputs {
        Ok(gathered) if !gathered.secrets.is_empty() => {
            keeps = crate::ports::KeepsSecrets {
                inner: ports.transport,
                values: &gathered.secrets,
            };
            Ports {
                transport: &keeps,
                ..ports
            }
        }
        _ => ports,
    };
    let started = Instant::now();
    let Some(owner) = ctx.owner(&job.cr) else {
        // The API server always sets a UID; a CR without one cannot own anything.
        let err = ReconcileError::Request("the CR has no metadata.uid".into());
        return Done::early(Err(err), OwnWrites::default());
    };
    // Before anything reads it, finalizing included: a CR ork could not read whole is never
    // sent to the service, and its failure is recorded on it (condition, event) and retried.
    let undecodable =
        crate::wire::undecodable(job.cr.meta()).map(|why| ReconcileError::Undecodable(why.into()));
    if undecodable.is_none() && job.cr.meta().deletion_timestamp.is_some() {
        return finalize::finalize(ctx, ports, job, &owner).await;
    }
    if undecodable.is_none()
        && let Some(gate) = &ctx.reconcile_gate
        && let Err(why) = gate.evaluate(&gate_context(&job.cr, &job.health), &job.sentinels)
    {
        tracing::info!(reason = %why, "gated");
        ports
            .metrics
            .reconciled(&ctx.name, "gated", started.elapsed());
        return Done::early(Ok(Success::Gated(why)), OwnWrites::default());
    }
    // A DecoratorController leaves alone what its selectors do not select, but an object that
    // stopped matching while it holds the decorator's finalizer is finalized first, as
    // Metacontroller does: its finalize hook called, its attachments deleted, the finalizer
    // removed (the object itself stays).
    if undecodable.is_none()
        && let Some(why) = protocol::of(ctx).unselected(&job.cr)
    {
        if kube::ResourceExt::finalizers(&*job.cr).contains(&ctx.finalizer) {
            tracing::info!(reason = %why, "no longer decorated: finalizing");
            return finalize::finalize(ctx, ports, job, &owner).await;
        }
        tracing::debug!(reason = %why, "not decorated");
        return Done::early(Ok(Success::Gated(why)), OwnWrites::default());
    }
    let Attempt {
        exchange,
        plan,
        own,
        result,
    } = match undecodable {
        Some(e) => Attempt::failed(e),
        None => call_and_apply(ctx, ports, job, &owner).await,
    };
    let elapsed = started.elapsed();
    let recreating = plan.recreates().next().is_some();
    let changed_children = !own.applied.is_empty() || !own.deleted.is_empty() || recreating;
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
                // A child deleted to be recreated comes back on the next reconcile, soon.
                Outcome::Ok { requeue_after } if recreating => Ok(Success::Reconciled {
                    requeue_after: Some(
                        requeue_after.map_or(RECREATE_AFTER, |d| d.min(RECREATE_AFTER)),
                    ),
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
    if let Err(e) = &outcome {
        ports.metrics.failed(&ctx.name, e.reason());
    }
    match &outcome {
        // A reconcile that changed nothing (every resync at rest) is not news at `info`.
        Ok(_) if changed_children => tracing::info!(
            ms = elapsed.as_millis() as u64,
            changes = %plan,
            "reconciled"
        ),
        Ok(_) => tracing::debug!(ms = elapsed.as_millis() as u64, "reconciled, no change"),
        Err(e) => tracing::warn!(ms = elapsed.as_millis() as u64, error = %e, "reconcile failed"),
    }
    let seal = outcome.is_ok().then(|| seal_after(ctx, job, &own));
    let recorded = record::record(
        ctx,
        ports,
        job,
        record::Outcome {
            error: outcome.as_ref().err(),
            decision: decision.as_ref(),
            changed_children,
            elapsed,
            seal,
        },
    )
    .await;
    let later = recorded.later;
    // The children are right but the CR does not say so: retried (the service is asked again,
    // at least once as always) until its status tells the truth.
    let outcome = match (outcome, recorded.status_failed) {
        (Ok(_), Some(e)) => Err(ReconcileError::WriteFailed(e)),
        (outcome, _) => outcome,
    };
    // An empty plan says something only of an answer that was applied ("none asked for"); an
    // answer with `error` is not applied, and its record keeps no plan.
    let planned = !plan.steps.is_empty() || outcome.is_ok();
    Done {
        outcome,
        own,
        later,
        exchange,
        plan: planned.then_some(plan),
    }
}

/// What calling and applying left, whatever the outcome: the exchange, the child plan and the
/// writes that landed (the flight recorder and the index keep them), and the decision.
struct Attempt {
    exchange: Exchange,
    plan: Plan,
    own: OwnWrites,
    result: Result<Decision, ReconcileError>,
}

impl Attempt {
    /// Failed before anything was sent or written.
    fn failed(e: ReconcileError) -> Attempt {
        Attempt {
            exchange: Exchange::default(),
            plan: Plan::default(),
            own: OwnWrites::default(),
            result: Err(e),
        }
    }
}

/// Builds the request, calls, checks and applies; an answer with `error` is returned as is (the
/// caller records it), nothing of it applied.
async fn call_and_apply(ctx: &EntryContext, ports: Ports<'_>, job: &Job, owner: &Owner) -> Attempt {
    if let Err(e) = finalize::ensure_finalizer(ctx, ports, &job.cr).await {
        return Attempt::failed(e);
    }
    let call::Asked { exchange, decision } = ask(ctx, ports, job, owner, false).await;
    let decision = match decision {
        // An answer with `error` is recorded as it is, nothing of it applied.
        Ok(d) if !matches!(d.outcome, Outcome::Error { .. }) => d,
        result => {
            return Attempt {
                exchange,
                plan: Plan::default(),
                own: OwnWrites::default(),
                result,
            };
        }
    };
    let written = children::apply(ctx, ports, job, owner, &decision).await;
    Attempt {
        exchange,
        plan: written.plan,
        own: written.own,
        result: written.result.map(|()| decision),
    }
}

/// ork's record of this reconcile ([`crate::seal`]): the CR it read and its children after
/// it, those it applied as the API server stored them, those it pruned gone.
fn seal_after(ctx: &EntryContext, job: &Job, own: &OwnWrites) -> String {
    let mut children: std::collections::BTreeMap<&crate::index::ChildRef, u64> = job
        .children
        .iter()
        .map(|(c, o)| (c, crate::index::child_fingerprint(o)))
        .collect();
    for (gone, _) in &own.deleted {
        children.remove(gone);
    }
    for a in &own.applied {
        children.insert(&a.child, a.fingerprint);
    }
    crate::seal::seal(&job.cr, &ctx.own_metadata, children, ctx.config_seal)
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
