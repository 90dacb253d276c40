//! `remote.managedResources`: the child types the service may return.

use std::collections::BTreeMap;

use super::findings::Findings;
use crate::model::ManagedResource;
use crate::template::is_template;

/// Each type once, a lowercase plural, no namespaces for a cluster-scoped type, a literal name.
pub(super) fn check_managed_resources(f: &mut Findings, rp: &str, managed: &[ManagedResource]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, m) in managed.iter().enumerate() {
        let mp = format!("{rp}.managedResources[{i}]");
        if !m.plural.is_empty() && m.plural != m.plural.to_lowercase() {
            f.add(format!("{mp}.plural"), "plural must be lowercase", None);
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
