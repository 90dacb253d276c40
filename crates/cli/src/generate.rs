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
    /// The ServiceAccount, Roles, RoleBindings and the bundle's workload, in `namespace`.
    pub name: String,
    /// Whether `name` was given (`--name`): then the cluster-scoped objects are called so too.
    pub chosen: bool,
}

impl Names {
    /// The name of the ClusterRole and ClusterRoleBinding: the `--name` given, else
    /// `ork-<Katalog name>`. Cluster-scoped names are shared by every team of a cluster, so two
    /// Katalogs generated with the defaults must not overwrite each other's grants (`kubectl
    /// apply` of a second `ClusterRoleBinding ork` would silently re-bind the first team's
    /// role to the second team's ServiceAccount). A Katalog without a name goes by its entries'.
    pub fn cluster_name(&self, katalog: &Katalog) -> String {
        if self.chosen {
            return self.name.clone();
        }
        let own = if katalog.metadata.name.is_empty() {
            katalog
                .spec
                .crds
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join("-")
        } else {
            katalog.metadata.name.clone()
        };
        let own: String = own
            .to_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let own = own.trim_matches(['-', '.']);
        if own.is_empty() {
            return self.name.clone();
        }
        // At most 253 characters, the bound of every object's name (a DNS subdomain's).
        let mut name = format!("{}-{own}", self.name);
        name.truncate(253);
        name.trim_end_matches(['-', '.']).to_string()
    }
}

/// Where the bundle mounts the Katalog (and the files it names, at the same relative paths).
const MOUNT: &str = "/etc/ork";

/// `ork generate rbac`: for the Katalog, the Metacontroller controllers in `controllers`, and
/// (`metacontroller`) watching the cluster's controllers.
pub fn rbac(
    katalog_path: &Path,
    names: &Names,
    controllers: &[PathBuf],
    metacontroller: bool,
) -> ExitCode {
    let with = metacontroller || !controllers.is_empty();
    let result = crate::controllers::katalog_or_none(katalog_path, with)
        .map_err(|problems| anyhow::anyhow!("{problems}"))
        .and_then(|k| crate::controllers::with_controllers(k, controllers))
        .and_then(|k| {
            let extra = if metacontroller {
                ork_kube::permissions::metacontroller_rules()
            } else {
                Vec::new()
            };
            rbac_objects_with(&k, katalog_path, names, &extra)
        });
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
    let result = load_with_text(katalog_path)
        .and_then(|(k, text)| bundle_objects(&k, katalog_path, &text, names, image, scale));
    finish("bundle", result)
}

fn load(path: &Path) -> Result<Katalog> {
    load_file(path).map_err(|problems| anyhow::anyhow!("{problems}"))
}

/// The Katalog and its text as written (the bundle and the chart's values carry it verbatim).
fn load_with_text(path: &Path) -> Result<(Katalog, String)> {
    let katalog = load(path)?;
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    Ok((katalog, text))
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

/// The permissions a Katalog needs, as RBAC rules: those needed cluster-wide, and per
/// namespace those needed there only (ork's own namespace first, then the others in name order).
/// `ork generate rbac`, the bundle and the Helm chart's values all render this one plan.
pub struct RbacPlan {
    pub cluster: Vec<Value>,
    pub namespaces: Vec<(String, Vec<Value>)>,
}

impl RbacPlan {
    /// # Errors
    /// A managed resource whose plural only the API server knows (RBAC names resources by
    /// plural).
    pub fn derive(katalog: &Katalog, katalog_path: &Path, namespace: &str) -> Result<RbacPlan> {
        if let Some(u) = unresolved(katalog).first() {
            bail!(
                "{}: {}: the plural of {} is only known to the API server, and RBAC names resources by plural\n    hint: add `plural:` (the CRD's spec.names.plural)",
                katalog_path.display(),
                u.path,
                u.what
            );
        }
        let mut cluster: Vec<Value> = Vec::new();
        let mut local: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for rule in rules(katalog, namespace, true) {
            match &rule.namespace {
                None => cluster.push(rule_json(&rule)),
                Some(ns) => local.entry(ns.clone()).or_default().push(rule_json(&rule)),
            }
        }
        let home = local.remove(namespace).unwrap_or_default();
        let namespaces = std::iter::once((namespace.to_string(), home))
            .chain(local)
            .filter(|(_, rules)| !rules.is_empty())
            .collect();
        Ok(RbacPlan {
            cluster,
            namespaces,
        })
    }
}

/// ork's Namespace, its ServiceAccount, a ClusterRole and ClusterRoleBinding for what is needed
/// cluster-wide (left out when nothing is), and a Role and RoleBinding in each namespace where
/// something is needed there only: ork's own (the Lease, its Secrets) and the namespace of each
/// entry that watches one namespace.
///
/// # Errors
/// As [`RbacPlan::derive`].
pub fn rbac_objects(katalog: &Katalog, katalog_path: &Path, names: &Names) -> Result<Vec<Value>> {
    rbac_objects_with(katalog, katalog_path, names, &[])
}

/// [`rbac_objects`] with `extra` rules granted too.
fn rbac_objects_with(
    katalog: &Katalog,
    katalog_path: &Path,
    names: &Names,
    extra: &[Rule],
) -> Result<Vec<Value>> {
    let mut plan = RbacPlan::derive(katalog, katalog_path, &names.namespace)?;
    plan.cluster.extend(extra.iter().map(rule_json));
    let subjects =
        json!([{"kind": "ServiceAccount", "name": names.name, "namespace": names.namespace}]);
    let cluster_name = names.cluster_name(katalog);
    let mut docs = vec![
        namespace_object(names),
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": names.name, "namespace": names.namespace, "labels": labels()},
        }),
    ];
    if !plan.cluster.is_empty() {
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": cluster_name, "labels": labels()},
            "rules": plan.cluster,
        }));
        docs.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": cluster_name, "labels": labels()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
            "subjects": subjects,
        }));
    }
    for (ns, rules) in plan.namespaces {
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

/// The inspector's port of the container: `/katalog`, `/status`.
const HTTP_PORT: u16 = 8080;
/// The probes' port of the container: `/healthz`, `/readyz`, `/metrics`, apart from the
/// inspector's so that its callers cannot starve the kubelet's probes.
const PROBE_PORT: u16 = 8081;
/// The admission webhook's port in the Pod (HTTPS).
const WEBHOOK_PORT: u16 = 9443;

/// The workload's settings that a chart user may change, with the defaults the bundle uses.
fn resources() -> Value {
    json!({"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}})
}

fn pod_security_context() -> Value {
    json!({
        "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    })
}

fn container_security_context() -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "readOnlyRootFilesystem": true,
        "capabilities": {"drop": ["ALL"]},
    })
}

fn probes() -> Value {
    let probe = |path: &str| json!({"httpGet": {"path": path, "port": "probes"}, "periodSeconds": 10, "failureThreshold": 3});
    json!({"liveness": probe("/healthz"), "readiness": probe("/readyz")})
}

/// The Katalog's ConfigMap data (`katalog.yaml` and the files it names) and the volume's items
/// (empty when only the Katalog is mounted).
fn katalog_data(
    katalog_text: &str,
    mounted: &Mounted,
) -> (serde_json::Map<String, Value>, Vec<Value>) {
    let mut data = serde_json::Map::new();
    data.insert("katalog.yaml".into(), json!(katalog_text));
    let mut items = Vec::new();
    if !mounted.files.is_empty() {
        items.push(json!({"key": "katalog.yaml", "path": "katalog.yaml"}));
    }
    for (key, (path, content)) in &mounted.files {
        data.insert(key.clone(), json!(content));
        items.push(json!({"key": key, "path": path}));
    }
    (data, items)
}

/// Namespace, the CRDs of `crdFile`s, RBAC, the Katalog (and the files it names) as a
/// ConfigMap, a Deployment running `ork run --no-dev-files` with leader election, probes,
/// resource requests and a locked-down security context, and a Service for its metrics.
/// `charts/ork` renders the same objects from the values [`values_document`] writes (a test
/// renders both and compares them).
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
    let (data, items) = katalog_data(katalog_text, &mounted);
    docs.push(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": config_map, "namespace": ns, "labels": labels()},
        "data": data,
    }));
    let mut volume = json!({"name": "katalog", "configMap": {"name": config_map}});
    if !items.is_empty() {
        volume["configMap"]["items"] = json!(items);
    }
    let probes = probes();
    let admission = has_admission(katalog);
    let mut args = vec![
        json!("run"),
        json!("-k"),
        json!(format!("{MOUNT}/katalog.yaml")),
        json!(work),
        json!("--no-dev-files"),
        json!(format!("--http-addr=0.0.0.0:{HTTP_PORT}")),
        json!(format!("--probe-addr=0.0.0.0:{PROBE_PORT}")),
        json!("--log-json"),
        json!("--shutdown-grace=20s"),
    ];
    let mut ports = vec![
        json!({"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}),
        json!({"name": "probes", "containerPort": PROBE_PORT, "protocol": "TCP"}),
    ];
    if admission {
        // ork registers the webhook configurations itself, calling this Service, with the
        // CA it keeps in its namespace as their caBundle (SPEC §21).
        args.push(json!(format!("--webhook-addr=0.0.0.0:{WEBHOOK_PORT}")));
        args.push(json!(format!(
            "--webhook-service={ns}/{}-webhook:443",
            names.name
        )));
        ports.push(json!({"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"}));
    }
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
                    "securityContext": pod_security_context(),
                    "containers": [{
                        "name": "ork",
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "args": args,
                        "env": [
                            {"name": "ORK_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        ],
                        "ports": ports,
                        "livenessProbe": probes["liveness"],
                        "readinessProbe": probes["readiness"],
                        "resources": resources(),
                        "securityContext": container_security_context(),
                        "volumeMounts": [{"name": "katalog", "mountPath": MOUNT, "readOnly": true}],
                    }],
                    "volumes": [volume],
                },
            },
        },
    }));
    docs.push(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("{}-metrics", names.name), "namespace": ns, "labels": labels()},
        "spec": {
            "selector": {"app.kubernetes.io/name": "ork"},
            "ports": [
                {"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP"},
                {"name": "probes", "port": PROBE_PORT, "targetPort": "probes", "protocol": "TCP"},
            ],
        },
    }));
    if admission {
        docs.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("{}-webhook", names.name), "namespace": ns, "labels": labels()},
            "spec": {
                "selector": {"app.kubernetes.io/name": "ork"},
                "ports": [{"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}],
            },
        }));
    }
    Ok(docs)
}

/// Whether an enabled entry asks for admission: then ork serves its webhook.
fn has_admission(katalog: &Katalog) -> bool {
    katalog.spec.crds.values().any(|e| {
        e.enabled
            && e.operator_box
                .reconcile
                .remote
                .as_ref()
                .is_some_and(|r| r.admission.is_some())
    })
}

pub fn values(katalog_path: &Path, names: &Names, image: &str, scale: Scale) -> ExitCode {
    let result = load_with_text(katalog_path)
        .and_then(|(k, text)| values_document(&k, katalog_path, &text, names, image, scale));
    match result {
        Ok(text) => {
            crate::output::emit(&text);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ork generate values: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The values file of `charts/ork` for a Katalog: the Katalog and the files it names, its
/// CRDs, the RBAC plan for ork's namespace, and the workload's defaults (the bundle's), each
/// section with a comment for the reader. `charts/ork/values.yaml` is this document for
/// `examples/webapp/katalog.yaml` (a test keeps it so).
///
/// # Errors
/// As [`bundle_objects`].
pub fn values_document(
    katalog: &Katalog,
    katalog_path: &Path,
    katalog_text: &str,
    names: &Names,
    image: &str,
    scale: Scale,
) -> Result<String> {
    let plan = RbacPlan::derive(katalog, katalog_path, &names.namespace)?;
    let mounted = Mounted::collect(katalog, katalog_path)?;
    let files: Vec<Value> = mounted
        .files
        .iter()
        .map(|(key, (path, content))| json!({"key": key, "path": path, "content": content}))
        .collect();
    let namespaces: Vec<Value> = plan
        .namespaces
        .iter()
        .map(|(ns, rules)| json!({"namespace": ns, "rules": rules}))
        .collect();
    let sections: Vec<(&str, &str, Value)> = vec![
        (
            "name",
            "The ServiceAccount, (Cluster)Role(Binding)s and Deployment are called this;\n# the Katalog's ConfigMap <name>-katalog, the metrics Service <name>-metrics.",
            json!(names.name),
        ),
        (
            "image",
            "The ork container image (see the Dockerfile).",
            json!(image),
        ),
        ("imagePullPolicy", "", json!("IfNotPresent")),
        ("imagePullSecrets", "", json!([])),
        (
            "replicas",
            "Replicas of the Deployment.",
            json!(scale.replicas),
        ),
        (
            "shards",
            "1: one leader at a time (--leader-elect); more: --shards N, split over the replicas (SPEC §12).",
            json!(scale.shards),
        ),
        (
            "katalog",
            "The Katalog and the files it names, mounted at /etc/ork. With existingConfigMap set, that\n# ConfigMap (key katalog.yaml, and the files' keys) is mounted instead and content and files\n# are unused. The RBAC below must still be the Katalog's: regenerate it with\n# `ork generate values -k katalog.yaml --namespace NS`.",
            json!({"existingConfigMap": "", "content": katalog_text, "files": files}),
        ),
        (
            "installCRDs",
            "Install the CRDs of the Katalog's crdFiles with the chart.",
            json!(true),
        ),
        ("crds", "", Value::Array(crd_objects(katalog)?)),
        (
            "rbac",
            "What the Katalog needs, as `ork generate rbac --namespace NAMESPACE` derives it. Generated\n# for one namespace: installing into another fails (regenerate for it). The ClusterRole and\n# ClusterRoleBinding are called clusterName (ork-<Katalog name> unless --name was given), so\n# that the Katalogs of two teams do not share one.",
            json!({
                "create": true,
                "namespace": names.namespace,
                "clusterName": names.cluster_name(katalog),
                "clusterRules": plan.cluster,
                "namespaces": namespaces,
            }),
        ),
        ("resources", "", resources()),
        (
            "podSecurityContext",
            "Non-root, seccomp RuntimeDefault; the container: read-only root, no privilege escalation, no capabilities.",
            pod_security_context(),
        ),
        ("securityContext", "", container_security_context()),
        ("probes", "", probes()),
        (
            "metrics",
            "A Service in front of the probes' port 8081 (/metrics, /healthz, /readyz: open) and the\n# inspector's port 8080 (/katalog, /status: for callers who may read the CRs).",
            json!({"service": true}),
        ),
        (
            "webhook",
            "The admission webhook (an entry with remote.admission): ork serves it on port 9443 behind the\n# Service <name>-webhook and registers the webhook configurations calling it itself.",
            json!({"enabled": has_admission(katalog)}),
        ),
        (
            "extraArgs",
            "More arguments to `ork run` (e.g. --log-level=debug).",
            json!([]),
        ),
        ("podAnnotations", "", json!({})),
        ("nodeSelector", "", json!({})),
        ("tolerations", "", json!([])),
        ("affinity", "", json!({})),
    ];
    let mut out = format!(
        "# Values of the ork chart, written by `ork generate values -k {}`.\n# Regenerate them for your Katalog; edit the workload settings at will.\n",
        katalog_path.display()
    );
    for (key, comment, value) in sections {
        let yaml = serde_saphyr::to_string(&json!({ key: value }))
            .map_err(|e| anyhow::anyhow!("cannot write YAML: {e}"))?;
        out.push('\n');
        if !comment.is_empty() {
            out.push_str(&format!("# {comment}\n"));
        }
        out.push_str(&yaml);
    }
    Ok(out)
}
