//! `remote.payload`: the dot paths stripped from what is sent, and the child types named.

use super::findings::Findings;
use crate::model::Remote;

pub(super) fn check_payload(f: &mut Findings, rp: &str, remote: &Remote) {
    check_exclude_paths(f, rp, remote);
    check_child_types(f, rp, remote);
}

/// Every `exclude` entry is a dot path.
fn check_exclude_paths(f: &mut Findings, rp: &str, remote: &Remote) {
    let children = &remote.payload.children;
    let mut dot_paths: Vec<(String, &Vec<String>)> = vec![
        (
            "payload.object.exclude".into(),
            &remote.payload.object.exclude,
        ),
        ("payload.children.exclude".into(), &children.exclude),
    ];
    for (key, per) in &children.resources {
        if let Some(list) = per.as_ref().and_then(|r| r.exclude.as_ref()) {
            dot_paths.push((format!("payload.children.resources.{key}.exclude"), list));
        }
    }
    for (which, paths) in dot_paths {
        for (i, dot) in paths.iter().enumerate() {
            if dot.is_empty() || dot.split('.').any(str::is_empty) {
                f.add(
                    format!("{rp}.{which}[{i}]"),
                    format!("\"{dot}\" is not a dot path"),
                    Some("e.g. metadata.managedFields"),
                );
            }
        }
    }
}

/// `payload.children.resources` names managed types (when every kind is known to check).
fn check_child_types(f: &mut Findings, rp: &str, remote: &Remote) {
    let all_kinds_known = remote.managed_resources.iter().all(|m| m.kind.is_some());
    let type_names: Vec<String> = remote
        .managed_resources
        .iter()
        .filter_map(|m| m.kind.as_ref().map(|k| k.to_lowercase()))
        .collect();
    for key in remote.payload.children.resources.keys() {
        let known =
            type_names.contains(key) || remote.managed_resources.iter().any(|m| &m.plural == key);
        if !known && all_kinds_known {
            f.add(
                format!("{rp}.payload.children.resources.{key}"),
                format!("\"{key}\" is not a managed resource"),
                Some(&if type_names.is_empty() {
                    "declare it under managedResources".to_string()
                } else {
                    format!(
                        "use the lowercase kind of a managed resource: {}",
                        type_names.join(", ")
                    )
                }),
            );
        }
    }
}
