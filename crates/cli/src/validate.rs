//! `ork validate -k FILE`: the Katalog's metadata, one line per entry, the notices (what is
//! worth knowing but not wrong), or every problem with file, line and field.

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use ork_katalog::{CrdEntry, Katalog, KatalogMeta, load_file};

pub fn run(path: &Path) -> ExitCode {
    match load_file(path) {
        Ok(katalog) => {
            crate::output::emit(&report(&katalog, path));
            ExitCode::SUCCESS
        }
        Err(problems) => {
            eprintln!("{problems}");
            let n = problems.0.len();
            eprintln!(
                "{}: {n} {} found",
                path.display(),
                if n == 1 { "problem" } else { "problems" }
            );
            ExitCode::FAILURE
        }
    }
}

/// What a valid Katalog prints: metadata lines (when any is written), one line per entry, each
/// notice (as `note: file:line: path: message` and its hint), and the verdict.
fn report(katalog: &Katalog, path: &Path) -> String {
    let mut out = String::new();
    for line in metadata(&katalog.metadata) {
        out.push_str(&line);
        out.push('\n');
    }
    for (name, entry) in &katalog.spec.crds {
        out.push_str(&summary(name, entry));
        out.push('\n');
    }
    for notice in &katalog.notices {
        out.push_str(&format!("note: {notice}\n"));
    }
    let n = katalog.spec.crds.len();
    let notes = match katalog.notices.len() {
        0 => String::new(),
        1 => ", 1 note".to_string(),
        k => format!(", {k} notes"),
    };
    out.push_str(&format!(
        "{}: valid ({n} {}{notes})\n",
        path.display(),
        if n == 1 { "entry" } else { "entries" }
    ));
    out
}

/// `Katalog NAME VERSION by AUTHOR (license L, namespace N)`, the description, the tags; nothing
/// when only the name is written.
fn metadata(m: &KatalogMeta) -> Vec<String> {
    let written = m.description.is_some()
        || m.version.is_some()
        || m.author.is_some()
        || m.license.is_some()
        || m.namespace.is_some()
        || !m.tags.is_empty();
    if !written {
        return Vec::new();
    }
    let mut head = format!("Katalog {}", if m.name.is_empty() { "-" } else { &m.name });
    if let Some(v) = &m.version {
        head.push_str(&format!(" {v}"));
    }
    if let Some(a) = &m.author {
        head.push_str(&format!(" by {a}"));
    }
    let mut extra = Vec::new();
    if let Some(l) = &m.license {
        extra.push(format!("license {l}"));
    }
    if let Some(ns) = &m.namespace {
        extra.push(format!("namespace {ns}"));
    }
    if !extra.is_empty() {
        head.push_str(&format!(" ({})", extra.join(", ")));
    }
    let mut lines = vec![head];
    if let Some(d) = &m.description {
        lines.extend(
            d.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(|l| format!("  {l}")),
        );
    }
    if !m.tags.is_empty() {
        lines.push(format!("  tags: {}", m.tags.join(", ")));
    }
    lines
}

/// One line: entry, type, transport, concurrency, managed types, and where it comes from.
fn summary(name: &str, e: &CrdEntry) -> String {
    let t = &e.api_types;
    let r = &e.operator_box.reconcile;
    let target = match &r.remote {
        Some(remote) => match (&remote.endpoint, &remote.command) {
            (Some(url), _) => format!("POST {}", url.source()),
            (None, Some(cmd)) => format!("exec {}", cmd.join(" ")),
            (None, None) => "no transport".into(),
        },
        None => "no remote".into(),
    };
    let manages: Vec<String> = r
        .remote
        .iter()
        .flat_map(|remote| &remote.managed_resources)
        .map(|m| {
            let what = if m.needs_discovery() {
                m.kind.clone().unwrap_or_default()
            } else {
                m.plural.clone()
            };
            if m.group.is_empty() {
                what
            } else {
                format!("{what}.{}", m.group)
            }
        })
        .collect();
    let mut line = format!(
        "{name}: {kind}.{group}/{version} -> {target} (workers {workers}, resync {resync}{disabled}) manages [{manages}]",
        kind = t.kind,
        group = t.group,
        version = t.version,
        workers = r.workers,
        resync = r.resync,
        disabled = if e.enabled { "" } else { ", disabled" },
        manages = manages.join(", "),
    );
    let mut from = Vec::new();
    if let Some(crd) = &e.crd_file {
        from.push(format!("CRD from {}", shown(crd).display()));
    }
    if let Some(ns) = e.namespace.as_ref().filter(|n| !n.is_empty()) {
        from.push(format!("namespace {ns}"));
    }
    let allowed = e.effective_allowed_namespaces();
    if !allowed.is_empty() {
        from.push(format!("allowed namespaces [{}]", allowed.join(", ")));
    }
    let restricted = e.effective_restricted_namespaces();
    if !restricted.is_empty() {
        from.push(format!("restricted namespaces [{}]", restricted.join(", ")));
    }
    if !e.setup.is_empty() || !e.cr_files.is_empty() {
        from.push(format!(
            "dev files: {} setup, {} crFiles",
            e.setup.len(),
            e.cr_files.len()
        ));
    }
    if !from.is_empty() {
        line.push_str(&format!("; {}", from.join("; ")));
    }
    line
}

/// `path` without `.` components (`./././crd.yaml` is `crd.yaml`).
fn shown(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}
