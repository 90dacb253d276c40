//! `ork validate -k FILE [--cluster]`: the Katalog's metadata, one line per entry, the notices
//! (what is worth knowing but not wrong), the warnings (CR fields the templates read that the
//! CRD's schema lacks), or every problem with file, line and field; with `--cluster`, also what
//! the kubeconfig's cluster refutes (`validate_cluster`).

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use ork_katalog::{CrdEntry, Katalog, KatalogMeta, Problem, load_file};
use ork_kube::client::Protocol;
use serde_json::Value;

/// How `ork validate --cluster` reaches the cluster.
#[derive(Debug, Clone)]
pub struct ClusterArgs {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

pub fn run(path: &Path, cluster: Option<ClusterArgs>) -> ExitCode {
    let katalog = match load_file(path) {
        Ok(katalog) => katalog,
        Err(problems) => {
            eprintln!("{problems}");
            let n = problems.0.len();
            eprintln!(
                "{}: {n} {} found",
                path.display(),
                if n == 1 { "problem" } else { "problems" }
            );
            return ExitCode::FAILURE;
        }
    };
    let mut schemas = file_schemas(&katalog);
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    if let Some(args) = cluster {
        match with_cluster(&katalog, path, args) {
            Ok(found) => {
                schemas.extend(found.schemas);
                problems = ork_katalog::locate(path, found.problems);
                warnings = found.warnings;
            }
            Err(e) => {
                eprintln!("ork validate --cluster: {e:#}");
                return ExitCode::FAILURE;
            }
        }
    }
    warnings.extend(schemas.iter().flat_map(|(name, schema)| {
        ork_katalog::schema_fields::unknown_fields(
            &format!("spec.crds.{name}"),
            &katalog.spec.crds[name],
            schema,
        )
    }));
    let warnings = ork_katalog::locate(path, warnings);
    crate::output::emit(&report(&katalog, path, &warnings, &problems));
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The checks of `--cluster`, on a runtime of their own.
fn with_cluster(
    katalog: &Katalog,
    path: &Path,
    args: ClusterArgs,
) -> anyhow::Result<crate::validate_cluster::ClusterFindings> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Runtime::new()?.block_on(async {
        let client = crate::run::connect(args.kubeconfig, args.context, Protocol::Negotiated)
            .await
            .map_err(|e| e.context("connecting to the kubeconfig's cluster"))?;
        crate::validate_cluster::check(&client, katalog, &path.display().to_string()).await
    })
}

/// The schema of each entry's version in its `crdFile`: the template fields are checked
/// against it without a cluster.
fn file_schemas(katalog: &Katalog) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (name, entry) in &katalog.spec.crds {
        let Some(file) = &entry.crd_file else {
            continue;
        };
        let t = &entry.api_types;
        let Ok(docs) = crate::simulate::read_documents(std::slice::from_ref(file)) else {
            continue;
        };
        let schema = docs
            .iter()
            .filter(|c| c["spec"]["names"]["kind"].as_str() == Some(t.kind.as_str()))
            .flat_map(|c| c["spec"]["versions"].as_array().into_iter().flatten())
            .find(|v| v["name"].as_str() == Some(t.version.as_str()))
            .and_then(|v| v.pointer("/schema/openAPIV3Schema"));
        if let Some(schema) = schema {
            out.push((name.clone(), schema.clone()));
        }
    }
    out
}

/// What a valid Katalog prints: metadata lines (when any is written), one line per entry, each
/// notice (as `note: file:line: path: message` and its hint), each warning, what the cluster
/// refutes, and the verdict.
fn report(katalog: &Katalog, path: &Path, warnings: &[Problem], problems: &[Problem]) -> String {
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
    for warning in warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    for problem in problems {
        out.push_str(&format!("{problem}\n"));
    }
    let n = katalog.spec.crds.len();
    let count = |k: usize, one: &str| match k {
        0 => String::new(),
        1 => format!(", 1 {one}"),
        k => format!(", {k} {one}s"),
    };
    let extra = format!(
        "{}{}",
        count(katalog.notices.len(), "note"),
        count(warnings.len(), "warning")
    );
    let entries = if n == 1 { "entry" } else { "entries" };
    out.push_str(&match problems.len() {
        0 => format!("{}: valid ({n} {entries}{extra})\n", path.display()),
        k => format!(
            "{}: valid as a file ({n} {entries}{extra}), but {k} {} with the cluster\n",
            path.display(),
            if k == 1 { "problem" } else { "problems" }
        ),
    });
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
