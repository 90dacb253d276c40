//! One reconcile: gate, ask the service ([`ask`]), check the whole answer, apply and prune
//! children ([`children`]), record status, annotations and events ([`record`]); a CR being
//! deleted goes through [`finalize`] instead.

mod ask;
mod children;
mod finalize;
mod record;

use std::collections::BTreeMap;
use std::time::Instant;

use kube::core::DynamicObject;
use kube::{Resource, ResourceExt};
use ork_engine::queue::Reason;
use ork_protocol::{Decision, OwnerRef};
use serde_json::Value;

use crate::controller::{Next, Shared, gate_context};
use crate::write::Owner;

/// The CR one reconcile works on.
pub(crate) struct Subject<'a> {
    pub key: &'a str,
    pub obj: &'a DynamicObject,
    /// The CR as JSON, as templates, gates and the request see it.
    pub cr: Value,
    pub owner: Owner,
}

impl<'a> Subject<'a> {
    fn new(shared: &Shared, key: &'a str, obj: &'a DynamicObject) -> Self {
        Subject {
            key,
            obj,
            cr: serde_json::to_value(obj).unwrap_or(Value::Null),
            owner: Owner {
                entry: shared.name.clone(),
                reference: OwnerRef {
                    api_version: shared.cr_resource.api_version.clone(),
                    kind: shared.cr_resource.kind.clone(),
                    name: obj.name_any(),
                    namespace: obj.namespace(),
                },
                uid: obj.uid().unwrap_or_default(),
            },
        }
    }
}

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
    let subject = Subject::new(shared, key, &obj);
    if obj.meta().deletion_timestamp.is_some() {
        return finalize::finalize(shared, &subject, attempt).await;
    }
    if let Some(gate) = &shared.reconcile_gate {
        let health = shared.lock().health.clone();
        if let Err(why) = gate.evaluate(&gate_context(&subject.cr, &health), &sentinels) {
            tracing::info!(reason = %why, "gated");
            shared.lock().health.record_gated(&why);
            shared
                .process
                .metrics
                .reconciled(&shared.name, "gated", started.elapsed());
            return Next::Idle;
        }
    }
    let outcome = call_and_apply(shared, &subject, reason, attempt, &sentinels).await;
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
    shared.process.metrics.reconciled(
        &shared.name,
        if error.is_some() { "error" } else { "ok" },
        elapsed,
    );
    match &error {
        None => tracing::info!(ms = elapsed.as_millis() as u64, "reconciled"),
        Some(e) => {
            tracing::warn!(ms = elapsed.as_millis() as u64, error = %e, ?next, "reconcile failed")
        }
    }
    record::record(
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

/// `ork check`: the request `ork run` would send for `key`, sent once; returns the raw answer
/// and what it must satisfy, for a lint that reports every problem.
///
/// # Errors
/// No such CR, a request that cannot be built, or a call that failed.
pub(crate) async fn probe(
    shared: &Shared,
    key: &str,
) -> Result<(Vec<u8>, ork_protocol::Policy), String> {
    let obj = shared
        .lock()
        .crs
        .get(key)
        .cloned()
        .ok_or_else(|| format!("no CR {key}"))?;
    let subject = Subject::new(shared, key, &obj);
    let sentinels = shared
        .lock()
        .sentinels
        .get(key)
        .cloned()
        .unwrap_or_default();
    let body = ask::request(shared, &subject, Reason::Create, 1, &sentinels, false)?;
    let answer = ask::exchange(shared, &subject.cr, body).await?;
    Ok((answer, ask::policy(shared, &subject)))
}

/// The call and the writes it decides; `Err` is the failure message (never a credential).
async fn call_and_apply(
    shared: &Shared,
    subject: &Subject<'_>,
    reason: Reason,
    attempt: u32,
    sentinels: &BTreeMap<ork_katalog::Sentinel, bool>,
) -> Result<Decision, String> {
    finalize::ensure_finalizer(shared, subject).await?;
    let decision = ask::ask(shared, subject, reason, attempt, sentinels, false).await?;
    if !matches!(decision.outcome, ork_protocol::Outcome::Error { .. }) {
        children::apply(shared, subject, &decision).await?;
    }
    Ok(decision)
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}
