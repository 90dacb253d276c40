//! `ork test FILE… [-k KATALOG] [--junit FILE] [--secret NAME/KEY=FILE]`: a service author's
//! declarative cases (SPEC §16), run without a cluster. [`spec`] parses a `kind: Test` file; each
//! case runs `ork simulate`'s pipeline from what it gives against a fresh in-memory cluster and
//! the Katalog's real service; [`verdict`] checks what it expects with the [`subset`] match.
//! The service is the Katalog's: an exec command runs per call, an HTTP service is the one the
//! author started, called by every case.

mod spec;
mod subset;
mod verdict;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, anyhow};
use ork_katalog::Katalog;
use ork_kube::simulate::{Given, SimulateOptions, simulate_given};
use serde_json::Value;

use crate::junit::{Case, Outcome, SpecReport};
use crate::output::say;
use crate::secrets::SecretArg;
use spec::{TestCase, TestFile};
use verdict::Subject;

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// `kind: Test` case files (default: test/cases.yaml).
    pub files: Vec<PathBuf>,
    /// The Katalog (default: the file's `katalog:`, else ./katalog.yaml).
    #[arg(short = 'k', long = "katalog")]
    pub katalog: Option<PathBuf>,
    /// Metacontroller controllers (CompositeController, DecoratorController) to run as well,
    /// or alone without a Katalog (added to the file's `controllers:`); their parents' kinds
    /// come from the CRDs, built-in kinds or the cases' CRs. Repeatable.
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

pub fn run(args: TestArgs) -> ExitCode {
    let files = if args.files.is_empty() {
        vec![PathBuf::from("test/cases.yaml")]
    } else {
        args.files.clone()
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork test: {e}");
            return ExitCode::FAILURE;
        }
    };
    let reports: Vec<SpecReport> = files
        .iter()
        .map(|f| rt.block_on(run_file(&args, f)))
        .collect();
    crate::junit::finish("ork test", &reports, args.junit.as_deref())
}

/// Runs every case of one file; a file that cannot be run is one failed case.
async fn run_file(args: &TestArgs, path: &Path) -> SpecReport {
    let shown = path.display().to_string();
    let prepared = prepare(args, path).await;
    let (file, katalog, options) = match prepared {
        Ok(p) => p,
        Err(e) => {
            say!("✗ {shown}: {e:#}");
            return SpecReport::failed_file(path, "load the case file", format!("{e:#}"));
        }
    };
    let name = if file.metadata.name.is_empty() {
        shown.clone()
    } else {
        file.metadata.name.clone()
    };
    say!("Test {name} ({shown})");
    let mut cases = Vec::new();
    for case in &file.cases {
        let started = Instant::now();
        let outcome = match run_case(case, &katalog, &options).await {
            Ok(failures) if failures.is_empty() => {
                say!("  ✓ {}", case.name);
                Outcome::Passed
            }
            Ok(failures) => {
                say!("  ✗ {}", case.name);
                for f in &failures {
                    say!("      {f}");
                }
                Outcome::Failed(failures.join("\n"))
            }
            Err(e) => {
                say!("  ✗ {}: {e:#}", case.name);
                Outcome::Failed(format!("{e:#}"))
            }
        };
        cases.push(Case {
            name: case.name.clone(),
            outcome,
            notes: vec![],
            diagnostics: String::new(),
            time: started.elapsed(),
        });
    }
    SpecReport {
        name,
        file: shown,
        cases,
    }
}

/// The file, its Katalog and the options every case of it runs with.
async fn prepare(args: &TestArgs, path: &Path) -> Result<(TestFile, Katalog, SimulateOptions)> {
    let file = TestFile::load(path).map_err(|e| anyhow!(e))?;
    let dir = crate::args::folder_of(path);
    let katalog_path = args.katalog.clone().unwrap_or_else(|| {
        file.katalog.as_ref().map_or_else(
            || PathBuf::from(crate::args::DEFAULT_KATALOG),
            |k| dir.join(k),
        )
    });
    let controllers: Vec<PathBuf> = file
        .controllers
        .iter()
        .map(|c| dir.join(c))
        .chain(args.controllers.iter().cloned())
        .collect();
    let crds: Vec<PathBuf> = file.crds.iter().map(|c| dir.join(c)).collect();
    let crds = crate::simulate::read_documents(&crds)?;
    let crs: Vec<Value> = file
        .cases
        .iter()
        .flat_map(|c| c.given.crs.iter().cloned())
        .collect();
    let katalog = crate::controllers::offline_katalog(&katalog_path, &controllers, &crs, &crds)
        .map_err(|e| anyhow!("{}: {e:#}", katalog_path.display()))?;
    let options = SimulateOptions {
        cycles: file.cycles.unwrap_or(10),
        katalog_dir: crate::args::folder_of(&katalog_path),
        crds,
        record: None,
        replay: None,
        secrets: crate::secrets::offline_secrets(&katalog, &args.secrets).await?,
    };
    Ok((file, katalog, options))
}

/// Runs one case against a fresh in-memory cluster; the expectations that do not hold.
async fn run_case(
    case: &TestCase,
    katalog: &Katalog,
    options: &SimulateOptions,
) -> Result<Vec<String>> {
    if let Some(write) = &case.admission {
        return admit_case(write, case.expect.admission.as_ref(), katalog, options).await;
    }
    let first = &case.given.crs[0];
    let namespace = first["metadata"]["namespace"].as_str().map(str::to_string);
    // A given child without a namespace is where the case's CR is.
    let children = case
        .given
        .children
        .iter()
        .cloned()
        .map(|mut c| {
            if let Some(ns) = &namespace
                && c["metadata"]["namespace"].is_null()
            {
                c["metadata"]["namespace"] = Value::String(ns.clone());
            }
            c
        })
        .collect();
    let given = Given {
        crs: case.given.crs.clone(),
        children,
        cross: case.given.cross.clone(),
        inputs: case.given.inputs.clone(),
    };
    let report = simulate_given(katalog.clone(), given, options.clone()).await?;
    let subject = subject(first, &report);
    Ok(verdict::check(&case.expect, &subject, &report))
}

/// Sends a case's write through its entry's webhooks; the expectations that do not hold.
async fn admit_case(
    write: &spec::AdmissionCase,
    expect: Option<&spec::AdmissionExpect>,
    katalog: &Katalog,
    options: &SimulateOptions,
) -> Result<Vec<String>> {
    let (api_version, kind) = (
        write.object["apiVersion"].as_str().unwrap_or_default(),
        write.object["kind"].as_str().unwrap_or_default(),
    );
    let entry = katalog
        .spec
        .crds
        .iter()
        .find(|(_, e)| {
            let t = &e.api_types;
            let av = if t.group.is_empty() {
                t.version.clone()
            } else {
                format!("{}/{}", t.group, t.version)
            };
            av == api_version && t.kind == kind
        })
        .map(|(name, _)| name.clone())
        .ok_or_else(|| {
            anyhow!("admission.object: no entry of the Katalog has {kind} ({api_version})")
        })?;
    let admission = ork_kube::simulate::OfflineAdmission::new(katalog, &entry, options)?
        .ok_or_else(|| anyhow!("entry {entry} has no remote.admission"))?;
    let admitted = admission
        .admit(&ork_kube::simulate::Write {
            operation: write.operation.clone(),
            object: write.object.clone(),
            old_object: write.old_object.clone(),
            dry_run: write.dry_run,
        })
        .await;
    let mut failures = Vec::new();
    if let Some(why) = &admitted.failed {
        failures.push(format!("the admission service did not answer: {why}"));
        return Ok(failures);
    }
    let Some(expect) = expect else {
        if !admitted.allowed {
            failures.push(format!(
                "denied: {}",
                admitted.message.as_deref().unwrap_or("(no message)")
            ));
        }
        return Ok(failures);
    };
    if let Some(allowed) = expect.allowed
        && allowed != admitted.allowed
    {
        failures.push(format!(
            "admission: expected allowed: {allowed}, found {} ({})",
            admitted.allowed,
            admitted.message.as_deref().unwrap_or("no message")
        ));
    }
    if let Some(text) = &expect.message
        && !admitted
            .message
            .as_deref()
            .is_some_and(|m| m.contains(text.as_str()))
    {
        failures.push(format!(
            "admission.message: expected it to contain {text:?}, found {:?}",
            admitted.message
        ));
    }
    for w in &expect.warnings {
        if !admitted.warnings.iter().any(|x| x.contains(w.as_str())) {
            failures.push(format!(
                "admission.warnings: none contains {w:?} ({:?})",
                admitted.warnings
            ));
        }
    }
    if let Some(object) = &expect.object {
        for m in subset::subset(object, &admitted.object) {
            failures.push(format!("admission.object: {m}"));
        }
    }
    Ok(failures)
}

/// The case's first CR as the run stored it (its namespace defaulted).
fn subject(cr: &Value, report: &ork_kube::simulate::Report) -> Subject {
    let kind = cr["kind"].as_str().unwrap_or_default();
    let name = cr["metadata"]["name"].as_str().unwrap_or_default();
    let stored = report
        .crs
        .iter()
        .find(|(_, v)| v["kind"] == kind && v["metadata"]["name"] == name);
    let namespace = stored
        .and_then(|(_, v)| v["metadata"]["namespace"].as_str())
        .map(str::to_string);
    let key = match &namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    Subject {
        shown: format!("{kind} {key}"),
        namespace,
    }
}
