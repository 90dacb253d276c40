//! Typed Katalog structs (SPEC §1), deserialised with unknown fields denied.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::condition::Condition;
use crate::duration::Duration;
use crate::template::Template;

/// One Katalog file (or document): a set of CRD entries ork reconciles.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Katalog {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: KatalogMeta,
    pub spec: KatalogSpec,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KatalogMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
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
    pub api_types: ApiTypes,
    #[serde(default = "yes")]
    pub namespaced: bool,
    /// Watch only this namespace; empty watches all.
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub label_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub field_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub depends_on: DependsOn,
    #[serde(default)]
    pub force_conflict: Option<bool>,
    pub operator_box: OperatorBox,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiTypes {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
}

/// `dependsOn`: a list of entry names (condition `started`) or a map name → condition.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DependsOn {
    #[default]
    None,
    List(Vec<String>),
    Map(BTreeMap<String, DependencyCondition>),
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
            DependsOn::Map(map) => map.iter().map(|(k, v)| (k.clone(), *v)).collect(),
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

/// Change detectors computed between the previous and the current object.
#[derive(
    Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Sentinel {
    GenerationChanged,
    LabelsChanged,
    AnnotationsChanged,
    SpecChanged,
    DeletionStarted,
}

impl Sentinel {
    pub const ALL: [Sentinel; 5] = [
        Sentinel::GenerationChanged,
        Sentinel::LabelsChanged,
        Sentinel::AnnotationsChanged,
        Sentinel::SpecChanged,
        Sentinel::DeletionStarted,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Sentinel::GenerationChanged => "generationChanged",
            Sentinel::LabelsChanged => "labelsChanged",
            Sentinel::AnnotationsChanged => "annotationsChanged",
            Sentinel::SpecChanged => "specChanged",
            Sentinel::DeletionStarted => "deletionStarted",
        }
    }

    pub fn from_name(name: &str) -> Option<Sentinel> {
        Sentinel::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// A gate passes when every `when` condition and (if any) one `or` condition holds.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gate {
    #[serde(default)]
    pub when: Vec<Condition>,
    #[serde(default)]
    pub or: Vec<Condition>,
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
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            failure_threshold: default_failure_threshold(),
            retry_backoff: RetryBackoff::default(),
        }
    }
}

/// Per-object exponential backoff after failed reconciles; reset on success.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryBackoff {
    #[serde(default = "default_backoff_initial")]
    pub initial: Duration,
    #[serde(default = "default_backoff_max")]
    pub max: Duration,
    #[serde(default = "default_backoff_multiplier")]
    pub multiplier: f64,
}

impl Default for RetryBackoff {
    fn default() -> Self {
        RetryBackoff {
            initial: default_backoff_initial(),
            max: default_backoff_max(),
            multiplier: default_backoff_multiplier(),
        }
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
    /// Orkestra's transport selector; only `http` exists.
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

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedResource {
    pub group: String,
    #[serde(default)]
    pub version: Option<String>,
    pub plural: String,
    #[serde(default)]
    pub kind: Option<String>,
    /// Other namespaces children of this type may be written to.
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub cluster_scoped: bool,
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
    pub name: String,
    pub key: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
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
}

impl Default for ChildrenPayload {
    fn default() -> Self {
        ChildrenPayload {
            enabled: true,
            exclude: Vec::new(),
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
