//! `operatorBox.preReconcile` gates and `operatorBox.validation` rules: conditions and the
//! sentinels they may name.

use serde_json::Value;

use super::findings::{Findings, Scope};
use super::functions::{check_functions, check_template_str};
use crate::condition::{Check, Condition, Subject};
use crate::model::{Gate, OperatorBox};
use crate::template::is_template;

/// `enqueueGate` and `reconcileGate`, checked with the sentinels the entry declares.
pub(super) fn check_pre_reconcile(f: &mut Findings, p: &str, ob: &OperatorBox, gates: &Scope) {
    for (gate_name, gate) in [
        ("enqueueGate", &ob.pre_reconcile.enqueue_gate),
        ("reconcileGate", &ob.pre_reconcile.reconcile_gate),
    ] {
        if let Some(gate) = gate {
            check_gate(
                f,
                &format!("{p}.operatorBox.preReconcile.{gate_name}"),
                gate,
                gates,
            );
        }
    }
}

/// `operatorBox.validation.rules`, where sentinels are not known.
pub(super) fn check_validation_rules(f: &mut Findings, p: &str, ob: &OperatorBox, plain: &Scope) {
    for (i, rule) in ob.validation.rules.iter().enumerate() {
        check_condition(
            f,
            &format!("{p}.operatorBox.validation.rules[{i}]"),
            rule,
            plain,
            true,
        );
    }
}

fn check_gate(f: &mut Findings, path: &str, gate: &Gate, scope: &Scope) {
    if gate.when.is_empty() && gate.or.is_empty() && gate.sentinels.is_empty() {
        f.add(path, "a gate needs `when`, `or` or `sentinels`", None);
    }
    for (i, s) in gate.sentinels.iter().enumerate() {
        if !scope.declared.contains(s) {
            f.add(
                format!("{path}.sentinels[{i}]"),
                format!("sentinel \"{}\" is not declared", s.name()),
                Some(&format!(
                    "add it to operatorBox.preReconcile.sentinels: [{}]",
                    s.name()
                )),
            );
        }
    }
    for (list, conds) in [("when", &gate.when), ("or", &gate.or)] {
        for (i, c) in conds.iter().enumerate() {
            check_condition(f, &format!("{path}.{list}[{i}]"), c, scope, false);
        }
    }
}

fn check_condition(f: &mut Findings, path: &str, c: &Condition, scope: &Scope, is_rule: bool) {
    if c.action.is_some() && !is_rule {
        f.add(
            format!("{path}.action"),
            "`action` applies to validation rules only",
            Some("a gate condition passes or gates; remove `action`"),
        );
    }
    match c.compile() {
        Err(errors) => {
            for e in errors {
                f.add(format!("{path}.{}", e.field), e.message, e.hint.as_deref());
            }
        }
        Ok(check) => check_compiled(f, path, &check, scope),
    }
}

fn check_compiled(f: &mut Findings, path: &str, check: &Check, scope: &Scope) {
    match &check.subject {
        Subject::Sentinel(s) if !scope.sentinels => f.add(
            format!("{path}.sentinel"),
            format!(
                "sentinel \"{}\" is only known in preReconcile gates",
                s.name()
            ),
            None,
        ),
        Subject::Sentinel(s) if !scope.declared.contains(s) => f.add(
            format!("{path}.sentinel"),
            format!("sentinel \"{}\" is not declared", s.name()),
            Some(&format!(
                "add it to operatorBox.preReconcile.sentinels: [{}]",
                s.name()
            )),
        ),
        Subject::Template(t) => check_functions(f, &format!("{path}.field"), t, scope, false),
        _ => {}
    }
    if let Value::String(s) = &check.value
        && is_template(s)
    {
        check_template_str(f, path, s, scope);
    }
}
