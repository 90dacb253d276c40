//! `operatorBox.observe`: other entries whose objects go to the service (`cross`), and the
//! inputs it reads (`inputs`).

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

/// Each input has a unique name, a type, one way to find its objects (a name, or labels), a
/// namespace written in the Katalog only, and `values` only for Secrets (SPEC §20).
pub(super) fn check_inputs(f: &mut Findings, p: &str, ob: &OperatorBox, plain: &Scope) {
    let mut names = BTreeSet::new();
    for (i, input) in ob.observe.inputs.iter().enumerate() {
        let ip = format!("{p}.operatorBox.observe.inputs[{i}]");
        let identifier = input
            .name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && input
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !identifier {
            f.add(
                format!("{ip}.name"),
                format!(
                    "input name {:?} is not a name a template can read (letters, digits and _, not first a digit)",
                    input.name
                ),
                Some("the service reads it as prepared.inputs.<name>: `dbSecret`, `settings`"),
            );
        } else if !names.insert(input.name.as_str()) {
            f.add(
                format!("{ip}.name"),
                format!("input name {:?} is used twice", input.name),
                None,
            );
        }
        let parts: Vec<&str> = input.api_version.split('/').collect();
        if input.api_version.is_empty() || parts.len() > 2 || parts.iter().any(|s| s.is_empty()) {
            f.add(
                format!("{ip}.apiVersion"),
                format!(
                    "{:?} is not an apiVersion (`v1`, `group/version`)",
                    input.api_version
                ),
                None,
            );
        }
        if !input.kind.starts_with(|c: char| c.is_ascii_uppercase()) {
            f.add(
                format!("{ip}.kind"),
                format!("{:?} is not a kind (`Secret`, `ConfigMap`)", input.kind),
                None,
            );
        }
        let by_labels = !input.match_labels.is_empty() || !input.match_expressions.is_empty();
        match (&input.match_name, by_labels) {
            (Some(_), true) => f.add(
                format!("{ip}.matchName"),
                "matchName picks one object and matchLabels/matchExpressions select a list: give one or the other",
                None,
            ),
            (None, false) => f.add(
                ip.clone(),
                "an input needs matchName (one object) or matchLabels/matchExpressions (a list)",
                Some("to read every object of a namespace, select them by a label they share"),
            ),
            _ => {}
        }
        if let Some(ns) = &input.namespace {
            if ns.contains("{{") {
                f.add(
                    format!("{ip}.namespace"),
                    "an input's namespace is written in the Katalog, never a template over the CR",
                    Some("a CR may not move an input into a namespace of its choosing; absent, the CR's own namespace is read"),
                );
            } else if !is_dns_label(ns) {
                f.add(
                    format!("{ip}.namespace"),
                    format!("{ns:?} is not a namespace name"),
                    None,
                );
            }
        }
        for (j, e) in input.match_expressions.iter().enumerate() {
            use crate::model::LabelOperator as Op;
            let needs_values = matches!(e.operator, Op::In | Op::NotIn);
            if needs_values == e.values.is_empty() {
                f.add(
                    format!("{ip}.matchExpressions[{j}].values"),
                    if needs_values {
                        "In and NotIn compare with values: give at least one"
                    } else {
                        "Exists and DoesNotExist take no values"
                    },
                    None,
                );
            }
        }
        if input.values && !input.is_secret() {
            f.add(
                format!("{ip}.values"),
                format!(
                    "values holds back a Secret's data; a {} is sent whole",
                    input.describe_type()
                ),
                None,
            );
        }
        for (field, t) in input
            .match_name
            .iter()
            .map(|t| ("matchName".to_string(), t))
            .chain(
                input
                    .match_labels
                    .iter()
                    .map(|(k, t)| (format!("matchLabels.{k}"), t)),
            )
        {
            check_functions(f, &format!("{ip}.{field}"), t, plain, false);
        }
    }
}

/// A DNS-1123 label: lowercase letters, digits and `-`, at most 63, not starting or ending
/// with `-`.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}
