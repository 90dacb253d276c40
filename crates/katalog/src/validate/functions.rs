//! Templates: every function a template calls must exist where it is used.

use super::findings::{Findings, Scope};
use crate::sentinel::Sentinel;
use crate::template::{BUILTIN_FUNCTIONS, Template, unsupported_reason};

/// Every function `t` calls is a note, a built-in, or a sentinel known at `path`.
pub(super) fn check_functions(
    f: &mut Findings,
    path: &str,
    t: &Template,
    scope: &Scope,
    in_note: bool,
) {
    for name in t.functions() {
        if scope.notes.contains(&name) || BUILTIN_FUNCTIONS.contains(&name.as_str()) {
            continue;
        }
        if let Some(s) = Sentinel::from_name(&name) {
            if !in_note {
                check_sentinel_call(f, path, &name, s, scope);
            }
            continue;
        }
        if let Some(why) = unsupported_reason(&name) {
            f.add(
                path,
                format!("\"{name}\" is an Orkestra note ork does not provide"),
                Some(why),
            );
            continue;
        }
        let hint = undefined_hint(f, &name, scope);
        f.add(
            path,
            format!("invalid template: function \"{name}\" not defined"),
            Some(&hint),
        );
    }
}

/// A sentinel called outside a note: only in preReconcile gates, and only when declared.
fn check_sentinel_call(f: &mut Findings, path: &str, name: &str, s: Sentinel, scope: &Scope) {
    if !scope.sentinels {
        f.add(
            path,
            format!("sentinel \"{name}\" is only known in preReconcile gates"),
            Some("sentinels describe the event that enqueued the object; use them in enqueueGate or reconcileGate"),
        );
    } else if !scope.declared.contains(&s) {
        f.add(
            path,
            format!("sentinel \"{name}\" is not declared"),
            Some(&format!(
                "add it to operatorBox.preReconcile.sentinels: [{name}]"
            )),
        );
    }
}

/// "Did you mean" among what `scope` knows, for a function nothing defines.
fn undefined_hint(f: &mut Findings, name: &str, scope: &Scope) -> String {
    let mut known: Vec<&str> = BUILTIN_FUNCTIONS.to_vec();
    if f.may_hint() {
        known.extend(scope.notes.iter().map(String::as_str));
    }
    if scope.sentinels {
        known.extend(scope.declared.iter().map(|s| s.name()));
    }
    match crate::suggest::closest(name, known.iter().copied()) {
        Some(best) => format!("did you mean \"{best}\"?"),
        None => "define it under notes.functions, or use a built-in function".into(),
    }
}

/// A templated string: it parses, and calls only what exists at `path`.
pub(super) fn check_template_str(f: &mut Findings, path: &str, s: &str, scope: &Scope) {
    match Template::parse(s) {
        Ok(t) => check_functions(f, path, &t, scope, false),
        Err(e) => f.add(path, format!("invalid template: {e}"), None),
    }
}
