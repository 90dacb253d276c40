//! Why a reconcile failed, and what that means for the retry (SPEC §3.7): typed errors whose
//! variants name the step that failed, each with its retry policy.

use crate::ports::{CallFailed, WriteError};

/// What to do with a key after a failed reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Per-key exponential backoff.
    Backoff,
    /// At once: the CR changed under the write (a conflict), the next attempt sees the new one.
    Now,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The CR could not be read whole (SPEC §11): nothing of it is sent or applied.
    #[error("the CR cannot be decoded: {0}")]
    Undecodable(String),
    /// A validation rule with `action: deny` failed.
    #[error("validation failed: {0}")]
    Denied(String),
    /// The request could not be built (a template, `args`, `observe.cross`).
    #[error("{0}")]
    Request(String),
    /// An `observe.cross` selector did not render.
    #[error(transparent)]
    Cross(#[from] crate::registry::CrossError),
    /// The call produced no answer: transport, timeout, non-200, too large, command failed.
    #[error("remote reconciler: {0}")]
    CallFailed(#[from] CallFailed),
    /// The answer broke the protocol; nothing was applied.
    #[error("response rejected, nothing applied: {0}")]
    InvalidResponse(String),
    /// The service answered with `error` (or `result: error`).
    #[error("service reported: {0}")]
    ServiceReported(String),
    /// An object of the answer exists and is not this CR's (SPEC §11).
    #[error("{0}")]
    NotOwned(String),
    /// The API server refused or failed a write.
    #[error("{0}")]
    WriteFailed(#[from] WriteError),
    /// The reconcile panicked; caught, recorded and retried like any failure.
    #[error("internal error (a bug in ork, please report it): {0}")]
    Panicked(String),
}

impl ReconcileError {
    /// How the key is retried.
    pub fn retry(&self) -> Retry {
        match self {
            ReconcileError::WriteFailed(w) if w.is_conflict() => Retry::Now,
            _ => Retry::Backoff,
        }
    }

    /// Whether the failure counts toward the entry's `degraded` state: an unreachable API server
    /// or a write conflict is not the service's fault.
    pub fn blames_service(&self) -> bool {
        match self {
            ReconcileError::WriteFailed(w) => !(w.is_conflict() || w.is_unavailable()),
            // The CR's author wrote what cannot be read; the service never saw it.
            ReconcileError::Undecodable(_) => false,
            _ => true,
        }
    }
}
