//! Deletion (SPEC §4). Same-namespace children go with the CR through garbage collection. When
//! the entry has children Kubernetes cannot collect (other namespaces, cluster-scoped, or any
//! namespaced child of a cluster-scoped CR) or asks for `remote.finalize`, ork puts its
//! finalizer on the CR; on deletion it calls the service with `prepared.finalizing: true` until
//! it answers `finalized: true`, deletes every child it tracks for the CR, then removes the
//! finalizer.
//!
//! Orkestra's finalizers ([`PREDECESSOR_FINALIZERS`]) are taken over as ork's own: on a live CR
//! ork's finalizer replaces them (or nothing does, when the entry needs none); a CR being
//! deleted that they hold goes through ork's deletion as if ork's finalizer held it, and loses
//! them with ork's.

use std::time::Duration;

use kube::ResourceExt;
use kube::core::DynamicObject;
use kube::runtime::events::{Event, EventType};
use ork_protocol::Outcome;

use super::call::ask;
use super::children;
use super::exchange::Exchange;
use super::job::{Done, Job, Ports, Success};
use super::record;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::OwnWrites;
use crate::labels::PREDECESSOR_FINALIZERS;
use crate::ports::{CrRef, Owner};

/// How soon to ask again when the service says it is not finished yet.
const NOT_FINALIZED_RETRY: Duration = Duration::from_secs(5);

/// Puts the CR's finalizers as ork wants them on a live CR: ork's own when the entry needs one,
/// and none of Orkestra's (ork took them over).
///
/// # Errors
/// The patch was refused (a conflict when the CR changed meanwhile: retried at once).
pub(super) async fn ensure_finalizer(
    ctx: &EntryContext,
    ports: Ports<'_>,
    cr: &DynamicObject,
) -> Result<(), ReconcileError> {
    let finalizers = cr.finalizers();
    let next = live_finalizers(ctx, finalizers);
    if next.as_slice() == finalizers {
        return Ok(());
    }
    if finalizers.iter().any(|f| is_predecessor(f)) {
        tracing::info!(
            finalizers = ?finalizers,
            "Orkestra's finalizer taken over"
        );
    }
    ports.cluster.set_finalizers(&CrRef::of(cr), next).await?;
    Ok(())
}

/// `current` without Orkestra's finalizers, with ork's when the entry needs it.
fn live_finalizers(ctx: &EntryContext, current: &[String]) -> Vec<String> {
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| !is_predecessor(f))
        .cloned()
        .collect();
    if ctx.needs_finalizer && !next.contains(&ctx.finalizer) {
        next.push(ctx.finalizer.clone());
    }
    next
}

/// `current` without ork's finalizer and Orkestra's: what a finalized CR keeps.
fn released_finalizers(ctx: &EntryContext, current: &[String]) -> Vec<String> {
    current
        .iter()
        .filter(|f| **f != ctx.finalizer && !is_predecessor(f))
        .cloned()
        .collect()
}

fn is_predecessor(finalizer: &str) -> bool {
    PREDECESSOR_FINALIZERS.contains(&finalizer)
}

/// Handles a CR with a deletionTimestamp (or an object a DecoratorController stopped
/// selecting while its finalizer holds it).
pub(super) async fn finalize(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    owner: &Owner,
) -> Done {
    let finalizers = job.cr.finalizers();
    let ours = finalizers.contains(&ctx.finalizer);
    let orkestras = finalizers.iter().any(|f| is_predecessor(f));
    if !ours && !orkestras {
        // Nothing of ork's holds the CR; garbage collection takes its children.
        return Done::early(Ok(Success::Deleting), OwnWrites::default());
    }
    if !ours && !ctx.needs_finalizer {
        // Only Orkestra's finalizer holds it, and ork has nothing to do before it goes:
        // released, its children left to garbage collection (which honours an orphaning delete).
        let remaining = released_finalizers(ctx, finalizers);
        let outcome = ports
            .cluster
            .set_finalizers(&CrRef::of(&job.cr), remaining)
            .await
            .map(|()| Success::Finalized)
            .map_err(ReconcileError::from);
        if outcome.is_ok() {
            tracing::info!("Orkestra's finalizer removed");
        }
        return Done::early(outcome, OwnWrites::default());
    }
    let kind = &ctx.cr_resource.kind;
    let Released {
        own,
        exchange,
        outcome,
    } = release(ctx, ports, job, owner).await;
    let event = match &outcome {
        Ok(Success::Finalized) => {
            tracing::info!("finalized; finalizer removed");
            Some(normal(
                crate::event_reasons::FINALIZED.of(kind),
                format!("Children deleted and finalizer removed for {}", job.key),
            ))
        }
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "finalize failed");
            Some(record::warning(
                ctx,
                &ports.transport.redact(&format!("finalize: {e}")),
            ))
        }
    };
    if let Some(event) = event
        && let Err(err) = ports.cluster.event(&CrRef::of(&job.cr), &event).await
    {
        tracing::warn!(error = %err, "event not recorded");
    }
    Done {
        outcome,
        own,
        later: None,
        exchange,
        plan: None,
    }
}

fn normal(reason: String, note: String) -> Event {
    Event {
        type_: EventType::Normal,
        reason,
        note: Some(note),
        action: "Finalize".into(),
        secondary: None,
    }
}

/// What a release left: the children deleted, the exchange with the service, and how it ended.
struct Released {
    own: OwnWrites,
    exchange: Exchange,
    outcome: Result<Success, ReconcileError>,
}

/// Calls the service's finalize (when the entry asks for it) until it says finalized, deletes
/// every child ork tracks for the CR, then removes ork's finalizer.
async fn release(ctx: &EntryContext, ports: Ports<'_>, job: &Job, owner: &Owner) -> Released {
    let mut exchange = Exchange::default();
    if ctx.remote.finalize {
        let asked = ask(ctx, ports, job, owner, true).await;
        exchange = asked.exchange;
        let pending = match asked.decision {
            Err(e) => Some(Err(e)),
            Ok(decision) => match decision.outcome {
                Outcome::Error { message } => Some(Err(ReconcileError::ServiceReported(
                    ports.transport.redact(&message),
                ))),
                Outcome::Requeue { after } if !decision.finalized => {
                    Some(Ok(Success::FinalizePending(after)))
                }
                Outcome::Ok { requeue_after } if !decision.finalized => Some(Ok(
                    Success::FinalizePending(requeue_after.unwrap_or(NOT_FINALIZED_RETRY)),
                )),
                _ => None,
            },
        };
        if let Some(outcome) = pending {
            return Released {
                own: OwnWrites::default(),
                exchange,
                outcome,
            };
        }
    }
    let (own, deleted) = children::delete_all(ctx, ports, job).await;
    let outcome = match deleted {
        Err(e) => Err(e),
        Ok(()) => {
            let remaining = released_finalizers(ctx, job.cr.finalizers());
            ports
                .cluster
                .set_finalizers(&CrRef::of(&job.cr), remaining)
                .await
                .map(|()| Success::Finalized)
                .map_err(ReconcileError::from)
        }
    };
    Released {
        own,
        exchange,
        outcome,
    }
}
