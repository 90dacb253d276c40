//! Sentinels (what changed between two versions of a CR) and gate evaluation.

use std::collections::BTreeMap;

use ork_katalog::{Check, Gate, Sentinel};
use serde_json::Value;

/// The compiled conditions of one gate.
#[derive(Clone, Debug, Default)]
pub struct CompiledGate {
    when: Vec<Check>,
    or: Vec<Check>,
}

impl CompiledGate {
    /// Compiles a gate that `ork validate` already accepted.
    ///
    /// # Errors
    /// The first condition that does not compile (only if validation was skipped).
    pub fn compile(gate: &Gate) -> Result<Self, String> {
        let compile = |list: &[ork_katalog::Condition]| {
            list.iter()
                .map(|c| {
                    c.compile()
                        .map_err(|e| e.first().map(|e| e.message.clone()).unwrap_or_default())
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(CompiledGate {
            when: compile(&gate.when)?,
            or: compile(&gate.or)?,
        })
    }

    /// `Ok(())` when the gate is open; otherwise the reason it is closed.
    ///
    /// # Errors
    /// The reason of the first failed `when` condition, or of the `or` group.
    pub fn evaluate(
        &self,
        context: &Value,
        sentinels: &BTreeMap<Sentinel, bool>,
    ) -> Result<(), String> {
        if let Some(failed) = self.when.iter().find(|c| !c.holds(context, sentinels)) {
            return Err(failed.describe_failure());
        }
        if !self.or.is_empty() && !self.or.iter().any(|c| c.holds(context, sentinels)) {
            let reasons: Vec<String> = self.or.iter().map(Check::describe_failure).collect();
            return Err(format!("none of: {}", reasons.join("; ")));
        }
        Ok(())
    }
}

/// Computes the declared sentinels between `previous` (None on create) and `current`.
pub fn sentinels(
    declared: &[Sentinel],
    previous: Option<&Value>,
    current: &Value,
) -> BTreeMap<Sentinel, bool> {
    let changed = |pointer: &str| match previous {
        None => true,
        Some(prev) => prev.pointer(pointer) != current.pointer(pointer),
    };
    declared
        .iter()
        .map(|s| {
            let v = match s {
                Sentinel::GenerationChanged => changed("/metadata/generation"),
                Sentinel::LabelsChanged => changed("/metadata/labels"),
                Sentinel::AnnotationsChanged => changed("/metadata/annotations"),
                Sentinel::SpecChanged => changed("/spec"),
                Sentinel::DeletionStarted => {
                    current.pointer("/metadata/deletionTimestamp").is_some()
                        && previous
                            .is_none_or(|p| p.pointer("/metadata/deletionTimestamp").is_none())
                }
            };
            (*s, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gate(v: Value) -> CompiledGate {
        CompiledGate::compile(&serde_json::from_value(v).expect("gate parses")).expect("compiles")
    }

    #[test]
    fn when_is_and_or_is_or() {
        let g = gate(json!({
            "when": [{"field": "spec.enabled", "equals": true}],
            "or": [{"field": "spec.env", "equals": "prod"}, {"field": "spec.force", "exists": true}]
        }));
        let none = BTreeMap::new();
        assert!(
            g.evaluate(&json!({"spec": {"enabled": true, "env": "prod"}}), &none)
                .is_ok()
        );
        assert!(
            g.evaluate(&json!({"spec": {"enabled": true, "force": 1}}), &none)
                .is_ok()
        );
        assert!(
            g.evaluate(&json!({"spec": {"enabled": true}}), &none)
                .is_err()
        );
        let closed = g.evaluate(&json!({"spec": {"enabled": false, "env": "prod"}}), &none);
        assert!(closed.expect_err("closed").contains("spec.enabled"));
    }

    #[test]
    fn sentinels_compare_versions() {
        let old = json!({"metadata": {"generation": 1, "labels": {"a": "1"}}, "spec": {"x": 1}});
        let new = json!({"metadata": {"generation": 2, "labels": {"a": "1"}}, "spec": {"x": 2}});
        let all = Sentinel::ALL;
        let s = sentinels(&all, Some(&old), &new);
        assert!(s[&Sentinel::GenerationChanged]);
        assert!(!s[&Sentinel::LabelsChanged]);
        assert!(s[&Sentinel::SpecChanged]);
        assert!(!s[&Sentinel::DeletionStarted]);
        assert!(
            sentinels(&all, None, &new)[&Sentinel::LabelsChanged],
            "create changes everything"
        );
    }
}
