//! `ork conform -k KATALOG --entry E [--crd FILE] [--junit FILE] [--secret NAME/KEY=FILE]`: a
//! conformance kit for the service of any entry (SPEC §16). [`crd`] finds the entry's CRD,
//! [`sample`] makes CRs from its schema, [`checks`] sends their requests as `ork run` builds them
//! through the entry's real transport, with the edge cases (finalizing, unknown request fields,
//! a large object, the same request twice, concurrent keys), and judges every answer with the
//! protocol's own check; [`compare`] says how two answers differ; [`admission`] checks the
//! admission path of an entry that has one. One line per check, PASS or
//! FAIL with what broke; the exit code is non-zero on any failure.

mod admission;
mod checks;
mod compare;
mod crd;
mod sample;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use ork_katalog::{CrdEntry, Katalog};
use ork_kube::simulate::{Prober, SimulateOptions};
use serde_json::{Map, Value};

use crate::args::DEFAULT_KATALOG;
use crate::junit::{Case, Outcome, SpecReport};
use crate::output::say;
use crate::secrets::SecretArg;
use checks::{Checked, Keys, Promises, Verdict};
use sample::{Fill, Placement};

#[derive(Debug, clap::Args)]
pub struct ConformArgs {
    /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
    #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
    pub katalog: PathBuf,
    /// The entry whose service is checked (may be left out when the Katalog has one).
    #[arg(long)]
    pub entry: Option<String>,
    /// A CRD file to make the requests from (default: the entry's crdFile, else the CRD the
    /// kubeconfig's cluster serves); also gives the scope of custom managed types. Repeatable.
    #[arg(long = "crd")]
    pub crds: Vec<PathBuf>,
    /// Metacontroller controllers (CompositeController, DecoratorController) to check, alone
    /// without a Katalog or beside it (`--entry` names one by its controller's name); their
    /// parents' kinds come from the --crd files or built-in kinds. Repeatable.
    #[arg(long = "controllers", value_name = "FILE")]
    pub controllers: Vec<PathBuf>,
    /// Also write the results as JUnit XML to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// The value of key KEY of the Secret NAME (an `auth.secretRef`), read from FILE;
    /// repeatable. Without it, the Secret is read once from the kubeconfig's cluster if there
    /// is a kubeconfig.
    #[arg(long = "secret", value_name = "NAME/KEY=FILE", value_parser = crate::secrets::parse)]
    pub secrets: Vec<SecretArg>,
}

pub fn run(args: ConformArgs) -> ExitCode {
    let katalog = crate::simulate::read_documents(&args.crds).and_then(|crds| {
        crate::controllers::offline_katalog(&args.katalog, &args.controllers, &[], &crds)
    });
    let katalog: Katalog = match katalog {
        Ok(k) => k,
        Err(e) => {
            eprintln!("ork conform: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ran = tokio::runtime::Runtime::new()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(conform(&args, &katalog)));
    let (entry, checked) = match ran {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ork conform: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let cases = checked.iter().map(print).collect();
    let report = SpecReport {
        name: format!("conform {entry}"),
        file: args.katalog.display().to_string(),
        cases,
    };
    crate::junit::finish("ork conform", &[report], args.junit.as_deref())
}

/// Finds the CRD, makes the samples and runs every check; the entry's name and the checks.
async fn conform(args: &ConformArgs, katalog: &Katalog) -> Result<(String, Vec<Checked>)> {
    let name = entry_name(katalog, args.entry.as_deref())?;
    let entry = &katalog.spec.crds[&name];
    let remote = entry
        .operator_box
        .reconcile
        .remote
        .as_ref()
        .ok_or_else(|| anyhow!("entry {name:?} has no remote reconciler"))?;
    let given = crate::simulate::read_documents(&args.crds)?;
    let (crd, from) = crd::find(entry, &given).await?;
    let schema = crd::schema(&crd, &entry.api_types.version)?;
    let at = placement(entry);
    let workers = usize::try_from(entry.operator_box.reconcile.workers)
        .unwrap_or(usize::MAX)
        .clamp(2, 64);
    let mut crs = vec![
        sample::cr(&schema, Fill::All, "conform-full", &at),
        sample::cr(&schema, Fill::Required, "conform-minimal", &at),
    ];
    let (big, bulk) = sample::large(
        sample::cr(&schema, Fill::All, "conform-large", &at),
        &schema,
    );
    crs.push(big);
    let concurrent: Vec<String> = (1..=workers)
        .map(|i| format!("conform-concurrent-{i}"))
        .collect();
    crs.extend(
        concurrent
            .iter()
            .map(|n| sample::cr(&schema, Fill::All, n, &at)),
    );
    let key = |n: &str| match &at.namespace {
        Some(ns) => format!("{ns}/{n}"),
        None => n.to_string(),
    };
    let keys = Keys {
        full: key("conform-full"),
        minimal: key("conform-minimal"),
        large: (key("conform-large"), bulk),
        concurrent: concurrent.iter().map(|n| key(n)).collect(),
    };
    let secrets = crate::secrets::offline_secrets(katalog, &args.secrets).await?;
    let mut crds = given;
    crds.push(crd);
    let options = SimulateOptions {
        cycles: 1,
        katalog_dir: crate::args::folder_of(&args.katalog),
        crds,
        record: None,
        replay: None,
        secrets,
    };
    let (full_sample, minimal_sample) = (crs[0].clone(), crs[1].clone());
    let admission = ork_kube::simulate::OfflineAdmission::new(katalog, &name, &options)?;
    let mut prober = Prober::new(katalog, &name, crs, &options)?;
    let target = match (&remote.endpoint, &remote.command) {
        (Some(url), _) => format!("POST {}", url.source()),
        (None, Some(cmd)) => format!("exec {}", cmd.join(" ")),
        (None, None) => "no transport".into(),
    };
    let t = &entry.api_types;
    say!(
        "ork conform: entry {name} ({}.{}/{}) -> {target}; requests made from {from}",
        t.kind,
        t.group,
        t.version
    );
    let promises = Promises {
        timeout: remote.timeout.get(),
        workers,
        finalize: remote.finalize,
    };
    let mut checked = checks::run(&mut prober, &keys, &promises).await;
    if let Some(admission) = &admission {
        let samples = admission::Samples {
            full: &full_sample,
            minimal: &minimal_sample,
        };
        checked.extend(admission::run(admission, &samples).await);
    }
    Ok((name, checked))
}

/// `--entry`, or the only entry of the Katalog.
fn entry_name(katalog: &Katalog, given: Option<&str>) -> Result<String> {
    let names: Vec<&String> = katalog.spec.crds.keys().collect();
    match given {
        Some(e) if katalog.spec.crds.contains_key(e) => Ok(e.to_string()),
        Some(e) => Err(anyhow!(
            "no entry {e:?} in the Katalog (entries: {names:?})"
        )),
        None if names.len() == 1 => Ok(names[0].clone()),
        None => Err(anyhow!(
            "the Katalog has {} entries: name one with --entry (entries: {names:?})",
            names.len()
        )),
    }
}

/// Where the samples live: the entry's one namespace, else its first allowed namespace without
/// a wildcard, else `default`; cluster-scoped CRs have none.
fn placement(entry: &CrdEntry) -> Placement {
    let t = &entry.api_types;
    let namespace = entry.namespaced.then(|| {
        entry
            .single_namespace()
            .or_else(|| {
                entry
                    .effective_allowed_namespaces()
                    .into_iter()
                    .find(|n| !n.contains('*'))
            })
            .unwrap_or_else(|| "default".into())
    });
    let labels: Map<String, Value> = entry
        .label_selector
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    Placement {
        api_version: format!("{}/{}", t.group, t.version),
        kind: t.kind.clone(),
        namespace,
        labels,
    }
}

/// Prints one check and returns it as a JUnit case.
fn print(c: &Checked) -> Case {
    let outcome = match &c.verdict {
        Verdict::Pass => {
            say!("PASS {}: {}", c.name, c.summary);
            Outcome::Passed
        }
        Verdict::Fail(lines) => {
            say!("FAIL {}: {}", c.name, c.summary);
            for l in lines {
                say!("    {l}");
            }
            Outcome::Failed(format!("{}\n{}", c.summary, lines.join("\n")))
        }
        Verdict::Skip(why) => {
            say!("SKIP {}: {why}", c.name);
            Outcome::Skipped(why.clone())
        }
    };
    for n in &c.notes {
        say!("    warning: {n}");
    }
    Case {
        name: c.name.to_string(),
        outcome,
        notes: vec![],
        diagnostics: String::new(),
        time: c.time,
    }
}
