//! After a reconcile: status (only when it changed), the CR's own health and metrics annotations
//! (only when their meaning changed) and events (only on transitions, SPEC §10), written together.

use std::time::Duration;

use kube::core::DynamicObject;
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use ork_engine::status::{Failure, StatusInput, Validation, plan_status};
use ork_protocol::Decision;
use serde_json::{Map, Value, json};

use super::job::{Job, Later, Ports};
use crate::cache::key_of;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::labels::{HEALTH, MANAGED, MANAGED_BY, MANAGED_SINCE, METRICS};
use crate::ports::CrRef;

/// What a reconcile ended with, as far as the CR shows it.
pub(super) struct Outcome<'a> {
    pub error: Option<&'a ReconcileError>,
    pub decision: Option<&'a Decision>,
    /// A child was applied or pruned.
    pub changed_children: bool,
    pub elapsed: Duration,
    /// On success: ork's record of what it reconciled ([`crate::seal`]), for warm starts.
    pub seal: Option<String>,
}

/// How long the error text of an event may be (the API server takes notes of up to 1 KiB).
const ERROR_TEXT: usize = 1000;

/// How long the error text in the CR's conditions may be: the cause first, never cut before it
/// (SPEC §14), under the condition's own limit.
const STATUS_TEXT: usize = 4000;

/// What [`record`] did: the annotations and events left for the lower-priority lane, and the
/// status write's failure, if it failed.
pub(super) struct Recorded {
    pub later: Option<Later>,
    /// A status that could not be written leaves the CR telling an older story (a stale
    /// `observedGeneration`, an old condition): the key is retried as for any failed write.
    pub status_failed: Option<crate::ports::WriteError>,
}

/// Status after a reconcile, success or failure, written now; the annotations and events it
/// calls for are returned for the lower-priority lane.
pub(super) async fn record(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    outcome: Outcome<'_>,
) -> Recorded {
    if !super::protocol::of(ctx).owns_the_object() {
        return decorated(ctx, ports, job, &outcome).await;
    }
    let cr = job.cr.as_ref();
    let error = outcome
        .error
        .map(|e| clean(&ports.transport.redact(&e.to_string()), STATUS_TEXT));
    let decision = outcome.decision;
    let service_status = decision
        .and_then(|d| d.status.as_ref())
        .map(|s| redact_map(s, ports));
    let failure = outcome
        .error
        .zip(error.as_deref())
        .map(|(e, message)| Failure {
            message,
            reason: e.reason(),
            stalled: ctx.stalls(e, job.attempt),
        });
    let (denied, warned) = validation(ctx, cr);
    let input = StatusInput {
        error: failure,
        answered: decision.is_some(),
        service_status: service_status.as_ref(),
        service_conditions: decision.map_or(&[], |d| d.conditions.as_slice()),
        generation: cr.meta().generation,
        validation: (!ctx.rules.is_empty()).then_some(Validation {
            denied: &denied,
            warned: &warned,
        }),
    };
    let status_patch = plan_status(cr.data.get("status"), input, &now_rfc3339());
    let failures = if error.is_some() { job.attempt } else { 0 };
    let annotations = annotations(
        cr,
        error.as_deref(),
        failures,
        job.count + 1,
        outcome.elapsed,
        outcome.seal.as_deref().filter(|_| error.is_none()),
    );
    let was_ok = went_well_before(job.last_ok, cr);
    let kind = &ctx.cr_resource.kind;
    let mut events = Vec::new();
    match &error {
        // First success, recovery, or children changed: worth telling. A steady success is not.
        None if !was_ok || outcome.changed_children => events.push(Event {
            type_: EventType::Normal,
            reason: crate::event_reasons::RECONCILED.of(kind),
            note: Some(format!("Remote reconciler succeeded for {}", key_of(cr))),
            action: "Reconcile".into(),
            secondary: None,
        }),
        None => {}
        // Every failure; the recorder folds repeats into one series.
        Some(e) => events.push(warning(ctx, e)),
    }
    // What the answer check let through with a warning (an intent field ork ignores), told
    // with the transition events so a steady state costs no write.
    if !events.is_empty() {
        for w in decision.map_or(&[][..], |d| d.warnings.as_slice()) {
            events.push(Event {
                type_: EventType::Warning,
                reason: crate::event_reasons::ANSWER_WARNING.of(kind),
                note: Some(clean(w, ERROR_TEXT)),
                action: "Reconcile".into(),
                secondary: None,
            });
        }
    }
    for e in decision.map_or(&[][..], |d| d.events.as_slice()) {
        events.push(service_event(e, ports));
    }
    let at = CrRef::of(cr);
    let mut status_failed = None;
    if let Some(patch) = &status_patch
        && let Err(e) = ports.cluster.patch_status(&at, patch).await
    {
        tracing::warn!(error = %e, "status not written");
        status_failed = Some(e);
    }
    let later = Later::new(at, metadata(ctx, cr, annotations), events);
    Recorded {
        later: (!later.is_empty()).then_some(later),
        status_failed,
    }
}

/// After a DecoratorController's reconcile (SPEC §15): the object it decorates is not ork's,
/// so ork writes on it only what the hook asked for (labels and annotations, and its status
/// when the hook returned one: replaced whole), and tells failures by events alone.
async fn decorated(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    outcome: &Outcome<'_>,
) -> Recorded {
    let cr = job.cr.as_ref();
    let mut events = Vec::new();
    let mut metadata = None;
    let mut status_failed = None;
    match (outcome.error, outcome.decision) {
        (Some(e), _) => events.push(warning(ctx, &ports.transport.redact(&e.to_string()))),
        (None, Some(decision)) => {
            if let Some(d) = &decision.decoration {
                let changes = |want: &Map<String, Value>, have: Option<&std::collections::BTreeMap<String, String>>| {
                    want.iter()
                        .filter(|(k, v)| match (v.as_str(), have.and_then(|h| h.get(*k))) {
                            (None, None) => false,
                            (Some(w), Some(h)) => w != h,
                            _ => true,
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect::<Map<String, Value>>()
                };
                let labels = changes(&d.labels, cr.metadata.labels.as_ref());
                let annotations = changes(&d.annotations, cr.metadata.annotations.as_ref());
                let mut patch = Map::new();
                if !labels.is_empty() {
                    patch.insert("labels".into(), Value::Object(labels));
                }
                if !annotations.is_empty() {
                    patch.insert("annotations".into(), Value::Object(annotations));
                }
                metadata = (!patch.is_empty()).then_some(patch);
            }
            if let Some(want) = &decision.status {
                let want = redact_map(want, ports);
                let have = cr.data.get("status").and_then(Value::as_object);
                let mut patch: Map<String, Value> = have
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| !want.contains_key(*k))
                    .map(|(k, _)| (k.clone(), Value::Null))
                    .collect();
                for (k, v) in &want {
                    if have.and_then(|h| h.get(k)) != Some(v) {
                        patch.insert(k.clone(), v.clone());
                    }
                }
                if !patch.is_empty()
                    && let Err(e) = ports
                        .cluster
                        .patch_status(&CrRef::of(cr), &json!({ "status": patch }))
                        .await
                {
                    tracing::warn!(error = %e, "status not written");
                    status_failed = Some(e);
                }
            }
            if outcome.changed_children {
                events.push(Event {
                    type_: EventType::Normal,
                    reason: crate::event_reasons::DECORATED.of(&ctx.cr_resource.kind),
                    note: Some(format!(
                        "{} attachments brought to what its sync hook wants",
                        ctx.name
                    )),
                    action: "Reconcile".into(),
                    secondary: None,
                });
            }
            events.extend(decision.events.iter().map(|e| service_event(e, ports)));
        }
        (None, None) => {}
    }
    let later = Later::new(CrRef::of(cr), metadata, events);
    Recorded {
        later: (!later.is_empty()).then_some(later),
        status_failed,
    }
}

/// Records a failure that happened outside the normal path (a caught panic).
pub(crate) async fn record_failure(
    ctx: &EntryContext,
    ports: Ports<'_>,
    job: &Job,
    error: &ReconcileError,
) -> Option<Later> {
    let outcome = Outcome {
        error: Some(error),
        decision: None,
        changed_children: false,
        elapsed: Duration::ZERO,
        seal: None,
    };
    record(ctx, ports, job, outcome).await.later
}

/// An event the service asked for, cleaned and without the credential.
fn service_event(e: &ork_protocol::ServiceEvent, ports: Ports<'_>) -> Event {
    Event {
        type_: if e.type_ == "Warning" {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: clean(&e.reason, 128),
        note: Some(clean(&ports.transport.redact(&e.message), ERROR_TEXT)),
        action: "Reconcile".into(),
        secondary: None,
    }
}

/// What the entry's validation rules find on `cr`, as Orkestra's conditions word it: the
/// failed `deny` rules and the failed `warn` rules.
fn validation(ctx: &EntryContext, cr: &DynamicObject) -> (Vec<String>, Vec<String>) {
    let (mut denied, mut warned) = (Vec::new(), Vec::new());
    if ctx.rules.is_empty() {
        return (denied, warned);
    }
    let cr = serde_json::to_value(cr).unwrap_or(Value::Null);
    for rule in &ctx.rules {
        if !rule.holds(&cr, &Default::default()) {
            let at = match rule.action {
                ork_katalog::condition::RuleAction::Deny => &mut denied,
                ork_katalog::condition::RuleAction::Warn => &mut warned,
            };
            at.push(rule.describe_violation(&cr));
        }
    }
    (denied, warned)
}

/// The event of a failed reconcile of `ctx`'s CR, named as its protocol names it.
pub(super) fn warning(ctx: &EntryContext, message: &str) -> Event {
    let (reason, note) =
        super::protocol::of(ctx).failure_event(&ctx.cr_resource.kind, &clean(message, ERROR_TEXT));
    Event {
        type_: EventType::Warning,
        reason,
        note: Some(clean(&note, ERROR_TEXT)),
        action: "Reconcile".into(),
        secondary: None,
    }
}

/// The metadata patch for the CR: ork's annotations (when they changed) and the entry's
/// templated `labels`/`annotations` (SPEC §9), only where they differ from what the CR carries.
fn metadata(
    ctx: &EntryContext,
    cr: &DynamicObject,
    ork: Option<Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let mut annotations = ork.unwrap_or_default();
    let mut labels = Map::new();
    if !ctx.own_metadata.is_empty() {
        let json = serde_json::to_value(cr).unwrap_or(Value::Null);
        match ctx.entry.render_metadata(&json) {
            Ok((want_labels, want_annotations)) => {
                for (k, v) in want_labels {
                    if cr.labels().get(&k) != Some(&v) {
                        labels.insert(k, Value::String(v));
                    }
                }
                for (k, v) in want_annotations {
                    if cr.annotations().get(&k) != Some(&v) {
                        annotations.insert(k, Value::String(v));
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "the entry's labels/annotations did not render"),
        }
    }
    // Orkestra's marks ride on a patch ork makes anyway (the first reconcile always makes one).
    if !labels.is_empty() || !annotations.is_empty() {
        if cr.labels().get(MANAGED).is_none_or(|v| v != "true") {
            labels.insert(MANAGED.into(), Value::String("true".into()));
        }
        for (key, value) in managed_marks(&ctx.managed_by, cr.annotations()) {
            annotations.insert(key.into(), Value::String(value));
        }
    }
    let mut patch = Map::new();
    if !labels.is_empty() {
        patch.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        patch.insert("annotations".into(), Value::Object(annotations));
    }
    (!patch.is_empty()).then_some(patch)
}

/// Orkestra's `managed-by` and `managed-since` where `annotations` lack them (`managed-since`
/// is written once: now, to the second).
pub(crate) fn managed_marks(
    managed_by: &str,
    annotations: &std::collections::BTreeMap<String, String>,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if annotations.get(MANAGED_BY).is_none_or(|v| v != managed_by) {
        out.push((MANAGED_BY, managed_by.to_string()));
    }
    if annotations.get(MANAGED_SINCE).is_none_or(String::is_empty) {
        out.push((MANAGED_SINCE, now_to_the_second()));
    }
    out
}

/// Now in RFC 3339, UTC, to the second (as Orkestra writes `managed-since`).
pub(crate) fn now_to_the_second() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The CR's own health and metrics annotations, when their meaning (state, last result,
/// failures, error) differs from what the CR carries; `None` when nothing needs writing.
fn annotations(
    cr: &DynamicObject,
    error: Option<&str>,
    failures: u32,
    count: u64,
    elapsed: Duration,
    seal: Option<&str>,
) -> Option<Map<String, Value>> {
    let result = if error.is_some() { "error" } else { "ok" };
    let health = json!({
        "state": if error.is_some() { "failing" } else { "healthy" },
        "consecutiveFailures": failures,
        "lastError": error,
    });
    let current = cr.annotations();
    let current_health = current
        .get(HEALTH)
        .and_then(|h| serde_json::from_str::<Value>(h).ok());
    // The seal is part of the meaning: it changes with an edit, never at rest.
    if current_health.as_ref() == Some(&health)
        && last_result(cr).as_deref() == Some(result)
        && last_seal(cr).as_deref() == seal
    {
        return None;
    }
    let mut metrics = json!({
        "lastResult": result,
        "lastDurationMs": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        "reconcileCount": count,
    });
    if let Some(seal) = seal {
        metrics["seal"] = json!(seal);
    }
    let mut out = Map::new();
    out.insert(HEALTH.into(), Value::String(health.to_string()));
    out.insert(METRICS.into(), Value::String(metrics.to_string()));
    Some(out)
}

/// Whether the reconcile before this one went well: as this process recorded it, else as the
/// CR's metrics annotation says. A resync that comes before the lane wrote the first success's
/// annotation is not a first success again (which sent a second event: 29,466 at 100,000 CRs).
fn went_well_before(recorded: Option<bool>, cr: &DynamicObject) -> bool {
    recorded.unwrap_or_else(|| last_result(cr).as_deref() == Some("ok"))
}

fn last_result(cr: &DynamicObject) -> Option<String> {
    let m: Value = serde_json::from_str(cr.annotations().get(METRICS)?).ok()?;
    m["lastResult"].as_str().map(str::to_string)
}

/// The seal of ork's last successful reconcile of `cr`, as its metrics annotation keeps it.
pub(crate) fn last_seal(cr: &DynamicObject) -> Option<String> {
    let m: Value = serde_json::from_str(cr.annotations().get(METRICS)?).ok()?;
    m["seal"].as_str().map(str::to_string)
}

/// The service's status map with the credential removed from every string.
fn redact_map(status: &Map<String, Value>, ports: Ports<'_>) -> Map<String, Value> {
    status
        .iter()
        .map(|(k, v)| (k.clone(), redact_value(v, ports)))
        .collect()
}

fn redact_value(v: &Value, ports: Ports<'_>) -> Value {
    match v {
        Value::String(s) => Value::String(ports.transport.redact(s)),
        Value::Array(a) => Value::Array(a.iter().map(|x| redact_value(x, ports)).collect()),
        Value::Object(m) => Value::Object(redact_map(m, ports)),
        other => other.clone(),
    }
}

/// Text for a condition, event or annotation: no control characters, at most `max` characters.
pub(super) fn clean(s: &str, max: usize) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect();
    if s.chars().count() > max {
        out.push('…');
    }
    out
}

pub(super) fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cr(annotations: Value) -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "demo/v1", "kind": "WebApp",
            "metadata": {"name": "a", "annotations": annotations}}))
        .expect("object")
    }

    #[test]
    fn what_this_process_recorded_says_how_the_last_reconcile_went_before_the_annotation() {
        let fresh = cr(json!({}));
        assert!(!went_well_before(None, &fresh), "a first reconcile");
        assert!(
            went_well_before(Some(true), &fresh),
            "its annotation still waits"
        );
        let first = annotations(&fresh, None, 0, 1, Duration::ZERO, None).expect("first");
        let stamped = cr(Value::Object(first));
        assert!(went_well_before(None, &stamped), "after a restart");
        assert!(
            !went_well_before(Some(false), &stamped),
            "a failure not yet written"
        );
    }

    #[test]
    fn annotations_are_written_when_their_meaning_changes_not_for_a_new_duration() {
        let fresh = cr(json!({}));
        let first =
            annotations(&fresh, None, 0, 1, Duration::from_millis(5), Some("a.b")).expect("first");
        let stamped = cr(Value::Object(first));
        assert_eq!(last_seal(&stamped).as_deref(), Some("a.b"));
        assert!(annotations(&stamped, None, 0, 2, Duration::from_millis(9), Some("a.b")).is_none());
        // An edit reconciled: a new seal, written.
        assert!(annotations(&stamped, None, 0, 3, Duration::ZERO, Some("c.d")).is_some());
        let failed =
            annotations(&stamped, Some("boom"), 1, 3, Duration::ZERO, None).expect("failure");
        assert!(failed[HEALTH].as_str().expect("text").contains("boom"));
    }

    #[test]
    fn orkestra_marks_are_added_where_missing_and_managed_since_is_never_moved() {
        let none = std::collections::BTreeMap::new();
        let fresh = managed_marks("website-katalog", &none);
        assert_eq!(fresh[0], (MANAGED_BY, "website-katalog".to_string()));
        assert_eq!(fresh[1].0, MANAGED_SINCE);
        let since = &fresh[1].1;
        assert!(since.len() == 20 && since.ends_with('Z'), "{since}");
        let held: std::collections::BTreeMap<String, String> = fresh
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        assert!(managed_marks("website-katalog", &held).is_empty());
        // Another Katalog taking the CR over says so; when it came stays.
        assert_eq!(
            managed_marks("other", &held),
            [(MANAGED_BY, "other".to_string())]
        );
    }

    #[test]
    fn service_text_loses_control_characters_and_length() {
        assert_eq!(clean("a\u{1b}[31mb\r\nc", 100), "a [31mb  c");
        assert_eq!(clean("abcdef", 3), "abc…");
    }
}
