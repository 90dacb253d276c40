//! ork's record of a CR's last successful reconcile (SPEC §17): a fingerprint of what the
//! service saw of the CR and of the children it left, kept in the metrics annotation ork
//! writes anyway. At a start, a leader change or a shard gained, a CR whose record still
//! matches is not called: nothing changed since.

use kube::core::DynamicObject;

use crate::fnv::Fnv;
use crate::index::{ChildRef, cr_fingerprint};

/// The seal of `cr` with `children` (each with its fingerprint), as the metrics annotation
/// keeps it: two 64-bit hashes in hex.
pub(crate) fn seal<'a>(
    cr: &DynamicObject,
    own_metadata: &std::collections::BTreeSet<String>,
    children: impl IntoIterator<Item = (&'a ChildRef, u64)>,
) -> String {
    let mut children: Vec<(&ChildRef, u64)> = children.into_iter().collect();
    children.sort();
    let mut h = Fnv::default();
    for (c, fingerprint) in children {
        h.str(&c.type_index.to_string());
        h.str(c.namespace.as_deref().unwrap_or_default());
        h.str(&c.name);
        h.str(&fingerprint.to_string());
    }
    format!(
        "{:016x}.{:016x}",
        cr_fingerprint(cr, own_metadata),
        h.finish()
    )
}
