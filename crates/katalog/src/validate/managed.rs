//! `remote.managedResources`: the child types the service may return.

use std::collections::BTreeMap;

use super::findings::Findings;
use crate::model::ManagedResource;
use crate::template::is_template;

/// The core group's resources are known: a plural that is none of them is a typo (the API
/// server would answer 404, and ork would wait for a CRD that cannot come).
fn core_plural(f: &mut Findings, mp: &str, plural: &str) {
    if crate::kinds::by_plural("", plural).is_some() {
        return;
    }
    let near = crate::kinds::plural_meant(plural, crate::kinds::core_plurals());
    let hint = match near {
        Some(p) => format!("did you mean `{p}`?"),
        None => format!(
            "the core group (\"\") has {}",
            crate::kinds::core_plurals().collect::<Vec<_>>().join(", ")
        ),
    };
    f.add(
        format!("{mp}.plural"),
        format!("the core API group has no resource `{plural}`"),
        Some(&hint),
    );
}

/// Each type once, a lowercase plural, no namespaces for a cluster-scoped type, a literal name.
pub(super) fn check_managed_resources(f: &mut Findings, rp: &str, managed: &[ManagedResource]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, m) in managed.iter().enumerate() {
        let mp = format!("{rp}.managedResources[{i}]");
        if !m.plural.is_empty() && m.plural != m.plural.to_lowercase() {
            f.add(format!("{mp}.plural"), "plural must be lowercase", None);
        } else if m.group.is_empty() && !m.plural.is_empty() && !is_template(&m.plural) {
            core_plural(f, &mp, &m.plural);
        }
        if let Some(first) = seen.insert(m.describe(), i) {
            f.add(
                &mp,
                format!("duplicate managed resource {}", m.describe()),
                Some(&format!(
                    "already declared as managedResources[{first}]; remove one"
                )),
            );
        }
        if m.cluster_scoped && !m.namespaces.is_empty() {
            f.add(
                format!("{mp}.namespaces"),
                "a cluster-scoped resource has no namespaces",
                None,
            );
        }
        if let Some(n) = &m.name
            && (n.is_empty() || is_template(n))
        {
            f.add(
                format!("{mp}.name"),
                "name must be a literal object name",
                None,
            );
        }
    }
}
