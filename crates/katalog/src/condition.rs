//! Gate and validation conditions: `{field|sentinel, operator|equals|..., value}`.

use std::collections::BTreeMap;

use regex_lite::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Sentinel;

/// A condition as written in the Katalog. [`Condition::compile`] turns it into a [`Check`].
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    #[serde(default)]
    pub field: Option<String>,
    #[serde(default)]
    pub sentinel: Option<String>,
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub value: Option<Value>,
    #[serde(default)]
    pub equals: Option<Value>,
    #[serde(default)]
    pub not_equals: Option<Value>,
    #[serde(default)]
    pub exists: Option<bool>,
    #[serde(default)]
    pub not_exists: Option<bool>,
    #[serde(default)]
    pub contains: Option<Value>,
    #[serde(default, rename = "in")]
    pub in_: Option<Value>,
    #[serde(default)]
    pub gt: Option<Value>,
    #[serde(default)]
    pub lt: Option<Value>,
    #[serde(default)]
    pub regex: Option<String>,
    /// Shown when the condition fails (gated reason, validation message).
    #[serde(default)]
    pub message: Option<String>,
    /// Validation rules only: `deny` (default) fails the reconcile, `warn` only reports.
    #[serde(default)]
    pub action: Option<RuleAction>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RuleAction {
    #[default]
    Deny,
    Warn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    Equals,
    NotEquals,
    Exists,
    NotExists,
    Contains,
    In,
    Gt,
    Lt,
    Regex,
}

impl Operator {
    pub const NAMES: [&'static str; 9] = [
        "equals",
        "notEquals",
        "exists",
        "notExists",
        "contains",
        "in",
        "gt",
        "lt",
        "regex",
    ];

    pub fn from_name(name: &str) -> Option<Operator> {
        Some(match name {
            "equals" => Operator::Equals,
            "notEquals" => Operator::NotEquals,
            "exists" => Operator::Exists,
            "notExists" => Operator::NotExists,
            "contains" => Operator::Contains,
            "in" => Operator::In,
            "gt" => Operator::Gt,
            "lt" => Operator::Lt,
            "regex" => Operator::Regex,
            _ => return None,
        })
    }

    fn needs_value(self) -> bool {
        !matches!(self, Operator::Exists | Operator::NotExists)
    }
}

/// What a condition looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// A dot path into the evaluation context (`spec.replicas`, `health.state`).
    Field(String),
    Sentinel(Sentinel),
}

/// A compiled, checked condition.
#[derive(Clone, Debug)]
pub struct Check {
    pub subject: Subject,
    pub operator: Operator,
    pub value: Value,
    regex: Option<Regex>,
    pub message: Option<String>,
    pub action: RuleAction,
}

/// Why a condition could not be compiled: the sub-field at fault, a message and a hint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionError {
    pub field: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

impl Condition {
    /// Checks the condition's shape and compiles it.
    ///
    /// # Errors
    /// Every problem found: no or two subjects, an unknown operator or sentinel, a missing value,
    /// an invalid regex, `in` without a list.
    pub fn compile(&self) -> Result<Check, Vec<ConditionError>> {
        let mut errors = Vec::new();
        let err = |field, message: String, hint: Option<&str>| ConditionError {
            field,
            message,
            hint: hint.map(str::to_string),
        };

        let subject = match (&self.field, &self.sentinel) {
            (Some(f), None) if !f.trim().is_empty() => Some(Subject::Field(f.trim().to_string())),
            (None, Some(s)) => match Sentinel::from_name(s) {
                Some(s) => Some(Subject::Sentinel(s)),
                None => {
                    let names: Vec<&str> = Sentinel::ALL.iter().map(|s| s.name()).collect();
                    errors.push(err(
                        "sentinel",
                        format!("unknown sentinel \"{s}\""),
                        Some(&did_you_mean_or_list(s, &names)),
                    ));
                    None
                }
            },
            (Some(_), Some(_)) => {
                errors.push(err(
                    "field",
                    "a condition names either `field` or `sentinel`, not both".into(),
                    None,
                ));
                None
            }
            _ => {
                errors.push(err(
                    "field",
                    "a condition needs a `field` (dot path) or a `sentinel`".into(),
                    Some("e.g. {field: spec.replicas, operator: gt, value: 0}"),
                ));
                None
            }
        };

        let mut ops: Vec<(Operator, Option<Value>)> = Vec::new();
        if let Some(name) = &self.operator {
            match Operator::from_name(name) {
                Some(op) => ops.push((op, self.value.clone())),
                None => errors.push(err(
                    "operator",
                    format!("unknown operator \"{name}\""),
                    Some(&did_you_mean_or_list(name, &Operator::NAMES)),
                )),
            }
        }
        let shorthands = [
            (Operator::Equals, self.equals.clone()),
            (Operator::NotEquals, self.not_equals.clone()),
            (Operator::Contains, self.contains.clone()),
            (Operator::In, self.in_.clone()),
            (Operator::Gt, self.gt.clone()),
            (Operator::Lt, self.lt.clone()),
            (Operator::Regex, self.regex.clone().map(Value::String)),
        ];
        for (op, v) in shorthands {
            if v.is_some() {
                ops.push((op, v));
            }
        }
        if self.exists == Some(true) {
            ops.push((Operator::Exists, None));
        }
        if self.exists == Some(false) || self.not_exists == Some(true) {
            ops.push((Operator::NotExists, None));
        }
        if ops.is_empty() && matches!(subject, Some(Subject::Sentinel(_))) {
            ops.push((Operator::Equals, Some(Value::Bool(true))));
        }

        let (operator, value) = match ops.len() {
            1 => ops.remove(0),
            0 => {
                if self.operator.is_none() {
                    errors.push(err(
                        "operator",
                        "a condition needs an operator".into(),
                        Some(&format!(
                            "set `operator:` to one of {} (with `value:`), or use a shorthand such as `equals: x`",
                            Operator::NAMES.join(", ")
                        )),
                    ));
                }
                return Err(errors);
            }
            _ => {
                errors.push(err(
                    "operator",
                    "a condition has exactly one operator; this one has several".into(),
                    None,
                ));
                return Err(errors);
            }
        };
        if operator.needs_value() && value.is_none() {
            errors.push(err(
                "value",
                format!("operator {operator:?} needs a `value`"),
                None,
            ));
        }
        let value = value.unwrap_or(Value::Null);
        if operator == Operator::In && !value.is_array() && !value.is_null() {
            errors.push(err(
                "value",
                "operator `in` needs a list value".into(),
                Some("e.g. value: [dev, staging]"),
            ));
        }
        if matches!(operator, Operator::Gt | Operator::Lt) && as_number(&value).is_none() {
            errors.push(err(
                "value",
                format!("operator {operator:?} needs a number, got {value}"),
                None,
            ));
        }
        let regex = if operator == Operator::Regex {
            match Regex::new(value.as_str().unwrap_or_default()) {
                Ok(r) => Some(r),
                Err(e) => {
                    errors.push(err("value", format!("invalid regex: {e}"), None));
                    None
                }
            }
        } else {
            None
        };
        match subject {
            Some(subject) if errors.is_empty() => Ok(Check {
                subject,
                operator,
                value,
                regex,
                message: self.message.clone(),
                action: self.action.unwrap_or_default(),
            }),
            _ => Err(errors),
        }
    }
}

impl Check {
    /// Evaluates the condition over `context` (the CR plus `health`, `metrics`) and sentinels.
    pub fn holds(&self, context: &Value, sentinels: &BTreeMap<Sentinel, bool>) -> bool {
        let found = match &self.subject {
            Subject::Field(path) => lookup(context, path).cloned(),
            Subject::Sentinel(s) => Some(Value::Bool(sentinels.get(s).copied().unwrap_or(false))),
        };
        let present = found.as_ref().is_some_and(|v| !v.is_null());
        match self.operator {
            Operator::Exists => present,
            Operator::NotExists => !present,
            Operator::Equals => found.is_some_and(|v| loosely_equal(&v, &self.value)),
            Operator::NotEquals => !found.is_some_and(|v| loosely_equal(&v, &self.value)),
            Operator::Contains => found.is_some_and(|v| contains(&v, &self.value)),
            Operator::In => found.is_some_and(|v| {
                self.value
                    .as_array()
                    .is_some_and(|list| list.iter().any(|item| loosely_equal(&v, item)))
            }),
            Operator::Gt | Operator::Lt => {
                match (found.as_ref().and_then(as_number), as_number(&self.value)) {
                    (Some(a), Some(b)) if self.operator == Operator::Gt => a > b,
                    (Some(a), Some(b)) => a < b,
                    _ => false,
                }
            }
            Operator::Regex => match (found, &self.regex) {
                (Some(v), Some(re)) => re.is_match(&scalar_text(&v)),
                _ => false,
            },
        }
    }

    /// A sentence saying why the condition did not hold.
    pub fn describe_failure(&self) -> String {
        if let Some(m) = &self.message {
            return m.clone();
        }
        let subject = match &self.subject {
            Subject::Field(f) => format!("field {f}"),
            Subject::Sentinel(s) => format!("sentinel {}", s.name()),
        };
        match self.operator {
            Operator::Exists | Operator::NotExists => {
                format!("{subject} {:?} failed", self.operator)
            }
            op => format!("{subject} {op:?} {} failed", self.value),
        }
    }
}

/// Looks up a dot path (`spec.template.replicas`, `spec.items.0.name`) in a JSON value.
pub fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(value, |v, seg| match v {
            Value::Object(map) => map.get(seg),
            Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// The text form of a scalar, as a template would print it.
pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn loosely_equal(a: &Value, b: &Value) -> bool {
    a == b
        || match (as_number(a), as_number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => !a.is_object() && !a.is_array() && scalar_text(a) == scalar_text(b),
        }
}

fn contains(haystack: &Value, needle: &Value) -> bool {
    match haystack {
        Value::String(s) => s.contains(&scalar_text(needle)),
        Value::Array(items) => items.iter().any(|i| loosely_equal(i, needle)),
        Value::Object(map) => map.contains_key(&scalar_text(needle)),
        _ => false,
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// "did you mean X?" when a close name exists, else the list of valid names.
pub fn did_you_mean_or_list(got: &str, known: &[&str]) -> String {
    match crate::suggest::closest(got, known.iter().copied()) {
        Some(best) => format!("did you mean \"{best}\"?"),
        None => format!("expected one of: {}", known.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(c: Value) -> Check {
        serde_json::from_value::<Condition>(c)
            .expect("condition parses")
            .compile()
            .expect("condition compiles")
    }

    #[test]
    fn operators_evaluate_against_the_object() {
        let obj = json!({"spec": {"replicas": 3, "env": "prod", "tags": ["a", "b"]}});
        let none = BTreeMap::new();
        assert!(
            check(json!({"field": "spec.replicas", "operator": "gt", "value": 2}))
                .holds(&obj, &none)
        );
        assert!(!check(json!({"field": "spec.replicas", "lt": 3})).holds(&obj, &none));
        assert!(check(json!({"field": "spec.env", "equals": "prod"})).holds(&obj, &none));
        assert!(check(json!({"field": "spec.replicas", "equals": "3"})).holds(&obj, &none));
        assert!(check(json!({"field": "spec.env", "in": ["dev", "prod"]})).holds(&obj, &none));
        assert!(check(json!({"field": "spec.tags", "contains": "b"})).holds(&obj, &none));
        assert!(check(json!({"field": "spec.missing", "notExists": true})).holds(&obj, &none));
        assert!(check(json!({"field": "spec.env", "regex": "^pr"})).holds(&obj, &none));
        assert!(check(json!({"field": "spec.env", "notEquals": "dev"})).holds(&obj, &none));
    }

    #[test]
    fn sentinel_condition_defaults_to_true() {
        let c = check(json!({"sentinel": "generationChanged"}));
        let mut s = BTreeMap::new();
        assert!(!c.holds(&Value::Null, &s));
        s.insert(Sentinel::GenerationChanged, true);
        assert!(c.holds(&Value::Null, &s));
    }

    #[test]
    fn unknown_operator_suggests_the_closest() {
        let errs = serde_json::from_value::<Condition>(
            json!({"field": "a", "operator": "equal", "value": 1}),
        )
        .expect("parses")
        .compile()
        .expect_err("unknown operator");
        assert_eq!(errs[0].field, "operator");
        assert_eq!(errs[0].hint.as_deref(), Some("did you mean \"equals\"?"));
    }

    #[test]
    fn unknown_sentinel_is_rejected() {
        let errs = serde_json::from_value::<Condition>(json!({"sentinel": "specChange"}))
            .expect("parses")
            .compile()
            .expect_err("unknown sentinel");
        assert!(errs[0].message.contains("unknown sentinel"));
    }
}
