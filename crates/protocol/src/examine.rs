//! Every check of an answer, run whole: [`crate::decide`] returns the first problem and
//! [`crate::lint`] all of them, so the two can never disagree on what is accepted.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::child::check_entry;
use crate::duration::parse_go_duration;
use crate::intent::short;
use crate::json;
use crate::policy::Policy;
use crate::response::{
    Decision, DesiredChild, FIELDS, Outcome, Response, ResponseError, ServiceCondition,
    ServiceEvent,
};
use crate::text::clean_text;

/// Service text in messages, status and events: at most this many characters.
const MESSAGE_CHARS: usize = 1000;
/// Event reasons: the events API's limit.
const REASON_CHARS: usize = 128;
/// Condition types: the Kubernetes condition schema's limit.
const CONDITION_TYPE_CHARS: usize = 316;
/// Past this many errors an answer is hopeless; the rest are counted, not listed.
const MAX_ERRORS: usize = 200;
/// Warnings beyond this many are counted, not listed.
const MAX_WARNINGS: usize = 50;

const MIN_REQUEUE: Duration = Duration::from_secs(1);
const MAX_REQUEUE: Duration = Duration::from_secs(365 * 24 * 3600);

/// The verdict on an answer: the decision, or every problem; warnings either way.
pub(crate) struct Examination {
    /// `Err` holds at least one error.
    pub result: Result<Decision, Vec<ResponseError>>,
    pub warnings: Vec<String>,
}

/// Decodes and checks a response body against `policy`.
///
/// Every check runs, as in [`crate::lint`]; the first problem found is returned.
///
/// # Errors
/// The first reason the answer cannot be used whole: not JSON of the right shape (repeated
/// keys included), an unknown `result`, `requeue` without `requeueAfter`, a `requeueAfter`
/// outside [1s, 1 year], a cap of [`crate::Limits`] exceeded, a bad condition or event, or any
/// resource that is undeclared, of a version the API server does not serve, malformed, in a
/// forbidden namespace, a duplicate or the CR itself.
pub fn decide(body: &[u8], policy: &Policy) -> Result<Decision, ResponseError> {
    examine(body, policy).result.map_err(|errors| {
        errors
            .into_iter()
            .next()
            .unwrap_or_else(|| ResponseError::Invalid("the answer was refused".into()))
    })
}

#[derive(Default)]
struct Findings {
    errors: Vec<ResponseError>,
    dropped: usize,
    warnings: Vec<String>,
    dropped_warnings: usize,
}

impl Findings {
    fn error(&mut self, e: ResponseError) {
        if self.errors.len() >= MAX_ERRORS {
            self.dropped += 1;
            return;
        }
        self.errors.push(match e {
            ResponseError::Malformed(m) => ResponseError::Malformed(clean_text(&m, MESSAGE_CHARS)),
            ResponseError::Invalid(m) => ResponseError::Invalid(clean_text(&m, MESSAGE_CHARS)),
            ResponseError::Resource { index, message } => ResponseError::Resource {
                index,
                message: clean_text(&message, MESSAGE_CHARS),
            },
        });
    }

    fn invalid(&mut self, message: String) {
        self.error(ResponseError::Invalid(message));
    }

    fn warn(&mut self, message: String) {
        if self.warnings.len() >= MAX_WARNINGS {
            self.dropped_warnings += 1;
            return;
        }
        self.warnings.push(clean_text(&message, MESSAGE_CHARS));
    }

    /// The verdict: the decision `decision` builds from the warnings when nothing was wrong.
    fn finish(mut self, decision: impl FnOnce(Vec<String>) -> Decision) -> Examination {
        self.count_dropped_warnings();
        if self.errors.is_empty() {
            let decision = decision(self.warnings.clone());
            return Examination {
                result: Ok(decision),
                warnings: self.warnings,
            };
        }
        self.refuse()
    }

    fn count_dropped_warnings(&mut self) {
        if self.dropped_warnings > 0 {
            self.warnings
                .push(format!("… and {} more warnings", self.dropped_warnings));
            self.dropped_warnings = 0;
        }
    }

    /// The verdict when the answer is refused: every error, then how many more there were.
    fn refuse(mut self) -> Examination {
        self.count_dropped_warnings();
        if self.dropped > 0 {
            self.errors.push(ResponseError::Invalid(format!(
                "… and {} more problems",
                self.dropped
            )));
        }
        Examination {
            result: Err(self.errors),
            warnings: self.warnings,
        }
    }
}

/// Runs every check of `body` against `policy`.
pub(crate) fn examine(body: &[u8], policy: &Policy) -> Examination {
    let mut f = Findings::default();
    let value = match json::parse(body) {
        Ok(parsed) => {
            for place in parsed.repeated_keys {
                f.error(ResponseError::Malformed(format!(
                    "{place} appears twice; a JSON object must not repeat a key (the last one would silently win)"
                )));
            }
            parsed.value
        }
        Err(e) => {
            f.error(ResponseError::Malformed(e.to_string()));
            return f.refuse();
        }
    };
    let Some(top) = value.as_object() else {
        f.error(ResponseError::Malformed(format!(
            "the answer must be a JSON object, got {}",
            short(&value)
        )));
        return f.refuse();
    };
    for key in top.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
        f.warn(format!(
            "unknown field \"{key}\" is ignored (fields: {})",
            FIELDS.join(", ")
        ));
    }
    let raw = typed(&value, top, &mut f);
    let outcome = outcome(&raw, &mut f);
    if let Some(status) = &raw.status {
        let size = serde_json::to_vec(status).map_or(usize::MAX, |v| v.len());
        if size > policy.limits.status_bytes {
            f.invalid(format!(
                "status is {size} bytes of JSON, more than the limit of {} bytes",
                policy.limits.status_bytes
            ));
        }
    }
    let conditions = conditions(raw.conditions.unwrap_or_default(), policy, &mut f);
    let events = events(raw.events.unwrap_or_default(), policy, &mut f);
    let resources = raw
        .resources
        .as_ref()
        .map(|list| resources(list, policy, &mut f));
    let status = raw.status;
    let finalized = raw.finalized.unwrap_or(false);
    f.finish(|warnings| Decision {
        outcome: outcome.unwrap_or(Outcome::Ok {
            requeue_after: None,
        }),
        status,
        resources,
        conditions,
        events,
        finalized,
        warnings,
        decoration: None,
    })
}

/// The answer as [`Response`]. When it does not fit, each field is tried alone so every
/// misshapen field is named (with its path), and the rest is still checked.
fn typed(value: &Value, top: &Map<String, Value>, f: &mut Findings) -> Response {
    // The common case, a well-formed answer, without the path bookkeeping only errors need.
    if let Ok(raw) = Response::deserialize(value) {
        return raw;
    }
    let mut fitting = Map::new();
    for (key, field) in top.iter().filter(|(k, _)| FIELDS.contains(&k.as_str())) {
        let alone = Value::Object(Map::from_iter([(key.clone(), field.clone())]));
        match serde_path_to_error::deserialize::<_, Response>(&alone) {
            Ok(_) => {
                fitting.insert(key.clone(), field.clone());
            }
            Err(e) => f.error(ResponseError::Malformed(format!(
                "{}: {}",
                e.path(),
                e.inner()
            ))),
        }
    }
    serde_json::from_value(Value::Object(fitting)).unwrap_or_default()
}

/// What `result`, `requeueAfter` and `error` say together; `None` when they cannot be used.
fn outcome(raw: &Response, f: &mut Findings) -> Option<Outcome> {
    let result = raw.result.as_deref().unwrap_or("");
    let error = raw.error.as_deref().filter(|e| !e.is_empty());
    let known = matches!(result, "" | "ok" | "requeue" | "error");
    if !known {
        f.invalid(format!(
            "unknown result value {result:?} (expected ok, requeue or error)"
        ));
    }
    let failed = error.is_some() || result == "error";
    if error.is_some() && result != "error" {
        f.warn("a non-empty \"error\" makes this a failure whatever \"result\" says".into());
    }
    let requeue_after = raw.requeue_after.as_deref().filter(|s| !s.is_empty());
    if requeue_after.is_some() && failed {
        f.warn(
            "requeueAfter is ignored when the reconcile fails: backoff decides the retry".into(),
        );
    }
    let delay = match requeue_after.map(|s| requeue_delay(s, result == "requeue")) {
        None => None,
        Some(Ok(delay)) => delay,
        Some(Err(message)) => {
            f.invalid(message);
            return None;
        }
    };
    if failed {
        return Some(Outcome::Error {
            message: clean_text(
                error.unwrap_or("remote reconciler returned result=error with no message"),
                MESSAGE_CHARS,
            ),
        });
    }
    match result {
        "" | "ok" => Some(Outcome::Ok {
            requeue_after: delay,
        }),
        "requeue" => match delay {
            Some(after) => Some(Outcome::Requeue { after }),
            None => {
                f.invalid("result=requeue but requeueAfter is empty".into());
                None
            }
        },
        _ => None,
    }
}

/// A `requeueAfter` in Go's duration grammar within [1s, 1 year]. `0` is allowed where it
/// means "no requeue" (not with `requeue`), as Orkestra ignores it there.
fn requeue_delay(text: &str, requeue: bool) -> Result<Option<Duration>, String> {
    let d = parse_go_duration(text).map_err(|e| format!("requeueAfter: {e}"))?;
    if d.as_nanos() == 0 && !requeue {
        return Ok(None);
    }
    d.to_std()
        .filter(|d| (MIN_REQUEUE..=MAX_REQUEUE).contains(d))
        .map(Some)
        .ok_or_else(|| {
            format!(
                "requeueAfter {text:?} is out of range: it must be between 1s and 1 year (8760h)"
            )
        })
}

fn conditions(
    list: Vec<ServiceCondition>,
    policy: &Policy,
    f: &mut Findings,
) -> Vec<ServiceCondition> {
    if list.len() > policy.limits.conditions {
        f.invalid(format!(
            "{} conditions, more than the limit of {}",
            list.len(),
            policy.limits.conditions
        ));
        return Vec::new();
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(list.len());
    for (i, c) in list.into_iter().enumerate() {
        let c = ServiceCondition {
            type_: clean_text(&c.type_, CONDITION_TYPE_CHARS),
            status: c.status,
            reason: clean_text(&c.reason, REASON_CHARS),
            message: clean_text(&c.message, MESSAGE_CHARS),
        };
        if c.type_.is_empty() || !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
            f.invalid(format!(
                "conditions[{i}]: condition {:?} needs a type and status True, False or Unknown",
                c.type_
            ));
        } else if c.type_ == "Ready" && !policy.service_ready {
            f.invalid(format!(
                "conditions[{i}]: condition Ready is ork's own; return `error` to report failure"
            ));
        } else if !seen.insert(c.type_.clone()) {
            f.invalid(format!(
                "conditions[{i}]: condition {:?} is listed twice",
                c.type_
            ));
        }
        out.push(c);
    }
    out
}

fn events(list: Vec<ServiceEvent>, policy: &Policy, f: &mut Findings) -> Vec<ServiceEvent> {
    if list.len() > policy.limits.events {
        f.invalid(format!(
            "{} events, more than the limit of {}",
            list.len(),
            policy.limits.events
        ));
        return Vec::new();
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, e) in list.into_iter().enumerate() {
        let e = ServiceEvent {
            type_: e.type_,
            reason: clean_text(&e.reason, REASON_CHARS),
            message: clean_text(&e.message, MESSAGE_CHARS),
        };
        if !matches!(e.type_.as_str(), "Normal" | "Warning") || e.reason.is_empty() {
            f.invalid(format!(
                "events[{i}]: event {:?} needs type Normal or Warning and a reason",
                e.reason
            ));
        }
        out.push(e);
    }
    out
}

fn resources(list: &[Value], policy: &Policy, f: &mut Findings) -> Vec<DesiredChild> {
    if list.len() > policy.limits.children {
        f.invalid(format!(
            "resources: {} entries, more than the limit of {} children",
            list.len(),
            policy.limits.children
        ));
        return Vec::new();
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        let mut warnings = Vec::new();
        let checked = check_entry(entry, policy, &mut warnings);
        for w in warnings {
            f.warn(format!("resources[{index}]: {w}"));
        }
        match checked {
            Ok(child) => {
                let id = (
                    child.managed.group.clone(),
                    child.managed.kind.clone(),
                    child.namespace.clone(),
                    child.name.clone(),
                );
                if seen.insert(id) {
                    out.push(child);
                } else {
                    f.error(ResponseError::Resource {
                        index,
                        message: format!("{} {} is listed twice", child.managed.kind, child.name),
                    });
                }
            }
            Err(problems) => {
                for message in problems {
                    f.error(ResponseError::Resource { index, message });
                }
            }
        }
    }
    out
}
