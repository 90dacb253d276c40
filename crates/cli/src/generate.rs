//! `ork generate rbac|bundle -k FILE`: least-privilege RBAC derived from the Katalog, and a
//! bundle that runs ork in a cluster with `kubectl apply -f` alone. Output is deterministic.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use ork_katalog::{Katalog, load_file};
use ork_kube::permissions::{Rule, rules, unresolved};
use serde_json::{Value, json};

/// What the generated objects are called and where they live.
#[derive(Debug, Clone)]
pub struct Names {
    pub namespace: String,
    pub name: String,
}

/// Where the bundle mounts the Katalog (and the files it names, at the same relative paths).
const MOUNT: &str = "/etc/ork";

pub fn rbac(katalog_path: &Path, names: &Names) -> ExitCode {
    let result = load(katalog_path).and_then(|k| rbac_objects(&k, katalog_path, names));
    finish("rbac", result)
}

/// How many replicas run and how they share the work.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// 1: one leader at a time (`--leader-elect`); more: `--shards N`.
    pub shards: u32,
    pub replicas: u32,
}

impl Default for Scale {
    fn default() -> Self {
        Scale {
            shards: 1,
            replicas: 2,
        }
    }
}

pub fn bundle(katalog_path: &Path, names: &Names, image: &str, scale: Scale) -> ExitCode {
    let result = load(katalog_path).and_then(|k| {
        let text = std::fs::read_to_string(katalog_path)
            .with_context(|| format!("{}", katalog_path.display()))?;
        bundle_objects(&k, katalog_path, &text, names, image, scale)
    });
    finish("bundle", result)
}

fn load(path: &Path) -> Result<Katalog> {
    load_file(path).map_err(|problems| anyhow::anyhow!("{problems}"))
}

fn finish(what: &str, docs: Result<Vec<Value>>) -> ExitCode {
    match docs {
        Ok(docs) => print_documents(&docs),
        Err(e) => {
            eprintln!("ork generate {what}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn print_documents(docs: &[Value]) -> ExitCode {
    let mut out = String::new();
    for doc in docs {
        match serde_saphyr::to_string(doc) {
            Ok(yaml) => {
                out.push_str("---\n");
                out.push_str(&yaml);
            }
            Err(e) => {
                eprintln!("ork: cannot write YAML: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    crate::output::emit(&out);
    ExitCode::SUCCESS
}

fn labels() -> Value {
    json!({"app.kubernetes.io/name": "ork", "app.kubernetes.io/managed-by": "ork-generate"})
}

/// ork's Namespace, its ServiceAccount, a ClusterRole and ClusterRoleBinding for what is needed
/// cluster-wide (left out when nothing is), and a Role and RoleBinding in each namespace where
/// something is needed there only: ork's own (the Lease, its Secrets) and the namespace of each
/// entry that watches one namespace.
///
/// # Errors
/// A managed resource whose plural only the API server knows (RBAC names resources by plural).
pub fn rbac_objects(katalog: &Katalog, katalog_path: &Path, names: &Names) -> Result<Vec<Value>> {
    if let Some(u) = unresolved(katalog).first() {
        bail!(
            "{}: spec.crds.{}.operatorBox.reconcile.remote.managedResources[{}]: the plural of {} is only known to the API server, and RBAC names resources by plural\n    hint: add `plural:` (the CRD's spec.names.plural)",
            katalog_path.display(),
            u.entry,
            u.index,
            u.what
        );
    }
    let mut cluster: Vec<Value> = Vec::new();
    let mut local: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    local.insert(names.namespace.clone(), Vec::new());
    for rule in rules(katalog, &names.namespace, true) {
        match &rule.namespace {
            None => cluster.push(rule_json(&rule)),
            Some(ns) => local.entry(ns.clone()).or_default().push(rule_json(&rule)),
        }
    }
    let subjects =
        json!([{"kind": "ServiceAccount", "name": names.name, "namespace": names.namespace}]);
    let mut docs = vec![
        namespace_object(names),
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": names.name, "namespace": names.namespace, "labels": labels()},
        }),
    ];
    if !cluster.is_empty() {
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": names.name, "labels": labels()},
            "rules": cluster,
        }));
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": names.name, "labels": labels()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": names.name},
            "subjects": subjects,
        }));
    }
    // ork's own namespace first, then the others in name order.
    let home = local.remove(&names.namespace).unwrap_or_default();
    for (ns, rules) in std::iter::once((names.namespace.clone(), home)).chain(local) {
        if rules.is_empty() {
            continue;
        }
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": names.name, "namespace": ns, "labels": labels()},
            "rules": rules,
        }));
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": names.name, "namespace": ns, "labels": labels()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.name},
            "subjects": subjects,
        }));
    }
    Ok(docs)
}

fn namespace_object(names: &Names) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": names.namespace, "labels": labels()},
    })
}

fn rule_json(rule: &Rule) -> Value {
    let mut v = json!({
        "apiGroups": [rule.api_group],
        "resources": rule.resources,
        "verbs": rule.verbs,
    });
    if !rule.resource_names.is_empty() {
        v["resourceNames"] = json!(rule.resource_names);
    }
    v
}

/// The files a Katalog names, as the bundle mounts them next to it: `crdFile`s with their
/// content, `setup` and `crFiles` as placeholders (the bundle's `ork run --no-dev-files` never
/// applies them; they only have to exist for the Katalog to load).
struct Mounted {
    /// ConfigMap key → (path under [`MOUNT`], content).
    files: BTreeMap<String, (String, String)>,
}

impl Mounted {
    fn collect(katalog: &Katalog, katalog_path: &Path) -> Result<Mounted> {
        let base = katalog_path.parent().unwrap_or(Path::new(""));
        let mut by_path: BTreeMap<String, String> = BTreeMap::new();
        for (name, entry) in &katalog.spec.crds {
            let p = format!("spec.crds.{name}");
            if let Some(crd) = &entry.crd_file {
                let rel = relative(crd, base).with_context(|| format!("{p}.crdFile"))?;
                let text = std::fs::read_to_string(crd)
                    .with_context(|| format!("{p}.crdFile: reading {}", crd.display()))?;
                by_path.insert(rel, text);
            }
            let dev = entry.setup.iter().map(|f| ("setup", f));
            for (field, file) in dev.chain(entry.cr_files.iter().map(|f| ("crFiles", f))) {
                let rel = relative(file, base).with_context(|| format!("{p}.{field}"))?;
                by_path.entry(rel.clone()).or_insert_with(|| {
                    format!(
                        "# {rel}: a development file ({field}); this bundle runs `ork run --no-dev-files`, which does not apply it\n"
                    )
                });
            }
        }
        let mut files = BTreeMap::new();
        for (path, content) in by_path {
            let stem: String = path
                .chars()
                .map(|c| match c {
                    '/' => '.',
                    c if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') => c,
                    _ => '-',
                })
                .collect();
            let mut key = stem.clone();
            let mut n = 2;
            while key == "katalog.yaml" || files.contains_key(&key) {
                key = format!("{n}-{stem}");
                n += 1;
            }
            files.insert(key, (path, content));
        }
        Ok(Mounted { files })
    }
}

/// `file` relative to the Katalog's folder `base`, without `.`; an error when it lies outside.
fn relative(file: &Path, base: &Path) -> Result<String> {
    let rel: PathBuf = if base.as_os_str().is_empty() {
        file.to_path_buf()
    } else {
        file.strip_prefix(base)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| file.to_path_buf())
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            _ => bail!(
                "{} is outside the Katalog's folder; the bundle mounts the files a Katalog names next to it: move the file into that folder",
                file.display()
            ),
        }
    }
    if parts.is_empty() {
        bail!("{} is not a file", file.display());
    }
    Ok(parts.join("/"))
}

/// The CRDs of the Katalog's `crdFile`s (each entry's own), cleaned of server-side fields.
fn crd_objects(katalog: &Katalog) -> Result<Vec<Value>> {
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    for (name, entry) in &katalog.spec.crds {
        let Some(file) = &entry.crd_file else {
            continue;
        };
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("spec.crds.{name}.crdFile: reading {}", file.display()))?;
        let t = &entry.api_types;
        let mut found = false;
        for doc in documents(&text) {
            let value: Value = serde_saphyr::from_str(doc)
                .with_context(|| format!("{} is not valid YAML", file.display()))?;
            let items = match value.get("items").and_then(Value::as_array) {
                Some(items) => items.clone(),
                None => vec![value],
            };
            for mut crd in items {
                let s = |p: &str| crd.pointer(p).and_then(Value::as_str).map(str::to_string);
                if s("/kind").as_deref() != Some("CustomResourceDefinition")
                    || s("/spec/group").as_deref() != Some(t.group.as_str())
                    || s("/spec/names/kind").as_deref() != Some(t.kind.as_str())
                {
                    continue;
                }
                let crd_name = s("/metadata/name").unwrap_or_default();
                if let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
                    for field in [
                        "resourceVersion",
                        "uid",
                        "creationTimestamp",
                        "generation",
                        "managedFields",
                        "selfLink",
                    ] {
                        meta.remove(field);
                    }
                }
                if let Some(obj) = crd.as_object_mut() {
                    obj.remove("status");
                }
                out.insert(crd_name, crd);
                found = true;
            }
        }
        if !found {
            bail!(
                "spec.crds.{name}.crdFile: {} defines no CRD of {}.{}",
                file.display(),
                t.kind,
                t.group
            );
        }
    }
    Ok(out.into_values().collect())
}

/// The YAML documents of a multi-document file.
fn documents(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let marker = line.trim_end();
        if marker == "---" || marker.starts_with("--- ") {
            out.push(&text[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    out.push(&text[start..]);
    out.into_iter()
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        })
        .collect()
}

/// Namespace, the CRDs of `crdFile`s, RBAC, the Katalog (and the files it names) as a
/// ConfigMap, and a Deployment running `ork run --no-dev-files` with leader election, probes,
/// resource requests and a locked-down security context.
///
/// # Errors
/// As [`rbac_objects`]; a file the Katalog names that cannot be read or lies outside its folder.
pub fn bundle_objects(
    katalog: &Katalog,
    katalog_path: &Path,
    katalog_text: &str,
    names: &Names,
    image: &str,
    scale: Scale,
) -> Result<Vec<Value>> {
    let ns = &names.namespace;
    let work = if scale.shards > 1 {
        format!("--shards={}", scale.shards)
    } else {
        "--leader-elect".to_string()
    };
    let mut docs = rbac_objects(katalog, katalog_path, names)?;
    // After the Namespace, before anything else: kubectl creates the CRDs first.
    let crds = crd_objects(katalog)?;
    docs.splice(1..1, crds);
    let mounted = Mounted::collect(katalog, katalog_path)?;
    let config_map = format!("{}-katalog", names.name);
    let mut data = serde_json::Map::new();
    data.insert("katalog.yaml".into(), json!(katalog_text));
    let mut items = vec![json!({"key": "katalog.yaml", "path": "katalog.yaml"})];
    for (key, (path, content)) in &mounted.files {
        data.insert(key.clone(), json!(content));
        items.push(json!({"key": key, "path": path}));
    }
    docs.push(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": config_map, "namespace": ns, "labels": labels()},
        "data": data,
    }));
    let mut volume = json!({"name": "katalog", "configMap": {"name": config_map}});
    if !mounted.files.is_empty() {
        volume["configMap"]["items"] = json!(items);
    }
    let probe = |path: &str| json!({"httpGet": {"path": path, "port": "http"}, "periodSeconds": 10, "failureThreshold": 3});
    docs.push(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": names.name, "namespace": ns, "labels": labels()},
        "spec": {
            "replicas": scale.replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "ork"}},
            "template": {
                "metadata": {"labels": labels()},
                "spec": {
                    "serviceAccountName": names.name,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {
                        "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": "ork",
                        "image": image,
                        "args": [
                            "run", "-k", format!("{MOUNT}/katalog.yaml"), work,
                            "--no-dev-files",
                            "--http-addr=0.0.0.0:8080", "--log-json", "--shutdown-grace=20s",
                        ],
                        "env": [
                            {"name": "ORK_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        ],
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                        "livenessProbe": probe("/healthz"),
                        "readinessProbe": probe("/readyz"),
                        "resources": {
                            "requests": {"cpu": "50m", "memory": "64Mi"},
                            "limits": {"memory": "256Mi"},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "volumeMounts": [{"name": "katalog", "mountPath": MOUNT, "readOnly": true}],
                    }],
                    "volumes": [volume],
                },
            },
        },
    }));
    Ok(docs)
}
