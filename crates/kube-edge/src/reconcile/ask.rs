//! Building the request (SPEC §2.1), sending it over the entry's transport, checking the answer.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::core::DynamicObject;
use ork_engine::queue::Reason;
use ork_katalog::condition::RuleAction;
use ork_katalog::template::Template;
use ork_protocol::{Decision, Gvk, Policy, Prepared, Request, Trigger, ValidationReport, decide};
use ork_remote::{Call, ExecCall, exec, host_of};
use serde_json::{Map, Value};

use super::Subject;
use crate::controller::Shared;
use crate::labels::OWNER_UID;

/// Builds the request for `subject`, sends it, and checks the whole answer; `Err` is the failure
/// message (never a credential). A finalize call (`finalizing`) skips validation rules: a CR
/// being deleted must be able to go even if it no longer validates.
pub(super) async fn ask(
    shared: &Shared,
    subject: &Subject<'_>,
    reason: Reason,
    attempt: u32,
    sentinels: &BTreeMap<ork_katalog::Sentinel, bool>,
    finalizing: bool,
) -> Result<Decision, String> {
    let body = request(shared, subject, reason, attempt, sentinels, finalizing)?;
    let answer = exchange(shared, &subject.cr, body)
        .await
        .map_err(|e| format!("remote reconciler: {e}"))?;
    decide(&answer, &policy(shared, subject))
        .map_err(|e| format!("response rejected, nothing applied: {e}"))
}

/// The request body (SPEC §2.1) for `subject`.
///
/// # Errors
/// A denied validation rule (unless `finalizing`), a template that fails, or a cross selector
/// that fails.
pub(super) fn request(
    shared: &Shared,
    subject: &Subject<'_>,
    reason: Reason,
    attempt: u32,
    sentinels: &BTreeMap<ork_katalog::Sentinel, bool>,
    finalizing: bool,
) -> Result<Vec<u8>, String> {
    let (key, obj, cr) = (subject.key, subject.obj, &subject.cr);
    let validation = if finalizing {
        ValidationReport::default()
    } else {
        validate(shared, cr)
    };
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
            cross: shared.process.registry.cross(shared, cr)?,
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
            finalizing,
        },
    };
    serde_json::to_vec(&request).map_err(|e| format!("encoding the request: {e}"))
}

/// What the answer for `subject` must satisfy.
pub(super) fn policy(shared: &Shared, subject: &Subject<'_>) -> Policy {
    Policy {
        owner: subject.owner.reference.clone(),
        managed: shared.children.iter().map(|c| c.managed.clone()).collect(),
        ork_namespace: shared.ork_namespace.clone(),
    }
}

/// Sends `body` (or answers it from a replay tape, or records it), timing the service.
pub(super) async fn exchange(
    shared: &Shared,
    cr: &Value,
    body: Vec<u8>,
) -> Result<Vec<u8>, String> {
    let started = Instant::now();
    let answer = match shared.tap.as_ref().and_then(|t| t.answer(&body)) {
        Some(replayed) => replayed,
        None => {
            let answer = send(shared, cr, body.clone()).await;
            if let Some(tap) = &shared.tap {
                tap.keep(&body, &answer);
            }
            answer
        }
    };
    let took = started.elapsed();
    shared.service_nanos.fetch_add(
        u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
        std::sync::atomic::Ordering::Relaxed,
    );
    shared.process.metrics.remote_call(
        &shared.name,
        if answer.is_ok() { "ok" } else { "error" },
        took,
    );
    answer
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
        .current()?
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(s: &str) -> Template {
        Template::parse(s).expect("template")
    }

    #[test]
    fn credentials_go_only_to_the_literal_host_or_allowed_hosts() {
        let literal = template("http://svc.team:8080/{{ .spec.path }}");
        assert!(host_allowed(&literal, "http://svc.team:8080/x", &[]));
        assert!(!host_allowed(&literal, "http://evil.example:8080/x", &[]));

        let templated_host = template("http://{{ .spec.host }}/reconcile");
        assert!(!host_allowed(
            &templated_host,
            "http://attacker.example/reconcile",
            &[]
        ));
        let allowed = ["svc-a.team".to_string()];
        assert!(host_allowed(
            &templated_host,
            "http://svc-a.team:8080/reconcile",
            &allowed
        ));
        assert!(!host_allowed(
            &templated_host,
            "http://svc-b.team/reconcile",
            &allowed
        ));
    }

    #[test]
    fn excluded_paths_are_removed_from_the_object() {
        let cr = json!({"metadata": {"name": "a", "managedFields": [1]}, "spec": {"secret": "x", "keep": 1}});
        let out = strip_paths(
            cr,
            &[
                "metadata.managedFields".into(),
                "spec.secret".into(),
                "no.such".into(),
            ],
        );
        assert_eq!(out, json!({"metadata": {"name": "a"}, "spec": {"keep": 1}}));
    }

    #[test]
    fn templated_args_are_rendered_and_coerced() {
        let args = BTreeMap::from([
            ("env".to_string(), json!("{{ .spec.env }}")),
            ("replicas".to_string(), json!("{{ .spec.replicas }}")),
            ("flag".to_string(), json!("{{ .spec.flag }}")),
            ("fixed".to_string(), json!({"a": 1})),
        ]);
        let cr = json!({"spec": {"env": "prod", "replicas": 3, "flag": true}});
        let out = render_args(&args, &cr).expect("renders").expect("some");
        assert_eq!(out["env"], "prod");
        assert_eq!(out["replicas"], 3);
        assert_eq!(out["flag"], true);
        assert_eq!(out["fixed"], json!({"a": 1}));
    }
}
