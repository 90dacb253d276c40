//! Sentinels (what changed between two versions of a CR) and gate evaluation.
//!
//! Orkestra's 14 sentinels cover every `metav1.Object` field; ork adds `specChanged`. A gate
//! opens when one of its `sentinels` (if listed) is true, every `when` condition holds and one
//! `or` condition holds (if any). A condition that cannot be evaluated (a template that fails)
//! follows the gate's `failPolicy`: `open` passes the gate, `closed` holds the object back.

use std::collections::BTreeMap;

use ork_katalog::{Check, FailPolicy, Gate, RenderContext, Sentinel};
use serde_json::Value;

/// The compiled conditions of one gate.
#[derive(Clone, Debug, Default)]
pub struct CompiledGate {
    when: Vec<Check>,
    or: Vec<Check>,
    sentinels: Vec<Sentinel>,
    fail_policy: FailPolicy,
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
            sentinels: gate.sentinels.clone(),
            fail_policy: gate.fail_policy,
        })
    }

    /// `Ok(())` when the gate is open over `context` (the CR plus `health`, `metrics`…) and
    /// the event's sentinels; otherwise the reason it is closed.
    ///
    /// # Errors
    /// The reason the gate is closed.
    pub fn evaluate(
        &self,
        context: &Value,
        sentinels: &BTreeMap<Sentinel, bool>,
    ) -> Result<(), String> {
        self.evaluate_in(&RenderContext::new(context).with_sentinels(sentinels), None)
    }

    /// As [`CompiledGate::evaluate`] in a full render context; `peers` are the entry's other
    /// objects for `unique` conditions.
    ///
    /// # Errors
    /// The reason the gate is closed.
    pub fn evaluate_in(
        &self,
        ctx: &RenderContext<'_>,
        peers: Option<&[Value]>,
    ) -> Result<(), String> {
        if !self.sentinels.is_empty() {
            let fired = |s: &Sentinel| ctx.sentinels.and_then(|m| m.get(s)).copied() == Some(true);
            if !self.sentinels.iter().any(fired) {
                let names: Vec<&str> = self.sentinels.iter().map(|s| s.name()).collect();
                return Err(format!(
                    "none of the sentinels {} is true",
                    names.join(", ")
                ));
            }
        }
        for c in &self.when {
            match c.evaluate(ctx, peers) {
                Ok(true) => {}
                Ok(false) => return Err(c.describe_failure()),
                Err(e) => return self.unevaluable(&e),
            }
        }
        if self.or.is_empty() {
            return Ok(());
        }
        let mut reasons = Vec::new();
        for c in &self.or {
            match c.evaluate(ctx, peers) {
                Ok(true) => return Ok(()),
                Ok(false) => reasons.push(c.describe_failure()),
                Err(e) => return self.unevaluable(&e),
            }
        }
        Err(format!("none of: {}", reasons.join("; ")))
    }

    fn unevaluable(&self, error: &str) -> Result<(), String> {
        match self.fail_policy {
            FailPolicy::Open => Ok(()),
            FailPolicy::Closed => Err(format!(
                "the gate could not be evaluated (failPolicy: closed): {error}"
            )),
        }
    }
}

/// Computes the declared sentinels between `previous` (None on create, when every sentinel
/// but `deletionStarted` is true) and `current`. Absent lists and maps equal empty ones.
pub fn sentinels(
    declared: &[Sentinel],
    previous: Option<&Value>,
    current: &Value,
) -> BTreeMap<Sentinel, bool> {
    let empty = Value::Null;
    let at = |v: &Value, pointer: &str| -> Value {
        match v.pointer(pointer).unwrap_or(&empty) {
            Value::Array(a) if a.is_empty() => Value::Null,
            Value::Object(o) if o.is_empty() => Value::Null,
            Value::String(s) if s.is_empty() => Value::Null,
            other => other.clone(),
        }
    };
    let changed = |pointer: &str| match previous {
        None => true,
        Some(prev) => at(prev, pointer) != at(current, pointer),
    };
    declared
        .iter()
        .map(|s| {
            let v = match s {
                Sentinel::GenerationChanged => changed("/metadata/generation"),
                Sentinel::LabelsChanged => changed("/metadata/labels"),
                Sentinel::AnnotationsChanged => changed("/metadata/annotations"),
                Sentinel::FinalizersChanged => changed("/metadata/finalizers"),
                Sentinel::NameChanged => changed("/metadata/name"),
                Sentinel::NamespaceChanged => changed("/metadata/namespace"),
                Sentinel::GenerateNameChanged => changed("/metadata/generateName"),
                Sentinel::UidChanged => changed("/metadata/uid"),
                Sentinel::ResourceVersionChanged => changed("/metadata/resourceVersion"),
                Sentinel::CreationTimestampChanged => changed("/metadata/creationTimestamp"),
                Sentinel::DeletionGracePeriodSecondsChanged => {
                    changed("/metadata/deletionGracePeriodSeconds")
                }
                Sentinel::OwnerReferenceChanged => changed("/metadata/ownerReferences"),
                Sentinel::ManagedFieldsChanged => changed("/metadata/managedFields"),
                Sentinel::SpecChanged => changed("/spec"),
                Sentinel::DeletionStarted => {
                    !at(current, "/metadata/deletionTimestamp").is_null()
                        && previous.is_none_or(|p| at(p, "/metadata/deletionTimestamp").is_null())
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
    fn orkestras_template_gate_form_reads_sentinels_as_functions() {
        let g = gate(json!({"when": [{"field": "{{ generationChanged }}", "equals": "true"}]}));
        let mut s = BTreeMap::new();
        s.insert(Sentinel::GenerationChanged, false);
        assert!(g.evaluate(&json!({}), &s).is_err());
        s.insert(Sentinel::GenerationChanged, true);
        assert!(g.evaluate(&json!({}), &s).is_ok());
    }

    #[test]
    fn the_sentinels_shorthand_opens_on_any_listed_sentinel() {
        let g = gate(json!({"sentinels": ["generationChanged", "labelsChanged"]}));
        let mut s = BTreeMap::new();
        s.insert(Sentinel::GenerationChanged, false);
        s.insert(Sentinel::LabelsChanged, false);
        let closed = g.evaluate(&json!({}), &s).expect_err("nothing changed");
        assert!(
            closed.contains("generationChanged, labelsChanged"),
            "{closed}"
        );
        s.insert(Sentinel::LabelsChanged, true);
        assert!(g.evaluate(&json!({}), &s).is_ok());
        // With conditions too, both must pass.
        let g = gate(
            json!({"sentinels": ["labelsChanged"], "when": [{"field": "spec.on", "equals": "yes"}]}),
        );
        assert!(g.evaluate(&json!({"spec": {"on": "no"}}), &s).is_err());
        assert!(g.evaluate(&json!({"spec": {"on": "yes"}}), &s).is_ok());
    }

    #[test]
    fn fail_policy_decides_when_a_condition_cannot_be_evaluated() {
        let none = BTreeMap::new();
        let open = gate(json!({"when": [{"field": "{{ div 1 0 }}", "equals": "1"}]}));
        assert!(open.evaluate(&json!({}), &none).is_ok());
        let closed = gate(
            json!({"when": [{"field": "{{ div 1 0 }}", "equals": "1"}], "failPolicy": "closed"}),
        );
        let reason = closed.evaluate(&json!({}), &none).expect_err("held back");
        assert!(reason.contains("failPolicy: closed"), "{reason}");
    }

    #[test]
    fn all_fourteen_orkestra_sentinels_and_spec_changed_compare_versions() {
        let old = json!({"metadata": {
            "name": "a", "namespace": "ns", "generateName": "a-", "uid": "1",
            "resourceVersion": "10", "creationTimestamp": "2024-01-01T00:00:00Z",
            "generation": 1, "labels": {"a": "1"}, "annotations": {"x": "y"},
            "finalizers": ["f"], "ownerReferences": [{"uid": "o"}],
            "managedFields": [{"manager": "m"}]
        }, "spec": {"x": 1}});
        let all = Sentinel::ALL;
        let unchanged = sentinels(&all, Some(&old), &old);
        assert!(unchanged.values().all(|v| !v), "{unchanged:?}");
        let mut new = old.clone();
        let m = new["metadata"].as_object_mut().expect("metadata");
        m.insert("name".into(), json!("b"));
        m.insert("namespace".into(), json!("other"));
        m.insert("generateName".into(), json!("b-"));
        m.insert("uid".into(), json!("2"));
        m.insert("resourceVersion".into(), json!("11"));
        m.insert("creationTimestamp".into(), json!("2024-02-01T00:00:00Z"));
        m.insert("generation".into(), json!(2));
        m.insert("labels".into(), json!({"a": "2"}));
        m.insert("annotations".into(), json!({}));
        m.insert("finalizers".into(), json!([]));
        m.insert("ownerReferences".into(), json!([]));
        m.insert("managedFields".into(), json!([{"manager": "n"}]));
        m.insert("deletionTimestamp".into(), json!("2024-03-01T00:00:00Z"));
        m.insert("deletionGracePeriodSeconds".into(), json!(30));
        new["spec"] = json!({"x": 2});
        let s = sentinels(&all, Some(&old), &new);
        assert_eq!(s.len(), 15);
        assert!(s.values().all(|v| *v), "{s:?}");
        // The deletion started once: a later update is not a new start.
        let later = sentinels(&[Sentinel::DeletionStarted], Some(&new), &new);
        assert!(!later[&Sentinel::DeletionStarted]);
        // Absent and empty are the same.
        let bare = json!({"metadata": {"name": "a"}});
        let empty = json!({"metadata": {"name": "a", "labels": {}, "finalizers": []}});
        let s = sentinels(
            &[Sentinel::LabelsChanged, Sentinel::FinalizersChanged],
            Some(&bare),
            &empty,
        );
        assert!(s.values().all(|v| !v));
        assert!(
            sentinels(&all, None, &old)[&Sentinel::LabelsChanged],
            "create changes everything"
        );
        assert!(!sentinels(&all, None, &old)[&Sentinel::DeletionStarted]);
    }
}
