//! `ork validate -k FILE`.

use std::path::Path;
use std::process::ExitCode;

use ork_katalog::{CrdEntry, load_file};

pub fn run(path: &Path) -> ExitCode {
    match load_file(path) {
        Ok(katalog) => {
            for (name, entry) in &katalog.spec.crds {
                crate::output::say!("{}", summary(name, entry));
            }
            let n = katalog.spec.crds.len();
            crate::output::say!(
                "{}: valid ({n} {})",
                path.display(),
                if n == 1 { "entry" } else { "entries" }
            );
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

/// One line: entry, type, transport, concurrency, managed types.
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
            if m.group.is_empty() {
                m.plural.clone()
            } else {
                format!("{}.{}", m.plural, m.group)
            }
        })
        .collect();
    format!(
        "{name}: {kind}.{group}/{version} -> {target} (workers {workers}, resync {resync}{disabled}) manages [{manages}]",
        kind = t.kind,
        group = t.group,
        version = t.version,
        workers = r.workers,
        resync = r.resync,
        disabled = if e.enabled { "" } else { ", disabled" },
        manages = manages.join(", "),
    )
}
