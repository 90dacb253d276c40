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
    /// After this delay, which the service asked for (429 with `Retry-After`); the backoff
    /// does not grow.
    After(std::time::Duration),
}

/// A condition reason ork writes for a failed step (SPEC §14).
#[derive(Debug, PartialEq, Eq)]
pub struct Reason {
    pub name: &'static str,
    /// ork will not succeed without a change to the CR, the Katalog, the service or ork's
    /// RBAC: kstatus `Stalled` rather than `Reconciling`, and no growing retries make it right.
    pub stalls: bool,
    pub meaning: &'static str,
}

const fn reason(name: &'static str, stalls: bool, meaning: &'static str) -> Reason {
    Reason {
        name,
        stalls,
        meaning,
    }
}

const UNDECODABLE: Reason = reason(
    "Undecodable",
    true,
    "The CR cannot be read whole (e.g. nested deeper than 100 levels); it is not sent to the service.",
);
const VALIDATION_FAILED: Reason = reason(
    "ValidationFailed",
    true,
    "An `operatorBox.validation` rule with `action: deny` failed; the service was not called.",
);
const REQUEST_FAILED: Reason = reason(
    "RequestFailed",
    false,
    "The request could not be built: a template, `args`, an `observe.cross` selector or an input failed (a template, a rendered name that is no name, over the size limit).",
);
const INPUT_MISSING: Reason = reason(
    "InputMissing",
    false,
    "An input the entry needs (`observe.inputs`, not `optional`) does not exist; the service is called once it does.",
);
const SERVICE_TIMEOUT: Reason = reason(
    "ServiceTimeout",
    false,
    "The service (or `exec` command) gave no answer within `timeout`.",
);
const SERVICE_UNREACHABLE: Reason = reason(
    "ServiceUnreachable",
    false,
    "The connection was refused or the command could not be started.",
);
const SERVICE_BUSY: Reason = reason(
    "ServiceBusy",
    false,
    "The service answered 429; the retry comes after its `Retry-After`, without growing the backoff.",
);
const SERVICE_ERROR: Reason = reason(
    "ServiceError",
    false,
    "The service answered with an HTTP error status or a redirect, its answer was over `maxResponseBytes`, the connection broke, or the `exec` command failed or printed no JSON.",
);
const ENDPOINT_REFUSED: Reason = reason(
    "EndpointRefused",
    true,
    "The endpoint is not a valid URL, or its host is neither the Katalog's nor in `allowedHosts`.",
);
const CREDENTIAL_UNAVAILABLE: Reason = reason(
    "CredentialUnavailable",
    false,
    "The credential in `auth` (a Secret, an environment variable) could not be read.",
);
const TLS_UNAVAILABLE: Reason = reason(
    "TLSUnavailable",
    false,
    "The CA or client certificate in `tls` could not be read or used.",
);
const ANSWER_REJECTED: Reason = reason(
    "AnswerRejected",
    true,
    "The answer broke the protocol (an undeclared type, a bad field, a cap exceeded); nothing of it was applied.",
);
const SERVICE_REPORTED: Reason = reason(
    "ServiceReported",
    false,
    "The service answered `result: error` or with `error`; its message is the condition's.",
);
const NOT_OWNED: Reason = reason(
    "NotOwned",
    true,
    "An object of the answer exists and belongs to someone else (set `adopt: true` to take it over).",
);
const APPLY_FORBIDDEN: Reason = reason(
    "ApplyForbidden",
    true,
    "The API server refused a write with 403: ork's RBAC lacks it (`ork generate rbac`).",
);
const APPLY_FAILED: Reason = reason(
    "ApplyFailed",
    false,
    "The API server refused or failed a write (an invalid object, a conflict, unavailable); a conflict is retried at once.",
);
const INTERNAL_ERROR: Reason = reason(
    "InternalError",
    false,
    "A bug in ork, caught; please report it.",
);

/// Every failure reason, in the reference's order.
pub const REASONS: &[&Reason] = &[
    &UNDECODABLE,
    &VALIDATION_FAILED,
    &REQUEST_FAILED,
    &INPUT_MISSING,
    &SERVICE_TIMEOUT,
    &SERVICE_UNREACHABLE,
    &SERVICE_BUSY,
    &SERVICE_ERROR,
    &ENDPOINT_REFUSED,
    &CREDENTIAL_UNAVAILABLE,
    &TLS_UNAVAILABLE,
    &ANSWER_REJECTED,
    &SERVICE_REPORTED,
    &NOT_OWNED,
    &APPLY_FORBIDDEN,
    &APPLY_FAILED,
    &INTERNAL_ERROR,
];

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
    #[error(transparent)]
    Input(#[from] crate::inputs::InputError),
    /// Non-optional inputs that do not exist (each named, with what is missing).
    #[error("waiting for {0}")]
    InputMissing(String),
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
            ReconcileError::CallFailed(CallFailed::Call(ork_remote::CallError::Busy {
                after,
                ..
            })) => Retry::After(*after),
            _ => Retry::Backoff,
        }
    }

    /// The condition reason naming the step that failed (SPEC §14), for `Ready=False` and
    /// `Reconciling`/`Stalled`.
    pub fn reason(&self) -> &'static str {
        self.cause().name
    }

    /// The failed step, one of [`REASONS`].
    pub fn cause(&self) -> &'static Reason {
        use ork_remote::CallError as C;
        match self {
            ReconcileError::Undecodable(_) => &UNDECODABLE,
            ReconcileError::Denied(_) => &VALIDATION_FAILED,
            ReconcileError::Request(_) | ReconcileError::Cross(_) | ReconcileError::Input(_) => {
                &REQUEST_FAILED
            }
            ReconcileError::InputMissing(_) => &INPUT_MISSING,
            ReconcileError::CallFailed(CallFailed::Call(c)) => match c {
                C::Timeout { .. } | C::ExecTimeout { .. } => &SERVICE_TIMEOUT,
                C::Connect { .. } | C::ExecSpawn { .. } => &SERVICE_UNREACHABLE,
                C::Url(_) => &ENDPOINT_REFUSED,
                C::Busy { .. } => &SERVICE_BUSY,
                _ => &SERVICE_ERROR,
            },
            ReconcileError::CallFailed(
                CallFailed::HostNotAllowed { .. } | CallFailed::Endpoint(_),
            ) => &ENDPOINT_REFUSED,
            ReconcileError::CallFailed(CallFailed::Credential(_)) => &CREDENTIAL_UNAVAILABLE,
            ReconcileError::CallFailed(CallFailed::Tls(_)) => &TLS_UNAVAILABLE,
            ReconcileError::CallFailed(CallFailed::Replay(_)) => &SERVICE_ERROR,
            ReconcileError::InvalidResponse(_) => &ANSWER_REJECTED,
            ReconcileError::ServiceReported(_) => &SERVICE_REPORTED,
            ReconcileError::NotOwned(_) => &NOT_OWNED,
            ReconcileError::WriteFailed(w) if w.is_forbidden() => &APPLY_FORBIDDEN,
            ReconcileError::WriteFailed(_) => &APPLY_FAILED,
            ReconcileError::Panicked(_) => &INTERNAL_ERROR,
        }
    }

    /// Whether the failure says the service may be away as a whole: no connection could be made
    /// (refused, DNS, TLS), the command could not be started, no answer came within `timeout`,
    /// or what stands in front of it said it is not there (502, 503, 504: a gateway, a mesh's
    /// "no healthy upstream"). Any other HTTP status, an over-size body or a connection closed
    /// without an answer are answers of a running service to this one request: that key's
    /// failure, backed off on its own, never a reason to probe the service (SPEC §10).
    pub fn service_away(&self) -> bool {
        use ork_remote::CallError as C;
        matches!(
            self,
            ReconcileError::CallFailed(CallFailed::Call(
                C::Connect { .. }
                    | C::ExecSpawn { .. }
                    | C::Timeout { .. }
                    | C::Status {
                        status: 502..=504,
                        ..
                    }
            ))
        )
    }

    /// Whether the service was heard from, whatever it said: an answer, an HTTP status (429 and
    /// redirects included), a body over the limit, a connection it closed, a command that ran.
    /// A running service: what waited for it to come back may go.
    pub fn heard_from_service(&self) -> bool {
        use ork_remote::CallError as C;
        match self {
            ReconcileError::CallFailed(CallFailed::Call(c)) if !self.service_away() => matches!(
                c,
                C::Status { .. }
                    | C::Busy { .. }
                    | C::Redirect { .. }
                    | C::TooLarge { .. }
                    | C::Closed { .. }
                    | C::ExecFailed { .. }
                    | C::ExecTooLarge { .. }
                    | C::ExecGarbage { .. }
            ),
            _ => self.answered(),
        }
    }

    /// Whether the reconcile got as far as calling the service (a validation rule, an
    /// unreadable CR or a request that cannot be built stop it before).
    pub fn reached_the_service(&self) -> bool {
        !matches!(
            self,
            ReconcileError::Undecodable(_)
                | ReconcileError::Denied(_)
                | ReconcileError::Request(_)
                | ReconcileError::Cross(_)
                | ReconcileError::Input(_)
                | ReconcileError::InputMissing(_)
        )
    }

    /// Whether the service answered (whatever the answer, and whatever came of it after).
    pub fn answered(&self) -> bool {
        matches!(
            self,
            ReconcileError::InvalidResponse(_)
                | ReconcileError::ServiceReported(_)
                | ReconcileError::NotOwned(_)
        )
    }

    /// Whether ork will not succeed without a change to the CR, the Katalog, the service or
    /// ork's RBAC (kstatus `Stalled`), rather than a retry that may (kstatus `Reconciling`).
    pub fn stalls(&self) -> bool {
        self.cause().stalls
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

#[cfg(test)]
mod tests {
    use super::*;
    use ork_remote::CallError;
    use std::time::Duration;

    fn call(e: CallError) -> ReconcileError {
        ReconcileError::CallFailed(CallFailed::Call(e))
    }

    #[test]
    fn each_failure_names_its_step_and_whether_a_retry_can_help() {
        let url = || "http://127.0.0.1:1/r".to_string();
        let cases = [
            (
                call(CallError::Timeout {
                    url: url(),
                    after: Duration::from_secs(1),
                }),
                "ServiceTimeout",
                false,
            ),
            (
                call(CallError::Connect {
                    url: url(),
                    reason: "refused".into(),
                }),
                "ServiceUnreachable",
                false,
            ),
            (
                call(CallError::Status {
                    url: url(),
                    status: 500,
                    body: String::new(),
                }),
                "ServiceError",
                false,
            ),
            (
                ReconcileError::CallFailed(CallFailed::HostNotAllowed { host: "x".into() }),
                "EndpointRefused",
                true,
            ),
            (
                ReconcileError::InvalidResponse("x".into()),
                "AnswerRejected",
                true,
            ),
            (
                ReconcileError::ServiceReported("x".into()),
                "ServiceReported",
                false,
            ),
            (ReconcileError::Denied("x".into()), "ValidationFailed", true),
            (ReconcileError::Undecodable("x".into()), "Undecodable", true),
            (ReconcileError::NotOwned("x".into()), "NotOwned", true),
        ];
        for (e, reason, stalls) in cases {
            assert_eq!((e.reason(), e.stalls()), (reason, stalls), "{e}");
        }
    }
}
