//! ork's property/fuzz suite (SPEC §11): structured inputs — Katalog YAML, Go templates and
//! the CRs they render over, durations, endpoint URLs, service answers, service text — with
//! hostile values, fed through the real parsing and checking code of `ork-katalog`,
//! `ork-protocol` and `ork-remote`.
//!
//! Every case is deterministic from `(seed, target, index)` ([`generate::case_seed`]). The property
//! of every target: no panic, bounded time and bounded memory per case; and each target adds
//! its own (decide and lint agree, durations parse alike, a credential only goes where the
//! Katalog allows, cleaned text has no control characters…).
//!
//! [`runner::run_target`] runs cases of one target in this process; the `ork-fuzz` binary runs
//! targets in worker processes so a crash, an abort or a hang is attributed to its case and
//! the run goes on. `cargo xtask fuzz` builds and runs it.

pub mod doc;
pub mod generate;
pub mod known;
pub mod runner;
pub mod targets;

pub use generate::{Gen, Profile};
pub use runner::{Case, Failure, RunConfig, Target, TargetReport, run_target};
pub use targets::{ALL, by_name};
