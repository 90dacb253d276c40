//! `labels` and `annotations` the entry writes onto each CR: valid keys, templates that call
//! only what exists.

use super::findings::{Findings, Scope};
use super::functions::check_functions;
use crate::model::CrdEntry;

pub(super) fn check_metadata(f: &mut Findings, p: &str, entry: &CrdEntry, plain: &Scope) {
    for (kind, map) in [
        ("labels", &entry.labels),
        ("annotations", &entry.annotations),
    ] {
        for (key, t) in map {
            let kp = format!("{p}.{kind}.{key}");
            if !is_label_key(key) {
                f.add(
                    &kp,
                    format!("\"{key}\" is not a valid {} key", &kind[..kind.len() - 1]),
                    Some("a name of at most 63 characters, optionally prefixed by a DNS subdomain and /"),
                );
            }
            check_functions(f, &kp, t, plain, false);
        }
    }
}

fn is_label_key(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    name_ok && prefix_ok
}
