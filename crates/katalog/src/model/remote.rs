//! `operatorBox.reconcile.remote`: the transport (HTTP endpoint or command), its limits, and
//! the child types the service may return.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::admission::Admission;
use super::auth::{Auth, Tls};
use super::defaults::yes;
use super::managed::ManagedResource;
use super::payload::Payload;
use super::rollout::Rollout;
use crate::duration::Duration;
use crate::limits::{MAX_BURST, MAX_QPS, MIN_BURST, MIN_QPS, MIN_RESPONSE_BYTES};
use crate::template::{SharedNotes, Template};

/// `operatorBox.reconcile.remote`: where decisions are requested and what may come back.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Remote {
    /// HTTP transport: the `http://` or `https://` URL ork POSTs each request to. It may be a
    /// template over the CR (rendered values are percent-encoded), but calls go only to the
    /// host the Katalog itself names or to `allowedHosts`.
    #[serde(default)]
    pub endpoint: Option<Template>,
    /// Exec transport: the request on stdin, the response on stdout. A program path with a `/`
    /// is taken from `workingDir`, else from the Katalog file's folder; a bare name from `PATH`.
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
    #[schemars(extend("enum" = [crate::limits::HTTP_TRANSPORT, null]))]
    pub transport: Option<String>,
    /// How long one call may take, HTTP or exec; past it the call fails (and a command is
    /// killed with every process it started).
    #[serde(default = "default_timeout")]
    pub timeout: Duration,
    /// Sent as the request's `args`. String values may be templates over the CR; their output
    /// is read as JSON where it can be (`"5"` is 5, `"true"` is true).
    #[serde(default)]
    pub args: BTreeMap<String, Value>,
    /// The child types the service may return (an answer with any other type is refused
    /// whole); ork watches them and the generated RBAC grants them.
    #[serde(default)]
    pub managed_resources: Vec<ManagedResource>,
    /// HTTP transport: the credential ork sends with every call, from exactly one of
    /// `secretRef` and `env`.
    #[serde(default)]
    pub auth: Option<Auth>,
    /// What of the CR and its children the request carries.
    #[serde(default)]
    pub payload: Payload,
    /// Hosts besides the endpoint's own that a templated endpoint may render to (`host` for
    /// any port, `host:port` for one); ork calls no other host.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Paces the entry's calls to the service (a token bucket this replica's workers share);
    /// absent: no limit.
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    /// Whether children ork applied for a CR that an answer's `resources` no longer lists are
    /// deleted.
    #[serde(default = "yes")]
    pub prune: bool,
    /// Puts ork's finalizer on each CR; when one is deleted, ork calls the service with
    /// `prepared.finalizing: true` until it answers `finalized: true`, then deletes the
    /// children.
    #[serde(default)]
    pub finalize: bool,
    /// The largest answer ork reads (HTTP body or the command's stdout), in bytes; a larger
    /// one fails the call.
    #[serde(default = "default_max_response_bytes")]
    #[schemars(range(min = MIN_RESPONSE_BYTES))]
    pub max_response_bytes: u64,
    /// TLS for an https endpoint: an extra CA and a client certificate (mTLS).
    #[serde(default)]
    pub tls: Option<Tls>,
    /// Admission by the same service: ork serves a webhook for the entry's CRs and asks the
    /// service to admit (and perhaps default) each before it is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// A candidate endpoint serving a share of the CRs, grown by steps, halted back to
    /// `endpoint` when it fails more than it (SPEC §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) notes: Option<SharedNotes>,
}

/// `remote.rateLimit`: a token bucket in front of the entry's calls.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    /// Calls per second, on average (`0.1` is one call every 10 seconds).
    #[schemars(range(min = MIN_QPS, max = MAX_QPS))]
    pub qps: f64,
    /// Calls that may go at once after a quiet spell, before `qps` paces them.
    #[serde(default = "default_burst")]
    #[schemars(range(min = MIN_BURST, max = MAX_BURST))]
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
