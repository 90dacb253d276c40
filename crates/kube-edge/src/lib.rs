//! The Kubernetes edge of ork.
//!
//! Data flow per Katalog entry ([`controller`]): discovery resolves the CR type and the managed
//! child types ([`discovery`]); watchers feed the engine's work queue; a worker ([`reconcile`])
//! builds the request, calls the service through `ork-remote`, has `ork-protocol` check the
//! whole answer, then applies children, prunes, patches status and annotations ([`write`]) and
//! records events. ork's own writes are remembered by resourceVersion so they never cause
//! another call.

pub mod auth;
mod cluster;
pub mod controller;
pub mod discovery;
pub mod leader;
mod metrics;
pub mod permissions;
mod reconcile;
mod registry;
mod runtime;
pub mod simulate;
pub mod write;

pub use controller::{RunError, RunOptions};
pub use runtime::{EntryReport, Runtime};

/// Labels and annotations ork puts on what it manages.
pub mod labels {
    pub const MANAGED: &str = "orkestra.orkspace.io/managed";
    pub const OWNER_UID: &str = "orkestra.orkspace.io/owner-uid";
    pub const OWNER: &str = "orkestra.orkspace.io/owner";
    pub const HEALTH: &str = "orkestra.orkspace.io/health";
    pub const METRICS: &str = "orkestra.orkspace.io/metrics";
    pub const FIELD_MANAGER: &str = "orkestra-remote";
    pub const FINALIZER: &str = "orkestra.orkspace.io/remote-finalizer";
}
