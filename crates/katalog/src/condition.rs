//! Gate and validation conditions, with Orkestra's operators and shorthands.
//!
//! A condition names what it looks at — a dot path (`spec.replicas`), a template whose
//! rendered text is compared (`"{{ generationChanged }}"`, never read as a path) or an ork
//! sentinel — and one operator, either as `operator: x` with `value:` or as a shorthand key
//! (`equals: prod`, `in: "a,b"`, `between: "1,10"`). With neither, `value:` means `equals` and
//! no value means `exists`. As in Orkestra, values compare as text: `exists` means the field
//! renders non-empty, a missing number counts as 0 for `gt`/`lt`/`gte`/`lte`.

use std::collections::BTreeMap;

use regex_lite::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sentinel::Sentinel;
use crate::template::{RenderContext, SharedNotes, Template, is_template, print_value, type_name};

/// A condition as written in the Katalog. [`Condition::compile`] turns it into a [`Check`].
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    /// A dot path into the object, or a template (`"{{ generationChanged }}"`) whose output
    /// is compared.
    #[serde(default)]
    pub field: Option<String>,
    /// An ork sentinel name (alternative to `field`).
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
    #[serde(default)]
    pub not_contains: Option<Value>,
    #[serde(default)]
    pub prefix: Option<Value>,
    #[serde(default)]
    pub not_prefix: Option<Value>,
    #[serde(default)]
    pub suffix: Option<Value>,
    #[serde(default)]
    pub not_suffix: Option<Value>,
    #[serde(default, rename = "in")]
    pub in_: Option<Value>,
    #[serde(default)]
    pub not_in: Option<Value>,
    #[serde(default)]
    pub gt: Option<Value>,
    #[serde(default)]
    pub lt: Option<Value>,
    #[serde(default)]
    pub gte: Option<Value>,
    #[serde(default)]
    pub lte: Option<Value>,
    #[serde(default)]
    pub greater_than: Option<Value>,
    #[serde(default)]
    pub less_than: Option<Value>,
    #[serde(default)]
    pub greater_than_or_equal: Option<Value>,
    #[serde(default)]
    pub less_than_or_equal: Option<Value>,
    #[serde(default)]
    pub min: Option<Value>,
    #[serde(default)]
    pub max: Option<Value>,
    /// `"min,max"` (inclusive) or `[min, max]`.
    #[serde(default)]
    pub between: Option<Value>,
    #[serde(default)]
    pub not_between: Option<Value>,
    #[serde(default)]
    pub regex: Option<String>,
    /// `typeOf: map|slice|string|number|bool|null`.
    #[serde(default)]
    pub type_of: Option<String>,
    /// No other object of this entry has the same value.
    #[serde(default)]
    pub unique: Option<bool>,
    /// Inverts the result.
    #[serde(default)]
    pub negate: bool,
    /// Shown when the condition fails (gated reason, validation message).
    #[serde(default)]
    pub message: Option<String>,
    /// Validation rules only: `deny` (default) fails the reconcile, `warn` only reports.
    #[serde(default)]
    pub action: Option<RuleAction>,
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) notes: Option<SharedNotes>,
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
    NotContains,
    Prefix,
    NotPrefix,
    Suffix,
    NotSuffix,
    In,
    NotIn,
    Gt,
    Lt,
    Gte,
    Lte,
    Between,
    NotBetween,
    Regex,
    Unique,
    TypeOf,
    TypeMap,
    TypeList,
    TypeString,
    TypeNumber,
    TypeBool,
    TypeNull,
}

impl Operator {
    /// Every `operator:` value, Orkestra's aliases included.
    pub const NAMES: [&'static str; 33] = [
        "equals",
        "notEquals",
        "exists",
        "notExists",
        "contains",
        "notContains",
        "prefix",
        "notPrefix",
        "suffix",
        "notSuffix",
        "in",
        "notIn",
        "gt",
        "lt",
        "gte",
        "lte",
        "greaterThan",
        "lessThan",
        "greaterThanOrEqual",
        "lessThanOrEqual",
        "min",
        "max",
        "between",
        "notBetween",
        "regex",
        "unique",
        "typeOf",
        "typeMap",
        "typeList",
        "typeString",
        "typeNumber",
        "typeBool",
        "typeNull",
    ];

    pub fn from_name(name: &str) -> Option<Operator> {
        use Operator::*;
        Some(match name {
            "equals" => Equals,
            "notEquals" => NotEquals,
            "exists" => Exists,
            "notExists" => NotExists,
            "contains" => Contains,
            "notContains" => NotContains,
            "prefix" => Prefix,
            "notPrefix" => NotPrefix,
            "suffix" => Suffix,
            "notSuffix" => NotSuffix,
            "in" => In,
            "notIn" => NotIn,
            "gt" | "greaterThan" => Gt,
            "lt" | "lessThan" => Lt,
            "gte" | "greaterThanOrEqual" | "min" => Gte,
            "lte" | "lessThanOrEqual" | "max" => Lte,
            "between" => Between,
            "notBetween" => NotBetween,
            "regex" => Regex,
            "unique" => Unique,
            "typeOf" => TypeOf,
            "typeMap" => TypeMap,
            "typeList" => TypeList,
            "typeString" => TypeString,
            "typeNumber" => TypeNumber,
            "typeBool" => TypeBool,
            "typeNull" => TypeNull,
            _ => return None,
        })
    }

    fn needs_value(self) -> bool {
        use Operator::*;
        !matches!(
            self,
            Exists
                | NotExists
                | Unique
                | TypeMap
                | TypeList
                | TypeString
                | TypeNumber
                | TypeBool
                | TypeNull
        )
    }

    fn numeric(self) -> bool {
        matches!(
            self,
            Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte
        )
    }
}

/// What a condition looks at.
#[derive(Clone, Debug)]
pub enum Subject {
    /// A dot path into the evaluation context (`spec.replicas`, `health.state`).
    Field(String),
    /// A template whose rendered text is compared.
    Template(Template),
    Sentinel(Sentinel),
}

impl PartialEq for Subject {
    fn eq(&self, other: &Subject) -> bool {
        match (self, other) {
            (Subject::Field(a), Subject::Field(b)) => a == b,
            (Subject::Template(a), Subject::Template(b)) => a.source() == b.source(),
            (Subject::Sentinel(a), Subject::Sentinel(b)) => a == b,
            _ => false,
        }
    }
}

/// The compared value, prepared once.
#[derive(Clone, Debug)]
enum Expected {
    None,
    Text(String),
    Template(Template),
    List(Vec<String>),
    Range(f64, f64),
}

/// A compiled, checked condition.
#[derive(Clone, Debug)]
pub struct Check {
    pub subject: Subject,
    pub operator: Operator,
    /// The comparison value as written (for messages).
    pub value: Value,
    expected: Expected,
    regex: Option<Regex>,
    pub negate: bool,
    pub message: Option<String>,
    pub action: RuleAction,
    notes: Option<SharedNotes>,
}

/// Why a condition could not be compiled: the sub-field at fault, a message and a hint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionError {
    pub field: &'static str,
    pub message: String,
    pub hint: Option<String>,
}

fn cerr(field: &'static str, message: impl Into<String>, hint: Option<&str>) -> ConditionError {
    ConditionError {
        field,
        message: message.into(),
        hint: hint.map(str::to_string),
    }
}

impl Condition {
    /// The shorthand keys that are set, with their operator and value.
    fn shorthands(&self) -> Vec<(&'static str, Operator, Option<Value>)> {
        use Operator::*;
        let mut out = Vec::new();
        let mut add = |key: &'static str, op: Operator, v: &Option<Value>| {
            if v.is_some() {
                out.push((key, op, v.clone()));
            }
        };
        add("equals", Equals, &self.equals);
        add("notEquals", NotEquals, &self.not_equals);
        add("contains", Contains, &self.contains);
        add("notContains", NotContains, &self.not_contains);
        add("prefix", Prefix, &self.prefix);
        add("notPrefix", NotPrefix, &self.not_prefix);
        add("suffix", Suffix, &self.suffix);
        add("notSuffix", NotSuffix, &self.not_suffix);
        add("in", In, &self.in_);
        add("notIn", NotIn, &self.not_in);
        add("gt", Gt, &self.gt);
        add("lt", Lt, &self.lt);
        add("gte", Gte, &self.gte);
        add("lte", Lte, &self.lte);
        add("greaterThan", Gt, &self.greater_than);
        add("lessThan", Lt, &self.less_than);
        add("greaterThanOrEqual", Gte, &self.greater_than_or_equal);
        add("lessThanOrEqual", Lte, &self.less_than_or_equal);
        add("min", Gte, &self.min);
        add("max", Lte, &self.max);
        add("between", Between, &self.between);
        add("notBetween", NotBetween, &self.not_between);
        add("regex", Regex, &self.regex.clone().map(Value::String));
        add("typeOf", TypeOf, &self.type_of.clone().map(Value::String));
        match self.exists {
            Some(true) => out.push(("exists", Exists, None)),
            Some(false) => out.push(("exists", NotExists, None)),
            None => {}
        }
        match self.not_exists {
            Some(true) => out.push(("notExists", NotExists, None)),
            Some(false) => out.push(("notExists", Exists, None)),
            None => {}
        }
        if self.unique == Some(true) {
            out.push(("unique", Unique, None));
        }
        out
    }

    /// Checks the condition's shape and compiles it.
    ///
    /// # Errors
    /// Every problem found: no or two subjects, an unknown operator or sentinel, several
    /// operators, a missing or unusable value, an invalid regex or template.
    pub fn compile(&self) -> Result<Check, Vec<ConditionError>> {
        let mut errors = Vec::new();
        let subject = match (&self.field, &self.sentinel) {
            (Some(f), None) if is_template(f) => match Template::parse(f) {
                Ok(t) => Some(Subject::Template(self.bound(t))),
                Err(e) => {
                    errors.push(cerr("field", format!("invalid template: {e}"), None));
                    None
                }
            },
            (Some(f), None) if !f.trim().is_empty() => Some(Subject::Field(f.trim().to_string())),
            (None, Some(s)) => match Sentinel::from_name(s) {
                Some(s) => Some(Subject::Sentinel(s)),
                None => {
                    let names: Vec<&str> = Sentinel::ALL.iter().map(|s| s.name()).collect();
                    errors.push(cerr(
                        "sentinel",
                        format!("unknown sentinel \"{s}\""),
                        Some(&did_you_mean_or_list(s, &names)),
                    ));
                    None
                }
            },
            (Some(_), Some(_)) => {
                errors.push(cerr(
                    "field",
                    "a condition names either `field` or `sentinel`, not both",
                    None,
                ));
                None
            }
            _ => {
                errors.push(cerr(
                    "field",
                    "a condition needs a `field` (dot path or template) or a `sentinel`",
                    Some("e.g. {field: spec.replicas, operator: gt, value: 0}"),
                ));
                None
            }
        };

        let mut ops: Vec<(Operator, Option<Value>)> = Vec::new();
        if let Some(name) = &self.operator {
            match Operator::from_name(name) {
                Some(op) => ops.push((op, self.value.clone())),
                None => errors.push(cerr(
                    "operator",
                    format!("unknown operator \"{name}\""),
                    Some(&did_you_mean_or_list(name, &Operator::NAMES)),
                )),
            }
        }
        let shorthands = self.shorthands();
        if !shorthands.is_empty() && self.value.is_some() && self.operator.is_none() {
            errors.push(cerr(
                "value",
                format!(
                    "`value` is not used with `{}`; remove one of them",
                    shorthands[0].0
                ),
                None,
            ));
        }
        ops.extend(shorthands.into_iter().map(|(_, op, v)| (op, v)));
        if ops.is_empty() && self.operator.is_none() {
            // Orkestra: a bare value means equals; nothing at all means exists. A sentinel
            // alone means "is true".
            ops.push(match (&self.value, &subject) {
                (Some(v), _) => (Operator::Equals, Some(v.clone())),
                (None, Some(Subject::Sentinel(_))) => (Operator::Equals, Some(Value::Bool(true))),
                (None, _) => (Operator::Exists, None),
            });
        }
        let (operator, value) = match ops.len() {
            1 => ops.remove(0),
            0 => return Err(errors),
            _ => {
                errors.push(cerr(
                    "operator",
                    "a condition has exactly one operator; this one has several",
                    Some("split it into several conditions under `when`"),
                ));
                return Err(errors);
            }
        };
        if operator.needs_value() && value.is_none() {
            errors.push(cerr(
                "value",
                format!("operator {} needs a `value`", op_name(operator)),
                None,
            ));
        }
        let value = value.unwrap_or(Value::Null);
        let expected = match self.expected(operator, &value) {
            Ok(e) => e,
            Err(e) => {
                errors.push(e);
                Expected::None
            }
        };
        let regex = match (&expected, operator) {
            (Expected::Text(p), Operator::Regex) => match Regex::new(p) {
                Ok(r) => Some(r),
                Err(e) => {
                    errors.push(cerr("value", format!("invalid regex: {e}"), None));
                    None
                }
            },
            _ => None,
        };
        match subject {
            Some(subject) if errors.is_empty() => Ok(Check {
                subject,
                operator,
                value,
                expected,
                regex,
                negate: self.negate,
                message: self.message.clone(),
                action: self.action.unwrap_or_default(),
                notes: self.notes.clone(),
            }),
            _ => Err(errors),
        }
    }

    fn bound(&self, mut t: Template) -> Template {
        if let Some(n) = &self.notes {
            t.bind(n);
        }
        t
    }

    fn expected(&self, op: Operator, value: &Value) -> Result<Expected, ConditionError> {
        use Operator::*;
        if !op.needs_value() {
            return Ok(Expected::None);
        }
        if let Value::String(s) = value
            && is_template(s)
        {
            return Template::parse(s)
                .map(|t| Expected::Template(self.bound(t)))
                .map_err(|e| cerr("value", format!("invalid template: {e}"), None));
        }
        match op {
            In | NotIn => Ok(Expected::List(match value {
                Value::Array(items) => items.iter().map(print_value).collect(),
                other => split_list(&print_value(other)),
            })),
            Between | NotBetween => {
                let parts: Vec<String> = match value {
                    Value::Array(items) => items.iter().map(print_value).collect(),
                    other => split_list_keep_empty(&print_value(other)),
                };
                match parts.as_slice() {
                    [lo, hi] => match (lo.trim().parse::<f64>(), hi.trim().parse::<f64>()) {
                        (Ok(lo), Ok(hi)) if lo <= hi => Ok(Expected::Range(lo, hi)),
                        (Ok(_), Ok(_)) => Err(cerr("value", "between needs min <= max", None)),
                        _ => Err(cerr(
                            "value",
                            format!("between needs two numbers, got {value}"),
                            Some("e.g. between: \"1,10\""),
                        )),
                    },
                    _ => Err(cerr(
                        "value",
                        format!("between needs \"min,max\", got {value}"),
                        Some("e.g. between: \"1,10\""),
                    )),
                }
            }
            op if op.numeric() => {
                let text = print_value(value);
                if text.trim().parse::<f64>().is_err() {
                    return Err(cerr(
                        "value",
                        format!("operator {} needs a number, got {value}", op_name(op)),
                        None,
                    ));
                }
                Ok(Expected::Text(text))
            }
            TypeOf => {
                let t = print_value(value);
                if !["map", "slice", "string", "number", "bool", "null"].contains(&t.as_str()) {
                    return Err(cerr(
                        "value",
                        format!(
                            "typeOf compares with map, slice, string, number, bool or null, not \"{t}\""
                        ),
                        None,
                    ));
                }
                Ok(Expected::Text(t))
            }
            _ => Ok(Expected::Text(print_value(value))),
        }
    }
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',').map(|p| p.trim().to_string()).collect()
}

fn split_list_keep_empty(s: &str) -> Vec<String> {
    s.split(',').map(str::to_string).collect()
}

fn op_name(op: Operator) -> String {
    let debug = format!("{op:?}");
    let mut chars = debug.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => debug,
    }
}

impl Check {
    /// Evaluates over `context` (the CR plus `health`, `metrics`…) and the event's sentinels,
    /// with the Katalog's notes and the process facts. An evaluation error counts as "does not
    /// hold"; use [`Check::evaluate`] to tell the two apart.
    pub fn holds(&self, context: &Value, sentinels: &BTreeMap<Sentinel, bool>) -> bool {
        let mut ctx = RenderContext::new(context).with_sentinels(sentinels);
        if let Some(n) = self.notes.as_deref() {
            ctx = ctx.with_notes(n);
        }
        self.evaluate(&ctx, None).unwrap_or(false)
    }

    /// Evaluates in `ctx`; `peers` are the other objects of the entry (for `unique`; without
    /// them `unique` holds, as in Orkestra when no checker is wired).
    ///
    /// # Errors
    /// A template (field or value) that fails to render, or a templated regex that is invalid.
    pub fn evaluate(
        &self,
        ctx: &RenderContext<'_>,
        peers: Option<&[Value]>,
    ) -> Result<bool, String> {
        let (text, raw): (String, Option<Value>) = match &self.subject {
            Subject::Field(path) => {
                let raw = lookup(ctx.data, path).cloned();
                (raw.as_ref().map(print_value).unwrap_or_default(), raw)
            }
            Subject::Template(t) => {
                let s = t.render_in(ctx).map_err(|e| format!("field: {e}"))?;
                (s.clone(), Some(Value::String(s)))
            }
            Subject::Sentinel(s) => {
                let v = ctx
                    .sentinels
                    .and_then(|m| m.get(s).copied())
                    .unwrap_or(false);
                (v.to_string(), Some(Value::Bool(v)))
            }
        };
        let expected = match &self.expected {
            Expected::Template(t) => {
                Expected::Text(t.render_in(ctx).map_err(|e| format!("value: {e}"))?)
            }
            other => other.clone(),
        };
        let result = self.apply(&text, raw.as_ref(), &expected, peers)?;
        Ok(result != self.negate)
    }

    fn apply(
        &self,
        text: &str,
        raw: Option<&Value>,
        expected: &Expected,
        peers: Option<&[Value]>,
    ) -> Result<bool, String> {
        use Operator::*;
        let want = match expected {
            Expected::Text(t) => t.as_str(),
            _ => "",
        };
        let present = !text.is_empty() && text != "<no value>";
        let number = |s: &str| s.trim().parse::<f64>().ok();
        Ok(match self.operator {
            Exists => present,
            NotExists => !present,
            Equals => loosely_equal(text, want),
            NotEquals => !loosely_equal(text, want),
            Contains => contains(text, raw, want),
            NotContains => !contains(text, raw, want),
            Prefix => text.starts_with(want),
            NotPrefix => !text.starts_with(want),
            Suffix => text.ends_with(want),
            NotSuffix => !text.ends_with(want),
            In | NotIn => {
                let list = match expected {
                    Expected::List(l) => l.clone(),
                    Expected::Text(t) => split_list(t),
                    _ => Vec::new(),
                };
                let found = list.iter().any(|item| item == text);
                found == (self.operator == In)
            }
            Gt | Lt | Gte | Lte => {
                let Some(e) = number(want) else {
                    return Ok(false);
                };
                let f = number(text).unwrap_or(0.0);
                match self.operator {
                    Gt => f > e,
                    Lt => f < e,
                    Gte => f >= e,
                    _ => f <= e,
                }
            }
            Between | NotBetween => {
                let range = match expected {
                    Expected::Range(lo, hi) => Some((*lo, *hi)),
                    Expected::Text(t) => match split_list_keep_empty(t).as_slice() {
                        [lo, hi] => number(lo).zip(number(hi)),
                        _ => None,
                    },
                    _ => None,
                };
                let Some((lo, hi)) = range else {
                    return Ok(false);
                };
                let f = if text.is_empty() {
                    Some(0.0)
                } else {
                    number(text)
                };
                let Some(f) = f else {
                    return Ok(false);
                };
                let inside = f >= lo && f <= hi;
                inside == (self.operator == Between)
            }
            Regex => match &self.regex {
                Some(re) => re.is_match(text),
                None => regex_lite::Regex::new(want)
                    .map_err(|e| format!("invalid regex {want:?}: {e}"))?
                    .is_match(text),
            },
            Unique => match (peers, &self.subject) {
                (None, _) => true,
                (_, _) if !present => true,
                (Some(peers), Subject::Field(path)) => !peers
                    .iter()
                    .any(|p| lookup(p, path).map(print_value).as_deref() == Some(text)),
                (Some(_), _) => true,
            },
            TypeOf => type_of(raw) == want,
            TypeMap => type_of(raw) == "map",
            TypeList => type_of(raw) == "slice",
            TypeString => type_of(raw) == "string",
            TypeNumber => type_of(raw) == "number",
            TypeBool => type_of(raw) == "bool",
            TypeNull => type_of(raw) == "null",
        })
    }

    /// A sentence saying why the condition did not hold.
    /// A failure of this rule on `cr` as Orkestra's `ValidationFailed`/`ValidationWarning`
    /// conditions word it: `field "<path>": <message> (got "<value>")` for a field, else as
    /// [`Check::describe_failure`].
    pub fn describe_violation(&self, cr: &Value) -> String {
        let Subject::Field(path) = &self.subject else {
            return self.describe_failure();
        };
        let got = lookup(cr, path).map(print_value).unwrap_or_default();
        let what = match &self.message {
            Some(m) => m.clone(),
            None => self.check_failed(),
        };
        format!("field {path:?}: {what} (got {got:?})")
    }

    pub fn describe_failure(&self) -> String {
        if let Some(m) = &self.message {
            return m.clone();
        }
        let subject = match &self.subject {
            Subject::Field(f) => format!("field {f}"),
            Subject::Template(t) => format!("field {}", t.source()),
            Subject::Sentinel(s) => format!("sentinel {}", s.name()),
        };
        format!("{subject} {}", self.check_failed())
    }

    /// `gt 3 failed`, `not exists failed`: the check, without its subject.
    fn check_failed(&self) -> String {
        let negated = if self.negate { "not " } else { "" };
        if self.operator.needs_value() {
            format!("{negated}{} {} failed", op_name(self.operator), self.value)
        } else {
            format!("{negated}{} failed", op_name(self.operator))
        }
    }
}

fn type_of(raw: Option<&Value>) -> &'static str {
    raw.map_or("null", type_name)
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
    print_value(v)
}

fn loosely_equal(a: &str, b: &str) -> bool {
    a == b
        || match (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
}

fn contains(text: &str, raw: Option<&Value>, needle: &str) -> bool {
    match raw {
        Some(Value::Array(items)) => items.iter().any(|i| loosely_equal(&print_value(i), needle)),
        Some(Value::Object(map)) => map.contains_key(needle),
        _ => text.contains(needle),
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

    fn holds(c: Value, obj: &Value) -> bool {
        check(c).holds(obj, &BTreeMap::new())
    }

    fn errors(c: Value) -> Vec<ConditionError> {
        serde_json::from_value::<Condition>(c)
            .expect("parses")
            .compile()
            .expect_err("does not compile")
    }

    #[test]
    fn every_orkestra_operator_and_alias_evaluates() {
        let obj = json!({"spec": {"replicas": 3, "env": "prod", "tags": ["a", "b"],
                                  "image": "nginx:1.25", "empty": "", "cfg": {"k": 1}}});
        let yes = |c: Value| assert!(holds(c.clone(), &obj), "{c} should hold");
        let no = |c: Value| assert!(!holds(c.clone(), &obj), "{c} should not hold");
        yes(json!({"field": "spec.replicas", "operator": "gt", "value": 2}));
        yes(json!({"field": "spec.replicas", "greaterThan": "2"}));
        no(json!({"field": "spec.replicas", "lt": 3}));
        yes(json!({"field": "spec.replicas", "gte": 3}));
        yes(json!({"field": "spec.replicas", "lte": "3"}));
        yes(json!({"field": "spec.replicas", "min": "1"}));
        no(json!({"field": "spec.replicas", "max": "2"}));
        yes(json!({"field": "spec.replicas", "operator": "greaterThanOrEqual", "value": "3"}));
        yes(json!({"field": "spec.replicas", "between": "1,10"}));
        yes(json!({"field": "spec.replicas", "notBetween": [4, 10]}));
        yes(json!({"field": "spec.env", "equals": "prod"}));
        yes(json!({"field": "spec.replicas", "equals": "3"}));
        yes(json!({"field": "spec.env", "in": "dev, prod"}));
        yes(json!({"field": "spec.env", "in": ["dev", "prod"]}));
        yes(json!({"field": "spec.env", "notIn": "dev,qa"}));
        yes(json!({"field": "spec.image", "prefix": "nginx"}));
        yes(json!({"field": "spec.image", "suffix": "1.25"}));
        yes(json!({"field": "spec.image", "notPrefix": "redis"}));
        yes(json!({"field": "spec.image", "notSuffix": "latest"}));
        yes(json!({"field": "spec.tags", "contains": "b"}));
        yes(json!({"field": "spec.image", "notContains": "redis"}));
        yes(json!({"field": "spec.env", "regex": "^pr"}));
        yes(json!({"field": "spec.env", "notEquals": "dev"}));
        yes(json!({"field": "spec.cfg", "typeOf": "map"}));
        yes(json!({"field": "spec.tags", "operator": "typeList"}));
        yes(json!({"field": "spec.missing", "operator": "typeNull"}));
        yes(json!({"field": "spec.env", "operator": "unique"}));
        yes(json!({"field": "spec.env", "equals": "dev", "negate": true}));
        yes(json!({"field": "spec.env", "value": "prod"}));
        yes(json!({"field": "spec.env"}));
    }

    #[test]
    fn exists_means_renders_non_empty_as_in_orkestra() {
        let obj = json!({"spec": {"empty": "", "zero": 0, "no": false, "list": []}});
        assert!(!holds(json!({"field": "spec.empty", "exists": true}), &obj));
        assert!(holds(
            json!({"field": "spec.empty", "notExists": true}),
            &obj
        ));
        assert!(holds(json!({"field": "spec.zero", "exists": true}), &obj));
        assert!(holds(json!({"field": "spec.no", "exists": true}), &obj));
        assert!(holds(
            json!({"field": "spec.missing", "operator": "notExists"}),
            &obj
        ));
        assert!(holds(
            json!({"field": "spec.missing", "exists": false}),
            &obj
        ));
    }

    #[test]
    fn a_missing_number_counts_as_zero() {
        let obj = json!({});
        assert!(holds(json!({"field": "status.failures", "lt": 1}), &obj));
        assert!(!holds(json!({"field": "status.failures", "gt": 0}), &obj));
    }

    #[test]
    fn a_template_field_is_evaluated_never_read_as_a_path() {
        let mut s = BTreeMap::new();
        s.insert(Sentinel::GenerationChanged, true);
        let c = check(json!({"field": "{{ generationChanged }}", "equals": "true"}));
        assert!(matches!(c.subject, Subject::Template(_)));
        assert!(c.holds(&json!({}), &s));
        assert!(!c.holds(&json!({}), &BTreeMap::new()));
        let c = check(json!({"field": "{{ .spec.a }}-{{ .spec.b }}", "equals": "x-y"}));
        assert!(c.holds(&json!({"spec": {"a": "x", "b": "y"}}), &BTreeMap::new()));
        let c = check(json!({"field": "spec.image", "equals": "{{ .spec.wanted }}"}));
        assert!(c.holds(
            &json!({"spec": {"image": "a", "wanted": "a"}}),
            &BTreeMap::new()
        ));
    }

    #[test]
    fn a_failing_template_is_an_evaluation_error() {
        let c = check(json!({"field": "{{ div 1 0 }}", "equals": "1"}));
        let data = json!({});
        let ctx = RenderContext::new(&data);
        assert!(c.evaluate(&ctx, None).is_err());
        assert!(!c.holds(&data, &BTreeMap::new()));
    }

    #[test]
    fn unique_compares_with_the_other_objects() {
        let c = check(json!({"field": "spec.domain", "operator": "unique"}));
        let me = json!({"spec": {"domain": "a.io"}});
        let ctx = RenderContext::new(&me);
        let others = [json!({"spec": {"domain": "b.io"}})];
        assert_eq!(c.evaluate(&ctx, Some(&others)), Ok(true));
        let clash = [json!({"spec": {"domain": "a.io"}})];
        assert_eq!(c.evaluate(&ctx, Some(&clash)), Ok(false));
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
        let errs = errors(json!({"field": "a", "operator": "equal", "value": 1}));
        assert_eq!(errs[0].field, "operator");
        assert_eq!(errs[0].hint.as_deref(), Some("did you mean \"equals\"?"));
    }

    #[test]
    fn two_operators_or_a_bad_value_are_refused() {
        assert!(
            errors(json!({"field": "a", "equals": 1, "prefix": "x"}))[0]
                .message
                .contains("exactly one operator")
        );
        assert!(
            errors(json!({"field": "a", "between": "5"}))[0]
                .message
                .contains("min,max")
        );
        assert!(
            errors(json!({"field": "a", "gt": "many"}))[0]
                .message
                .contains("needs a number")
        );
        assert!(
            errors(json!({"field": "a", "regex": "("}))[0]
                .message
                .contains("invalid regex")
        );
        assert!(
            errors(json!({"field": "a", "equals": 1, "value": 2}))[0]
                .message
                .contains("not used")
        );
        assert!(
            errors(json!({"field": "{{ .a ", "exists": true}))[0]
                .message
                .contains("invalid template")
        );
    }

    #[test]
    fn unknown_sentinel_is_rejected() {
        let errs = errors(json!({"sentinel": "specChange"}));
        assert!(errs[0].message.contains("unknown sentinel"));
    }
}
