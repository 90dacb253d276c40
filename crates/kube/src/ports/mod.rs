//! The ports a reconcile works through: a [`Transport`] to the service (HTTP, exec, record and
//! replay, with the credential, TLS and rate limit as layers) and a [`Cluster`] to write to (the
//! API server, or memory in `ork simulate`).

mod cluster;
mod events;
mod tap;
mod transport;
pub(crate) mod write;

pub(crate) use cluster::{Cluster, CrRef, KubeCluster, Written};
pub(crate) use tap::Tap;
pub(crate) use transport::{
    CallFailed, KeepsSecrets, NoTransport, ReplayError, Timed, Transport, for_remote,
};
pub use write::{Deletion, Owner, WriteError};
