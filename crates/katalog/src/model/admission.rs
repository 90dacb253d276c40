//! `remote.admission`: the same service validates (and may default) a CR before the API
//! server stores it (SPEC §21).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::defaults::yes;
use crate::duration::Duration;

/// `remote.admission`: ork serves an admission webhook for the entry's CR type and asks the
/// service at `path` of its endpoint's host.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Admission {
    /// Ask the service whether to admit each CR written (a `ValidatingWebhookConfiguration`).
    #[serde(default = "yes")]
    pub validate: bool,
    /// Ask the service for defaults before the CR is stored (a
    /// `MutatingWebhookConfiguration`): its answer's `patch` (a JSON Patch) or `object`.
    #[serde(default)]
    pub mutate: bool,
    /// The path ork POSTs admission requests to, on the host and port of `remote.endpoint`.
    #[serde(default = "default_path")]
    pub path: String,
    /// How long the service may take; the API server's webhook timeout is this plus a second,
    /// at most 10 s in all.
    #[serde(default = "default_timeout")]
    pub timeout: Duration,
    /// What the API server does when ork or the service fails to answer in time: `Fail`
    /// refuses the write, `Ignore` lets it through.
    #[serde(default)]
    pub failure_policy: FailurePolicy,
    /// The writes asked about.
    #[serde(default = "default_operations")]
    pub operations: Vec<Operation>,
}

/// `remote.admission.failurePolicy`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum FailurePolicy {
    #[default]
    Fail,
    Ignore,
}

/// A write the webhook is asked about.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

impl FailurePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// The longest admission call ork makes (the API server allows a webhook 30 s, but a write
/// held that long is a stuck `kubectl apply`).
pub const MAX_ADMISSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(9);

fn default_path() -> String {
    "/admit".into()
}

fn default_timeout() -> Duration {
    Duration::from_secs(5)
}

fn default_operations() -> Vec<Operation> {
    vec![Operation::Create, Operation::Update]
}
