//! The Kubernetes edge of ork.
//!
//! Data flow per Katalog entry, bottom up (each layer only imports those below it):
//! - [`entry`]: the entry compiled once (types resolved through [`discovery`], gates, rules).
//! - [`index`]: pure per-entry state fed by watch events; says which keys to reconcile.
//! - [`ports`]: the transport to the service and the writes to the cluster, behind traits.
//! - [`reconcile`]: one reconcile over those ports: request, call, whole-answer check
//!   (`ork-protocol`), apply and prune, status, annotations, events; typed [`error`]s.
//! - [`controller`]: one entry loop per entry, the single owner of its [`cache`]s' writing side,
//!   index, schedule and health; watches send it inputs, workers run what it hands out and send
//!   back how it ended (`docs/design/entry-loop.md`).
//! - [`runtime`]: every entry of a run, health and metrics for the HTTP endpoints; [`leader`]
//!   switches it on and off. [`simulate`] drives the same controller against memory.

pub mod access;
pub mod admission;
pub mod auth;
mod cache;
pub mod client;
mod controller;
pub mod diff;
pub mod discovery;
mod entry;
pub mod error;
pub mod event_reasons;
mod fnv;
mod index;
mod inputs;
pub mod install;
pub mod labels;
pub mod leader;
mod lease;
mod mark;
pub mod metacontroller;
mod metrics;
mod packed;
pub mod permissions;
mod ports;
mod process;
mod reconcile;
mod redact;
mod registry;
mod related;
mod runtime;
mod seal;
pub mod setup;
mod shard_set;
pub mod shards;
pub mod simulate;
pub mod wake;
pub mod webhook;
pub mod wire;

pub use controller::{RunError, RunOptions};
pub use entry::EntryError;
pub use metrics::specimen as metrics_specimen;
pub use ports::{Owner, WriteError};
pub use registry::RolloutCommand;
pub use runtime::{Drained, EntryReport, Runtime};
