//! Writing the service's desired children: gather what the watches know of each, decide
//! every child's fate in a pure [`plan`], then write only what it says: server-side apply what
//! changed (together), then delete what ork applied earlier and the answer no longer lists.

use std::sync::Arc;

use kube::ResourceExt;
use kube::core::DynamicObject;
use ork_protocol::Decision;

use super::job::{Job, Ports, Presence};
use super::plan::{Plan, Target, plan};
use crate::cache::Holder;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::{Applied, ChildRef, OwnWrites, child_fingerprint};
use crate::labels::MANAGED_SINCE;
use crate::ports::Owner;
use crate::ports::write::{mark_managed, stamped};

/// What writing the children left: the plan (kept for the flight recorder whatever happened
/// next: a refused step or a failed write shows in `ork explain` with the plan it belonged
/// to), every write that landed, and the first failure.
pub(super) struct Written {
    pub plan: Plan,
    pub own: OwnWrites,
    pub result: Result<(), ReconcileError>,
}

impl Written {
    /// Nothing planned, nothing written: ended with `result`.
    fn only(result: Result<(), ReconcileError>) -> Written {
        Written {
            plan: Plan::default(),
            own: OwnWrites::default(),
            result,
        }
    }
}

/// Applies the children of `decision` and prunes the rest, as planned. Every child is judged
/// before the first write: one refused child means nothing is written.
pub(super) async fn apply(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    owner: &Owner,
    decision: &Decision,
) -> Written {
    let Some(children) = &decision.resources else {
        return Written::only(Ok(()));
    };
    let targets = match gather(ctx, ports, owner, children).await {
        Ok(targets) => targets,
        Err(e) => return Written::only(Err(e)),
    };
    let kind_of = |i: usize| ctx.children[i].managed.kind.clone();
    let plan = plan(owner, &targets, &job.children, ctx.remote.prune, kind_of);
    tracing::debug!(plan = %plan, "planned");
    let (own, result) = write(ctx, ports, job, &plan, &targets).await;
    Written { plan, own, result }
}

/// Writes what `plan` says: each write that landed, and the first failure.
async fn write(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    plan: &Plan,
    targets: &[Target<'_>],
) -> (OwnWrites, Result<(), ReconcileError>) {
    let mut own = OwnWrites::default();
    if let Some(reason) = plan.refused() {
        return (own, Err(ReconcileError::NotOwned(reason.to_string())));
    }
    // Children are independent: apply them together, keep every write that landed, then
    // report the first failure.
    let writes = plan
        .applies()
        .filter_map(|step| Some(write_one(ctx, ports, &targets[step.target?])));
    let mut first_error = None;
    for (at, result) in futures::future::join_all(writes).await {
        match result {
            Ok(stored) => own.applied.push(Applied {
                fingerprint: child_fingerprint(&stored),
                uid: stored.uid().unwrap_or_default(),
                child: at,
            }),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        return (own, Err(e));
    }
    // `Recreate`: the child goes now and comes back, as the answer has it, on the next
    // reconcile (which the caller asks for soon). Its deletion is ork's own write like a
    // prune's: its echo is no foreign change.
    let deletes = plan
        .prunes()
        .map(|s| (s, Deletion::Prune))
        .chain(plan.recreates().map(|s| (s, Deletion::Recreate)));
    for (step, why) in deletes {
        match delete_one(ctx, ports, job, &step.at, why).await {
            Ok(deleted) => own.deleted.push(deleted),
            Err(e) => return (own, Err(e)),
        }
    }
    (own, Ok(()))
}

/// Why ork deletes a child of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deletion {
    /// The answer no longer lists it, or the CR is finalized.
    Prune,
    /// Its update strategy is `Recreate`: it comes back on the next reconcile.
    Recreate,
}

/// Each desired child with what the watches know of it. A name ork has not seen among its own
/// children is looked up where ork would create it and may not adopt: in the metadata-only
/// watch of the other objects of the type, or where there is none (`ork simulate`) from the
/// cluster, all at once.
async fn gather<'a>(
    ctx: &EntryContext,
    ports: Ports<'_>,
    owner: &Owner,
    children: &'a [ork_protocol::DesiredChild],
) -> Result<Vec<Target<'a>>, ReconcileError> {
    let protocol = super::protocol::of(ctx);
    let mut targets: Vec<Target<'a>> = children
        .iter()
        .filter_map(|child| {
            let type_index = ctx.child_index(&child.managed.group, &child.managed.kind)?;
            let at = ChildRef::new(type_index, child.namespace.as_deref(), &child.name);
            let live = ports.live.get(&at);
            let mut object = stamped(child, owner);
            let since = live
                .as_deref()
                .and_then(|l| l.annotations().get(MANAGED_SINCE))
                .filter(|v| !v.is_empty())
                .cloned()
                .unwrap_or_else(super::record::now_to_the_second);
            mark_managed(&mut object, &ctx.managed_by, since);
            let method = protocol.update_method(&child.managed.group, &child.managed.plural);
            Some(Target {
                live,
                object,
                method,
                adopt: adopts(ctx, type_index),
                holder: None,
                child,
                at,
            })
        })
        .collect();
    let lookups = targets
        .iter()
        .enumerate()
        .filter(|(_, t)| t.live.is_none() && !t.adopt)
        .map(|(i, t)| async move {
            let found = match ports.live.presence(&t.at) {
                Presence::Absent => Ok(None),
                Presence::Held(holder) => Ok(Some(holder)),
                Presence::Unknown => {
                    let ty = &ctx.children[t.at.type_index];
                    ports
                        .cluster
                        .existing(ty, t.at.namespace.as_deref(), &t.at.name)
                        .await
                        .map(|meta| meta.as_ref().map(Holder::of))
                }
            };
            (i, found)
        });
    for (i, found) in futures::future::join_all(lookups).await {
        targets[i].holder = found?;
    }
    Ok(targets)
}

async fn write_one(
    ctx: &EntryContext,
    ports: Ports<'_>,
    t: &Target<'_>,
) -> (ChildRef, Result<DynamicObject, ReconcileError>) {
    let ty = &ctx.children[t.at.type_index];
    let force = t.child.force_conflict.unwrap_or(ctx.force);
    let started = std::time::Instant::now();
    let result = ports.cluster.apply(ty, t.child, &t.object, force).await;
    ports
        .metrics
        .apply_duration(&ctx.name, &t.child.managed.kind, started.elapsed());
    ports.metrics.applied(
        &ctx.name,
        &t.child.managed.kind,
        if result.is_ok() { "ok" } else { "error" },
    );
    (t.at.clone(), result.map_err(ReconcileError::from))
}

/// `adopt: true` on the managed resource of `type_index`.
fn adopts(ctx: &EntryContext, type_index: usize) -> bool {
    ctx.remote
        .managed_resources
        .get(type_index)
        .is_some_and(|m| m.adopt)
}

/// Deletes every child of the CR (it is being finalized): those deleted, and the first
/// delete that failed.
pub(super) async fn delete_all(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
) -> (OwnWrites, Result<(), ReconcileError>) {
    let mut own = OwnWrites::default();
    for (at, _) in &job.children {
        match delete_one(ctx, ports, job, at, Deletion::Prune).await {
            Ok(deleted) => own.deleted.push(deleted),
            Err(e) => return (own, Err(e)),
        }
    }
    (own, Ok(()))
}

/// Deletes the CR's child `at` (planned to be pruned or recreated): the child and the UID it
/// had, for the index to know its deletion as ork's own.
///
/// # Errors
/// The delete failed.
async fn delete_one(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    at: &ChildRef,
    why: Deletion,
) -> Result<(ChildRef, String), ReconcileError> {
    let t = &ctx.children[at.type_index];
    let result = ports
        .cluster
        .delete(t, at.namespace.as_deref(), &at.name)
        .await;
    let outcome = match (why, result.is_ok()) {
        (Deletion::Prune, true) => "pruned",
        (Deletion::Prune, false) => "prune_error",
        (Deletion::Recreate, true) => "recreated",
        (Deletion::Recreate, false) => "recreate_error",
    };
    ports.metrics.applied(&ctx.name, &t.managed.kind, outcome);
    result?;
    let uid = job
        .children
        .iter()
        .find(|(c, _)| c == at)
        .and_then(|(_, o): &(ChildRef, Arc<DynamicObject>)| o.uid())
        .unwrap_or_default();
    match why {
        Deletion::Prune => tracing::info!(kind = %t.managed.kind, child = %at.name, "pruned"),
        Deletion::Recreate => {
            tracing::info!(kind = %t.managed.kind, child = %at.name, "deleted to recreate");
        }
    }
    Ok((at.clone(), uid))
}
