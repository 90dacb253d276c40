//! The remote reconciler wire protocol (SPEC §2), version 1. Pure: no I/O.
//!
//! Data flow: the engine builds a [`Request`]; a transport sends it and hands the body back;
//! [`decide`] decodes and checks the whole answer against a [`Policy`] (managed types,
//! namespaces, the CR itself) and returns a [`Decision`] whose children are complete objects
//! ready to apply, or a [`ResponseError`] before anything is written. [`lint`] is the same
//! check reporting every problem, for `ork check`.

mod intent;
mod lint;
mod request;
mod response;

pub use intent::{INTENT_TYPES, build_intent};
pub use lint::{Lint, lint};
pub use request::{Gvk, HealthSummary, Prepared, Request, Trigger, ValidationReport};
pub use response::{
    Decision, DesiredChild, ManagedType, Outcome, OwnerRef, Policy, Response, ResponseError,
    ServiceCondition, ServiceEvent, decide,
};
