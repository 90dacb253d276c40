//! `operatorBox.reconcile.remote`: the transport (HTTP endpoint or command), its limits, and
//! the child types the service may return.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::auth::{Auth, Tls};
use super::defaults::yes;
use super::managed::ManagedResource;
use super::payload::Payload;
use crate::duration::Duration;
use crate::template::{SharedNotes, Template};

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

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    /// Calls per second, between 0.001 and 1,000,000.
    pub qps: f64,
    #[serde(default = "default_burst")]
    pub burst: u32,
}

fn default_timeout() -> Duration {
    Duration::from_secs(30)
}

fn default_burst() -> u32 {
    1
}

fn default_max_response_bytes() -> u64 {
    8 * 1024 * 1024
}
