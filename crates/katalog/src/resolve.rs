//! Completing a deserialised Katalog: paths resolved against the Katalog's folder, `apiTypes`
//! derived from `crdFile`, managed-resource plurals taken from the Katalog's own entries, and
//! the Katalog's notes compiled and bound into every template and condition.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::condition::Condition;
use crate::crd;
use crate::limits::MAX_FILE_BYTES;
use crate::model::{CrdEntry, Katalog};
use crate::template::{Notes, SharedNotes};
use crate::validate::Finding;

/// Completes `k` in place; returns the problems found on the way.
pub(crate) fn resolve(k: &mut Katalog, base: &Path, raw: &Value) -> Vec<Finding> {
    let mut f = Vec::new();
    let add = |f: &mut Vec<Finding>, path: String, message: String, hint: Option<&str>| {
        f.push(Finding {
            path,
            message,
            hint: hint.map(str::to_string),
        });
    };
    for (name, entry) in k.spec.crds.iter_mut() {
        let p = format!("spec.crds.{name}");
        resolve_files(&mut f, &p, entry, base);
        check_program(&mut f, &p, entry, base);
        if let Some(path) = entry.crd_file.clone()
            && path.is_file()
        {
            let wanted_kind = Some(entry.api_types.kind.as_str()).filter(|k| !k.is_empty());
            match crd::read(&path, wanted_kind, MAX_FILE_BYTES) {
                Err(e) => add(&mut f, format!("{p}.crdFile"), e, None),
                Ok(info) => {
                    let explicit_scope = raw
                        .get("spec")
                        .and_then(|s| s.get("crds"))
                        .and_then(|c| c.get(name))
                        .and_then(|e| e.get("namespaced"))
                        .and_then(Value::as_bool);
                    agree(&mut f, &p, entry, &info, explicit_scope);
                }
            }
        }
    }
    // Managed resources named by a kind of this Katalog take that entry's plural.
    let kinds: Vec<(String, String, String)> = k
        .spec
        .crds
        .values()
        .map(|e| {
            (
                e.api_types.group.clone(),
                e.api_types.kind.clone(),
                e.api_types.plural.clone(),
            )
        })
        .collect();
    for entry in k.spec.crds.values_mut() {
        if let Some(remote) = entry.operator_box.reconcile.remote.as_mut() {
            for m in &mut remote.managed_resources {
                if m.plural.is_empty()
                    && let Some((_, _, plural)) = kinds
                        .iter()
                        .find(|(g, kind, _)| *g == m.group && Some(kind) == m.kind.as_ref())
                {
                    m.plural = plural.clone();
                }
            }
        }
    }
    let notes = compile_notes(&mut f, k);
    for entry in k.spec.crds.values_mut() {
        bind(entry, &notes);
    }
    f
}

fn resolve_files(f: &mut Vec<Finding>, p: &str, entry: &mut CrdEntry, base: &Path) {
    let mut check = |field: String, path: &mut PathBuf, must_exist: bool| {
        let shown = path.display().to_string();
        if shown.starts_with("http://") || shown.starts_with("https://") {
            f.push(Finding {
                path: field,
                message: format!("\"{shown}\" is a URL; ork reads local files only"),
                hint: Some("download the file next to the Katalog and give its path".into()),
            });
            return;
        }
        if path.is_relative() {
            *path = base.join(&*path);
        }
        if must_exist && !path.is_file() {
            f.push(Finding {
                path: field,
                message: format!("{} does not exist", path.display()),
                hint: Some("paths are relative to the Katalog file's folder".into()),
            });
        }
    };
    if let Some(path) = entry.crd_file.as_mut() {
        check(format!("{p}.crdFile"), path, true);
    }
    for (i, path) in entry.cr_files.iter_mut().enumerate() {
        check(format!("{p}.crFiles[{i}]"), path, true);
    }
    let fields: Vec<String> = (0..entry.setup.len())
        .map(|i| entry.setup.field_of(i))
        .collect();
    for (field, path) in fields.into_iter().zip(entry.setup.iter_mut()) {
        check(format!("{p}.{field}"), path, true);
    }
}

/// An exec `command` whose program is a path (`./reconcile.sh`) must be there and executable,
/// found as ork will look for it: from `workingDir`, itself relative to the Katalog's folder. A
/// bare name is looked up in `PATH` where ork runs, which need not be here.
fn check_program(f: &mut Vec<Finding>, p: &str, entry: &CrdEntry, base: &Path) {
    let Some(remote) = &entry.operator_box.reconcile.remote else {
        return;
    };
    let Some(program) = remote.command.as_ref().and_then(|c| c.first()) else {
        return;
    };
    if !program.contains('/') {
        return;
    }
    let dir = match remote.working_dir.as_deref() {
        Some(w) => base.join(w),
        None => base.to_path_buf(),
    };
    // `a/./b` shown as `a/b`.
    let path: PathBuf = dir.join(program).components().collect();
    let field = format!("{p}.operatorBox.reconcile.remote.command[0]");
    let hint =
        "a program path is relative to `workingDir`, itself relative to the Katalog file's folder";
    match std::fs::metadata(&path) {
        Err(_) => f.push(Finding {
            path: field,
            message: format!("{} does not exist", path.display()),
            hint: Some(hint.into()),
        }),
        Ok(m) if !m.is_file() => f.push(Finding {
            path: field,
            message: format!("{} is not a file", path.display()),
            hint: Some(hint.into()),
        }),
        Ok(m) if !executable(&m) => f.push(Finding {
            path: field,
            message: format!("{} is not executable", path.display()),
            hint: Some(format!("chmod +x {}", path.display())),
        }),
        Ok(_) => {}
    }
}

#[cfg(unix)]
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    true
}

/// Fills `apiTypes` from the CRD and reports every written field that disagrees with it.
fn agree(
    f: &mut Vec<Finding>,
    p: &str,
    entry: &mut CrdEntry,
    info: &crd::CrdInfo,
    explicit_scope: Option<bool>,
) {
    let file = entry
        .crd_file
        .as_ref()
        .map(|c| c.display().to_string())
        .unwrap_or_default();
    let t = &mut entry.api_types;
    for (field, written, derived) in [
        ("group", &mut t.group, &info.group),
        ("kind", &mut t.kind, &info.kind),
        ("plural", &mut t.plural, &info.plural),
    ] {
        if written.is_empty() {
            written.clone_from(derived);
        } else if written != derived {
            f.push(Finding {
                path: format!("{p}.apiTypes.{field}"),
                message: format!("apiTypes.{field} is \"{written}\" but {file} says \"{derived}\""),
                hint: Some("remove apiTypes (it is read from crdFile) or make them agree".into()),
            });
        }
    }
    if t.version.is_empty() {
        t.version = info.version().unwrap_or_default().to_string();
    } else if !info.served.contains(&t.version) {
        f.push(Finding {
            path: format!("{p}.apiTypes.version"),
            message: format!(
                "version \"{}\" is not served by {file} (served: {})",
                t.version,
                info.served.join(", ")
            ),
            hint: None,
        });
    }
    if let Some(n) = explicit_scope
        && n != info.namespaced
    {
        f.push(Finding {
            path: format!("{p}.namespaced"),
            message: format!(
                "namespaced is {n} but {file} declares scope {}",
                if info.namespaced {
                    "Namespaced"
                } else {
                    "Cluster"
                }
            ),
            hint: Some("remove `namespaced` (it is read from crdFile)".into()),
        });
    }
    // The CRD decides; later checks see the real scope.
    entry.namespaced = info.namespaced;
}

fn compile_notes(f: &mut Vec<Finding>, k: &Katalog) -> SharedNotes {
    let defs = k
        .notes
        .functions
        .iter()
        .map(|n| (n.name.as_str(), n.expression.as_str()));
    match Notes::compile(defs) {
        Ok(n) => Arc::new(n),
        Err(errors) => {
            for (i, e) in errors {
                f.push(Finding {
                    path: format!("notes.functions[{i}].expression"),
                    message: format!("invalid template: {e}"),
                    hint: None,
                });
            }
            // Keep the notes that do compile, so the rest is still checked.
            let ok = k.notes.functions.iter().filter_map(|n| {
                crate::template::Template::parse(&n.expression)
                    .ok()
                    .map(|_| (n.name.as_str(), n.expression.as_str()))
            });
            Arc::new(Notes::compile(ok).unwrap_or_default())
        }
    }
}

fn bind(entry: &mut CrdEntry, notes: &SharedNotes) {
    entry.notes = Some(notes.clone());
    for t in entry
        .labels
        .values_mut()
        .chain(entry.annotations.values_mut())
    {
        t.bind(notes);
    }
    let ob = &mut entry.operator_box;
    let bind_conditions = |list: &mut Vec<Condition>| {
        for c in list {
            c.notes = Some(notes.clone());
        }
    };
    for gate in [
        ob.pre_reconcile.enqueue_gate.as_mut(),
        ob.pre_reconcile.reconcile_gate.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        bind_conditions(&mut gate.when);
        bind_conditions(&mut gate.or);
    }
    bind_conditions(&mut ob.validation.rules);
    for cross in &mut ob.observe.cross {
        let s = &mut cross.selector;
        for t in s
            .name
            .iter_mut()
            .chain(s.namespace.iter_mut())
            .chain(s.labels.values_mut())
        {
            t.bind(notes);
        }
    }
    for input in &mut ob.observe.inputs {
        for t in input
            .match_name
            .iter_mut()
            .chain(input.match_labels.values_mut())
        {
            t.bind(notes);
        }
    }
    if let Some(remote) = ob.reconcile.remote.as_mut() {
        remote.notes = Some(notes.clone());
        if let Some(t) = remote.endpoint.as_mut() {
            t.bind(notes);
        }
    }
}
