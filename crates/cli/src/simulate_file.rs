//! Orkestra's `kind: Simulate` files: which Katalog, CRs and CRDs to simulate for how many
//! cycles, and what the run must show — steady state, no errors, the ops expected (or absent)
//! in a cycle. Parsed once; checked against `ork simulate`'s report.

use std::path::{Path, PathBuf};

use ork_kube::simulate::{Change, Report};
use serde::Deserialize;

use crate::args::SimulateArgs;
use crate::e2e::{Meta, parse_yaml};
use crate::output::say;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulateFile {
    #[serde(default, rename = "apiVersion")]
    _api_version: Option<String>,
    pub kind: String,
    #[serde(default)]
    pub metadata: Meta,
    /// An aggregator: further Simulate files, each run on its own.
    #[serde(default)]
    pub imports: Vec<String>,
    #[serde(default)]
    pub spec: Option<Spec>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    #[serde(alias = "catalog")]
    pub katalog: String,
    #[serde(default)]
    pub cr: Option<String>,
    #[serde(default)]
    pub cr_files: Vec<String>,
    #[serde(default)]
    pub crd: Option<String>,
    #[serde(default)]
    pub crd_files: Vec<String>,
    /// Cycles to run at most (default 10).
    #[serde(default)]
    pub cycles: Option<usize>,
    /// Orkestra stubs its `external:` calls; ork's pipeline has none to stub.
    #[serde(default)]
    pub skip_external: bool,
    /// An Orkestra serve target; ork calls the Katalog's endpoint.
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub expect: Option<Expect>,
}

impl Spec {
    pub fn crs(&self, dir: &Path) -> Vec<PathBuf> {
        self.cr
            .iter()
            .chain(&self.cr_files)
            .map(|p| dir.join(p))
            .collect()
    }

    pub fn crds(&self, dir: &Path) -> Vec<PathBuf> {
        self.crd
            .iter()
            .chain(&self.crd_files)
            .map(|p| dir.join(p))
            .collect()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub steady: Option<bool>,
    /// Steady within this many cycles.
    #[serde(default)]
    pub steady_at: Option<usize>,
    #[serde(default)]
    pub no_errors: bool,
    #[serde(default)]
    pub ops: Vec<OpRule>,
    #[serde(default)]
    pub absent: Vec<OpRule>,
    /// Per entry; ork checks them against the whole run (its report does not tell entries'
    /// children apart).
    #[serde(default)]
    pub crds: std::collections::BTreeMap<String, Expect>,
}

/// An op of a cycle (0: any cycle): `verb` apply|create|update|patch|delete, `resource` the
/// plural (`deployments`), optionally a name; `count` the least number (default 1).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpRule {
    #[serde(default)]
    pub cycle: usize,
    pub verb: String,
    pub resource: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub count: usize,
}

impl OpRule {
    fn describe(&self) -> String {
        let mut d = format!("{} {}", self.verb, self.resource);
        if let Some(n) = &self.name {
            d.push_str(&format!("/{n}"));
        }
        if self.cycle > 0 {
            d.push_str(&format!(" (cycle {})", self.cycle));
        }
        d
    }

    /// The report's changes this rule matches.
    fn matches(&self, report: &Report) -> usize {
        let resource = self.resource.to_lowercase();
        report
            .cycles
            .iter()
            .filter(|c| self.cycle == 0 || c.cycle == self.cycle)
            .flat_map(|c| &c.changes)
            .filter(|change| {
                let (verbs, kind, object): (&[&str], &str, &str) = match change {
                    Change::Created { kind, object, .. } => (&["apply", "create"], kind, object),
                    Change::Changed { kind, object, .. } => {
                        (&["apply", "update", "patch"], kind, object)
                    }
                    Change::Pruned { kind, object } => (&["delete"], kind, object),
                    Change::Status { .. } | Change::Event { .. } => return false,
                };
                let kind = kind.rsplit('/').next().unwrap_or(kind).to_lowercase();
                let name = object.rsplit('/').next().unwrap_or(object);
                verbs.contains(&self.verb.as_str())
                    && [kind.clone(), format!("{kind}s"), format!("{kind}es")].contains(&resource)
                    && self.name.as_deref().is_none_or(|n| n == name)
            })
            .count()
    }
}

/// One checked expectation: its description and, when it does not hold, why.
pub struct Verdict {
    pub what: String,
    pub failure: Option<String>,
}

/// Checks every expectation against the report.
pub fn check(expect: &Expect, report: &Report) -> Vec<Verdict> {
    let mut out = Vec::new();
    let n = report.cycles.len();
    if let Some(want) = expect.steady {
        out.push(Verdict {
            what: if want { "steady" } else { "not steady" }.into(),
            failure: (report.steady != want).then(|| {
                if want {
                    format!("not steady after {n} cycles")
                } else {
                    format!("steady after {n} cycles")
                }
            }),
        });
    }
    if let Some(at) = expect.steady_at {
        out.push(Verdict {
            what: format!("steadyAt ≤{at}"),
            failure: match report.steady {
                true if n <= at => None,
                true => Some(format!("steady only after {n} cycles")),
                false => Some(format!("not steady after {n} cycles")),
            },
        });
    }
    if expect.no_errors {
        out.push(Verdict {
            what: "noErrors".into(),
            failure: report
                .failed
                .then(|| "a reconcile failed (see the calls above)".into()),
        });
    }
    for rule in &expect.ops {
        let found = rule.matches(report);
        let least = rule.count.max(1);
        out.push(Verdict {
            what: rule.describe(),
            failure: (found < least).then(|| match (found, rule.cycle) {
                (0, 0) => "no such op in any cycle".to_string(),
                (0, c) => format!("no such op in cycle {c}"),
                (f, _) => format!("expected at least {least}, found {f}"),
            }),
        });
    }
    for rule in &expect.absent {
        let found = rule.matches(report);
        out.push(Verdict {
            what: format!("absent: {}", rule.describe()),
            failure: (found > 0).then(|| format!("found {found}")),
        });
    }
    for (entry, sub) in &expect.crds {
        for mut v in check(sub, report) {
            v.what = format!("{entry}: {}", v.what);
            out.push(v);
        }
    }
    out
}

/// Reads a Simulate file.
///
/// # Errors
/// The file cannot be read, is not YAML of this shape (file, line and field), or is not
/// `kind: Simulate`.
pub fn load(path: &Path) -> Result<SimulateFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file: SimulateFile = parse_yaml(path, &text).map_err(|e| e.to_string())?;
    if file.kind != "Simulate" {
        return Err(format!(
            "{}: kind: expected Simulate, found {:?}",
            path.display(),
            file.kind
        ));
    }
    if file.spec.is_none() && file.imports.is_empty() {
        return Err(format!(
            "{}: spec: missing (and no imports)",
            path.display()
        ));
    }
    Ok(file)
}

/// `ork simulate [FILE…]`: each Simulate file (imports in turn), or without files the one
/// next to the Katalog; the exit code says whether every expectation held.
pub fn run(args: &SimulateArgs) -> std::process::ExitCode {
    let files = if args.files.is_empty() {
        let dir = crate::args::folder_of(&args.katalog);
        match [dir.join("test/simulate.yaml"), dir.join("simulate.yaml")]
            .into_iter()
            .find(|p| p.exists())
        {
            Some(f) => vec![f],
            None => {
                eprintln!(
                    "ork simulate: give the CRs with --cr, or a Simulate file (none at {}/test/simulate.yaml)",
                    dir.display()
                );
                return std::process::ExitCode::from(2);
            }
        }
    } else {
        args.files.clone()
    };
    let mut ok = true;
    for f in files {
        ok &= run_file(args, &f, 0);
    }
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

fn run_file(args: &SimulateArgs, path: &Path, depth: usize) -> bool {
    let file = match load(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("ork simulate: {e}");
            return false;
        }
    };
    let dir = crate::args::folder_of(path);
    let mut ok = true;
    if let Some(spec) = &file.spec {
        ok &= run_spec(args, &file, spec, &dir, path);
    }
    for import in &file.imports {
        if depth >= 8 {
            eprintln!(
                "ork simulate: {}: imports nested more than 8 deep",
                path.display()
            );
            return false;
        }
        ok &= run_file(args, &dir.join(import), depth + 1);
    }
    ok
}

fn run_spec(
    args: &SimulateArgs,
    file: &SimulateFile,
    spec: &Spec,
    dir: &Path,
    path: &Path,
) -> bool {
    let name = if file.metadata.name.is_empty() {
        path.display().to_string()
    } else {
        file.metadata.name.clone()
    };
    say!("Simulate {name} ({})", path.display());
    if let Some(d) = &file.metadata.description {
        say!("  {}", d.trim());
    }
    if let Some(t) = &spec.target {
        say!("  note: target {t:?} is Orkestra's serve target; ork calls the Katalog's endpoint");
    }
    if spec.skip_external {
        say!("  note: skipExternal: ork's pipeline makes no external calls to stub");
    }
    let (crs, crds) = (spec.crs(dir), spec.crds(dir));
    let files = crate::simulate::Files {
        crs: &crs,
        crds: &crds,
        controllers: &args.controllers,
        inputs: &[],
    };
    let report = crate::simulate::simulate_files(
        &dir.join(&spec.katalog),
        &files,
        spec.cycles.unwrap_or(args.cycles),
        (args.record.clone(), args.replay.clone()),
        &args.secrets,
    );
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ork simulate: {}: {e:#}", path.display());
            return false;
        }
    };
    if !crate::simulate::print_report(&report, &args.output, args.full) {
        return false;
    }
    let Some(expect) = &spec.expect else {
        // No expectations: the verdict of `ork simulate --cr`.
        return !report.failed && report.steady;
    };
    let verdicts = check(expect, &report);
    for v in &verdicts {
        match &v.failure {
            None => say!("  ✓ {}", v.what),
            Some(why) => say!("  ✗ {}: {why}", v.what),
        }
    }
    let failed = verdicts.iter().filter(|v| v.failure.is_some()).count();
    if failed == 0 && !report.failed {
        say!("  PASS ({} expectations)", verdicts.len());
        true
    } else {
        if report.failed && !expect.no_errors {
            say!("  ✗ a reconcile failed (see the calls above)");
        }
        say!(
            "  FAIL ({failed} of {} expectations do not hold)",
            verdicts.len()
        );
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orkestras_simulate_file_parses_and_a_typo_names_its_line() {
        let text = "apiVersion: orkestra.orkspace.io/v1\nkind: Simulate\nmetadata: {name: s}\nspec:\n  katalog: ./katalog.yaml\n  cr: ./cr.yaml\n  cycles: 3\n  expect:\n    steady: true\n    noErrors: true\n    ops:\n      - {cycle: 1, verb: apply, resource: deployments}\n";
        let f: SimulateFile = parse_yaml(Path::new("s.yaml"), text).expect("present");
        let spec = f.spec.expect("present");
        assert_eq!(spec.cycles, Some(3));
        assert_eq!(spec.expect.expect("present").ops[0].resource, "deployments");
        let bad = text.replace("noErrors", "noError");
        let err = parse_yaml::<SimulateFile>(Path::new("s.yaml"), &bad).expect_err("fails");
        assert!(err.to_string().starts_with("s.yaml:10: "), "{err}");
    }
}
