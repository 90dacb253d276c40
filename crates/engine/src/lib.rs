//! ork's pure decisions, joined to the edges by typed values.
//!
//! Data flow inside one entry: watch events become [`queue::WorkQueue`] keys (deduplicated,
//! never two in flight for one object); a worker checks [`gate`]s, builds the request, and after
//! the answer [`status::plan_status`] decides what to write; [`health::Health`] and
//! [`backoff::Backoff`] track failures and when to retry; [`ratelimit::TokenBucket`] protects the
//! service. Nothing here performs I/O or reads the clock: time is passed in.

pub mod backoff;
pub mod drift;
pub mod gate;
pub mod health;
pub mod queue;
pub mod ratelimit;
pub mod status;
