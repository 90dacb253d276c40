//! Typed Katalog structs (SPEC §1, §9), deserialised with unknown fields denied.
//!
//! After [`crate::load_file`] the model is complete: `apiTypes` is filled from `crdFile` when
//! needed, file paths are resolved against the Katalog's folder, managed resources carry what
//! could be derived, and every template and condition knows the Katalog's notes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::condition::Condition;
use crate::duration::Duration;
use crate::kinds;
use crate::problem::Problem;
use crate::template::{Notes, RenderContext, SharedNotes, Template, TemplateError, is_template};

pub use crate::sentinel::Sentinel;

/// One Katalog file (or document): a set of CRD entries ork reconciles.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Katalog {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: KatalogMeta,
    /// Template functions defined by the Katalog, usable in every templated field.
    #[serde(default, skip_serializing_if = "NotesBlock::is_empty")]
    pub notes: NotesBlock,
    pub spec: KatalogSpec,
    /// What `ork validate` should tell the user that is not an error (for example that a
    /// templated Secret name widens RBAC). Filled by [`crate::load_file`].
    #[serde(skip)]
    #[schemars(skip)]
    pub notices: Vec<Problem>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KatalogMeta {
    #[serde(default)]
    pub name: String,
    /// Orkestra's tenant grouping of entries (shown by `/katalog`; no effect on watching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// Top-level `notes:`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotesBlock {
    #[serde(default)]
    pub functions: Vec<NoteFunction>,
}

impl NotesBlock {
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }
}

/// `notes.functions[]`: a named template expression, called as `{{ name }}` in any template.
/// The expression sees the same data as its caller; its output is trimmed, and `true`/`false`
/// become booleans. Arguments given in a call are `$1`, `$2`… (and `$args`) inside it.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NoteFunction {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub expression: String,
    /// Acknowledges that this note replaces a built-in function of the same name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shadow: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KatalogSpec {
    pub crds: BTreeMap<String, CrdEntry>,
}

/// `spec.crds.<name>`: one custom resource type and how it is reconciled.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrdEntry {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub description: Option<String>,
    /// Orkestra's `mode`; only `dynamic` applies to ork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Complete after loading: taken from `crdFile` when not written (and checked against it
    /// when written).
    #[serde(default)]
    pub api_types: ApiTypes,
    /// The CRD manifest, resolved against the Katalog's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd_file: Option<PathBuf>,
    /// Sample CRs applied once the CRD is established (development helper), resolved paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cr_files: Vec<PathBuf>,
    /// Manifests applied at start (development helper), resolved paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<PathBuf>,
    #[serde(default = "yes")]
    pub namespaced: bool,
    /// Watch only this namespace; empty watches all.
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub label_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub field_selector: BTreeMap<String, String>,
    /// Labels written onto each CR (values are templates over the CR).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, Template>,
    /// Annotations written onto each CR (values are templates over the CR).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, Template>,
    /// Only CRs in these namespaces are reconciled (exact names or `prefix-*` / `*-suffix`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_namespaces: Vec<String>,
    /// CRs in these namespaces are never reconciled (same patterns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restricted_namespaces: Vec<String>,
    #[serde(default)]
    pub endpoints: Endpoints,
    #[serde(default)]
    pub depends_on: DependsOn,
    #[serde(default)]
    pub force_conflict: Option<bool>,
    pub operator_box: OperatorBox,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) notes: Option<SharedNotes>,
}

impl CrdEntry {
    /// The Katalog's notes, for building a [`RenderContext`].
    pub fn notes(&self) -> Option<&Notes> {
        self.notes.as_deref()
    }

    /// Allowed namespace patterns of the entry and of `operatorBox.runtime`, merged.
    pub fn effective_allowed_namespaces(&self) -> Vec<String> {
        merge_patterns(
            &self.allowed_namespaces,
            &self.operator_box.runtime.allowed_namespaces,
        )
    }

    /// Restricted namespace patterns of the entry and of `operatorBox.runtime`, merged.
    pub fn effective_restricted_namespaces(&self) -> Vec<String> {
        merge_patterns(
            &self.restricted_namespaces,
            &self.operator_box.runtime.restricted_namespaces,
        )
    }

    /// Whether CRs in `namespace` are reconciled under the namespace guards.
    pub fn namespace_allowed(&self, namespace: &str) -> bool {
        let allowed = self.effective_allowed_namespaces();
        if self
            .effective_restricted_namespaces()
            .iter()
            .any(|p| namespace_matches(namespace, p))
        {
            return false;
        }
        allowed.is_empty() || allowed.iter().any(|p| namespace_matches(namespace, p))
    }

    /// The one namespace the guards pin the entry to (`namespace`, or a single exact allowed
    /// namespace with no restrictions), so a watch can be scoped to it.
    pub fn single_namespace(&self) -> Option<String> {
        if let Some(ns) = self.namespace.as_ref().filter(|n| !n.is_empty()) {
            return Some(ns.clone());
        }
        let allowed = self.effective_allowed_namespaces();
        match allowed.as_slice() {
            [one] if !one.contains('*') && self.effective_restricted_namespaces().is_empty() => {
                Some(one.clone())
            }
            _ => None,
        }
    }

    /// Renders `labels` and `annotations` for a CR; keys whose value renders empty are left out.
    ///
    /// # Errors
    /// The key and error of the first template that fails.
    pub fn render_metadata(&self, cr: &Value) -> Result<RenderedMetadata, String> {
        let ctx = self.render_context(cr);
        let render = |map: &BTreeMap<String, Template>| {
            map.iter()
                .map(|(k, t)| {
                    t.render_in(&ctx)
                        .map(|v| (k.clone(), v))
                        .map_err(|e| format!("{k}: {e}"))
                })
                .filter(|r| r.as_ref().map_or(true, |(_, v)| !v.is_empty()))
                .collect::<Result<BTreeMap<_, _>, _>>()
        };
        Ok((render(&self.labels)?, render(&self.annotations)?))
    }

    /// A render context over `data` with this entry's notes.
    pub fn render_context<'a>(&'a self, data: &'a Value) -> RenderContext<'a> {
        let ctx = RenderContext::new(data);
        match self.notes() {
            Some(n) => ctx.with_notes(n),
            None => ctx,
        }
    }
}

/// Rendered `labels` and `annotations` of one CR.
pub type RenderedMetadata = (BTreeMap<String, String>, BTreeMap<String, String>);

fn merge_patterns(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in a.iter().chain(b) {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

/// Orkestra's namespace patterns: exact, `*`, `prefix*` or `*suffix`.
pub fn namespace_matches(namespace: &str, pattern: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    if let Some(prefix) = pattern.strip_suffix('*') {
        return namespace.starts_with(prefix);
    }
    if let Some(suffix) = pattern.strip_prefix('*') {
        return namespace.ends_with(suffix);
    }
    namespace == pattern
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiTypes {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub plural: String,
}

/// `endpoints`: which of ork's per-entry HTTP routes exist (all by default).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Endpoints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `/katalog/{entry}/health` (and the health annotation on CRs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<bool>,
    /// `/katalog/{entry}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<bool>,
}

impl Endpoints {
    pub fn health_enabled(&self) -> bool {
        self.enabled != Some(false) && self.health != Some(false)
    }

    pub fn info_enabled(&self) -> bool {
        self.enabled != Some(false) && self.info != Some(false)
    }
}

/// `dependsOn`: a list of entry names (condition `started`), a map name → condition, or a map
/// name → `{condition: …}`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DependsOn {
    #[default]
    None,
    List(Vec<String>),
    Map(BTreeMap<String, Dependency>),
}

/// One `dependsOn` map value: `healthy` or `{condition: healthy}`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(untagged)]
pub enum Dependency {
    Condition(DependencyCondition),
    Full { condition: DependencyCondition },
}

impl Dependency {
    pub fn condition(self) -> DependencyCondition {
        match self {
            Dependency::Condition(c) | Dependency::Full { condition: c } => c,
        }
    }
}

impl DependsOn {
    /// Every dependency with its condition, lists meaning `started`.
    pub fn entries(&self) -> Vec<(String, DependencyCondition)> {
        match self {
            DependsOn::None => Vec::new(),
            DependsOn::List(names) => names
                .iter()
                .map(|n| (n.clone(), DependencyCondition::Started))
                .collect(),
            DependsOn::Map(map) => map
                .iter()
                .map(|(k, v)| (k.clone(), v.condition()))
                .collect(),
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DependencyCondition {
    Started,
    Healthy,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorBox {
    #[serde(default)]
    pub pre_reconcile: PreReconcile,
    #[serde(default)]
    pub observe: Observe,
    #[serde(default)]
    pub validation: ValidationRules,
    pub reconcile: Reconcile,
    /// Orkestra's `operatorBox.runtime`; ork takes its namespace guards.
    #[serde(default)]
    pub runtime: RuntimeBox,
}

/// `operatorBox.runtime`: namespace guards (merged with the entry's own).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeBox {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_namespaces: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restricted_namespaces: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreReconcile {
    #[serde(default)]
    pub sentinels: Vec<Sentinel>,
    #[serde(default)]
    pub enqueue_gate: Option<Gate>,
    #[serde(default)]
    pub reconcile_gate: Option<Gate>,
}

/// A gate passes when every `when` condition holds, one `or` condition holds (if any), and one
/// of the `sentinels` listed is true (if any).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gate {
    #[serde(default)]
    pub when: Vec<Condition>,
    #[serde(default)]
    pub or: Vec<Condition>,
    /// Orkestra's shorthand: the gate opens when any of these (declared) sentinels is true.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sentinels: Vec<Sentinel>,
    /// What the gate does when a condition cannot be evaluated (a template that fails).
    #[serde(default)]
    pub fail_policy: FailPolicy,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FailPolicy {
    /// Pass the gate (Orkestra's default).
    #[default]
    Open,
    /// Hold the object back.
    Closed,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observe {
    #[serde(default)]
    pub cross: Vec<CrossRef>,
}

/// Objects of another Katalog entry sent to the service in `prepared.cross.<as>`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrossRef {
    pub crd: String,
    #[serde(default)]
    pub selector: CrossSelector,
    #[serde(rename = "as")]
    pub alias: String,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrossSelector {
    #[serde(default)]
    pub name: Option<Template>,
    #[serde(default)]
    pub namespace: Option<Template>,
    #[serde(default)]
    pub labels: BTreeMap<String, Template>,
}

/// `operatorBox.validation`: conditions checked before the call; results go to
/// `prepared.validation`, and a failed `deny` rule fails the reconcile without calling.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidationRules {
    #[serde(default)]
    pub rules: Vec<Condition>,
}

/// `operatorBox.reconcile`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reconcile {
    /// Orkestra starts its built-in reconciler unless this is `false`; ork requires `false`.
    #[serde(default)]
    pub default: Option<bool>,
    #[serde(default = "default_workers")]
    pub workers: u32,
    #[serde(default = "default_resync")]
    pub resync: Duration,
    #[serde(default)]
    pub queue: Queue,
    #[serde(default)]
    pub force_conflict: Option<bool>,
    #[serde(default)]
    pub remote: Option<Remote>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Queue {
    #[serde(default = "default_failure_threshold")]
    pub failure_threshold: u32,
    #[serde(default)]
    pub retry_backoff: RetryBackoff,
    /// Calls per failure series (the first included); then the object waits for its next
    /// event or resync. Unlimited when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            failure_threshold: default_failure_threshold(),
            retry_backoff: RetryBackoff::default(),
            max_attempts: None,
        }
    }
}

impl Queue {
    /// `queue.maxAttempts`, else `queue.retryBackoff.maxAttempts`.
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts.or(self.retry_backoff.max_attempts)
    }
}

/// Per-object exponential backoff after failed reconciles; reset on success. Written as a map
/// or as a single duration (the initial delay).
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetryBackoff {
    pub initial: Duration,
    pub max: Duration,
    pub multiplier: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

impl Default for RetryBackoff {
    fn default() -> Self {
        RetryBackoff {
            initial: default_backoff_initial(),
            max: default_backoff_max(),
            multiplier: default_backoff_multiplier(),
            max_attempts: None,
        }
    }
}

/// The map form of `retryBackoff`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RetryBackoffFields {
    #[serde(default = "default_backoff_initial")]
    initial: Duration,
    #[serde(default)]
    max: Option<Duration>,
    #[serde(default = "default_backoff_multiplier")]
    multiplier: f64,
    #[serde(default)]
    max_attempts: Option<u32>,
}

/// Schema of `retryBackoff`: a duration or the map.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum RetryBackoffSchema {
    Initial(Duration),
    Fields(RetryBackoffFields),
}

impl JsonSchema for RetryBackoff {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RetryBackoff".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        RetryBackoffSchema::json_schema(g)
    }
}

impl<'de> Deserialize<'de> for RetryBackoff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RetryBackoff;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a duration such as 5s, or {initial, max, multiplier, maxAttempts}")
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<RetryBackoff, E> {
                let initial: Duration = s.parse().map_err(E::custom)?;
                Ok(RetryBackoff {
                    initial,
                    max: initial.max(default_backoff_max()),
                    ..RetryBackoff::default()
                })
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RetryBackoff, A::Error> {
                let f = RetryBackoffFields::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(RetryBackoff {
                    initial: f.initial,
                    max: f
                        .max
                        .unwrap_or_else(|| f.initial.max(default_backoff_max())),
                    multiplier: f.multiplier,
                    max_attempts: f.max_attempts,
                })
            }
        }
        d.deserialize_any(Visit)
    }
}

/// `operatorBox.reconcile.remote`: where decisions are requested and what may come back.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Remote {
    #[serde(default)]
    pub endpoint: Option<Template>,
    /// Exec transport: the request on stdin, the response on stdout. A relative program path
    /// is taken from `workingDir`, else from the Katalog file's folder.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Exec transport: the command's working directory (relative to the Katalog file's folder).
    #[serde(default)]
    pub working_dir: Option<String>,
    /// Exec transport: environment variables for the command, besides `PATH`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Orkestra's transport selector (`type`, later `protocol`); only `http` exists.
    #[serde(default, alias = "protocol", rename = "type")]
    pub transport: Option<String>,
    #[serde(default = "default_timeout")]
    pub timeout: Duration,
    #[serde(default)]
    pub args: BTreeMap<String, Value>,
    #[serde(default)]
    pub managed_resources: Vec<ManagedResource>,
    #[serde(default)]
    pub auth: Option<Auth>,
    #[serde(default)]
    pub payload: Payload,
    /// Hosts a templated endpoint may resolve to and still receive the credential.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    #[serde(default = "yes")]
    pub prune: bool,
    #[serde(default)]
    pub finalize: bool,
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u64,
    /// TLS for an https endpoint: an extra CA and a client certificate (mTLS).
    #[serde(default)]
    pub tls: Option<Tls>,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) notes: Option<SharedNotes>,
}

impl Remote {
    /// The endpoint for one CR (templates rendered with the Katalog's notes).
    ///
    /// # Errors
    /// No endpoint (an exec transport), or a template that fails.
    pub fn render_endpoint(&self, data: &Value) -> Result<String, TemplateError> {
        let endpoint = self
            .endpoint
            .as_ref()
            .ok_or_else(|| TemplateError("the remote block has no endpoint".into()))?;
        endpoint.render_url_in(&self.render_context(data))
    }

    /// `args` for one CR, as Orkestra sends them: string values with templates are rendered
    /// and the result coerced to its JSON type (`"5"` → 5, `"true"` → true, JSON text → the
    /// value); other values pass through.
    ///
    /// # Errors
    /// The key and error of the first template that fails.
    pub fn render_args(&self, data: &Value) -> Result<Map<String, Value>, String> {
        let ctx = self.render_context(data);
        let mut out = Map::new();
        for (key, value) in &self.args {
            let v = match value {
                Value::String(s) if is_template(s) => {
                    let rendered = Template::parse(s)
                        .and_then(|t| t.render_in(&ctx))
                        .map_err(|e| format!("args.{key}: {e}"))?;
                    coerce(rendered)
                }
                other => other.clone(),
            };
            out.insert(key.clone(), v);
        }
        Ok(out)
    }

    /// A render context over `data` with the Katalog's notes.
    pub fn render_context<'a>(&'a self, data: &'a Value) -> RenderContext<'a> {
        let ctx = RenderContext::new(data);
        match self.notes.as_deref() {
            Some(n) => ctx.with_notes(n),
            None => ctx,
        }
    }
}

fn coerce(text: String) -> Value {
    match text.as_str() {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ (Value::Number(_) | Value::Object(_) | Value::Array(_))) => v,
        _ => Value::String(text),
    }
}

/// `remote.tls`. Verification is always on; these add trust and identity, never remove checks.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tls {
    /// PEM of the CA(s) that sign the service's certificate.
    #[serde(default)]
    pub ca_bundle: Option<String>,
    /// A Secret key holding that PEM instead (default key `ca.crt`).
    #[serde(default)]
    pub ca_secret_ref: Option<CaSecretRef>,
    /// A `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`) with ork's client certificate.
    #[serde(default)]
    pub client_cert_secret_ref: Option<TlsSecretRef>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaSecretRef {
    pub name: String,
    #[serde(default = "default_ca_key")]
    pub key: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsSecretRef {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

fn default_ca_key() -> String {
    "ca.crt".into()
}

/// A child type the service may return, given as Orkestra allows: `group`/`plural`, `kind`
/// (built-in kinds resolve to their group and plural) or `apiVersion` + `kind`.
///
/// After loading, `group` is always known. `plural` is empty only for a `kind` that is neither
/// built in nor an entry of the Katalog: discovery resolves it by kind ([`Self::needs_discovery`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedResource {
    pub group: String,
    pub version: Option<String>,
    pub plural: String,
    pub kind: Option<String>,
    /// `apiVersion` as written.
    pub api_version: Option<String>,
    /// Orkestra's per-resource `name`: the only object name children of this type may have.
    pub name: Option<String>,
    /// Orkestra's per-resource `namespace` (also added to `namespaces`).
    pub namespace: Option<String>,
    /// Other namespaces children of this type may be written to.
    pub namespaces: Vec<String>,
    pub cluster_scoped: bool,
    /// ork may take over an existing object of this type that no CR owns (SPEC §11); without
    /// it such an object is a failed reconcile that names it.
    pub adopt: bool,
    /// For RoleBindings and ClusterRoleBindings: the only roles their `roleRef` may name
    /// (SPEC §11). ork's RBAC gets `bind` on exactly these; an answer binding another role is
    /// rejected whole.
    pub bind_roles: Vec<BindRole>,
    /// Secrets only: the service may return Secrets of type
    /// `kubernetes.io/service-account-token`, which the cluster fills with a token (SPEC §11).
    pub service_account_tokens: bool,
}

/// A role that children of a binding type may bind: `kind` is `ClusterRole` or `Role`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BindRole {
    pub kind: String,
    pub name: String,
}

/// The RBAC group, whose binding types may carry `bindRoles`.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

impl ManagedResource {
    /// True for RoleBindings and ClusterRoleBindings.
    pub fn is_binding(&self) -> bool {
        self.group == RBAC_GROUP
            && (matches!(self.plural.as_str(), "rolebindings" | "clusterrolebindings")
                || matches!(
                    self.kind.as_deref(),
                    Some("RoleBinding" | "ClusterRoleBinding")
                ))
    }

    /// `bindRoles` as `(kind, name)` pairs, as the answer check takes them.
    pub fn bind_role_pairs(&self) -> Vec<(String, String)> {
        self.bind_roles
            .iter()
            .map(|r| (r.kind.clone(), r.name.clone()))
            .collect()
    }

    /// True for Roles and ClusterRoles, whose rules grant what ork holds.
    pub fn is_role(&self) -> bool {
        self.group == RBAC_GROUP
            && (matches!(self.plural.as_str(), "roles" | "clusterroles")
                || matches!(self.kind.as_deref(), Some("Role" | "ClusterRole")))
    }

    /// True when `plural` must still be found through discovery (by `kind`).
    pub fn needs_discovery(&self) -> bool {
        self.plural.is_empty()
    }

    /// `group/plural` (or `group/Kind` before discovery), `core` for the core group.
    pub fn describe(&self) -> String {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        if self.plural.is_empty() {
            format!("{group}/{}", self.kind.as_deref().unwrap_or("?"))
        } else {
            format!("{group}/{}", self.plural)
        }
    }
}

/// `managedResources[]` as written.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedResourceSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plural: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster_scoped: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopt: bool,
    /// RoleBindings and ClusterRoleBindings only: the roles (`{kind: ClusterRole|Role, name}`)
    /// their `roleRef` may name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bind_roles: Vec<BindRole>,
    /// Secrets only: allow Secrets of type `kubernetes.io/service-account-token`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub service_account_tokens: bool,
}

impl TryFrom<ManagedResourceSpec> for ManagedResource {
    type Error = String;

    fn try_from(s: ManagedResourceSpec) -> Result<Self, String> {
        let (av_group, av_version) = match &s.api_version {
            Some(av) => match av.split_once('/') {
                Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => {
                    (Some(g.to_string()), Some(v.to_string()))
                }
                None if !av.is_empty() => (Some(String::new()), Some(av.clone())),
                _ => return Err(format!("apiVersion \"{av}\" is not group/version or v1")),
            },
            None => (None, None),
        };
        if let (Some(g), Some(ag)) = (&s.group, &av_group)
            && g != ag
        {
            return Err(format!(
                "group \"{g}\" does not match apiVersion \"{}\"",
                s.api_version.as_deref().unwrap_or_default()
            ));
        }
        if let (Some(v), Some(av)) = (&s.version, &av_version)
            && v != av
        {
            return Err(format!(
                "version \"{v}\" does not match apiVersion \"{}\"",
                s.api_version.as_deref().unwrap_or_default()
            ));
        }
        let given_group = s.group.clone().or(av_group);
        let plural = s.plural.clone().filter(|p| !p.is_empty());
        let builtin = match (&s.kind, &plural) {
            (Some(kind), _) => kinds::by_kind(kind, given_group.as_deref()),
            (None, Some(p)) => given_group.as_deref().and_then(|g| kinds::by_plural(g, p)),
            (None, None) => None,
        };
        let group = match (given_group, builtin) {
            (Some(g), _) => g,
            (None, Some(b)) => b.group.to_string(),
            (None, None) => {
                return Err(match &s.kind {
                    Some(kind) => format!(
                        "kind \"{kind}\" is not a built-in Kubernetes kind: add its apiVersion (e.g. example.com/v1) or group"
                    ),
                    None => {
                        "a managed resource needs group and plural, a kind, or apiVersion and kind"
                            .into()
                    }
                });
            }
        };
        if plural.is_none() && s.kind.is_none() {
            return Err(format!(
                "give plural (or kind) for group \"{}\"",
                if group.is_empty() { "core" } else { &group }
            ));
        }
        if let (Some(p), Some(b)) = (&plural, builtin)
            && p != b.plural
            && s.kind.is_some()
        {
            return Err(format!(
                "kind {} is plural \"{}\", not \"{p}\"",
                b.kind, b.plural
            ));
        }
        let mut namespaces = s.namespaces.clone();
        if let Some(ns) = &s.namespace
            && !namespaces.contains(ns)
        {
            namespaces.push(ns.clone());
        }
        ManagedResource {
            plural: plural
                .or_else(|| builtin.map(|b| b.plural.to_string()))
                .unwrap_or_default(),
            kind: s
                .kind
                .clone()
                .or_else(|| builtin.map(|b| b.kind.to_string())),
            cluster_scoped: s.cluster_scoped || builtin.is_some_and(|b| !b.namespaced),
            version: s.version.clone().or(av_version),
            group,
            api_version: s.api_version,
            name: s.name,
            namespace: s.namespace,
            namespaces,
            adopt: s.adopt,
            bind_roles: Vec::new(),
            service_account_tokens: s.service_account_tokens,
        }
        .with_bind_roles(s.bind_roles)
        .and_then(ManagedResource::checked_token_opt_in)
    }
}

impl ManagedResource {
    fn checked_token_opt_in(self) -> Result<ManagedResource, String> {
        let secrets = self.group.is_empty()
            && (self.plural == "secrets" || self.kind.as_deref() == Some("Secret"));
        if self.service_account_tokens && !secrets {
            return Err(format!(
                "serviceAccountTokens is for Secrets (core/secrets), not {}",
                self.describe()
            ));
        }
        Ok(self)
    }

    /// `bindRoles` checked against the type: bindings only, ClusterRoleBindings bind
    /// ClusterRoles only, role names as Kubernetes names them.
    fn with_bind_roles(mut self, roles: Vec<BindRole>) -> Result<ManagedResource, String> {
        if roles.is_empty() {
            return Ok(self);
        }
        if !self.is_binding() {
            return Err(format!(
                "bindRoles is for rolebindings and clusterrolebindings ({RBAC_GROUP}), not {}",
                self.describe()
            ));
        }
        let cluster_binding = self.plural == "clusterrolebindings"
            || self.kind.as_deref() == Some("ClusterRoleBinding");
        for r in &roles {
            match r.kind.as_str() {
                "ClusterRole" => {}
                "Role" if !cluster_binding => {}
                "Role" => {
                    return Err(format!(
                        "bindRoles: a ClusterRoleBinding binds ClusterRoles only, not Role {}",
                        r.name
                    ));
                }
                other => {
                    return Err(format!(
                        "bindRoles: kind must be ClusterRole or Role, got \"{other}\""
                    ));
                }
            }
            if r.name.is_empty() || r.name.contains('/') || r.name.contains("{{") {
                return Err(format!(
                    "bindRoles: \"{}\" is not a role name (a literal name, no template)",
                    r.name
                ));
            }
        }
        let mut roles = roles;
        roles.sort();
        roles.dedup();
        self.bind_roles = roles;
        Ok(self)
    }
}

impl From<&ManagedResource> for ManagedResourceSpec {
    fn from(m: &ManagedResource) -> Self {
        ManagedResourceSpec {
            group: Some(m.group.clone()),
            version: m.version.clone(),
            plural: Some(m.plural.clone()).filter(|p| !p.is_empty()),
            kind: m.kind.clone(),
            api_version: m.api_version.clone(),
            name: m.name.clone(),
            namespace: m.namespace.clone(),
            namespaces: m.namespaces.clone(),
            cluster_scoped: m.cluster_scoped,
            adopt: m.adopt,
            bind_roles: m.bind_roles.clone(),
            service_account_tokens: m.service_account_tokens,
        }
    }
}

impl<'de> Deserialize<'de> for ManagedResource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spec = ManagedResourceSpec::deserialize(d)?;
        ManagedResource::try_from(spec).map_err(serde::de::Error::custom)
    }
}

impl Serialize for ManagedResource {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ManagedResourceSpec::from(self).serialize(s)
    }
}

impl JsonSchema for ManagedResource {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ManagedResource".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        ManagedResourceSpec::json_schema(g)
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Auth {
    #[serde(default)]
    pub secret_ref: Option<SecretRef>,
    #[serde(default)]
    pub env: Option<String>,
    #[serde(default = "default_auth_header")]
    pub header: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretRef {
    /// The Secret's name; may be a template over the CR (`{{ .metadata.name }}-token`).
    pub name: String,
    pub key: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

impl SecretRef {
    /// True when `name` is a template, which the Katalog refuses (SPEC §11): a CR's fields
    /// must not choose the Secret ork reads.
    pub fn is_templated(&self) -> bool {
        is_template(&self.name)
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    /// Calls per second, between 0.001 and 1,000,000.
    pub qps: f64,
    #[serde(default = "default_burst")]
    pub burst: u32,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Payload {
    #[serde(default)]
    pub object: ObjectPayload,
    #[serde(default)]
    pub children: ChildrenPayload,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectPayload {
    #[serde(default)]
    pub exclude: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildrenPayload {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub exclude: Vec<String>,
    /// When set, only these child types (lowercase kind, e.g. `deployment`) are sent, each
    /// with its own `exclude` (`null`/absent: the root `exclude`; `[]`: strip nothing).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, Option<ChildResourcePayload>>,
    /// Send Secrets with their `data` and `stringData`. Off by default (SPEC §11): what the
    /// cluster filled into a Secret ork applied (a token, a generated key) does not go back to
    /// the service unless the Katalog says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret_values: bool,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildResourcePayload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<Vec<String>>,
}

impl ChildrenPayload {
    /// The paths to strip from children of `type_name` (lowercase kind), or `None` when that
    /// type is not sent at all.
    pub fn exclude_for(&self, type_name: &str) -> Option<&[String]> {
        if !self.enabled {
            return None;
        }
        if self.resources.is_empty() {
            return Some(&self.exclude);
        }
        match self.resources.get(type_name)? {
            Some(ChildResourcePayload {
                exclude: Some(list),
            }) => Some(list),
            _ => Some(&self.exclude),
        }
    }
}

impl Default for ChildrenPayload {
    fn default() -> Self {
        ChildrenPayload {
            enabled: true,
            exclude: Vec::new(),
            resources: BTreeMap::new(),
            secret_values: false,
        }
    }
}

fn yes() -> bool {
    true
}
fn default_workers() -> u32 {
    2
}
fn default_resync() -> Duration {
    Duration::from_secs(300)
}
fn default_failure_threshold() -> u32 {
    5
}
fn default_backoff_initial() -> Duration {
    Duration::from_secs(1)
}
fn default_backoff_max() -> Duration {
    Duration::from_secs(300)
}
fn default_backoff_multiplier() -> f64 {
    2.0
}
fn default_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_auth_header() -> String {
    "Authorization".to_string()
}
fn default_burst() -> u32 {
    1
}
fn default_max_response_bytes() -> u64 {
    8 * 1024 * 1024
}
