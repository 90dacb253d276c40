//! `observability.md`: what ork writes for people and tools to read: metrics, the marks on
//! CRs and children, the conditions and their reasons, the events.

use ork_kube::labels::{MARKS, MarkKind};

use super::markdown::{cell, code, table};

pub fn page() -> String {
    let mut out = String::from("# Metrics, marks, conditions and events\n\n");
    out.push_str(super::markdown::GENERATED);
    out.push_str(
        "What ork writes for people and tools to read. The flight recorder, `ork explain` and \
         the status page are in the debugging guide.\n\n",
    );
    metrics(&mut out);
    out.push_str(
        "## Labels, annotations, finalizers\n\nEverything under `orkestra.orkspace.io/` is \
         ork's own (the names Orkestra uses, so tools built for Orkestra keep working); a change \
         to one of them is not a user's change and causes no reconcile, except \
         `requested-at`.\n\n",
    );
    let marks: Vec<Vec<String>> = MARKS
        .iter()
        .map(|m| {
            let kind = match m.kind {
                MarkKind::Label => "label",
                MarkKind::Annotation => "annotation",
                MarkKind::Finalizer => "finalizer",
                MarkKind::FieldManager => "field manager",
            };
            vec![
                code(m.name),
                kind.to_string(),
                m.on.to_string(),
                cell(m.meaning),
            ]
        })
        .collect();
    table(&mut out, &["Name", "What", "On", "Meaning"], &marks);
    out.push_str(
        "## Conditions\n\nork writes three conditions on every CR's status (kstatus' \
         convention, so `kubectl wait --for=condition=Ready`, Argo CD and Flux read them \
         without custom checks); every other condition is the service's, and those it stops \
         returning leave the CR. Each carries `observedGeneration`.\n\n",
    );
    let conditions: Vec<Vec<String>> = ork_engine::status::ORK_CONDITIONS
        .iter()
        .map(|(name, meaning)| vec![code(name), cell(meaning)])
        .collect();
    table(&mut out, &["Type", "Meaning"], &conditions);
    out.push_str(
        "### Reasons\n\n`Ready=False` and `Reconciling` or `Stalled` carry the reason of the \
         step that failed, the same value as `ork_reconcile_failures_total{reason}`.\n\n",
    );
    let mut reasons = vec![vec![
        code(ork_engine::status::SUCCEEDED),
        String::new(),
        "`Ready=True`: the last reconcile succeeded.".to_string(),
    ]];
    reasons.extend(ork_kube::error::REASONS.iter().map(|r| {
        vec![
            code(r.name),
            if r.stalls { "Stalled" } else { "Reconciling" }.to_string(),
            cell(r.meaning),
        ]
    }));
    table(&mut out, &["Reason", "With", "Meaning"], &reasons);
    out.push_str(
        "## Events\n\nork records events (`events.k8s.io/v1`) on the CR, reason first; \
         `<Kind>` is the CR's kind. Events a service returns keep the type and reason it \
         gave.\n\n",
    );
    let events: Vec<Vec<String>> = ork_kube::event_reasons::EVENT_REASONS
        .iter()
        .map(|e| vec![code(&e.of("<Kind>")), e.type_.to_string(), cell(e.meaning)])
        .collect();
    table(&mut out, &["Reason", "Type", "When"], &events);
    out
}

/// The metrics from a specimen of ork's registry: name, type, labels, help.
fn metrics(out: &mut String) {
    out.push_str(
        "## Metrics\n\nServed in Prometheus text format at `/metrics` on ork's probes' address \
         (`ork run --probe-addr`, default `127.0.0.1:8081`; port 8081 in the chart and the \
         bundle), without authentication.\n\n",
    );
    let text = ork_kube::metrics_specimen();
    let mut rows = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# HELP ") else {
            continue;
        };
        let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
        let kind = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("# TYPE {name} ")))
            .unwrap_or_default();
        let sample_name = match kind {
            "counter" => format!("{name}_total"),
            "histogram" => format!("{name}_bucket"),
            _ => name.to_string(),
        };
        let labels: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .find(|l| {
                l.starts_with(&format!("{sample_name}{{"))
                    || l.starts_with(&format!("{sample_name} "))
            })
            .and_then(|l| l.split_once('{'))
            .map(|(_, rest)| {
                rest.split(',')
                    .filter_map(|pair| pair.split_once('=').map(|(k, _)| k.trim()))
                    .filter(|k| *k != "le")
                    .map(|k| format!("`{k}`"))
                    .collect()
            })
            .unwrap_or_default();
        let shown = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        rows.push(vec![
            code(&shown),
            kind.to_string(),
            labels.join(", "),
            cell(help),
        ]);
    }
    table(out, &["Metric", "Type", "Labels", "Meaning"], &rows);
}
