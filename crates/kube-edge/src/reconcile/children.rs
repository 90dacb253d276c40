//! Writing the service's desired children: refuse objects another CR owns, server-side apply
//! what changed (skipped only when what ork would send equals what it last applied and the live
//! child still holds it), then prune what ork applied earlier and no longer wants.

use std::collections::HashSet;
use std::sync::Arc;

use kube::ResourceExt;
use kube::core::DynamicObject;
use ork_engine::drift::already_applied;
use ork_protocol::{Decision, DesiredChild};
use serde_json::Value;

use super::job::{Job, Ports, Presence};
use crate::cache::Holder;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::{Applied, ChildRef, OwnWrites, child_fingerprint};
use crate::labels::APPLIED;
use crate::ports::Owner;
use crate::ports::write::stamped;

/// One desired child, checked and stamped, with what the watches know of it.
struct Planned<'a> {
    child: &'a DesiredChild,
    at: ChildRef,
    object: Value,
    live: Option<Arc<DynamicObject>>,
}

/// Applies the children of `decision` and prunes the rest. Every child is checked before the
/// first write: one refused child means nothing is written.
///
/// # Errors
/// An object owned by someone else, or the first write that failed.
pub(super) async fn apply(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    owner: &Owner,
    decision: &Decision,
    own: &mut OwnWrites,
) -> Result<(), ReconcileError> {
    let Some(children) = &decision.resources else {
        return Ok(());
    };
    let mut planned = Vec::with_capacity(children.len());
    for child in children {
        let Some(type_index) = ctx.child_index(&child.managed.group, &child.managed.kind) else {
            continue;
        };
        let at = ChildRef {
            type_index,
            namespace: child.namespace.clone(),
            name: child.name.clone(),
        };
        let live = ports.live.get(&at);
        let adopt = adopts(ctx, type_index);
        if let Some(l) = &live
            && !adopt
        {
            refuse_foreign(&Holder::of(&l.metadata), owner, child)?;
        }
        planned.push(Planned {
            object: stamped(child, owner),
            child,
            at,
            live,
        });
    }
    refuse_unowned(ctx, ports, owner, &planned).await?;
    let desired: HashSet<ChildRef> = planned.iter().map(|p| p.at.clone()).collect();
    let writes = planned
        .iter()
        .filter(|p| !unchanged(p))
        .map(|p| write_one(ctx, ports, p));
    // Children are independent: apply them together, keep every write that landed, then
    // report the first failure.
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
        return Err(e);
    }
    if ctx.remote.prune {
        prune(ctx, ports, job, &desired, own).await?;
    }
    Ok(())
}

async fn write_one(
    ctx: &EntryContext,
    ports: Ports<'_>,
    p: &Planned<'_>,
) -> (ChildRef, Result<DynamicObject, ReconcileError>) {
    let t = &ctx.children[p.at.type_index];
    let force = p.child.force_conflict.unwrap_or(ctx.force);
    let result = ports.cluster.apply(t, p.child, &p.object, force).await;
    ports.metrics.applied(
        &ctx.name,
        &p.child.managed.kind,
        if result.is_ok() { "ok" } else { "error" },
    );
    (p.at.clone(), result.map_err(ReconcileError::from))
}

/// Skip the write when ork would send exactly what it applied last time and the live child
/// still holds every field of it (nobody changed them). A field the service stops sending
/// changes the fingerprint, so the apply happens and server-side apply removes the field.
fn unchanged(p: &Planned<'_>) -> bool {
    let Some(live) = &p.live else {
        return false;
    };
    let sent = p
        .object
        .pointer(&format!("/metadata/annotations/{}", escape(APPLIED)));
    live.annotations().get(APPLIED).map(String::as_str) == sent.and_then(Value::as_str)
        && holds_all(&p.object, live)
}

/// `live` holds every field of `sent`. Its `apiVersion` and `kind` are left out: the store
/// holds the type the child was looked up by, at the version its watch reads, which need not be
/// the one the service wrote (the fields themselves say whether anything differs).
fn holds_all(sent: &Value, live: &DynamicObject) -> bool {
    let Value::Object(fields) = sent else {
        return false;
    };
    fields.iter().all(|(k, v)| match k.as_str() {
        "apiVersion" | "kind" => true,
        "metadata" => serde_json::to_value(&live.metadata).is_ok_and(|m| already_applied(v, &m)),
        _ => live.data.get(k).is_some_and(|l| already_applied(v, l)),
    })
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `adopt: true` on the managed resource of `type_index`.
fn adopts(ctx: &EntryContext, type_index: usize) -> bool {
    ctx.remote
        .managed_resources
        .get(type_index)
        .is_some_and(|m| m.adopt)
}

/// Children ork has not seen among its own are looked up: an object of that name that exists
/// and is not this CR's is not taken over (SPEC §11). A name the children's watch does not know
/// is in the metadata-only watch of the other objects of the type or free; where there is none
/// (`ork simulate`), the cluster is asked, all at once.
async fn refuse_unowned(
    ctx: &EntryContext,
    ports: Ports<'_>,
    owner: &Owner,
    planned: &[Planned<'_>],
) -> Result<(), ReconcileError> {
    let unseen = planned
        .iter()
        .filter(|p| p.live.is_none() && !adopts(ctx, p.at.type_index));
    let lookups = unseen.map(|p| async move {
        let found = match ports.live.presence(&p.at) {
            Presence::Absent => Ok(None),
            Presence::Held(holder) => Ok(Some(holder)),
            Presence::Unknown => {
                let t = &ctx.children[p.at.type_index];
                ports
                    .cluster
                    .existing(t, p.at.namespace.as_deref(), &p.at.name)
                    .await
                    .map(|meta| meta.as_ref().map(Holder::of))
            }
        };
        (p, found)
    });
    for (p, found) in futures::future::join_all(lookups).await {
        if let Some(holder) = found? {
            refuse_foreign(&holder, owner, p.child)?;
        }
    }
    Ok(())
}

/// An existing object is this CR's when it carries its owner label or a controller reference to
/// it; anything else is someone else's and is not taken over.
fn refuse_foreign(
    holder: &Holder,
    owner: &Owner,
    child: &DesiredChild,
) -> Result<(), ReconcileError> {
    let owner_label = holder.owner_label.as_deref();
    let owned_by_label = owner_label == Some(owner.uid.as_str());
    let owned_by_ref = holder.controller.as_deref() == Some(owner.uid.as_str());
    if owned_by_label || owned_by_ref {
        return Ok(());
    }
    let whose = match owner_label {
        Some(other) => format!("it belongs to another object (owner UID {other})"),
        None => "this CR does not own it".to_string(),
    };
    Err(ReconcileError::NotOwned(format!(
        "{} {} already exists and {whose}; ork does not take it over (set `adopt: true` on its managedResources entry to allow that)",
        child.managed.kind, child.name
    )))
}

/// Deletes the CR's children that are not in `desired`.
///
/// # Errors
/// The first delete that failed.
pub(super) async fn prune(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    desired: &HashSet<ChildRef>,
    own: &mut OwnWrites,
) -> Result<(), ReconcileError> {
    for (at, child) in job.children.iter().filter(|(c, _)| !desired.contains(c)) {
        let t = &ctx.children[at.type_index];
        let result = ports
            .cluster
            .delete(t, at.namespace.as_deref(), &at.name)
            .await;
        ports.metrics.applied(
            &ctx.name,
            &t.managed.kind,
            if result.is_ok() {
                "pruned"
            } else {
                "prune_error"
            },
        );
        result?;
        own.deleted
            .push((at.clone(), child.uid().unwrap_or_default()));
        tracing::info!(kind = %t.managed.kind, child = %at.name, "pruned");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live(v: Value) -> DynamicObject {
        serde_json::from_value(v).expect("a valid object")
    }

    #[test]
    fn a_listed_child_without_its_type_still_holds_what_was_sent() {
        let sent = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 2}});
        // An item of a list: no apiVersion/kind; server fields added.
        let listed = live(
            json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1"}},
            "spec": {"replicas": 2, "strategy": {}}, "status": {}}),
        );
        assert!(holds_all(&sent, &listed));
        // Read at another served version: the fields decide.
        let other_version = live(json!({"apiVersion": "apps/v1beta2", "kind": "Deployment",
            "metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 2}}));
        assert!(holds_all(&sent, &other_version));
    }

    #[test]
    fn a_changed_field_or_label_is_not_held() {
        let sent = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
        let edited =
            live(json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "w"}}));
        assert!(!holds_all(&sent, &edited));
        let relabelled =
            live(json!({"metadata": {"name": "a", "labels": {"x": "2"}}, "data": {"k": "v"}}));
        assert!(!holds_all(&sent, &relabelled));
        let missing = live(json!({"metadata": {"name": "a", "labels": {"x": "1"}}}));
        assert!(!holds_all(&sent, &missing));
    }
}
