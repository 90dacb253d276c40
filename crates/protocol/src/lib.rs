//! The remote reconciler wire protocol (SPEC §2), version 1. Pure: no I/O.
//!
//! Data flow: the engine builds a [`Request`]; a transport sends it and hands the body back;
//! [`decide`] decodes and checks the whole answer against a [`Policy`] (managed types and the
//! versions the API server serves, namespaces, the CR itself, caps) and returns a [`Decision`]
//! whose children are complete objects ready to apply — intents built as Orkestra builds them —
//! or a [`ResponseError`] before anything is written. [`lint`] runs the same checks and reports
//! every problem, for `ork check`. Text from the service is cleaned ([`clean_text`]) before it
//! can reach status or events.

mod child;
mod duration;
mod examine;
mod intent;
mod json;
mod lint;
pub mod metacontroller;
mod names;
mod policy;
mod request;
mod response;
mod schema;
pub mod text;

pub use duration::{DurationError, GoDuration, parse_go_duration};
pub use examine::decide;
pub use intent::{Container, INTENT_TYPES, Intent, IntentError, IntentSpec};
pub use lint::{Lint, lint};
pub use policy::{ANY_NAMESPACE, Limits, ManagedType, OwnerRef, Policy};
pub use request::{Gvk, HealthSummary, Prepared, Request, Trigger, ValidationReport};
pub use response::{
    Decision, DesiredChild, Outcome, Response, ResponseError, ServiceCondition, ServiceEvent,
};
pub use text::clean_text;

#[cfg(test)]
mod tests;
