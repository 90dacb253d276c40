//! The files `ork init` writes, as text: each made from the [`Plan`], nothing read or written
//! here.

use serde_json::{Map, Value, json};

use super::plan::{CrType, Plan};
use super::skeleton::{bash, python};

/// One file of the scaffold.
#[derive(Debug)]
pub struct File {
    /// Relative to the operator's folder.
    pub path: &'static str,
    /// What it is, for the summary `ork init` prints.
    pub what: &'static str,
    pub text: String,
    pub executable: bool,
}

/// Every file, in the order the summary lists them.
pub fn all(plan: &Plan) -> Vec<File> {
    let mut files = vec![
        file(
            "katalog.yaml",
            "the Katalog: one entry, its service",
            katalog(plan),
        ),
        file("crd.yaml", "the CRD (ork run installs it)", crd(plan)),
        file(
            "cr.yaml",
            "a sample CR",
            yaml("A sample CR of the operator's type.", &plan.sample),
        ),
    ];
    if plan.python {
        files.push(file(
            "reconciler.py",
            "the reconcile service (Python, standard library)",
            python(plan),
        ));
    } else {
        let mut script = file(
            "reconcile.sh",
            "the reconcile script (bash and jq; ork runs it)",
            bash(plan),
        );
        script.executable = true;
        files.push(script);
    }
    files.push(file("test/cases.yaml", "ork test cases", cases(plan)));
    files.push(file("README.md", "the next commands", readme(plan)));
    files
}

fn file(path: &'static str, what: &'static str, text: String) -> File {
    File {
        path,
        what,
        text,
        executable: false,
    }
}

/// `value` as YAML under a comment.
fn yaml(comment: &str, value: &Value) -> String {
    let body = serde_saphyr::to_string(value).unwrap_or_else(|e| format!("# cannot write: {e}\n"));
    let mut out: String = comment.lines().map(|l| format!("# {l}\n")).collect();
    out.push_str(&body);
    out
}

/// `value` as YAML indented by `spaces`, to place under a key of a file written as text (the
/// files keep the order a reader expects; serde_json's maps would sort the keys).
fn indented(value: &Value, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    serde_saphyr::to_string(value)
        .unwrap_or_else(|e| format!("# cannot write: {e}\n"))
        .lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect()
}

/// The sample CR of `cr.yaml`: the type's apiVersion and kind, its name (and namespace, labels,
/// annotations) and its fields; what the API server adds (uid, status, …) left out.
pub fn sample_cr(t: &CrType, sample: Option<&Value>) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(t.api_version()));
    out.insert("kind".into(), json!(t.kind));
    let meta = sample.and_then(|s| s.get("metadata"));
    let mut metadata = Map::new();
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("example");
    metadata.insert("name".into(), json!(name));
    for field in ["namespace", "labels", "annotations"] {
        if let Some(v) = meta.and_then(|m| m.get(field)) {
            metadata.insert(field.into(), v.clone());
        }
    }
    out.insert("metadata".into(), Value::Object(metadata));
    match sample.and_then(Value::as_object) {
        Some(fields) => {
            for (k, v) in fields {
                if !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status") {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        None => {
            out.insert("spec".into(), json!({"message": "hello"}));
        }
    }
    Value::Object(out)
}

fn katalog(plan: &Plan) -> String {
    let t = &plan.cr_type;
    let transport = if plan.python {
        format!(
            "            # The service of reconciler.py, on this machine (local development). In a\n            # cluster: its Service's address, e.g. http://{name}-reconciler.{name}.svc/reconcile.\n            endpoint: \"http://127.0.0.1:{port}/reconcile\"\n",
            name = plan.name,
            port = plan.port
        )
    } else {
        "            # ork runs the script for each reconcile: the request on its stdin, the answer\n            # read from its stdout (relative to this file's folder).\n            command: [\"./reconcile.sh\"]\n".to_string()
    };
    format!(
        r#"# The Katalog of the {name} operator, made by `ork init`: the {kind} type ({api_version},
# crd.yaml) is reconciled by {service}. See README.md for what to run next.
apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata:
  name: {name}
spec:
  crds:
    {name}:
      description: {kind} objects, each reconciled into a ConfigMap.
      crdFile: crd.yaml
      apiTypes: {{group: {group}, version: {version}, kind: {kind}, plural: {plural}}}
      operatorBox:
        reconcile:
          default: false
          workers: 2
          resync: 5m
          queue:
            retryBackoff: {{initial: 1s, max: 2m}}
          remote:
{transport}            timeout: 10s
            # The types the service may return; `ork generate rbac` grants exactly these.
            managedResources:
              - {{group: "", version: v1, plural: configmaps, kind: ConfigMap}}
"#,
        name = plan.name,
        kind = t.kind,
        api_version = t.api_version(),
        service = if plan.python {
            "the HTTP service reconciler.py"
        } else {
            "the script reconcile.sh"
        },
        group = t.group,
        version = t.version,
        plural = t.plural,
    )
}

fn crd(plan: &Plan) -> String {
    let t = &plan.cr_type;
    let from = if plan.inferred {
        "Its schema was inferred from a sample CR's fields; what the sample\n# could not tell keeps any value."
    } else {
        "Its schema is a minimal one: a spec open to any field."
    };
    format!(
        r#"# The CRD of {kind}, made by `ork init`.
# {from}
# Edit it as the type settles (`required:`, enums, bounds); `ork run` installs it (the
# Katalog's crdFile).
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: {plural}, singular: {singular}, kind: {kind}}}
  versions:
    - name: {version}
      served: true
      storage: true
      subresources: {{status: {{}}}}
      additionalPrinterColumns:
        - {{name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}}
        - {{name: Age, type: date, jsonPath: .metadata.creationTimestamp}}
      schema:
        openAPIV3Schema:
{schema}"#,
        kind = t.kind,
        plural = t.plural,
        singular = t.singular,
        group = t.group,
        version = t.version,
        schema = indented(&plan.schema, 10),
    )
}

/// The sample CR under another name, as a case's given CR.
fn sample_named(plan: &Plan, name: &str) -> Value {
    let mut cr = plan.sample.clone();
    cr["metadata"] = json!({"name": name});
    cr
}

fn cases(plan: &Plan) -> String {
    let name = plan.sample["metadata"]["name"]
        .as_str()
        .unwrap_or("example")
        .to_string();
    // The spec's text fields are in the ConfigMap as written (other values as JSON, which a
    // case would have to spell as the service does).
    let text_fields: Map<String, Value> = plan
        .sample
        .get("spec")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, v)| {
            v.is_string()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-config")}});
    if !text_fields.is_empty() {
        config["data"] = Value::Object(text_fields);
    }
    let mut given = sample_named(plan, &name);
    if let Some(ns) = plan.sample["metadata"].get("namespace") {
        given["metadata"]["namespace"] = ns.clone();
    }
    let taken = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "taken-config"}, "data": {"owner": "someone else"}});
    let start = if plan.python {
        "start the service first (python3 reconciler.py &), then run"
    } else {
        "ork runs ./reconcile.sh for every call; run"
    };
    format!(
        r#"# `ork test` cases for the {name} operator, made by `ork init`. No cluster is needed;
# {start}
#
#   ork test        (in the operator's folder: this file is test/cases.yaml)
#
# The format is in the book's Testing page (docs/testing.md).
kind: Test
metadata: {{name: {name}}}
katalog: ../katalog.yaml
crds: [../crd.yaml]
cases:
  - name: a {kind} becomes a ConfigMap and a Ready status
    given:
      crs:
{given}    expect:
      children:
{config}      status: {{phase: Ready, configMap: {cr}-config}}
      conditions:
        Ready: {{status: "True"}}
      steady: true

  - name: a ConfigMap someone else made is not taken over
    given:
      crs:
{taken_cr}      children:
{taken}    expect:
      error: NotOwned
      conditions:
        Ready: {{status: "False", reason: NotOwned}}
"#,
        name = plan.name,
        kind = plan.cr_type.kind,
        cr = name,
        given = indented(&json!([given]), 8),
        config = indented(&json!([config]), 8),
        taken_cr = indented(&json!([sample_named(plan, "taken")]), 8),
        taken = indented(&json!([taken]), 8),
    )
}

fn readme(plan: &Plan) -> String {
    let t = &plan.cr_type;
    let service = if plan.python {
        format!(
            "- `reconciler.py`: the reconcile service, Python standard library only, on\n  127.0.0.1:{port} (`PORT=...` to move it; change the Katalog's `endpoint` to match).\n",
            port = plan.port
        )
    } else {
        "- `reconcile.sh`: the reconcile script (bash and jq); ork runs it for each reconcile.\n"
            .to_string()
    };
    let sample = plan.sample["metadata"]["name"]
        .as_str()
        .unwrap_or("example");
    let mut steps: Vec<(String, &str)> = Vec::new();
    if plan.python {
        steps.push((
            "python3 reconciler.py &".into(),
            "the service; the commands below call it",
        ));
    }
    steps.extend([
        (
            "ork validate".into(),
            "the Katalog: every problem with its line and field",
        ),
        (
            "ork test".into(),
            "test/cases.yaml, through ork's pipeline and the service",
        ),
        (
            format!("ork conform --entry {}", plan.name),
            "the service against the protocol (edge cases, idempotence)",
        ),
        (
            "ork simulate --cr cr.yaml".into(),
            "cycle by cycle, against an in-memory cluster",
        ),
        (
            "ork run --unauthenticated-loopback".into(),
            "against your kubeconfig's cluster (installs crd.yaml)",
        ),
        ("kubectl apply -f cr.yaml".into(), "in another terminal"),
        (format!("kubectl get {}", t.plural), "Ready: True"),
        (
            format!(
                "ork explain {}/{sample} --server http://127.0.0.1:8080",
                t.singular
            ),
            "why it is, or is not, Ready",
        ),
    ]);
    // Comments aligned, but not past the short commands' column for a long one.
    let width = steps
        .iter()
        .map(|(c, _)| c.len())
        .filter(|&n| n <= 34)
        .max()
        .unwrap_or(0)
        + 2;
    let next: String = steps
        .iter()
        .map(|(c, what)| {
            let pad = " ".repeat(width.saturating_sub(c.len()).max(2));
            format!("{c}{pad}# {what}\n")
        })
        .collect();
    format!(
        r#"# The {name} operator

Made by `ork init`: {kind} objects ({api_version}) reconciled into a ConfigMap each.

- `katalog.yaml`: the Katalog, one entry `{name}`; its service and the types it may return.
- `crd.yaml`: the CRD of {kind}; `ork run` installs it.
- `cr.yaml`: a sample {kind}.
{service}- `test/cases.yaml`: `ork test` cases.

## Next

```sh
{next}```

To run ork with only the permissions it needs, as the ServiceAccount its RBAC binds:

```sh
ork generate rbac | kubectl apply -f -
ork generate kubeconfig --service-account ork-system/ork -o ork-sa.kubeconfig
ORK_NAMESPACE=ork-system ork run --kubeconfig ork-sa.kubeconfig
```

Edit the service's `reconcile` to return the children you want (any type listed under
`managedResources`: add a type there, then regenerate the RBAC), and the cases to match.
"#,
        name = plan.name,
        kind = t.kind,
        api_version = t.api_version(),
    )
}
