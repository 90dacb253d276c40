//! The case file of `ork test`, parsed once into typed values (the format is in
//! `docs/testing.md`):
//!
//! ```yaml
//! kind: Test
//! metadata: {name: webapp}
//! katalog: ../katalog.yaml        # relative to this file; `-k` overrides it
//! crds: [../crd.yaml]             # the scope and kind of custom managed types
//! cycles: 10                      # at most, per case (default 10)
//! cases:
//!   - name: a WebApp becomes a Deployment
//!     given:
//!       crs: [{apiVersion: demo.ork.dev/v1, kind: WebApp, metadata: {name: hello}, spec: {…}}]
//!       children: []              # objects already in the cluster
//!       cross: []                 # other entries' CRs, read by observe.cross, never reconciled
//!       inputs: []                # objects observe.inputs read (a Secret, a ConfigMap)
//!     expect:
//!       children:                 # subset match: the fields given must be there, equal
//!         - {apiVersion: apps/v1, kind: Deployment, metadata: {name: hello}, spec: {replicas: 2}}
//!       status: {phase: Ready}    # subset match on the CR's status
//!       conditions:
//!         Ready: {status: "True", reason: Reconciled, message: "contained text"}
//!       events:
//!         - {reason: Planned, note: "contained text"}
//!       error: NotOwned           # a condition reason, or text the error message contains
//!       steady: true
//!   - name: a forbidden image is refused at admission
//!     admission:                  # a write through the entry's webhooks, not a reconcile
//!       operation: CREATE         # the default; UPDATE takes oldObject
//!       object: {apiVersion: demo.ork.dev/v1, kind: WebApp, metadata: {name: x}, spec: {…}}
//!     expect:
//!       admission: {allowed: false, message: "contained text", object: {spec: {replicas: 3}}}
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::e2e::{Meta, parse_yaml};

/// One `kind: Test` file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestFile {
    #[serde(default, rename = "apiVersion")]
    _api_version: Option<String>,
    pub kind: String,
    #[serde(default)]
    pub metadata: Meta,
    /// The Katalog, relative to this file (`-k` overrides it).
    #[serde(default, alias = "catalog")]
    pub katalog: Option<PathBuf>,
    /// CRD files, relative to this file.
    #[serde(default)]
    pub crds: Vec<PathBuf>,
    /// Metacontroller controller files, relative to this file (`--controllers` adds more).
    #[serde(default)]
    pub controllers: Vec<PathBuf>,
    /// Cycles per case at most (default 10).
    #[serde(default)]
    pub cycles: Option<usize>,
    pub cases: Vec<TestCase>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestCase {
    pub name: String,
    #[serde(default)]
    pub given: Given,
    /// A write sent through the entry's admission webhooks instead of a reconcile.
    #[serde(default)]
    pub admission: Option<AdmissionCase>,
    #[serde(default)]
    pub expect: Expect,
}

/// `admission:` of a case: a write of a CR, as the API server would describe it to ork's
/// webhooks (the mutation, then the validation of the mutated object).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionCase {
    /// `CREATE` (the default), `UPDATE` or `DELETE`.
    #[serde(default = "create")]
    pub operation: String,
    /// The CR written; its apiVersion and kind name the entry.
    pub object: Value,
    /// The stored CR, for an `UPDATE`.
    #[serde(default)]
    pub old_object: Option<Value>,
    /// A server-side dry run.
    #[serde(default)]
    pub dry_run: bool,
}

fn create() -> String {
    "CREATE".into()
}

/// `expect.admission`: how the write fared.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionExpect {
    #[serde(default)]
    pub allowed: Option<bool>,
    /// Text the denial's message contains.
    #[serde(default)]
    pub message: Option<String>,
    /// Texts each contained in some warning.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// A subset match on the object after the mutation.
    #[serde(default)]
    pub object: Option<Value>,
}

/// What is in the cluster when the case starts.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Given {
    /// The CRs to reconcile; the first is "the CR" of `status`, `conditions` and children
    /// without a namespace.
    pub crs: Vec<Value>,
    /// Objects of managed types already in the cluster (a child someone else owns).
    #[serde(default)]
    pub children: Vec<Value>,
    /// Other entries' CRs, for `observe.cross`.
    #[serde(default)]
    pub cross: Vec<Value>,
    /// Objects the entry's `observe.inputs` read (Secrets, ConfigMaps, ...).
    #[serde(default)]
    pub inputs: Vec<Value>,
}

/// What the case must show after the run.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// Children as a subset match, found by kind, name and namespace.
    #[serde(default)]
    pub children: Vec<Value>,
    /// A subset match on the CR's `status`.
    #[serde(default)]
    pub status: Option<Value>,
    /// By condition type.
    #[serde(default)]
    pub conditions: BTreeMap<String, ConditionExpect>,
    /// Each must match an event recorded on the case's CRs.
    #[serde(default)]
    pub events: Vec<EventExpect>,
    /// A reconcile must fail: with this condition reason (`AnswerRejected`, `NotOwned`…) or
    /// with an error message containing this text. Without it, every reconcile must succeed.
    #[serde(default)]
    pub error: Option<String>,
    /// Whether two cycles in a row must change nothing (default: not checked).
    #[serde(default)]
    pub steady: Option<bool>,
    /// For a case with `admission:`: how the write fared.
    #[serde(default)]
    pub admission: Option<AdmissionExpect>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConditionExpect {
    /// `"True"`, `"False"` or `"Unknown"` (a YAML boolean is read as its text).
    #[serde(default)]
    pub status: Option<Value>,
    #[serde(default)]
    pub reason: Option<String>,
    /// Text the condition's message contains.
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventExpect {
    /// `Normal` or `Warning`.
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    /// Text the event's note contains.
    #[serde(default, alias = "message")]
    pub note: Option<String>,
}

impl TestFile {
    /// Reads a case file.
    ///
    /// # Errors
    /// The file cannot be read, is not YAML of this shape (file, line and field), is not
    /// `kind: Test`, or has a case without CRs.
    pub fn load(path: &Path) -> Result<TestFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file: TestFile = parse_yaml(path, &text).map_err(|e| e.to_string())?;
        if file.kind != "Test" {
            return Err(format!(
                "{}: kind: expected Test, found {:?}",
                path.display(),
                file.kind
            ));
        }
        if let Some(case) = file
            .cases
            .iter()
            .find(|c| c.given.crs.is_empty() && c.admission.is_none())
        {
            return Err(format!(
                "{}: case {:?}: given.crs: at least one CR to reconcile (or `admission:`, a write to admit)",
                path.display(),
                case.name
            ));
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_file_parses_and_a_typo_names_its_line() {
        let text = "kind: Test\nmetadata: {name: t}\ncases:\n  - name: c\n    given:\n      crs: [{apiVersion: demo.ork.dev/v1, kind: WebApp, metadata: {name: a}}]\n    expect:\n      conditions:\n        Ready: {status: \"True\"}\n      events: [{reason: Planned, message: x}]\n      error: NotOwned\n";
        let f: TestFile = parse_yaml(Path::new("t.yaml"), text).expect("parses");
        let e = &f.cases[0].expect;
        assert_eq!(e.error.as_deref(), Some("NotOwned"));
        assert_eq!(e.events[0].note.as_deref(), Some("x"));
        let bad = text.replace("error:", "errors:");
        let err = parse_yaml::<TestFile>(Path::new("t.yaml"), &bad).expect_err("fails");
        assert!(err.to_string().starts_with("t.yaml:11: "), "{err}");
    }
}
