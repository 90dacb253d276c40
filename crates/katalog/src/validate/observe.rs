//! `operatorBox.observe.cross`: other entries whose objects go to the service.

use std::collections::BTreeSet;

use super::findings::{Findings, Scope};
use super::functions::check_functions;
use crate::model::{Katalog, OperatorBox};

/// Each cross reference names an entry of the Katalog, under a unique `as`, with selector
/// templates that call only what exists.
pub(super) fn check_observe(
    f: &mut Findings,
    katalog: &Katalog,
    p: &str,
    ob: &OperatorBox,
    plain: &Scope,
) {
    let mut aliases = BTreeSet::new();
    for (i, cross) in ob.observe.cross.iter().enumerate() {
        let cp = format!("{p}.operatorBox.observe.cross[{i}]");
        if !katalog.spec.crds.contains_key(&cross.crd) {
            let hint = f.entry_hint(katalog, &cross.crd);
            f.add(
                format!("{cp}.crd"),
                format!("\"{}\" is not an entry of this Katalog", cross.crd),
                hint.as_deref(),
            );
        }
        if cross.alias.is_empty() || !aliases.insert(cross.alias.clone()) {
            f.add(
                format!("{cp}.as"),
                "`as` must be a unique, non-empty name",
                None,
            );
        }
        let s = &cross.selector;
        for (field, t) in s
            .name
            .iter()
            .map(|t| ("name".to_string(), t))
            .chain(s.namespace.iter().map(|t| ("namespace".to_string(), t)))
            .chain(s.labels.iter().map(|(k, t)| (format!("labels.{k}"), t)))
        {
            check_functions(f, &format!("{cp}.selector.{field}"), t, plain, false);
        }
    }
}
