//! One `spec.crds.<name>` entry: its own fields here, each section by the module that knows it,
//! in the order `ork validate` reports them.

use std::collections::BTreeSet;

use super::depends_on::check_depends_on;
use super::findings::{Findings, Scope};
use super::gates::{check_pre_reconcile, check_validation_rules};
use super::metadata::check_metadata;
use super::namespaces::check_namespace_guards;
use super::observe::{check_inputs, check_observe};
use super::reconcile::check_reconcile;
use crate::limits::DYNAMIC_MODE;
use crate::model::{ApiTypes, CrdEntry, Katalog};
use crate::sentinel::Sentinel;

/// Every problem of entry `name`.
pub(super) fn check_entry(
    f: &mut Findings,
    katalog: &Katalog,
    notes: &BTreeSet<String>,
    name: &str,
    entry: &CrdEntry,
) {
    let p = format!("spec.crds.{name}");
    check_name_and_mode(f, &p, name, entry);
    check_api_types(f, &p, &entry.api_types, entry.crd_file.is_some());
    check_namespace_guards(f, &p, entry);
    check_depends_on(f, katalog, name, &p, entry);

    let ob = &entry.operator_box;
    let declared: BTreeSet<Sentinel> = ob.pre_reconcile.sentinels.iter().copied().collect();
    let plain = Scope {
        notes,
        declared: &declared,
        sentinels: false,
    };
    let gates = Scope {
        notes,
        declared: &declared,
        sentinels: true,
    };
    check_metadata(f, &p, entry, &plain);
    check_pre_reconcile(f, &p, ob, &gates);
    check_validation_rules(f, &p, ob, &plain);
    check_observe(f, katalog, &p, ob, &plain);
    check_inputs(f, &p, ob, &plain);
    check_reconcile(f, &p, &ob.reconcile, &plain);
}

/// The entry name is a name as Orkestra takes it (`webApp`, `web-app`); `mode`, when written,
/// is `dynamic`.
fn check_name_and_mode(f: &mut Findings, p: &str, name: &str, entry: &CrdEntry) {
    if name.contains('.') {
        f.add(
            p,
            format!("entry name \"{name}\" has a dot"),
            Some(
                "ork names a Katalog's fields by dotted paths (spec.crds.NAME.…): use `-` instead",
            ),
        );
    } else if !is_entry_name(name) {
        f.add(
            p,
            format!("entry name \"{name}\" is not a name of letters, digits and `-`"),
            Some("start with a letter or digit, at most 63 characters (`webApp`, `web-app`); it appears in logs, metric labels and health URLs"),
        );
    }
    if let Some(mode) = &entry.mode
        && mode != DYNAMIC_MODE
    {
        f.add(
            format!("{p}.mode"),
            format!("mode \"{mode}\" is not supported by ork"),
            Some("typed mode needs Go types compiled into Orkestra; ork watches custom resources dynamically: remove `mode`"),
        );
    }
}

/// `apiTypes`: every field given unless a `crdFile` supplies them, the plural lowercase.
fn check_api_types(f: &mut Findings, p: &str, t: &ApiTypes, has_crd_file: bool) {
    for (field, value) in [
        ("group", &t.group),
        ("version", &t.version),
        ("kind", &t.kind),
        ("plural", &t.plural),
    ] {
        if value.trim().is_empty() && !has_crd_file {
            f.add(
                format!("{p}.apiTypes.{field}"),
                format!("apiTypes.{field} is required"),
                Some("or point `crdFile:` at the CRD manifest to read apiTypes from it"),
            );
        }
    }
    if !t.plural.is_empty() && t.plural != t.plural.to_lowercase() {
        f.add(
            format!("{p}.apiTypes.plural"),
            "plural must be lowercase",
            Some(&format!("did you mean \"{}\"?", t.plural.to_lowercase())),
        );
    }
}

/// Orkestra's rule for an entry name (a hostname label, letters of either case): a letter or
/// digit, then letters, digits and `-`, at most 63 in all. No Kubernetes object is named after
/// an entry, so none needs a lowercase form.
fn is_entry_name(s: &str) -> bool {
    s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}
