//! After a reconcile: status (only when it changed), the health and metrics annotations (only
//! when they changed) and events, written together.

use kube::core::DynamicObject;
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use ork_engine::status::{StatusInput, plan_status};
use ork_protocol::Decision;
use serde_json::{Map, Value, json};

use crate::controller::{KeyStats, Shared};
use crate::labels::{HEALTH, METRICS};

/// Status, annotations and events after a reconcile, success or failure.
pub(super) async fn record(
    shared: &Shared,
    obj: &DynamicObject,
    error: Option<&str>,
    decision: Option<&Decision>,
    stats: &KeyStats,
    now: &str,
) {
    let input = StatusInput {
        error,
        service_status: decision.and_then(|d| d.status.as_ref()),
        service_conditions: decision.map_or(&[], |d| d.conditions.as_slice()),
        generation: obj.meta().generation,
    };
    let status_patch = plan_status(obj.data.get("status"), input, now);
    let health = serde_json::to_string(&shared.lock().health).unwrap_or_default();
    let metrics = json!({
        "lastDurationMs": stats.last_duration_ms,
        "reconcileCount": stats.reconciles,
        "lastResult": stats.last_result,
    })
    .to_string();
    let current = obj.annotations();
    let mut changed = Map::new();
    for (k, v) in [(HEALTH, health), (METRICS, metrics)] {
        if current.get(k) != Some(&v) {
            changed.insert(k.to_string(), Value::String(v));
        }
    }
    let kind = &shared.cr_resource.kind;
    let mut events = vec![match error {
        None => Event {
            type_: EventType::Normal,
            reason: format!("{kind}Reconciled"),
            note: Some(format!(
                "Remote reconciler succeeded for {}",
                crate::controller::key_of(obj)
            )),
            action: "Reconcile".into(),
            secondary: None,
        },
        Some(e) => Event {
            type_: EventType::Warning,
            reason: format!("{kind}ReconcileError"),
            note: Some(truncate(e, 1000)),
            action: "Reconcile".into(),
            secondary: None,
        },
    }];
    for e in decision.map_or(&[][..], |d| d.events.as_slice()) {
        events.push(Event {
            type_: if e.type_ == "Warning" {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: truncate(&e.reason, 128),
            note: Some(truncate(&e.message, 1000)),
            action: "Reconcile".into(),
            secondary: None,
        });
    }

    // Status, annotations and events are independent writes: send them together.
    let status_write = async {
        if let Some(patch) = &status_patch {
            match shared.cluster.patch_status(obj, patch).await {
                Ok(rv) => shared.lock().own_write(rv),
                Err(e) => tracing::warn!(error = %e, "status not written"),
            }
        }
    };
    let annotation_write = async {
        if !changed.is_empty() {
            match shared.cluster.patch_annotations(obj, &changed).await {
                Ok(rv) => shared.lock().own_write(rv),
                Err(e) => tracing::warn!(error = %e, "annotations not written"),
            }
        }
    };
    let event_writes = async {
        for e in &events {
            if let Err(err) = shared.cluster.event(obj, e).await {
                tracing::warn!(error = %err, "event not recorded");
            }
        }
    };
    tokio::join!(status_write, annotation_write, event_writes);
}

pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        s.to_string()
    } else {
        let mut cut = max - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &s[..cut])
    }
}
