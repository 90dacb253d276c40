//! A case's expectations checked against the report of its run: one line per expectation that
//! does not hold, naming the object, the field, the expected and the found value.

use ork_kube::simulate::{Change, Report};
use serde_json::Value;

use super::spec::{ConditionExpect, EventExpect, Expect};
use super::subset::subset;

/// The CR the case is about: its report key (`Kind namespace/name`) and namespace.
pub struct Subject {
    pub shown: String,
    pub namespace: Option<String>,
}

/// Every way `report` does not show what `expect` says; empty when the case passes.
pub fn check(expect: &Expect, subject: &Subject, report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for want in &expect.children {
        child(want, subject, report, &mut out);
    }
    let cr = report.crs.get(&subject.shown);
    if let Some(want) = &expect.status {
        let found = cr.map_or(&Value::Null, |c| &c["status"]);
        for m in subset(want, found) {
            let path = if m.path.is_empty() {
                "status".to_string()
            } else {
                format!("status.{}", m.path)
            };
            out.push(format!(
                "{} {}",
                subject.shown,
                super::subset::Mismatch { path, ..m }
            ));
        }
    }
    for (kind, want) in &expect.conditions {
        condition(kind, want, subject, cr, &mut out);
    }
    for want in &expect.events {
        event(want, report, &mut out);
    }
    errors(expect.error.as_deref(), report, &mut out);
    if let Some(steady) = expect.steady
        && steady != report.steady
    {
        out.push(format!(
            "steady: expected {steady}, found {} after {} cycles",
            report.steady,
            report.cycles.len()
        ));
    }
    out
}

/// A named error must be among the failed reconciles; without one, none may fail.
fn errors(want: Option<&str>, report: &Report, out: &mut Vec<String>) {
    let failures: Vec<(&str, &str)> = report
        .cycles
        .iter()
        .flat_map(|c| &c.calls)
        .filter_map(|c| Some((c.reason.as_deref()?, c.result.as_str())))
        .collect();
    match want {
        None => {
            if let Some((reason, result)) = failures.first() {
                out.push(format!(
                    "reconcile: expected no error, found {reason}: {result}"
                ));
            }
        }
        Some(want) => {
            if !failures
                .iter()
                .any(|(reason, result)| *reason == want || result.contains(want))
            {
                let found = failures
                    .first()
                    .map_or("every reconcile succeeded".to_string(), |(r, m)| {
                        format!("{r}: {m}")
                    });
                out.push(format!("reconcile: expected error {want:?}, found {found}"));
            }
        }
    }
}

fn child(want: &Value, subject: &Subject, report: &Report, out: &mut Vec<String>) {
    let kind = want["kind"].as_str().unwrap_or_default();
    let name = want["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = want["metadata"]["namespace"]
        .as_str()
        .map(str::to_string)
        .or_else(|| subject.namespace.clone());
    let namespaced = format!(
        "{kind} {}/{name}",
        namespace.as_deref().unwrap_or("default")
    );
    let cluster_scoped = format!("{kind} {name}");
    let Some((shown, found)) = report
        .objects
        .get_key_value(&namespaced)
        .or_else(|| report.objects.get_key_value(&cluster_scoped))
    else {
        let present: Vec<&str> = report.objects.keys().map(String::as_str).collect();
        out.push(format!(
            "{namespaced}: expected the child, found nothing (children: {})",
            if present.is_empty() {
                "none".to_string()
            } else {
                present.join(", ")
            }
        ));
        return;
    };
    for m in subset(want, found) {
        out.push(format!("{shown} {m}"));
    }
}

fn condition(
    kind: &str,
    want: &ConditionExpect,
    subject: &Subject,
    cr: Option<&Value>,
    out: &mut Vec<String>,
) {
    let conditions = cr
        .and_then(|c| c["status"]["conditions"].as_array())
        .cloned()
        .unwrap_or_default();
    let what = format!("{} condition {kind}", subject.shown);
    let Some(found) = conditions.iter().find(|c| c["type"] == kind) else {
        let types: Vec<&str> = conditions
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        out.push(format!(
            "{what}: expected the condition, found nothing (conditions: {types:?})"
        ));
        return;
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        other => other.to_string(),
    };
    if let Some(status) = &want.status
        && text(status) != text(&found["status"])
    {
        out.push(format!(
            "{what} status: expected {:?}, found {}",
            text(status),
            found["status"]
        ));
    }
    if let Some(reason) = &want.reason
        && found["reason"].as_str() != Some(reason)
    {
        out.push(format!(
            "{what} reason: expected {reason:?}, found {}",
            found["reason"]
        ));
    }
    if let Some(message) = &want.message
        && !found["message"]
            .as_str()
            .unwrap_or_default()
            .contains(message.as_str())
    {
        out.push(format!(
            "{what} message: expected text containing {message:?}, found {}",
            found["message"]
        ));
    }
}

fn event(want: &EventExpect, report: &Report, out: &mut Vec<String>) {
    let recorded: Vec<(&str, &str, &str)> = report
        .cycles
        .iter()
        .flat_map(|c| &c.changes)
        .filter_map(|c| match c {
            Change::Event {
                r#type,
                reason,
                message,
                ..
            } => Some((r#type.as_str(), reason.as_str(), message.as_str())),
            _ => None,
        })
        .collect();
    let matches = |(t, r, m): &(&str, &str, &str)| {
        want.type_.as_deref().is_none_or(|w| w == *t)
            && want.reason.as_deref().is_none_or(|w| w == *r)
            && want.note.as_deref().is_none_or(|w| m.contains(w))
    };
    if recorded.iter().any(matches) {
        return;
    }
    let mut wanted = Vec::new();
    if let Some(t) = &want.type_ {
        wanted.push(format!("type {t}"));
    }
    if let Some(r) = &want.reason {
        wanted.push(format!("reason {r}"));
    }
    if let Some(n) = &want.note {
        wanted.push(format!("a note containing {n:?}"));
    }
    // The same event of every cycle, once.
    let found: Vec<String> = recorded
        .iter()
        .map(|(t, r, m)| format!("{t} {r}: {m}"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    out.push(format!(
        "event: expected one with {}, found {}",
        wanted.join(" and "),
        if found.is_empty() {
            "none".to_string()
        } else {
            found.join("; ")
        }
    ));
}
