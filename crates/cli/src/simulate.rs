//! The offline commands: `ork simulate -k FILE --cr CR [--cr …] [--crd CRD] [--cycles N]
//! [-o text|json] [--record DIR | --replay DIR] [--secret NAME/KEY=FILE]` runs the `ork run`
//! pipeline against an in-memory cluster; `ork check -k FILE --entry NAME --cr CR` lints the
//! service's answers.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use ork_kube::simulate::{Change, OfflineSecrets, Report, SimulateOptions};
use serde_json::Value;

use crate::args::{CheckArgs, SimulateArgs};
use crate::secrets::{SecretArg, offline_secrets};

pub fn run(args: SimulateArgs) -> ExitCode {
    let files = Files {
        crs: &args.crs,
        crds: &args.crds,
        controllers: &args.controllers,
        inputs: &args.inputs,
    };
    let report = simulate_files(
        &args.katalog,
        &files,
        args.cycles,
        (args.record.clone(), args.replay.clone()),
        &args.secrets,
    );
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ork simulate: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if !print_report(&report, &args.output, args.full) {
        return ExitCode::FAILURE;
    }
    // A replay ends with its recording: not steady, and not a failure of its own.
    if report.failed || (!report.steady && report.replay_ended.is_none()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The files a simulation starts from besides the Katalog.
pub struct Files<'a> {
    /// CRs to reconcile.
    pub crs: &'a [PathBuf],
    /// CRDs, for the scope and kind of custom types.
    pub crds: &'a [PathBuf],
    /// Metacontroller controllers to run as well.
    pub controllers: &'a [PathBuf],
    /// Objects the entries' inputs read.
    pub inputs: &'a [PathBuf],
}

/// Runs the pipeline on a Katalog file and `files`; `tapes` are --record and --replay,
/// `secrets` the `--secret` values.
///
/// # Errors
/// The Katalog is invalid (every problem), a file cannot be read, a Secret cannot be had, or
/// the simulation fails.
pub fn simulate_files(
    katalog_path: &Path,
    files: &Files<'_>,
    cycles: usize,
    tapes: (Option<PathBuf>, Option<PathBuf>),
    secrets: &[SecretArg],
) -> Result<Report> {
    let crs = read_documents(files.crs)?;
    let crds = read_documents(files.crds)?;
    let inputs = read_documents(files.inputs)?;
    let katalog =
        crate::controllers::offline_katalog(katalog_path, files.controllers, &crs, &crds)?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Runtime::new()?;
    // A replay sends nothing: it needs no Secret.
    let secrets = match tapes.1 {
        Some(_) => OfflineSecrets::default(),
        None => rt.block_on(offline_secrets(&katalog, secrets))?,
    };
    let options = SimulateOptions {
        cycles,
        katalog_dir: crate::args::folder_of(katalog_path),
        crds,
        record: tapes.0,
        replay: tapes.1,
        secrets,
    };
    let given = ork_kube::simulate::Given {
        crs,
        inputs,
        ..Default::default()
    };
    let mut report = rt.block_on(ork_kube::simulate::simulate_given(katalog, given, options))?;
    redact_times(&mut report);
    Ok(report)
}

/// Prints the report as text or JSON, and ork's own time; false when it cannot be written.
pub fn print_report(report: &Report, format: &str, full: bool) -> bool {
    match format {
        "json" => match serde_json::to_string_pretty(report) {
            Ok(text) => crate::output::say!("{text}"),
            Err(e) => {
                eprintln!("ork simulate: {e}");
                return false;
            }
        },
        _ => crate::output::emit(&render_text(report, full)),
    }
    eprintln!(
        "ork's own time: {:.0} ms (the service's time excluded)",
        report.ork_time.as_secs_f64() * 1000.0
    );
    true
}

pub fn check(args: CheckArgs) -> ExitCode {
    let results = (|| {
        let (crs, options) = inputs(&args.katalog, &args.crs, &args.crds)?;
        let katalog = crate::controllers::offline_katalog(
            &args.katalog,
            &args.controllers,
            &crs,
            &options.crds,
        )?;
        block_on(async {
            let secrets = offline_secrets(&katalog, &args.secrets).await?;
            let options = SimulateOptions { secrets, ..options };
            Ok::<_, anyhow::Error>(
                ork_kube::simulate::check(katalog, &args.entry, crs, options).await?,
            )
        })
    })();
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ork check: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut broken = 0;
    for r in &results {
        match &r.call_error {
            Some(e) => {
                broken += 1;
                crate::output::say!("{}: no answer: {e}", r.key);
            }
            None if r.lint.errors.is_empty() && r.lint.warnings.is_empty() => {
                crate::output::say!("{}: the answer follows protocol v1", r.key);
            }
            None => {
                if !r.lint.errors.is_empty() {
                    broken += 1;
                }
                crate::output::say!("{}:", r.key);
                for e in &r.lint.errors {
                    crate::output::say!("  error: {e}");
                }
                for w in &r.lint.warnings {
                    crate::output::say!("  warning: {w}");
                }
            }
        }
    }
    crate::output::say!("{} of {} answers break the protocol", broken, results.len());
    if broken == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The CRs and the options both offline commands start from.
fn inputs(
    katalog: &Path,
    crs: &[PathBuf],
    crds: &[PathBuf],
) -> Result<(Vec<Value>, SimulateOptions)> {
    let options = SimulateOptions {
        cycles: 1,
        katalog_dir: crate::args::folder_of(katalog),
        crds: read_documents(crds)?,
        record: None,
        replay: None,
        secrets: OfflineSecrets::default(),
    };
    Ok((read_documents(crs)?, options))
}

fn block_on<T>(future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Runtime::new()?.block_on(future)
}

/// Every YAML document of every file.
pub(crate) fn read_documents(files: &[PathBuf]) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        for doc in text.split("\n---") {
            let doc = doc.trim_start_matches("---");
            if doc.trim().is_empty() {
                continue;
            }
            let v: Value = serde_saphyr::from_str(doc)
                .with_context(|| format!("{}: not valid YAML", f.display()))?;
            out.push(v);
        }
    }
    Ok(out)
}

/// Condition timestamps and Orkestra's `managed-since` differ run to run; the report shows where
/// they are, not their value.
fn redact_times(report: &mut Report) {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    if k == "lastTransitionTime" || k == "orkestra.orkspace.io/managed-since" {
                        *v = Value::String("<time>".into());
                    } else {
                        walk(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    for c in &mut report.cycles {
        for change in &mut c.changes {
            match change {
                Change::Status { patch, .. } => walk(patch),
                Change::Created { manifest, .. } => walk(manifest),
                _ => {}
            }
        }
    }
    report.objects.values_mut().for_each(walk);
    report.crs.values_mut().for_each(walk);
}

/// The report as a person reads it: per cycle, the calls and what changed.
/// How many lines of a change the summary shows.
const SUMMARY_DIFF_LINES: usize = 12;

pub fn render_text(report: &Report, full: bool) -> String {
    let mut out = String::new();
    for c in &report.cycles {
        out.push_str(&format!("cycle {}\n", c.cycle));
        for call in &c.calls {
            let what = if call.called { "call" } else { "not called" };
            out.push_str(&format!(
                "  {what} {} {}: {}\n",
                call.entry, call.key, call.result
            ));
        }
        if !c.changes.iter().any(Change::is_state) {
            out.push_str("  no changes\n");
        }
        for change in &c.changes {
            match change {
                Change::Created {
                    kind,
                    object,
                    manifest,
                } => {
                    let yaml = serde_saphyr::to_string(manifest).unwrap_or_default();
                    if full {
                        out.push_str(&format!("  + {kind} {object}\n"));
                        for line in yaml.lines() {
                            out.push_str(&format!("      {line}\n"));
                        }
                    } else {
                        out.push_str(&format!(
                            "  + {kind} {object} ({} lines; --full shows it)\n",
                            yaml.lines().count()
                        ));
                    }
                }
                Change::Changed { kind, object, diff } => {
                    out.push_str(&format!("  ~ {kind} {object}\n"));
                    let shown = if full { diff.len() } else { SUMMARY_DIFF_LINES };
                    for line in diff.iter().take(shown) {
                        out.push_str(&format!("      {line}\n"));
                    }
                    if diff.len() > shown {
                        out.push_str(&format!(
                            "      … {} more line(s) (--full shows them)\n",
                            diff.len() - shown
                        ));
                    }
                }
                Change::Pruned { kind, object } => {
                    out.push_str(&format!("  - {kind} {object} (pruned)\n"))
                }
                Change::Status { cr, patch } => out.push_str(&format!("  status {cr}: {patch}\n")),
                Change::Event {
                    cr,
                    r#type,
                    reason,
                    message,
                } => {
                    out.push_str(
                        &format!("  event {cr} {type} {reason}: {message}\n", type = r#type),
                    );
                }
            }
        }
    }
    let n = report.cycles.len();
    let cycles = if n == 1 {
        "1 cycle".to_string()
    } else {
        format!("{n} cycles")
    };
    let last_quiet = report
        .cycles
        .last()
        .is_some_and(|c| !c.changes.iter().any(Change::is_state));
    if let Some(recorded) = report.replay_ended {
        out.push_str(&format!(
            "the recording ends after {recorded} exchange(s): the replay stops here\n"
        ));
        return out;
    }
    out.push_str(&match (report.steady, report.failed, last_quiet) {
        (true, false, _) => {
            format!("steady after {cycles}: two cycles in a row changed nothing\n")
        }
        (true, true, _) => format!("steady after {cycles}, but a reconcile failed\n"),
        (false, _, true) => format!(
            "not known to be steady after {cycles}: the last cycle changed nothing, and steady takes two such cycles in a row (give --cycles {})\n",
            n + 1
        ),
        (false, _, false) => {
            format!("not steady after {cycles}: the last cycle still changed something\n")
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ork_kube::simulate::{Call, Cycle};

    fn report(changes_per_cycle: &[bool], steady: bool) -> Report {
        let cycles = changes_per_cycle
            .iter()
            .enumerate()
            .map(|(i, changed)| Cycle {
                cycle: i + 1,
                calls: vec![Call {
                    entry: "webapp".into(),
                    key: "ns/a".into(),
                    result: if i == 0 {
                        "error: validation failed: replicas over 10".into()
                    } else {
                        "ok".into()
                    },
                    called: i != 0,
                    reason: (i == 0).then(|| "ValidationFailed".to_string()),
                }],
                changes: if *changed {
                    vec![Change::Pruned {
                        kind: "ConfigMap".into(),
                        object: "ns/a".into(),
                    }]
                } else {
                    Vec::new()
                },
            })
            .collect();
        Report {
            cycles,
            steady,
            failed: false,
            objects: Default::default(),
            crs: Default::default(),
            ork_time: Default::default(),
            replay_ended: None,
        }
    }

    #[test]
    fn the_verdict_says_what_the_cycles_showed_and_a_call_never_made_is_not_a_call() {
        let text = render_text(&report(&[true, false], false), false);
        assert!(
            text.contains("  not called webapp ns/a: error: validation failed"),
            "{text}"
        );
        assert!(text.contains("  call webapp ns/a: ok"), "{text}");
        assert!(
            text.ends_with(
                "not known to be steady after 2 cycles: the last cycle changed nothing, and steady takes two such cycles in a row (give --cycles 3)\n"
            ),
            "{text}"
        );
        let one = render_text(&report(&[true], false), false);
        assert!(
            one.ends_with("not steady after 1 cycle: the last cycle still changed something\n"),
            "{one}"
        );
        let steady = render_text(&report(&[true, false, false], true), false);
        assert!(
            steady.ends_with("steady after 3 cycles: two cycles in a row changed nothing\n"),
            "{steady}"
        );
    }
}
