//! One reconcile: gate, request, call, check the whole answer, apply, prune, status, events.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::core::DynamicObject;
use kube::runtime::events::{Event, EventType};
use kube::{Resource, ResourceExt};
use ork_engine::drift::already_applied;
use ork_engine::queue::Reason;
use ork_engine::status::{StatusInput, plan_status};
use ork_katalog::condition::RuleAction;
use ork_katalog::template::Template;
use ork_protocol::{
    Decision, Gvk, OwnerRef, Policy, Prepared, Request, Trigger, ValidationReport, decide,
};
use ork_remote::{Call, ExecCall, exec, host_of};
use serde_json::{Map, Value, json};

use crate::controller::{KeyStats, Next, Shared, gate_context};
use crate::labels::{HEALTH, METRICS, OWNER_UID};
use crate::write::{Owner, apply_child, patch_annotations, patch_status, prune_child, stamped};

/// Runs one reconcile of `key` and says when to look at it again.
pub(crate) async fn reconcile(shared: &Shared, key: &str, reason: Reason) -> Next {
    let started = Instant::now();
    let (obj, sentinels, attempt) = {
        let mut st = shared.lock();
        let Some(obj) = st.crs.get(key).cloned() else {
            return Next::Idle;
        };
        let sentinels = st.sentinels.remove(key).unwrap_or_default();
        (obj, sentinels, st.backoff.failures(&key.to_string()) + 1)
    };
    if obj.meta().deletion_timestamp.is_some() {
        // Same-namespace children go with the CR through garbage collection.
        return Next::Idle;
    }
    let cr = serde_json::to_value(&obj).unwrap_or(Value::Null);
    if let Some(gate) = &shared.reconcile_gate {
        let health = shared.lock().health.clone();
        if let Err(why) = gate.evaluate(&gate_context(&cr, &health), &sentinels) {
            tracing::info!(reason = %why, "gated");
            shared.lock().health.record_gated(&why);
            return Next::Idle;
        }
    }
    let outcome = call_and_apply(shared, key, &obj, &cr, reason, attempt, &sentinels).await;
    let elapsed = started.elapsed();
    let now = now_rfc3339();
    let (error, decision) = match outcome {
        Ok(d) => {
            let err = match &d.outcome {
                ork_protocol::Outcome::Error { message } => {
                    Some(format!("service reported: {message}"))
                }
                _ => None,
            };
            (err, Some(d))
        }
        Err(e) => (Some(e), None),
    };
    let (next, stats) = {
        let mut st = shared.lock();
        let k = key.to_string();
        let next = match &error {
            None => {
                st.health.record_success(&now);
                st.backoff.reset(&k);
                match decision.as_ref().map(|d| &d.outcome) {
                    Some(ork_protocol::Outcome::Requeue { after }) => {
                        Next::After(*after, Reason::Requeue)
                    }
                    Some(ork_protocol::Outcome::Ok {
                        requeue_after: Some(after),
                    }) => Next::After(*after, Reason::Requeue),
                    _ => Next::Idle,
                }
            }
            Some(e) => {
                st.health.record_failure(e, &now);
                Next::After(st.backoff.failed(k.clone()), Reason::Retry)
            }
        };
        let stats = st.stats.entry(k).or_default();
        stats.reconciles += 1;
        stats.last_duration_ms = elapsed.as_millis() as u64;
        stats.last_result = if error.is_some() {
            "error".into()
        } else {
            "ok".into()
        };
        (next, stats.clone())
    };
    match &error {
        None => tracing::info!(ms = elapsed.as_millis() as u64, "reconciled"),
        Some(e) => {
            tracing::warn!(ms = elapsed.as_millis() as u64, error = %e, ?next, "reconcile failed")
        }
    }
    record(
        shared,
        &obj,
        error.as_deref(),
        decision.as_ref(),
        &stats,
        &now,
    )
    .await;
    next
}

/// The call and the writes it decides; `Err` is the failure message (never a credential).
async fn call_and_apply(
    shared: &Shared,
    key: &str,
    obj: &DynamicObject,
    cr: &Value,
    reason: Reason,
    attempt: u32,
    sentinels: &BTreeMap<ork_katalog::Sentinel, bool>,
) -> Result<Decision, String> {
    let validation = validate(shared, cr);
    if !validation.passed {
        return Err(format!(
            "validation failed: {}",
            validation.failed.join("; ")
        ));
    }
    let request = Request {
        key: key.to_string(),
        gvk: Gvk {
            group: shared.entry.api_types.group.clone(),
            version: shared.entry.api_types.version.clone(),
            kind: shared.entry.api_types.kind.clone(),
        },
        object: strip_paths(cr.clone(), &shared.remote.payload.object.exclude),
        args: render_args(&shared.remote.args, cr)?,
        prepared: Prepared {
            children: children_of(shared, obj),
            cross: BTreeMap::new(),
            sentinels: sentinels
                .iter()
                .map(|(s, v)| (s.name().to_string(), *v))
                .collect(),
            validation,
            health: shared.lock().health.summary(),
            trigger: Trigger {
                reason: reason.as_str().to_string(),
                attempt,
            },
            finalizing: false,
        },
    };
    let body = serde_json::to_vec(&request).map_err(|e| format!("encoding the request: {e}"))?;
    let answer = send(shared, cr, body)
        .await
        .map_err(|e| format!("remote reconciler: {e}"))?;
    let owner_ref = OwnerRef {
        api_version: shared.cr_resource.api_version.clone(),
        kind: shared.cr_resource.kind.clone(),
        name: obj.name_any(),
        namespace: obj.namespace(),
    };
    let policy = Policy {
        owner: owner_ref.clone(),
        managed: shared.children.iter().map(|c| c.managed.clone()).collect(),
        ork_namespace: shared.ork_namespace.clone(),
    };
    let decision =
        decide(&answer, &policy).map_err(|e| format!("response rejected, nothing applied: {e}"))?;
    if matches!(decision.outcome, ork_protocol::Outcome::Error { .. }) {
        return Ok(decision);
    }
    let owner = Owner {
        entry: shared.name.clone(),
        reference: owner_ref,
        uid: obj.uid().unwrap_or_default(),
    };
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
            let object = stamped(child, &owner);
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
                applies.push(
                    async move { apply_child(&shared.client, t, child, &object, force).await },
                );
            }
        }
        // Children are independent: apply them together, remember every write that landed,
        // then report the first failure.
        let results = futures::future::join_all(applies).await;
        let mut first_error = None;
        for result in results {
            match result {
                Ok(applied) => shared.lock().own_write(applied.resource_version()),
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
    Ok(decision)
}

/// Sends the request over the entry's transport (HTTP endpoint or exec command), after the
/// rate limit; returns the answer body.
async fn send(shared: &Shared, cr: &Value, body: Vec<u8>) -> Result<Vec<u8>, String> {
    let remote = &shared.remote;
    let wait = shared
        .lock()
        .bucket
        .as_mut()
        .map_or(Duration::ZERO, |b| b.reserve(Instant::now()));
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    if let Some(command) = &remote.command {
        return exec(ExecCall {
            command,
            working_dir: &shared.working_dir,
            env: &remote.env,
            body,
            timeout: remote.timeout.get(),
            max_bytes: remote.max_response_bytes,
        })
        .await
        .map_err(|e| e.to_string());
    }
    let endpoint = remote
        .endpoint
        .as_ref()
        .ok_or("the entry has neither endpoint nor command")?;
    let url = endpoint
        .render(cr)
        .map_err(|e| format!("endpoint template: {e}"))?;
    let credential = shared.credential.current()?;
    if credential.is_some() && !host_allowed(endpoint, &url, &remote.allowed_hosts) {
        return Err(format!(
            "endpoint host {} is neither the Katalog's literal host nor in remote.allowedHosts; the credential is withheld",
            host_of(&url).unwrap_or("?")
        ));
    }
    shared
        .transport
        .call(Call {
            url: &url,
            body,
            credential: credential.as_ref(),
            timeout: remote.timeout.get(),
            max_bytes: remote.max_response_bytes,
        })
        .await
        .map_err(|e| e.to_string())
}

async fn prune(
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
        prune_child(&shared.client, &shared.children[i], &child)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(kind = %shared.children[i].managed.kind, child = %child.name_any(), "pruned");
    }
    Ok(())
}

/// Status, annotations and events after a reconcile, success or failure.
async fn record(
    shared: &Shared,
    obj: &DynamicObject,
    error: Option<&str>,
    decision: Option<&Decision>,
    stats: &KeyStats,
    now: &str,
) {
    let api = shared.cr_api(obj.namespace().as_deref());
    let name = obj.name_any();
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
    let reference = object_ref(shared, obj);
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
            match patch_status(&api, &name, patch).await {
                Ok(o) => shared.lock().own_write(o.resource_version()),
                Err(e) => tracing::warn!(error = %e, "status not written"),
            }
        }
    };
    let annotation_write = async {
        if !changed.is_empty() {
            match patch_annotations(&api, &name, &changed).await {
                Ok(o) => shared.lock().own_write(o.resource_version()),
                Err(e) => tracing::warn!(error = %e, "annotations not written"),
            }
        }
    };
    let event_writes = async {
        for e in &events {
            if let Err(err) = shared.recorder.publish(e, &reference).await {
                tracing::warn!(error = %err, "event not recorded");
            }
        }
    };
    tokio::join!(status_write, annotation_write, event_writes);
}

fn object_ref(shared: &Shared, obj: &DynamicObject) -> ObjectReference {
    ObjectReference {
        api_version: Some(shared.cr_resource.api_version.clone()),
        kind: Some(shared.cr_resource.kind.clone()),
        name: obj.metadata.name.clone(),
        namespace: obj.namespace(),
        uid: obj.uid(),
        resource_version: obj.resource_version(),
        field_path: None,
    }
}

fn validate(shared: &Shared, cr: &Value) -> ValidationReport {
    let mut report = ValidationReport::default();
    for rule in &shared.rules {
        if !rule.holds(cr, &BTreeMap::new()) {
            match rule.action {
                RuleAction::Deny => report.failed.push(rule.describe_failure()),
                RuleAction::Warn => report.warnings.push(rule.describe_failure()),
            }
        }
    }
    report.passed = report.failed.is_empty();
    report
}

/// Owned children for `prepared.children`: lowercase kind → name → object.
fn children_of(shared: &Shared, obj: &DynamicObject) -> BTreeMap<String, BTreeMap<String, Value>> {
    let payload = &shared.remote.payload.children;
    let mut out: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    if !payload.enabled {
        return out;
    }
    let uid = obj.uid().unwrap_or_default();
    let st = shared.lock();
    for (i, store) in st.children.iter().enumerate() {
        for child in store.values() {
            if child.labels().get(OWNER_UID) == Some(&uid) {
                let v = strip_paths(
                    serde_json::to_value(child).unwrap_or(Value::Null),
                    &payload.exclude,
                );
                out.entry(shared.children[i].managed.kind.to_lowercase())
                    .or_default()
                    .insert(child.name_any(), v);
            }
        }
    }
    out
}

/// Evaluates string args as templates, coercing results to JSON types ("5" → 5, "true" → true).
fn render_args(
    args: &BTreeMap<String, Value>,
    cr: &Value,
) -> Result<Option<Map<String, Value>>, String> {
    if args.is_empty() {
        return Ok(None);
    }
    let mut out = Map::new();
    for (k, v) in args {
        let value = match v {
            Value::String(s) if s.contains("{{") => {
                let rendered = Template::parse(s)
                    .and_then(|t| t.render(cr))
                    .map_err(|e| format!("args.{k}: {e}"))?;
                serde_json::from_str::<Value>(&rendered)
                    .ok()
                    .filter(|v| v.is_number() || v.is_boolean())
                    .unwrap_or(Value::String(rendered))
            }
            other => other.clone(),
        };
        out.insert(k.clone(), value);
    }
    Ok(Some(out))
}

fn strip_paths(mut v: Value, paths: &[String]) -> Value {
    for p in paths {
        let Some((parent, last)) = p.rsplit_once('.').map_or(Some(("", p.as_str())), Some) else {
            continue;
        };
        let pointer = if parent.is_empty() {
            String::new()
        } else {
            format!("/{}", parent.replace('.', "/"))
        };
        if let Some(m) = v.pointer_mut(&pointer).and_then(Value::as_object_mut) {
            m.remove(last);
        }
    }
    v
}

fn host_allowed(endpoint: &Template, url: &str, allowed: &[String]) -> bool {
    let Some(host) = host_of(url) else {
        return false;
    };
    let literal = host_of(endpoint.source()).filter(|h| !h.contains("{{"));
    literal == Some(host)
        || allowed
            .iter()
            .any(|a| a == host || host.split(':').next() == Some(a.as_str()))
}

fn truncate(s: &str, max: usize) -> String {
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

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}
