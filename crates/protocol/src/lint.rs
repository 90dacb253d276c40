//! `ork check`'s view of an answer: every way it breaks the protocol, where [`crate::decide`]
//! stops at the first. Both run the very same checks.

use serde::Serialize;

use crate::examine::examine;
use crate::policy::Policy;

/// Every way an answer breaks the protocol, for `ork check` (where [`crate::decide`] stops at
/// the first). Warnings are legal but probably not meant (the same as
/// [`crate::Decision::warnings`]).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Lint {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// Checks every part of an answer and reports all problems.
pub fn lint(body: &[u8], policy: &Policy) -> Lint {
    let examination = examine(body, policy);
    Lint {
        errors: examination
            .result
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect(),
        warnings: examination.warnings,
    }
}
