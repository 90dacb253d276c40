//! Semantic checks on a typed Katalog: what deserialisation alone cannot see, and the notices
//! `ork validate` shows without failing.
//!
//! One small check per section, each in the module named after it: [`validate`] walks the
//! Katalog (notes, then each entry, then dependency cycles) and an entry walks its sections
//! in the order problems are reported. The checks share only [`findings`].

mod auth;
mod depends_on;
mod entry;
mod findings;
mod functions;
mod gates;
mod managed;
mod metadata;
mod namespaces;
mod notes;
mod notices;
mod observe;
mod payload;
mod reconcile;
mod remote;

use crate::model::Katalog;
use depends_on::check_dependency_cycles;
use entry::check_entry;
use findings::Findings;
use notes::check_notes;

pub use crate::limits::{
    API_VERSION, API_VERSIONS, INRUN_API_VERSION, INRUN_KIND, KIND, KINDS, MAX_BURST, MAX_QPS,
    MIN_QPS,
};
pub use findings::Finding;
pub(crate) use notices::notices;

/// Every semantic problem in `katalog`.
pub fn validate(katalog: &Katalog) -> Vec<Finding> {
    let mut f = Findings::default();
    if !API_VERSIONS.contains(&katalog.api_version.as_str()) {
        f.add(
            "apiVersion",
            format!("unsupported apiVersion \"{}\"", katalog.api_version),
            Some(&format!(
                "use `apiVersion: {API_VERSION}` (or inrun's `{INRUN_API_VERSION}`)"
            )),
        );
    }
    if !KINDS.contains(&katalog.kind.as_str()) {
        f.add(
            "kind",
            format!("kind \"{}\" is not a {KIND}", katalog.kind),
            Some(&format!(
                "use `kind: {KIND}` (or inrun's `{INRUN_KIND}`; Komposer and Motif files are not supported)"
            )),
        );
    }
    if katalog.spec.crds.is_empty() {
        f.add("spec.crds", "the Katalog declares no entries", None);
    }
    let notes = check_notes(&mut f, katalog);
    for (name, entry) in &katalog.spec.crds {
        check_entry(&mut f, katalog, &notes, name, entry);
    }
    check_dependency_cycles(&mut f, katalog);
    f.found
}
