//! The reasons of the events ork records on a CR (`kubectl describe`, `kubectl events`), one
//! table that the reconcile uses and the reference lists. Most are prefixed with the CR's kind
//! (`WebAppReconciled`), as Orkestra names them; a service's own events keep the reason it gave.

/// One event reason ork writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventReason {
    /// The reason after the CR's kind (`Reconciled` in `WebAppReconciled`), or the whole
    /// reason when `kind_prefixed` is false.
    pub suffix: &'static str,
    pub kind_prefixed: bool,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    pub meaning: &'static str,
}

impl EventReason {
    /// The reason as written on an event of a CR of `kind`.
    pub fn of(&self, kind: &str) -> String {
        if self.kind_prefixed {
            format!("{kind}{}", self.suffix)
        } else {
            self.suffix.to_string()
        }
    }
}

const fn reason(
    suffix: &'static str,
    kind_prefixed: bool,
    type_: &'static str,
    meaning: &'static str,
) -> EventReason {
    EventReason {
        suffix,
        kind_prefixed,
        type_,
        meaning,
    }
}

pub const RECONCILED: EventReason = reason(
    "Reconciled",
    true,
    "Normal",
    "A first success, a recovery after failures, or a reconcile that changed children (a steady success records none).",
);
pub const RECONCILE_ERROR: EventReason = reason(
    "ReconcileError",
    true,
    "Warning",
    "A failed reconcile or finalize, with its cause; the same cause again counts up one series, a new cause starts another.",
);
pub const ANSWER_WARNING: EventReason = reason(
    "AnswerWarning",
    true,
    "Warning",
    "Something the answer check let through but ignored (an intent field ork does not know), told when the reconcile is news.",
);
pub const ROLLOUT: EventReason = reason(
    "Rollout",
    true,
    "Normal",
    "The entry's rollout moved the CR to the other endpoint (a step, a promotion, a resume): which endpoint reconciled it and where the rollout stands.",
);
pub const ROLLOUT_HALTED: EventReason = reason(
    "RolloutHalted",
    true,
    "Warning",
    "The entry's rollout halted (its candidate failed more than its rule allows, or `ork rollout abort`): the CR was reconciled by the stable endpoint again, and why.",
);
pub const FINALIZED: EventReason = reason(
    "Finalized",
    true,
    "Normal",
    "The service answered `finalized: true`, the children were deleted and ork's finalizer removed.",
);
pub const DECORATED: EventReason = reason(
    "Decorated",
    false,
    "Normal",
    "A Metacontroller DecoratorController's attachments were brought to what its sync hook wants.",
);

pub const SYNC_ERROR: EventReason = reason(
    "SyncError",
    false,
    "Warning",
    "A Metacontroller controller's failed sync or finalize, named as Metacontroller names it (`Sync error: <cause>`), in place of `<Kind>ReconcileError`.",
);

/// Every event reason ork writes itself, in the reference's order.
pub const EVENT_REASONS: &[EventReason] = &[
    RECONCILED,
    RECONCILE_ERROR,
    ANSWER_WARNING,
    FINALIZED,
    DECORATED,
    SYNC_ERROR,
    ROLLOUT,
    ROLLOUT_HALTED,
];
