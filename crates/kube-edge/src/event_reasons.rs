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

pub const RECONCILED: EventReason = EventReason {
    suffix: "Reconciled",
    kind_prefixed: true,
    type_: "Normal",
    meaning: "A first success, a recovery after failures, or a reconcile that changed children (a steady success records none).",
};
pub const RECONCILE_ERROR: EventReason = EventReason {
    suffix: "ReconcileError",
    kind_prefixed: true,
    type_: "Warning",
    meaning: "A failed reconcile or finalize, with its cause; the same cause again counts up one series, a new cause starts another.",
};
pub const ANSWER_WARNING: EventReason = EventReason {
    suffix: "AnswerWarning",
    kind_prefixed: true,
    type_: "Warning",
    meaning: "Something the answer check let through but ignored (an intent field ork does not know), told when the reconcile is news.",
};
pub const FINALIZED: EventReason = EventReason {
    suffix: "Finalized",
    kind_prefixed: true,
    type_: "Normal",
    meaning: "The service answered `finalized: true`, the children were deleted and ork's finalizer removed.",
};
pub const DECORATED: EventReason = EventReason {
    suffix: "Decorated",
    kind_prefixed: false,
    type_: "Normal",
    meaning: "A Metacontroller DecoratorController's attachments were brought to what its sync hook wants.",
};

/// Every event reason ork writes itself, in the reference's order.
pub const EVENT_REASONS: &[EventReason] = &[
    RECONCILED,
    RECONCILE_ERROR,
    ANSWER_WARNING,
    FINALIZED,
    DECORATED,
];
