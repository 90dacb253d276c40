//! Writing the service's desired children: server-side apply (skipped where the live child
//! already holds every field), then pruning what ork applied earlier and no longer wants.

use std::collections::HashSet;

use kube::ResourceExt;
use kube::core::DynamicObject;
use ork_engine::drift::already_applied;
use ork_protocol::Decision;

use super::Subject;
use crate::controller::Shared;
use crate::labels::OWNER_UID;
use crate::write::stamped;

/// Applies the children of `decision` and prunes the rest; `Err` is the first failure.
pub(super) async fn apply(
    shared: &Shared,
    subject: &Subject<'_>,
    decision: &Decision,
) -> Result<(), String> {
    let owner = &subject.owner;
    if let Some(children) = &decision.resources {
        let force = shared
            .entry
            .operator_box
            .reconcile
            .force_conflict
            .or(shared.entry.force_conflict)
            .unwrap_or(true);
        let mut desired = HashSet::new();
        let mut applies = Vec::new();
        for child in children {
            let Some(index) = shared.children.iter().position(|c| {
                c.managed.group == child.managed.group && c.managed.kind == child.managed.kind
            }) else {
                continue;
            };
            desired.insert((
                child.managed.kind.clone(),
                child.namespace.clone(),
                child.name.clone(),
            ));
            let object = stamped(child, owner);
            let store_key = match &child.namespace {
                Some(ns) => format!("{ns}/{}", child.name),
                None => child.name.clone(),
            };
            let unchanged = shared.lock().children[index]
                .get(&store_key)
                .and_then(|live| serde_json::to_value(live).ok())
                .is_some_and(|live| already_applied(&object, &live));
            if !unchanged {
                let t = &shared.children[index];
                applies.push(async move {
                    let result = shared.cluster.apply(t, child, &object, force).await;
                    shared.process.metrics.applied(
                        &shared.name,
                        &child.managed.kind,
                        if result.is_ok() { "ok" } else { "error" },
                    );
                    result
                });
            }
        }
        // Children are independent: apply them together, remember every write that landed,
        // then report the first failure.
        let results = futures::future::join_all(applies).await;
        let mut first_error = None;
        for result in results {
            match result {
                Ok(rv) => shared.lock().own_write(rv),
                Err(e) => {
                    first_error.get_or_insert(e.to_string());
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        if shared.remote.prune {
            prune(shared, &owner.uid, &desired).await?;
        }
    }
    Ok(())
}

pub(super) async fn prune(
    shared: &Shared,
    owner_uid: &str,
    desired: &HashSet<(String, Option<String>, String)>,
) -> Result<(), String> {
    let stale: Vec<(usize, DynamicObject)> = {
        let st = shared.lock();
        st.children
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.values().map(move |o| (i, o)))
            .filter(|(_, o)| o.labels().get(OWNER_UID).map(String::as_str) == Some(owner_uid))
            .filter(|(i, o)| {
                let kind = shared.children[*i].managed.kind.clone();
                !desired.contains(&(kind, o.namespace(), o.name_any()))
            })
            .map(|(i, o)| (i, o.clone()))
            .collect()
    };
    for (i, child) in stale {
        shared.lock().pruned.insert(child.uid().unwrap_or_default());
        let result = shared.cluster.delete(&shared.children[i], &child).await;
        let kind = &shared.children[i].managed.kind;
        shared.process.metrics.applied(
            &shared.name,
            kind,
            if result.is_ok() {
                "pruned"
            } else {
                "prune_error"
            },
        );
        result.map_err(|e| e.to_string())?;
        tracing::info!(kind = %shared.children[i].managed.kind, child = %child.name_any(), "pruned");
    }
    Ok(())
}
