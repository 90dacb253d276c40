//! Bugs the suite found in other crates that are not fixed yet. Each has a regression test
//! (`#[ignore]`d until fixed) in `tests/regressions.rs`.
//!
//! Two kinds:
//! - a property that fails (a value two parsers disagree on): the target reports it under the
//!   bug's id, counted apart from new failures, and it fails the run only with `--strict`;
//! - an input that crashes or stalls the process: generators leave such inputs out unless the
//!   run asks for them (`--known`), so a run stays usable. Then they count as failures.
//!
//! When a bug is fixed, delete its entry here and the places that name it, and un-ignore its
//! regression test.

/// A known, unfixed bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    pub id: &'static str,
    pub summary: &'static str,
}

/// Every known bug, for reports.
pub const ALL: &[Known] = &[];
