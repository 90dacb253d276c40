//! The children of a CR that went without ork's finalizer (SPEC §4: ork deletes the children it
//! tracked). Same-namespace children carry an owner reference and go with the CR through
//! garbage collection; the others (other namespaces, cluster-scoped) only ork deletes, and
//! normally its finalizer holds the CR until it has. A CR can still go without it: its finalizer
//! removed by hand, a delete that raced the finalizer's patch at the API server
//! (kubernetes#77988), or a CR deleted before its first reconcile added the finalizer. The
//! index notices such children ([`Index::take_strays`](crate::index::Index::take_strays)) and
//! this deletes them.

use std::collections::BTreeMap;

use kube::ResourceExt;

use super::job::Ports;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::index::{ChildRef, Stray};
use crate::labels::OWNER_UID;
use crate::ports::{CrRef, Deletion};

/// What a sweep did.
#[derive(Debug, Default)]
pub(crate) struct Swept {
    /// Children deleted (or found gone), with their UIDs.
    pub deleted: Vec<(ChildRef, String)>,
    /// Owner UIDs whose CR exists after all, outside the entry's view (another label, a
    /// namespace the entry does not allow): their children stay.
    pub kept: Vec<String>,
    /// Owner UIDs whose sweep must be tried again, with the first error.
    pub unfinished: Vec<String>,
    pub error: Option<ReconcileError>,
}

/// Deletes the `strays` under `key` whose CR is really gone (asked of the API server, not the
/// watch: a CR that left the entry's selection is not deleted) and that nobody changed since the
/// watch saw them (UID and resourceVersion preconditions: a child applied again meanwhile, for a
/// new CR of the same name or one that adopts it, stays and is judged again from its new state).
/// A child the watch's cache does not hold (yet) is left to the event that brings it.
pub(crate) async fn sweep(
    ctx: &EntryContext,
    ports: Ports<'_>,
    key: &str,
    strays: Vec<Stray>,
) -> Swept {
    let mut swept = Swept::default();
    let mut by_owner: BTreeMap<String, Vec<Stray>> = BTreeMap::new();
    for stray in strays {
        by_owner
            .entry(stray.owner_uid.clone())
            .or_default()
            .push(stray);
    }
    let present = match ports.cluster.cr_uid(&CrRef::at_key(key)).await {
        Ok(uid) => uid,
        Err(e) => {
            swept.unfinished.extend(by_owner.into_keys());
            swept.error = Some(e.into());
            return swept;
        }
    };
    for (owner, strays) in by_owner {
        if present.as_deref() == Some(owner.as_str()) {
            tracing::info!(
                children = strays.len(),
                "the CR left this entry's view but exists: its children stay"
            );
            swept.kept.push(owner);
            continue;
        }
        for stray in strays {
            let t = &ctx.children[stray.child.type_index];
            // What the watch holds now, not what the index judged a moment ago: a child another
            // CR took over meanwhile (its owner label moved) is not this sweep's.
            let Some(seen) = ports.live.get(&stray.child).filter(|o| {
                o.uid().as_deref() == Some(stray.uid.as_str())
                    && o.labels().get(OWNER_UID) == Some(&stray.owner_uid)
            }) else {
                continue;
            };
            let result = ports
                .cluster
                .delete_unchanged(
                    t,
                    stray.child.namespace.as_deref(),
                    &stray.child.name,
                    &stray.uid,
                    seen.resource_version().as_deref(),
                )
                .await;
            match result {
                Ok(Deletion::Deleted) => {
                    ports.metrics.applied(&ctx.name, &t.managed.kind, "swept");
                    tracing::info!(
                        kind = %t.managed.kind,
                        child = %stray.child.name,
                        namespace = stray.child.namespace.as_deref().unwrap_or(""),
                        "deleted a child whose CR is gone without ork's finalizer"
                    );
                    swept.deleted.push((stray.child, stray.uid));
                }
                Ok(Deletion::AlreadyGone) => swept.deleted.push((stray.child, stray.uid)),
                Ok(Deletion::Changed) => {
                    tracing::info!(
                        kind = %t.managed.kind,
                        child = %stray.child.name,
                        "a child of a CR that is gone changed since it was seen; judged again from its new state"
                    );
                }
                Err(e) => {
                    ports
                        .metrics
                        .applied(&ctx.name, &t.managed.kind, "sweep_error");
                    tracing::warn!(error = %e, "a child of a CR that is gone was not deleted; retrying");
                    if !swept.unfinished.contains(&owner) {
                        swept.unfinished.push(owner.clone());
                    }
                    swept.error.get_or_insert(e.into());
                }
            }
        }
    }
    swept
}
