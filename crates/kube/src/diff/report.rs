//! What `ork diff` found: per CR what its reconcile would change, read from the plan and the
//! writes the API server accepted as dry runs, compared with what is live.

use std::fmt;
use std::sync::Arc;

use kube::core::DynamicObject;
use serde::Serialize;
use serde_json::{Map, Value};

use super::rehearsal::Rehearsed;
use crate::index::ChildRef;
use crate::labels::{APPLIED, PREFIX};
use crate::reconcile::{Done, Fate, Success};
use crate::simulate::{diff, merge};

/// The report of one `ork diff`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub entries: Vec<EntryDiff>,
}

impl Report {
    /// Whether a CR would be refused or lose a child (the command exits 1).
    pub fn failed(&self) -> bool {
        self.entries
            .iter()
            .any(|e| e.totals.refused > 0 || e.totals.losing > 0)
    }
}

/// One entry's CRs.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryDiff {
    pub entry: String,
    pub kind: String,
    /// Where the requests went: the endpoint, or the command.
    pub service: String,
    /// The label selector the CRs were chosen by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    pub crs: Vec<CrDiff>,
    pub totals: Totals,
}

/// How many CRs ended how.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub crs: usize,
    pub unchanged: usize,
    pub changed: usize,
    pub refused: usize,
    /// CRs that would lose a child (a prune).
    pub losing: usize,
    /// Gated, or being deleted: not asked.
    pub skipped: usize,
}

impl Totals {
    pub(super) fn of(crs: &[CrDiff]) -> Totals {
        let mut t = Totals {
            crs: crs.len(),
            ..Totals::default()
        };
        for cr in crs {
            match cr.verdict {
                Verdict::Unchanged => t.unchanged += 1,
                Verdict::Changed => t.changed += 1,
                Verdict::Refused { .. } => t.refused += 1,
                Verdict::Skipped { .. } => t.skipped += 1,
            }
            if cr.loses_a_child() {
                t.losing += 1;
            }
        }
        t
    }
}

impl fmt::Display for Totals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} CRs: {} unchanged, {} with changes, {} refused, {} losing a child, {} skipped",
            self.crs, self.unchanged, self.changed, self.refused, self.losing, self.skipped
        )
    }
}

/// What one CR's reconcile would do.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrDiff {
    /// `namespace/name`, or `name` for a cluster-scoped CR.
    pub key: String,
    #[serde(flatten)]
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildChange>,
    /// Status fields that would change, as `path: old → new` (conditions by type).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
    /// Labels, annotations and finalizers of the CR that would change (ork's bookkeeping
    /// annotations left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<String>,
    /// The events the reconcile would record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
}

impl CrDiff {
    pub(super) fn skipped(key: String, why: String) -> CrDiff {
        CrDiff {
            key,
            verdict: Verdict::Skipped { why },
            children: Vec::new(),
            status: Vec::new(),
            metadata: Vec::new(),
            events: Vec::new(),
        }
    }

    pub fn loses_a_child(&self) -> bool {
        self.children.iter().any(|c| c.action == Action::Prune)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "verdict")]
pub enum Verdict {
    Unchanged,
    Changed,
    /// The reconcile would fail: nothing of the answer would be written.
    Refused {
        /// The condition reason `Ready=False` would carry (`AnswerRejected`, `CallFailed`…).
        reason: String,
        message: String,
    },
    /// Not asked: gated, or being deleted (a finalize call is never rehearsed).
    Skipped {
        why: String,
    },
}

/// What becomes of one child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildChange {
    pub action: Action,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    /// For an update or a recreate: each field that would change, `path: old → new`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Create,
    Update,
    /// Deleted now and created anew (update strategy `Recreate`).
    Recreate,
    /// Different, and left as it is (update strategy `OnDelete`).
    Kept,
    Prune,
}

impl fmt::Display for ChildChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = match self.action {
            Action::Create => "+",
            Action::Update | Action::Recreate | Action::Kept => "~",
            Action::Prune => "-",
        };
        let what = match self.action {
            Action::Create => "create",
            Action::Update => "update",
            Action::Recreate => "recreate",
            Action::Kept => "kept (OnDelete)",
            Action::Prune => "prune",
        };
        write!(f, "{sign} {what} {} ", self.kind)?;
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        f.write_str(&self.name)
    }
}

/// What one rehearsed reconcile read and did.
pub(super) struct Ran<'a> {
    pub key: String,
    pub cr: &'a DynamicObject,
    pub children: &'a [(ChildRef, Arc<DynamicObject>)],
    pub done: &'a Done,
    pub journal: &'a [Rehearsed],
    /// Kind of each child type (by type index).
    pub kinds: &'a [String],
    pub redact: &'a dyn Fn(&str) -> String,
}

/// The CR's line of the report.
pub(super) fn judge(r: &Ran<'_>) -> CrDiff {
    let mut out = CrDiff::skipped(r.key.clone(), String::new());
    out.verdict = match &r.done.outcome {
        Err(e) => Verdict::Refused {
            reason: e.reason().to_string(),
            message: (r.redact)(&e.to_string()),
        },
        Ok(Success::Gated(why)) => Verdict::Skipped {
            why: format!("gated: {why}"),
        },
        Ok(_) => Verdict::Unchanged,
    };
    out.events = r
        .journal
        .iter()
        .filter_map(|w| match w {
            Rehearsed::Event {
                warning,
                reason,
                note,
            } => Some(format!(
                "{} {reason}: {}",
                if *warning { "Warning" } else { "Normal" },
                note.as_deref().unwrap_or_default()
            )),
            _ => None,
        })
        .collect();
    if out.verdict != Verdict::Unchanged {
        return out;
    }
    out.children = children(r);
    out.status = status(r.cr, r.journal);
    out.metadata = metadata(r.cr, r.journal);
    if !out.children.is_empty() || !out.status.is_empty() || !out.metadata.is_empty() {
        out.verdict = Verdict::Changed;
    }
    out
}

/// The plan's steps that change a child, with each update's fields: the live object against
/// the one the API server's dry run returned.
fn children(r: &Ran<'_>) -> Vec<ChildChange> {
    let Some(plan) = &r.done.plan else {
        return Vec::new();
    };
    plan.steps
        .iter()
        .filter_map(|step| {
            let action = match &step.fate {
                Fate::Create => Action::Create,
                Fate::Update { .. } => Action::Update,
                Fate::Recreate { .. } => Action::Recreate,
                Fate::Kept => Action::Kept,
                Fate::Prune => Action::Prune,
                Fate::Unchanged | Fate::Refused { .. } => return None,
            };
            let kind = r.kinds.get(step.at.type_index).cloned().unwrap_or_default();
            let live = r
                .children
                .iter()
                .find(|(c, _)| *c == step.at)
                .and_then(|(_, o)| serde_json::to_value(o.as_ref()).ok());
            let fields = match (&step.fate, live) {
                (Fate::Update { fields }, Some(live)) => {
                    let stored = r.journal.iter().find_map(|w| match w {
                        Rehearsed::Applied {
                            kind: k,
                            namespace,
                            name,
                            stored,
                        } if *k == kind
                            && namespace.as_deref() == step.at.namespace.as_deref()
                            && *name == *step.at.name =>
                        {
                            Some(stored)
                        }
                        _ => None,
                    });
                    match stored {
                        Some(stored) => {
                            let found = diff(&comparable(&live), &comparable(stored));
                            if found.is_empty() {
                                fields.clone()
                            } else {
                                found
                            }
                        }
                        None => fields.clone(),
                    }
                }
                (Fate::Update { fields } | Fate::Recreate { fields }, _) => fields.clone(),
                _ => Vec::new(),
            };
            Some(ChildChange {
                action,
                kind,
                namespace: step.at.namespace.as_deref().map(str::to_string),
                name: step.at.name.to_string(),
                fields: fields.into_iter().map(|f| (r.redact)(&f)).collect(),
            })
        })
        .collect()
}

/// A child as a user compares it: without what the API server keeps for itself and ork's
/// fingerprint of what it applied (it changes whenever anything does).
fn comparable(object: &Value) -> Value {
    let mut v = crate::simulate::memory::without_server_fields(object);
    if let Some(a) = v
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(APPLIED);
    }
    v
}

/// The status fields the dry-run status patches would change.
fn status(cr: &DynamicObject, journal: &[Rehearsed]) -> Vec<String> {
    let before = cr.data.get("status").cloned().unwrap_or(Value::Null);
    let mut after = before.clone();
    let mut patched = false;
    for w in journal {
        if let Rehearsed::Status(patch) = w
            && let Some(p) = patch.get("status")
        {
            if after.is_null() {
                after = Value::Object(Map::new());
            }
            merge(&mut after, p);
            patched = true;
        }
    }
    if !patched {
        return Vec::new();
    }
    diff(&by_condition_type(&before), &by_condition_type(&after))
        .into_iter()
        .map(|line| format!("status.{line}"))
        .collect()
}

/// `conditions` as a map by type, without the times that change with every transition.
fn by_condition_type(status: &Value) -> Value {
    let mut status = status.clone();
    if let Some(conditions) = status.get("conditions").and_then(Value::as_array) {
        let by_type: Map<String, Value> = conditions
            .iter()
            .map(|c| {
                let mut c = c.clone();
                let ty = c["type"].as_str().unwrap_or_default().to_string();
                if let Some(m) = c.as_object_mut() {
                    for k in ["type", "lastTransitionTime", "lastHeartbeatTime"] {
                        m.remove(k);
                    }
                }
                (ty, c)
            })
            .collect();
        status["conditions"] = Value::Object(by_type);
    }
    status
}

/// Labels, annotations and finalizers the dry-run patches would change (ork's own marks on
/// the CR, its bookkeeping, left out).
fn metadata(cr: &DynamicObject, journal: &[Rehearsed]) -> Vec<String> {
    let mut out = Vec::new();
    let meta = &cr.metadata;
    for w in journal {
        match w {
            Rehearsed::Metadata(patch) => {
                for (field, live) in [("labels", &meta.labels), ("annotations", &meta.annotations)]
                {
                    let Some(asked) = patch.get(field).and_then(Value::as_object) else {
                        continue;
                    };
                    for (k, v) in asked.iter().filter(|(k, _)| !k.starts_with(PREFIX)) {
                        let old = live.as_ref().and_then(|m| m.get(k));
                        let new = v.as_str();
                        if old.map(String::as_str) != new {
                            out.push(format!(
                                "metadata.{field}.{k}: {} → {}",
                                shown(old.map(String::as_str)),
                                shown(new)
                            ));
                        }
                    }
                }
            }
            Rehearsed::Finalizers(after) => {
                let before: Vec<String> = meta.finalizers.clone().unwrap_or_default();
                if before != *after {
                    out.push(format!(
                        "metadata.finalizers: {} → {}",
                        Value::from(before),
                        Value::from(after.clone())
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

fn shown(v: Option<&str>) -> String {
    v.map_or_else(|| "null".into(), |s| Value::from(s).to_string())
}

/// The report's text: per entry the CRs that would change or be refused, their children and
/// fields, then the totals (unchanged CRs are counted, not listed).
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for e in &report.entries {
        let selector = e
            .selector
            .as_deref()
            .map(|s| format!(", selector {s}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "entry {} ({}) against {}{selector}\n",
            e.entry, e.kind, e.service
        ));
        if e.crs.is_empty() {
            out.push_str("  no CRs match\n");
        }
        for cr in &e.crs {
            let head = match &cr.verdict {
                Verdict::Unchanged => continue,
                Verdict::Changed if cr.loses_a_child() => "would lose a child".to_string(),
                Verdict::Changed => "changes".to_string(),
                Verdict::Refused { reason, message } => format!("refused ({reason}): {message}"),
                Verdict::Skipped { why } => format!("skipped: {why}"),
            };
            out.push_str(&format!("  {} {}: {head}\n", e.kind, cr.key));
            for c in &cr.children {
                out.push_str(&format!("    {c}\n"));
                for f in &c.fields {
                    out.push_str(&format!("        {f}\n"));
                }
            }
            for line in cr.status.iter().chain(&cr.metadata) {
                out.push_str(&format!("    ~ {line}\n"));
            }
        }
        out.push_str(&format!("  {}\n", e.totals));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cr(status: Value, labels: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
            "metadata": {"name": "a", "namespace": "ns", "labels": labels,
                         "finalizers": ["orkestra.orkspace.io/remote-finalizer"]},
            "status": status
        }))
        .expect("a CR")
    }

    #[test]
    fn a_status_patch_shows_the_fields_and_conditions_it_changes_not_their_times() {
        let cr = cr(
            json!({"phase": "Ready", "conditions": [
                {"type": "Ready", "status": "True", "reason": "Reconciled", "lastTransitionTime": "t1"}
            ]}),
            json!({}),
        );
        let journal = [Rehearsed::Status(
            json!({"status": {"phase": "Degraded", "conditions": [
                {"type": "Ready", "status": "False", "reason": "AnswerRejected", "lastTransitionTime": "t2"}
            ]}}),
        )];
        assert_eq!(
            status(&cr, &journal),
            [
                r#"status.conditions.Ready.reason: "Reconciled" → "AnswerRejected""#,
                r#"status.conditions.Ready.status: "True" → "False""#,
                r#"status.phase: "Ready" → "Degraded""#,
            ]
        );
        // A patch that only moves a condition's time is no change.
        let journal = [Rehearsed::Status(json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "Reconciled", "lastTransitionTime": "t3"}
        ]}}))];
        assert!(status(&cr, &journal).is_empty());
        assert!(status(&cr, &[]).is_empty());
    }

    #[test]
    fn metadata_shows_a_user_s_labels_and_the_finalizers_not_ork_s_bookkeeping() {
        let cr = cr(json!({}), json!({"tier": "web"}));
        let mut patch = Map::new();
        patch.insert(
            "labels".into(),
            json!({"tier": "api", "orkestra.orkspace.io/managed-by": "k"}),
        );
        patch.insert(
            "annotations".into(),
            json!({"orkestra.orkspace.io/metrics": "{}"}),
        );
        let journal = [
            Rehearsed::Metadata(patch),
            Rehearsed::Finalizers(vec![]),
            Rehearsed::Event {
                warning: false,
                reason: "Reconciled".into(),
                note: None,
            },
        ];
        assert_eq!(
            metadata(&cr, &journal),
            [
                r#"metadata.labels.tier: "web" → "api""#,
                r#"metadata.finalizers: ["orkestra.orkspace.io/remote-finalizer"] → []"#,
            ]
        );
    }

    fn line(key: &str, verdict: Verdict, children: Vec<ChildChange>) -> CrDiff {
        CrDiff {
            verdict,
            children,
            ..CrDiff::skipped(key.into(), String::new())
        }
    }

    #[test]
    fn the_text_lists_what_changes_counts_the_rest_and_a_prune_fails_the_report() {
        let prune = ChildChange {
            action: Action::Prune,
            kind: "ConfigMap".into(),
            namespace: Some("ns".into()),
            name: "old".into(),
            fields: vec![],
        };
        let update = ChildChange {
            action: Action::Update,
            fields: vec!["data.k: \"a\" → \"b\"".into()],
            name: "new".into(),
            ..prune.clone()
        };
        let crs = vec![
            line("ns/same", Verdict::Unchanged, vec![]),
            line("ns/moved", Verdict::Changed, vec![update]),
            line("ns/lost", Verdict::Changed, vec![prune]),
        ];
        let report = Report {
            entries: vec![EntryDiff {
                entry: "webapp".into(),
                kind: "WebApp".into(),
                service: "http://127.0.0.1:1/reconcile".into(),
                selector: None,
                totals: Totals::of(&crs),
                crs,
            }],
        };
        assert!(report.failed());
        assert_eq!(
            render(&report),
            "entry webapp (WebApp) against http://127.0.0.1:1/reconcile\n  \
             WebApp ns/moved: changes\n    ~ update ConfigMap ns/new\n        data.k: \"a\" → \"b\"\n  \
             WebApp ns/lost: would lose a child\n    - prune ConfigMap ns/old\n  \
             3 CRs: 1 unchanged, 2 with changes, 0 refused, 1 losing a child, 0 skipped\n"
        );
    }
}
