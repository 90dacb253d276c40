//! What the checks collect: one finding per problem, and the scope a template is checked in.

use std::collections::BTreeSet;

use crate::model::Katalog;
use crate::sentinel::Sentinel;

/// One semantic problem (or notice) at a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
}

/// "Did you mean" hints whose candidates grow with the Katalog (entry and note names), at most
/// this many per Katalog: each costs an edit distance to every candidate, so a Katalog full of
/// unknown names would otherwise take time quadratic in its size.
const GROWING_HINTS: usize = 32;

#[derive(Default)]
pub(super) struct Findings {
    pub(super) found: Vec<Finding>,
    /// How many hints against entry or note names were worked out.
    hints: usize,
}

impl Findings {
    /// Whether one more hint against a growing list of names may be worked out.
    pub(super) fn may_hint(&mut self) -> bool {
        self.hints += 1;
        self.hints <= GROWING_HINTS
    }

    pub(super) fn add(
        &mut self,
        path: impl Into<String>,
        message: impl Into<String>,
        hint: Option<&str>,
    ) {
        self.found.push(Finding {
            path: path.into(),
            message: message.into(),
            hint: hint.map(str::to_string),
        });
    }

    /// "Did you mean" for a name that is not an entry (while [`Findings::may_hint`] allows).
    pub(super) fn entry_hint(&mut self, katalog: &Katalog, name: &str) -> Option<String> {
        if !self.may_hint() {
            return None;
        }
        crate::suggest::closest(name, katalog.spec.crds.keys().map(String::as_str))
            .map(|b| format!("did you mean \"{b}\"?"))
    }
}

/// Which functions a template at some place may call.
pub(super) struct Scope<'a> {
    pub(super) notes: &'a BTreeSet<String>,
    pub(super) declared: &'a BTreeSet<Sentinel>,
    /// Sentinels are known only in preReconcile gates.
    pub(super) sentinels: bool,
}
