//! Deletion (SPEC §4). Same-namespace children go with the CR through garbage collection. When
//! the entry has children Kubernetes cannot collect (other namespaces, cluster-scoped) or asks
//! for `remote.finalize`, ork puts its finalizer on the CR; on deletion it calls the service with
//! `prepared.finalizing: true` until it answers `finalized: true`, deletes every child it
//! tracks for the CR, then removes the finalizer.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::events::{Event, EventType};
use ork_engine::queue::Reason;
use ork_protocol::Outcome;

use super::{Subject, ask, children, now_rfc3339, record};
use crate::controller::{Next, Shared};
use crate::labels::FINALIZER;

/// How soon to ask again when the service says it is not finished yet.
const NOT_FINALIZED_RETRY: Duration = Duration::from_secs(5);

/// Adds ork's finalizer when the entry needs one and the CR lacks it.
///
/// # Errors
/// The patch was refused (e.g. the CR changed meanwhile: the next event retries).
pub(super) async fn ensure_finalizer(shared: &Shared, subject: &Subject<'_>) -> Result<(), String> {
    let finalizers = subject.obj.finalizers();
    if !shared.needs_finalizer || finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(());
    }
    let mut next = finalizers.to_vec();
    next.push(FINALIZER.to_string());
    let rv = shared
        .cluster
        .set_finalizers(subject.obj, next)
        .await
        .map_err(|e| e.to_string())?;
    shared.lock().own_write(rv);
    Ok(())
}

/// Handles a CR with a deletionTimestamp.
pub(super) async fn finalize(shared: &Shared, subject: &Subject<'_>, attempt: u32) -> Next {
    if !subject.obj.finalizers().iter().any(|f| f == FINALIZER) {
        // Nothing of ork's holds the CR; garbage collection takes its children.
        return Next::Idle;
    }
    let kind = &shared.cr_resource.kind;
    let result = release(shared, subject, attempt).await;
    let now = now_rfc3339();
    let (event, next) = match result {
        Ok(Released::Done) => {
            shared.lock().backoff.reset(&subject.key.to_string());
            tracing::info!("finalized; finalizer removed");
            (
                Event {
                    type_: EventType::Normal,
                    reason: format!("{kind}Finalized"),
                    note: Some(format!(
                        "Children deleted and finalizer removed for {}",
                        subject.key
                    )),
                    action: "Finalize".into(),
                    secondary: None,
                },
                Next::Idle,
            )
        }
        Ok(Released::NotYet(after)) => (
            Event {
                type_: EventType::Normal,
                reason: format!("{kind}FinalizePending"),
                note: Some("The service has not finalized yet".into()),
                action: "Finalize".into(),
                secondary: None,
            },
            Next::After(after, Reason::Requeue),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "finalize failed");
            let mut st = shared.lock();
            st.health.record_failure(&e, &now);
            let delay = st.backoff.failed(subject.key.to_string());
            (
                Event {
                    type_: EventType::Warning,
                    reason: format!("{kind}ReconcileError"),
                    note: Some(record::truncate(&format!("finalize: {e}"), 1000)),
                    action: "Finalize".into(),
                    secondary: None,
                },
                Next::After(delay, Reason::Retry),
            )
        }
    };
    if let Err(err) = shared.cluster.event(subject.obj, &event).await {
        tracing::warn!(error = %err, "event not recorded");
    }
    next
}

enum Released {
    Done,
    NotYet(Duration),
}

async fn release(shared: &Shared, subject: &Subject<'_>, attempt: u32) -> Result<Released, String> {
    if shared.remote.finalize {
        let decision = ask::ask(
            shared,
            subject,
            Reason::Delete,
            attempt,
            &BTreeMap::new(),
            true,
        )
        .await?;
        match decision.outcome {
            Outcome::Error { message } => return Err(format!("service reported: {message}")),
            Outcome::Requeue { after } if !decision.finalized => {
                return Ok(Released::NotYet(after));
            }
            Outcome::Ok { requeue_after } if !decision.finalized => {
                return Ok(Released::NotYet(
                    requeue_after.unwrap_or(NOT_FINALIZED_RETRY),
                ));
            }
            _ => {}
        }
    }
    children::prune(shared, &subject.owner.uid, &HashSet::new()).await?;
    let remaining: Vec<String> = subject
        .obj
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    shared
        .cluster
        .set_finalizers(subject.obj, remaining)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Released::Done)
}
