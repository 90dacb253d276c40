//! `ork explain KIND/NAME [-n NS] --server URL`: why a CR is, or is not, Ready (SPEC §14).
//!
//! It reads the CR from the API server with the user's kubeconfig: its `Ready`, `Reconciling`
//! and `Stalled` conditions, and since when. It asks ork's flight recorder (`GET
//! /katalog/{entry}/objects/{ns}/{name}` on ork's HTTP port) for the rest:
//! - where the CR stands now, and when its next retry is due;
//! - the plan for its children;
//! - its last reconciles, as a timeline;
//! - the last request and answer.
//!
//! ork answers only a caller the API server allows to `get` the CR. The bearer token sent is
//! `--token`, else `$ORK_TOKEN`, else the kubeconfig's own. The exit code is 0 only when the CR
//! is Ready.
//!
//! `--save DIR` writes the last exchange as `ork simulate --replay` reads it (`0001.json`) and
//! the CR as `cr.json`. `ork simulate -k katalog.yaml --cr DIR/cr.json --replay DIR` then shows
//! what ork does with that answer, without the service or a cluster.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::record::text;
use crate::retry::{Found, find_cr};

pub struct ExplainArgs {
    pub target: String,
    pub namespace: Option<String>,
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// ork's HTTP address, e.g. `http://127.0.0.1:8080`.
    pub server: Option<String>,
    pub token: Option<String>,
    pub save: Option<PathBuf>,
    pub json: bool,
    /// Everything whole, not the summary.
    pub full: bool,
}

pub fn explain(args: ExplainArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork explain: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(args)) {
        Ok((text, ready)) => {
            print!("{}", shown_safely(&text));
            if ready {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("ork explain: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// What to print, and whether the CR is Ready.
async fn run(args: ExplainArgs) -> Result<(String, bool)> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = crate::inspector_client::server(args.server.clone())?;
    let config = crate::run::kube_config(args.kubeconfig.clone(), args.context.clone()).await?;
    let token = crate::inspector_client::token(args.token.clone(), &config)?;
    let client = ork_kube::client::client(config, ork_kube::client::Protocol::Negotiated)?;
    let Found {
        api,
        resource,
        name,
    } = find_cr(client, &args.target, args.namespace.as_deref()).await?;
    let cr = api
        .get(&name)
        .await
        .with_context(|| format!("reading {}/{name}", resource.kind))?;
    let ork = crate::inspector_client::Ork::new("ork explain", server.clone(), token)?;
    // The record is asked for by the CR's type (`Kind.group`), which needs only `get` on this
    // CR: a tenant of one namespace may explain its CRs without listing every entry's.
    let by_type = format!("{}.{}", resource.kind, resource.group);
    let path = match cr.namespace() {
        Some(ns) => format!("/katalog/{by_type}/objects/{ns}/{name}"),
        None => format!("/katalog/{by_type}/objects/{name}"),
    };
    let record = ork.get(&path).await.with_context(|| {
        format!(
            "no record of {} {name} at the ork at {server} (does an entry of it reconcile {} ({})?)",
            resource.kind, resource.kind, resource.api_version
        )
    })?;
    let ready = condition(&cr, "Ready").is_some_and(|c| c["status"] == "True");
    if let Some(dir) = &args.save {
        save(dir, &cr, &record)?;
    }
    if args.json {
        let out = json!({"object": cr, "entry": record["entry"], "inspect": record});
        return Ok((format!("{}\n", serde_json::to_string_pretty(&out)?), ready));
    }
    let mut text = render(&resource.kind, &cr, &record, args.full);
    if let Some(dir) = &args.save {
        let _ = writeln!(
            text,
            "\nsaved the last exchange to {d}: ork simulate -k KATALOG --cr {d}/cr.json --replay {d}",
            d = dir.display()
        );
    }
    Ok((text, ready))
}

fn condition<'a>(cr: &'a DynamicObject, kind: &str) -> Option<&'a Value> {
    cr.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// The explanation as text.
fn render(kind: &str, cr: &DynamicObject, record: &Value, full: bool) -> String {
    let mut out = String::new();
    let name = match cr.namespace() {
        Some(ns) => format!("{kind} {ns}/{}", cr.name_any()),
        None => format!("{kind} {}", cr.name_any()),
    };
    let records = record["records"].as_array().cloned().unwrap_or_default();
    let last = records.first();
    match condition(cr, "Ready") {
        Some(c) if c["status"] == "True" => {
            let _ = writeln!(
                out,
                "{name}: Ready since {}",
                text(&c["lastTransitionTime"])
            );
        }
        Some(c) => {
            let _ = writeln!(
                out,
                "{name}: not Ready since {} ({})",
                text(&c["lastTransitionTime"]),
                text(&c["reason"])
            );
            let _ = writeln!(out, "  {}", text(&c["message"]));
        }
        None => {
            let _ = writeln!(out, "{name}: no Ready condition yet");
        }
    }
    if condition(cr, "Stalled").is_some_and(|c| c["status"] == "True") {
        let _ = writeln!(
            out,
            "  stalled: a retry alone is not expected to fix it; ork still retries at its backoff's pace, but it takes a change to the CR, the Katalog, the service or ork's RBAC"
        );
    }
    let mut now = format!("now: {}", text(&record["state"]));
    if let Some(r) = last {
        if let Some(attempt) = r["attempt"].as_u64().filter(|a| *a > 1) {
            let _ = write!(now, ", attempt {attempt}");
        }
        if let Some(next) = r["next"].as_str() {
            let _ = write!(now, ", next try at {next}");
        }
    }
    let _ = writeln!(out, "{now}");
    if let Some(message) = last.and_then(|r| r["message"].as_str()) {
        let _ = writeln!(out, "\nlast error, whole:\n  {message}");
    }
    let planned = crate::record::Planned::find(&records);
    let _ = writeln!(
        out,
        "\n{}:",
        crate::record::Planned::heading(planned.as_ref(), "children")
    );
    match planned.map(|p| p.steps) {
        Some(steps) if !steps.is_empty() => {
            for s in steps {
                let _ = writeln!(out, "  {}", step(s));
            }
        }
        Some(_) => {
            let _ = writeln!(out, "  none asked for");
        }
        None => {
            let _ = writeln!(out, "  no plan yet (no answer was applied)");
        }
    }
    let _ = writeln!(out, "\nlast reconciles (newest first):");
    if records.is_empty() {
        let _ = writeln!(
            out,
            "  none recorded by this ork (it reconciles it on its next trigger)"
        );
    }
    let shown = if full { records.len() } else { SUMMARY_RECORDS };
    for r in records.iter().take(shown) {
        let mut line = format!(
            "  {}  {:<8} #{:<2} {:<9}",
            text(&r["at"]),
            text(&r["trigger"]),
            r["attempt"].as_u64().unwrap_or(1),
            text(&r["outcome"]),
        );
        if let Some(reason) = r["reason"].as_str() {
            let _ = write!(line, " {reason}");
        }
        if let Some(cause) = r["cause"].as_str() {
            let _ = write!(line, " ({cause})");
        }
        let _ = write!(line, "  {} ms", r["durationMs"].as_u64().unwrap_or(0));
        match (r["callMs"].as_u64(), r["endpoint"].as_str()) {
            (Some(call), Some(endpoint)) => {
                let _ = write!(line, " ({endpoint} service {call} ms)");
            }
            (Some(call), None) => {
                let _ = write!(line, " (service {call} ms)");
            }
            (None, Some(endpoint)) => {
                let _ = write!(line, " ({endpoint} endpoint)");
            }
            (None, None) => {}
        }
        if let Some(times) = r["times"].as_u64() {
            let _ = write!(line, "  ×{times} in a row (the last shown)");
        }
        let _ = writeln!(out, "{line}");
    }
    if records.len() > shown {
        let _ = writeln!(
            out,
            "  … {} older (--full shows them)",
            records.len() - shown
        );
    }
    for (title, field) in [("last request", "request"), ("last answer", "answer")] {
        let _ = writeln!(out, "\n{title}:");
        match last.map(|r| &r[field]) {
            Some(Value::Null) | None => {
                let _ = writeln!(out, "  none (no exchange recorded)");
            }
            Some(v) if !full => {
                let _ = writeln!(out, "  {} (--full shows it whole)", summary(field, v));
            }
            Some(v) => {
                let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
                for l in pretty.lines() {
                    let _ = writeln!(out, "  {l}");
                }
            }
        }
    }
    let _ = writeln!(out, "\nasked at {}", Timestamp::now());
    out
}

/// How many reconciles the summary shows.
const SUMMARY_RECORDS: usize = 10;

/// A request or answer in one line: what it held, not all of it.
fn summary(field: &str, v: &Value) -> String {
    let size = v.to_string().len();
    let count = |x: &Value| -> usize {
        match x {
            Value::Array(a) => a.len(),
            Value::Object(m) => m
                .values()
                .map(|t| t.as_object().map_or(1, |o| o.len()))
                .sum(),
            _ => 0,
        }
    };
    let mut parts = vec![format!("{size} bytes")];
    if field == "request" {
        if let Some(t) = v["prepared"]["trigger"]["reason"].as_str() {
            parts.push(format!("trigger {t}"));
        }
        let children = count(&v["prepared"]["children"]);
        parts.push(format!("{children} child(ren) sent"));
    } else if let Value::Object(m) = v {
        if let Some(r) = m.get("result").and_then(Value::as_str) {
            parts.push(format!("result {r}"));
        }
        for key in ["resources", "children", "attachments"] {
            if let Some(x) = m.get(key) {
                parts.push(format!("{} {key}", count(x)));
            }
        }
        if let Some(Value::Object(s)) = m.get("status") {
            let keys: Vec<&str> = s.keys().map(String::as_str).take(8).collect();
            parts.push(format!("status {{{}}}", keys.join(", ")));
        }
    } else if let Value::String(s) = v {
        parts.push(format!(
            "not JSON: {}",
            s.chars().take(80).collect::<String>()
        ));
    }
    parts.join(", ")
}

/// One plan step in words (`ConfigMap ns/web: update (data.v)`).
fn step(s: &Value) -> String {
    let at = match s["namespace"].as_str() {
        Some(ns) => format!("{ns}/{}", text(&s["name"])),
        None => text(&s["name"]),
    };
    let what = match s["action"].as_str().unwrap_or_default() {
        "update" => match s["fields"].as_array().filter(|f| !f.is_empty()) {
            Some(fields) => {
                let names: Vec<String> = fields.iter().map(text).collect();
                format!("update ({})", names.join(", "))
            }
            None => "update (drop fields no longer sent)".into(),
        },
        "refused" => format!("refused: {}", text(&s["reason"])),
        other => other.to_string(),
    };
    format!("{} {at}: {what}", text(&s["kind"]))
}

/// `text` with the characters that reorder or hide what a terminal shows (bidirectional
/// overrides and isolates, zero-width marks) written as `<U+202E>`: service text in a record
/// cannot make explain's output read other than it is.
fn shown_safely(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200B}'..='\u{200F}' | '\u{061C}' | '\u{FEFF}');
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            let _ = write!(out, "<U+{:04X}>", u32::from(c));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Writes the last exchange in `ork simulate --replay` format and the CR beside it.
fn save(dir: &std::path::Path, cr: &DynamicObject, record: &Value) -> Result<()> {
    let last = record["records"]
        .as_array()
        .and_then(|r| r.first())
        .filter(|r| !r["request"].is_null())
        .context(
            "--save: ork holds no request for this CR: it keeps the request of its last reconcile \
             only when that one did not go well (or it has not reconciled it yet)",
        )?;
    let exchange = if last["answer"].is_null() {
        json!({"request": last["request"], "error": last["message"]})
    } else {
        json!({"request": last["request"], "response": last["answer"]})
    };
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let write = |file: &str, v: &Value| -> Result<()> {
        let path = dir.join(file);
        // The exchange may hold what the CR's readers may not see: the owner's alone.
        crate::output::write_private(&path, serde_json::to_string_pretty(v)?.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    };
    write("0001.json", &exchange)?;
    let mut metadata = json!({"name": cr.name_any()});
    if let Some(ns) = cr.namespace() {
        metadata["namespace"] = json!(ns);
    }
    for (field, map) in [("labels", cr.labels()), ("annotations", cr.annotations())] {
        if !map.is_empty() {
            metadata[field] = json!(map);
        }
    }
    let mut plain = json!({
        "apiVersion": cr.types.as_ref().map(|t| t.api_version.clone()),
        "kind": cr.types.as_ref().map(|t| t.kind.clone()),
        "metadata": metadata,
    });
    if let Value::Object(data) = &cr.data {
        for (k, v) in data.iter().filter(|(k, _)| k.as_str() != "status") {
            plain[k] = v.clone();
        }
    }
    write("cr.json", &plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_that_reorder_a_terminal_line_are_shown_not_obeyed() {
        let shown = shown_safely("error: \u{202E}txt.exe\u{2066}ok\u{200B}");
        assert_eq!(shown, "error: <U+202E>txt.exe<U+2066>ok<U+200B>");
        assert!(matches!(
            shown_safely("plain é"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
