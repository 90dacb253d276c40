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

/// `range N` in a template collects all N iterations up front: a large N (from the template or
/// from the CR) allocates N × 64 bytes before the step budget can stop it.
pub const TEMPLATE_RANGE_ALLOC: Known = Known {
    id: "K2-template-range-alloc",
    summary: "template `range N` allocates N items up front: memory is not bounded by the step budget",
};

/// A template's render time is not bounded by its step budget: one step can copy the whole
/// CR (`$`, `.` at the root, `toJson $`, `printf "%v" $`, a field holding a large subtree), so
/// a loop over a large range (or a large CR list) takes time proportional to steps × CR size.
pub const TEMPLATE_STEP_COST: Known = Known {
    id: "K4-template-step-cost",
    summary: "template render time grows with steps × CR size: the 1,000,000-step budget does not bound it",
};

/// Loading a Katalog takes time quadratic in its size in two places: every `dependsOn` name
/// that is not an entry gets a "did you mean" from an edit distance to every entry name, and
/// every unknown field costs one more full deserialisation of the whole document (up to 200).
/// A 650 KB Katalog of 2,000 entries with 20 unknown dependencies each loads in about 10 s; at
/// the 4 MiB limit it takes minutes.
pub const KATALOG_LOAD_QUADRATIC: Known = Known {
    id: "K5-katalog-load-quadratic",
    summary: "load_str is quadratic in unknown dependsOn names × entries and unknown fields × size",
};

/// Every known bug, for reports.
pub const ALL: &[Known] = &[
    TEMPLATE_RANGE_ALLOC,
    TEMPLATE_STEP_COST,
    KATALOG_LOAD_QUADRATIC,
];
