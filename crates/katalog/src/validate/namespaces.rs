//! Namespace guards: `namespace`, `allowedNamespaces` and `restrictedNamespaces` of the entry
//! and of `operatorBox.runtime`.

use super::findings::Findings;
use crate::model::CrdEntry;

/// The guards' patterns are well formed, and a cluster-scoped entry has none.
pub(super) fn check_namespace_guards(f: &mut Findings, p: &str, entry: &CrdEntry) {
    if !entry.namespaced && entry.namespace.as_deref().is_some_and(|n| !n.is_empty()) {
        f.add(
            format!("{p}.namespace"),
            "a cluster-scoped entry cannot watch one namespace",
            Some("remove `namespace` or set `namespaced: true`"),
        );
    }
    let rt = &entry.operator_box.runtime;
    for (field, patterns) in [
        ("allowedNamespaces", &entry.allowed_namespaces),
        ("restrictedNamespaces", &entry.restricted_namespaces),
        (
            "operatorBox.runtime.allowedNamespaces",
            &rt.allowed_namespaces,
        ),
        (
            "operatorBox.runtime.restrictedNamespaces",
            &rt.restricted_namespaces,
        ),
    ] {
        check_namespace_patterns(f, &format!("{p}.{field}"), patterns);
    }
    let guarded = !entry.effective_allowed_namespaces().is_empty()
        || !entry.effective_restricted_namespaces().is_empty();
    if !entry.namespaced && guarded {
        f.add(
            format!("{p}.allowedNamespaces"),
            "namespace guards do not apply to a cluster-scoped entry",
            None,
        );
    }
}

fn check_namespace_patterns(f: &mut Findings, path: &str, patterns: &[String]) {
    for (i, p) in patterns.iter().enumerate() {
        let inner = p.trim_start_matches('*').trim_end_matches('*');
        let stars_inside = p != "*" && inner.contains('*');
        let stars_both_ends = p.len() > 1 && p.starts_with('*') && p.ends_with('*');
        let ok = !p.is_empty()
            && !stars_inside
            && !stars_both_ends
            && inner
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !ok {
            f.add(
                format!("{path}[{i}]"),
                format!("\"{p}\" is not a namespace or a prefix*/`*`suffix pattern"),
                Some("e.g. apps, team-* or *-sandbox"),
            );
        }
    }
}
