//! Orkestra's `kind: E2E` file as typed values, parsed once with every field Orkestra defines;
//! a field Orkestra does not know is an error naming the file and line.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::assert::{Assertions, Scalar};

/// One E2E file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct E2e {
    #[serde(default, rename = "apiVersion")]
    _api_version: Option<String>,
    pub kind: String,
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: Spec,
    /// Further E2E files, run after this one against the same cluster.
    #[serde(default)]
    pub imports: Vec<Import>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Meta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Import {
    Path(String),
    Full {
        path: String,
        #[serde(default, rename = "freshCluster")]
        fresh_cluster: bool,
        #[serde(default)]
        wait: Option<String>,
    },
}

impl Import {
    pub fn path(&self) -> &str {
        match self {
            Import::Path(p) | Import::Full { path: p, .. } => p,
        }
    }

    /// How long to pause before the import runs.
    pub fn wait(&self) -> Option<&str> {
        match self {
            Import::Full { wait, .. } => wait.as_deref(),
            Import::Path(_) => None,
        }
    }

    /// An import that asks for a new cluster (ork runs every file against the one cluster).
    pub fn fresh_cluster(&self) -> bool {
        matches!(
            self,
            Import::Full {
                fresh_cluster: true,
                ..
            }
        )
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// `katalog` (Orkestra) or `catalog` (its later name).
    #[serde(default, alias = "catalog")]
    pub katalog: Option<String>,
    #[serde(default)]
    pub crd: Option<String>,
    #[serde(default)]
    pub crd_files: Vec<String>,
    #[serde(default)]
    pub cr: Option<String>,
    #[serde(default)]
    pub cr_files: Vec<String>,
    #[serde(default)]
    pub custom_operator: bool,
    #[serde(default)]
    pub custom: Option<Value>,
    #[serde(default)]
    pub init: Option<Value>,
    #[serde(default)]
    pub cluster: Option<ClusterSpec>,
    #[serde(default)]
    pub setup: Option<Setup>,
    #[serde(default)]
    pub values_files: Vec<String>,
    /// Note functions for `when`/`or`, which ork e2e does not evaluate.
    #[serde(default, rename = "notes")]
    _notes: Option<Value>,
    #[serde(default)]
    pub expect: Vec<Expectation>,
    #[serde(default)]
    pub on_failure: Option<OnFailure>,
}

impl Spec {
    pub fn crd_paths(&self) -> Vec<&str> {
        self.crd
            .iter()
            .chain(&self.crd_files)
            .map(String::as_str)
            .collect()
    }

    pub fn cr_paths(&self) -> Vec<&str> {
        self.cr
            .iter()
            .chain(&self.cr_files)
            .map(String::as_str)
            .collect()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, rename = "reuse")]
    _reuse: bool,
}

/// `setup:` as a list of paths (Orkestra's shorthand) or with `apply`, `helm` and `wait`.
#[derive(Debug, Default)]
pub struct Setup {
    pub apply: Vec<SetupApply>,
    pub helm: Vec<Value>,
    pub wait: Vec<Wait>,
}

impl<'de> Deserialize<'de> for Setup {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Paths(Vec<String>),
            Full(SetupFull),
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct SetupFull {
            #[serde(default)]
            apply: Vec<SetupApply>,
            #[serde(default)]
            helm: Vec<Value>,
            #[serde(default)]
            wait: Vec<Wait>,
        }
        Ok(match Form::deserialize(d)? {
            Form::Paths(paths) => Setup {
                apply: paths
                    .into_iter()
                    .map(|path| SetupApply { path, wait: vec![] })
                    .collect(),
                ..Setup::default()
            },
            Form::Full(f) => Setup {
                apply: f.apply,
                helm: f.helm,
                wait: f.wait,
            },
        })
    }
}

/// A manifest applied during setup, as a path or `{path, wait}`.
#[derive(Debug)]
pub struct SetupApply {
    pub path: String,
    pub wait: Vec<Wait>,
}

impl<'de> Deserialize<'de> for SetupApply {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Path(String),
            Full(Full),
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Full {
            path: String,
            #[serde(default)]
            wait: Vec<Wait>,
        }
        Ok(match Form::deserialize(d)? {
            Form::Path(path) => SetupApply { path, wait: vec![] },
            Form::Full(f) => SetupApply {
                path: f.path,
                wait: f.wait,
            },
        })
    }
}

/// A resource setup waits for: it exists (and with `ready`, has available replicas).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Wait {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub ready: bool,
    #[serde(default)]
    pub timeout: Option<String>,
}

/// One named block of checks, run after a lifecycle event.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expectation {
    /// A file with a list of expectations that replace this entry.
    #[serde(default)]
    pub include: Option<String>,
    #[serde(default)]
    pub name: String,
    /// `setup-complete` (default), `cr-applied` or `cr-deleted`.
    #[serde(default)]
    pub after: Option<String>,
    #[serde(default)]
    pub timeout: Option<String>,
    #[serde(default)]
    pub wait: Option<String>,
    #[serde(default)]
    pub resources: Vec<ResourceCheck>,
    #[serde(default)]
    pub commands: Vec<CommandCheck>,
    #[serde(default)]
    pub kubectl: Option<Kubectl>,
    #[serde(default)]
    pub when: Vec<Value>,
    #[serde(default)]
    pub or: Vec<Value>,
    #[serde(default)]
    pub on_failure: Option<OnFailure>,
    /// The folder relative paths of this expectation start from (its include file's).
    #[serde(skip)]
    pub dir: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceCheck {
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub count: Option<usize>,
    #[serde(default)]
    pub ready: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OnFailure {
    #[serde(default)]
    pub kubectl: Option<Kubectl>,
    #[serde(default)]
    pub commands: Vec<String>,
}

/// Declares a struct of an entry's own fields plus Orkestra's assertion fields, which every
/// output-producing entry carries (serde cannot combine `flatten` with `deny_unknown_fields`).
macro_rules! with_assertions {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Default, Clone, Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            $($(#[$fm])* pub $f: $t,)*
            #[serde(default)] pub equals: Option<Scalar>,
            #[serde(default)] pub not_equals: Option<Scalar>,
            #[serde(default)] pub output_contains: Option<Scalar>,
            #[serde(default)] pub output_not_contains: Option<Scalar>,
            #[serde(default)] pub regex: Option<String>,
            #[serde(default)] pub greater_than: Option<Scalar>,
            #[serde(default)] pub less_than: Option<Scalar>,
            #[serde(default)] pub greater_than_or_equal: Option<Scalar>,
            #[serde(default)] pub less_than_or_equal: Option<Scalar>,
            #[serde(default)] pub between: Option<Scalar>,
            #[serde(default)] pub not_between: Option<Scalar>,
            #[serde(default)] pub exists: bool,
            #[serde(default)] pub not_exists: bool,
            #[serde(default)] pub one_of: Vec<Scalar>,
            #[serde(default)] pub not_one_of: Vec<Scalar>,
        }

        impl $name {
            pub fn assertions(&self) -> Assertions {
                Assertions {
                    equals: self.equals.clone(),
                    not_equals: self.not_equals.clone(),
                    output_contains: self.output_contains.clone(),
                    output_not_contains: self.output_not_contains.clone(),
                    regex: self.regex.clone(),
                    greater_than: self.greater_than.clone(),
                    less_than: self.less_than.clone(),
                    greater_than_or_equal: self.greater_than_or_equal.clone(),
                    less_than_or_equal: self.less_than_or_equal.clone(),
                    between: self.between.clone(),
                    not_between: self.not_between.clone(),
                    exists: self.exists,
                    not_exists: self.not_exists,
                    one_of: self.one_of.clone(),
                    not_one_of: self.not_one_of.clone(),
                }
            }
        }
    };
}

with_assertions! {
    /// `commands:` — a shell command, its exit code and its output.
    pub struct CommandCheck {
        pub run: String,
        #[serde(default)]
        pub exit_code: i32,
    }
}

with_assertions! {
    /// `kubectl.get` — a field (JSONPath) or the whole object of one resource.
    pub struct Get {
        pub kind: String,
        pub name: String,
        #[serde(default)]
        pub namespace: Option<String>,
        #[serde(default)]
        pub field: Option<String>,
        #[serde(default)]
        pub format: Option<String>,
        #[serde(default)]
        pub jq: Option<String>,
        #[serde(default)]
        pub yq: Option<String>,
    }
}

with_assertions! {
    /// `kubectl.logs` — the logs of a pod (by name or label selector).
    pub struct Logs {
        #[serde(default)]
        pub name: Option<String>,
        #[serde(default)]
        pub label_selector: Option<String>,
        #[serde(default)]
        pub leader_election: Option<Value>,
        #[serde(default)]
        pub namespace: Option<String>,
        #[serde(default)]
        pub container: Option<String>,
        #[serde(default)]
        pub since: Option<String>,
        #[serde(default)]
        pub jq: Option<String>,
    }
}

with_assertions! {
    /// `kubectl.describe` — an object and its events, as text.
    pub struct Describe {
        pub kind: String,
        #[serde(default)]
        pub name: Option<String>,
        #[serde(default)]
        pub label_selector: Option<String>,
        #[serde(default)]
        pub namespace: Option<String>,
    }
}

with_assertions! {
    /// `kubectl.events` — the events of one object.
    pub struct Events {
        pub kind: String,
        pub name: String,
        #[serde(default)]
        pub namespace: Option<String>,
    }
}

with_assertions! {
    /// `kubectl.apply` — a file or inline manifest; with `exitCode` a refusal can be expected.
    pub struct Apply {
        #[serde(default)]
        pub file: Option<String>,
        #[serde(default)]
        pub inline: Option<String>,
        #[serde(default)]
        pub namespace: Option<String>,
        #[serde(default)]
        pub exit_code: i32,
    }
}

with_assertions! {
    /// `kubectl.auth` — may a user (or the current one) do a verb on a resource: `yes` or `no`.
    pub struct Auth {
        pub verb: String,
        pub resource: String,
        #[serde(default)]
        pub namespace: Option<String>,
        #[serde(default)]
        pub r#as: Option<String>,
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delete {
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub leader_election: Option<Value>,
    #[serde(default)]
    pub ignore_not_found: bool,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchStep {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    /// `merge` (default), `strategic` or `json`.
    #[serde(default)]
    pub r#type: Option<String>,
    pub patch: String,
}

/// `kubectl.scale` and `kubectl.restart`: a workload changed, then (with `ready`, the default)
/// waited on until its replicas are available.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollout {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub replicas: Option<i64>,
    #[serde(default)]
    pub ready: Option<bool>,
}

/// The `kubectl:` block. `exec`, `port-forward`, `cp` and `top` are read but not run (see
/// `run.rs`): they are kept as written to be named in the output.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kubectl {
    #[serde(default)]
    pub get: Vec<Get>,
    #[serde(default)]
    pub logs: Vec<Logs>,
    #[serde(default)]
    pub describe: Vec<Describe>,
    #[serde(default)]
    pub exec: Vec<Value>,
    #[serde(default, rename = "port-forward")]
    pub port_forward: Vec<Value>,
    #[serde(default)]
    pub apply: Vec<Apply>,
    #[serde(default)]
    pub delete: Vec<Delete>,
    #[serde(default)]
    pub patch: Vec<PatchStep>,
    #[serde(default)]
    pub events: Vec<Events>,
    #[serde(default)]
    pub auth: Vec<Auth>,
    #[serde(default)]
    pub cp: Vec<Value>,
    #[serde(default)]
    pub top: Vec<Value>,
    #[serde(default)]
    pub restart: Vec<Rollout>,
    #[serde(default)]
    pub scale: Vec<Rollout>,
}

/// A malformed file: where and what.
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct SpecError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

/// Reads an E2E file; `include`d expectation files are expanded in place.
///
/// # Errors
/// The file (or an include) cannot be read, is not YAML of this shape, or is not `kind: E2E`.
pub fn load(path: &Path) -> Result<E2e, SpecError> {
    let text = read(path)?;
    let mut e2e: E2e = parse(path, &text)?;
    if e2e.kind != "E2E" {
        return Err(SpecError {
            file: path.display().to_string(),
            line: line_of(&text, "kind:"),
            message: format!("kind: expected E2E, found {:?}", e2e.kind),
        });
    }
    let dir = crate::args::folder_of(path);
    e2e.spec.expect = expand(std::mem::take(&mut e2e.spec.expect), &dir, 0)?;
    Ok(e2e)
}

fn expand(list: Vec<Expectation>, dir: &Path, depth: usize) -> Result<Vec<Expectation>, SpecError> {
    let mut out = Vec::new();
    for mut e in list {
        match e.include.take() {
            Some(inc) if depth < 8 => {
                let file = dir.join(&inc);
                let text = read(&file)?;
                let items: Vec<Expectation> = parse(&file, &text)?;
                out.extend(expand(items, &crate::args::folder_of(&file), depth + 1)?);
            }
            Some(inc) => {
                return Err(SpecError {
                    file: dir.join(inc).display().to_string(),
                    line: None,
                    message: "include: nested more than 8 deep".into(),
                });
            }
            None => {
                e.dir = dir.to_path_buf();
                out.push(e);
            }
        }
    }
    Ok(out)
}

fn read(path: &Path) -> Result<String, SpecError> {
    std::fs::read_to_string(path).map_err(|e| SpecError {
        file: path.display().to_string(),
        line: None,
        message: e.to_string(),
    })
}

/// Typed YAML with the error's line, as `ork validate` reports a Katalog's.
///
/// # Errors
/// The text is not YAML of type `T`.
pub fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, SpecError> {
    serde_saphyr::from_str(text).map_err(|e| SpecError {
        file: path.display().to_string(),
        line: e.location().map(|l| l.line() as usize),
        message: e
            .to_string()
            .lines()
            .next()
            .unwrap_or("not valid YAML")
            .to_string(),
    })
}

fn line_of(text: &str, prefix: &str) -> Option<usize> {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORKESTRA: &str = r#"
apiVersion: orkestra.orkspace.io/v1
kind: E2E
metadata: {name: webapp-remote-e2e}
spec:
  katalog: ./katalog.yaml
  crd: ./crd.yaml
  cr: ./cr.yaml
  cluster: {provider: kind, name: ork-e2e, reuse: false}
  setup:
    apply:
      - path: ./secret.yaml
      - ./plain.yaml
  expect:
    - name: Status written
      after: cr-applied
      timeout: 60s
      kubectl:
        get:
          - {kind: WebApp, name: my-webapp, field: .status.phase, equals: Running}
          - {kind: Deployment, name: my-webapp, field: .spec.replicas, equals: 2}
        patch:
          - {kind: Deployment, name: my-webapp, patch: '{"spec":{"replicas":99}}'}
        exec:
          - {name: p, command: [ls]}
    - name: Gone
      after: cr-deleted
      resources:
        - {kind: WebApp, name: my-webapp, count: 0}
  onFailure:
    kubectl:
      describe: [{kind: Deployment, name: my-webapp}]
    commands: ["kubectl get pods"]
"#;

    #[test]
    fn orkestras_own_example_shape_parses_with_numbers_as_text() {
        let e: E2e = parse(Path::new("e2e.yaml"), ORKESTRA).expect("present");
        assert_eq!(e.metadata.name, "webapp-remote-e2e");
        let setup = e.spec.setup.as_ref().expect("present");
        assert_eq!(setup.apply[1].path, "./plain.yaml");
        let k = e.spec.expect[0].kubectl.as_ref().expect("present");
        assert_eq!(k.get[1].equals.as_ref().expect("present").0, "2");
        assert_eq!(k.exec.len(), 1);
        assert_eq!(e.spec.expect[1].resources[0].count, Some(0));
        assert_eq!(
            e.spec.on_failure.as_ref().expect("present").commands,
            vec!["kubectl get pods"]
        );
    }

    #[test]
    fn setup_as_a_plain_list_of_paths_is_orkestras_shorthand() {
        let e: E2e = parse(
            Path::new("e2e.yaml"),
            "kind: E2E\nspec:\n  setup:\n    - a.yaml\n    - b.yaml\n",
        )
        .expect("present");
        let paths: Vec<_> = e
            .spec
            .setup
            .expect("present")
            .apply
            .into_iter()
            .map(|a| a.path)
            .collect();
        assert_eq!(paths, ["a.yaml", "b.yaml"]);
    }

    #[test]
    fn an_unknown_field_names_the_file_line_and_field() {
        let text = "kind: E2E\nspec:\n  expect:\n    - name: x\n      resourcez: []\n";
        let err = parse::<E2e>(Path::new("t/e2e.yaml"), text).expect_err("fails");
        let shown = err.to_string();
        assert!(shown.starts_with("t/e2e.yaml:5: "), "{shown}");
        assert!(shown.contains("resourcez"), "{shown}");
    }
}
