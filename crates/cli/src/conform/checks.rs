//! The checks of `ork conform`, in the order they run (concurrency last: a service that
//! stalls under it may stay stalled a while): each builds its requests as `ork run`
//! does (through [`Prober`]), sends them through the entry's transport, and judges the answers
//! with the protocol's own check ([`ork_protocol::lint`], [`ork_protocol::decide`]) and against
//! each other.

use std::time::{Duration, Instant};

use ork_kube::simulate::{Built, Prober, Sent, Unbuilt};
use ork_protocol::Policy;
use serde_json::{Value, json};

use super::compare::differences;

/// What the entry promises: how long an answer may take, how many calls ork has in flight, and
/// whether it sends finalize calls.
#[derive(Debug, Clone)]
pub struct Promises {
    pub timeout: Duration,
    pub workers: usize,
    pub finalize: bool,
}

/// The keys of the sample CRs.
#[derive(Debug, Clone)]
pub struct Keys {
    /// Every field of the schema filled.
    pub full: String,
    /// Only what the schema requires (and its defaults).
    pub minimal: String,
    /// The full sample grown close to the size limit; where the bulk is.
    pub large: (String, String),
    /// Copies of the full sample under other names, sent at once.
    pub concurrent: Vec<String>,
}

/// How one check ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass,
    /// What broke, one line each.
    Fail(Vec<String>),
    Skip(String),
}

/// One check: its name, a sentence of what it found, and how it ended.
#[derive(Debug, Clone)]
pub struct Checked {
    pub name: &'static str,
    pub summary: String,
    pub verdict: Verdict,
    /// Legal but worth knowing (protocol warnings).
    pub notes: Vec<String>,
    pub time: Duration,
}

/// Runs every check against the service.
pub async fn run(prober: &mut Prober, keys: &Keys, promises: &Promises) -> Vec<Checked> {
    let mut out = Vec::new();
    let (full, first) = timed(
        &mut out,
        "protocol: every field of the schema",
        protocol(prober, &keys.full, promises),
    )
    .await;
    timed(
        &mut out,
        "protocol: only the required fields",
        protocol(prober, &keys.minimal, promises),
    )
    .await;
    let base = full.zip(first);
    let started = Instant::now();
    out.push(checked(
        "idempotence",
        idempotence(prober, base.as_ref(), promises).await,
        started,
    ));
    let started = Instant::now();
    out.push(checked(
        "unknown request fields",
        unknown_fields(prober, base.as_ref(), promises).await,
        started,
    ));
    let started = Instant::now();
    out.push(checked(
        "large object",
        large(prober, &keys.large, promises).await,
        started,
    ));
    let started = Instant::now();
    out.push(checked(
        "finalizing",
        finalizing(prober, &keys.full, promises).await,
        started,
    ));
    let started = Instant::now();
    out.push(checked(
        "determinism",
        determinism(prober, base.as_ref(), promises).await,
        started,
    ));
    let started = Instant::now();
    out.push(checked(
        "concurrency",
        concurrency(prober, &keys.concurrent, promises).await,
        started,
    ));
    out
}

/// What a check found: a summary, the verdict and notes.
pub(super) type Found = (String, Verdict, Vec<String>);

pub(super) fn checked(name: &'static str, found: Found, started: Instant) -> Checked {
    let (summary, verdict, notes) = found;
    Checked {
        name,
        summary,
        verdict,
        notes,
        time: started.elapsed(),
    }
}

/// Runs a protocol check, records it, and hands back the request and answer it got.
async fn timed<T>(
    out: &mut Vec<Checked>,
    name: &'static str,
    check: impl std::future::Future<Output = (Found, Option<T>, Option<Vec<u8>>)>,
) -> (Option<T>, Option<Vec<u8>>) {
    let started = Instant::now();
    let (found, built, answer) = check.await;
    out.push(checked(name, found, started));
    (built, answer)
}

/// What is wrong with one answer: no answer at all, or every way it breaks the protocol.
/// Returns the answer when it is valid, and the protocol's warnings.
///
/// A failure ends with the line naming what the request carried (the CR's spec), so that the
/// values the service failed on are in the report, not only the transport's error.
fn judge(
    sent: &Sent,
    built: &Built,
    promises: &Promises,
) -> (Result<Vec<u8>, Vec<String>>, Vec<String>) {
    let (judged, notes) = judge_answer(sent, &built.policy, promises);
    let judged = judged.map_err(|mut problems| {
        problems.push(format!("sent for a CR with spec {}", spec_shown(&built.cr)));
        problems
    });
    (judged, notes)
}

fn judge_answer(
    sent: &Sent,
    policy: &Policy,
    promises: &Promises,
) -> (Result<Vec<u8>, Vec<String>>, Vec<String>) {
    let answer = match &sent.answer {
        Ok(a) => a,
        Err(e) => {
            let mut why = format!("no answer: {e}");
            if sent.took >= promises.timeout {
                why.push_str(&format!(
                    " (the entry's timeout is {})",
                    shown(promises.timeout)
                ));
            }
            return (Err(vec![why]), Vec::new());
        }
    };
    let lint = ork_protocol::lint(answer, policy);
    if !lint.errors.is_empty() {
        let errors = lint
            .errors
            .iter()
            .map(|e| format!("the answer breaks the protocol: {e}"))
            .collect();
        return (Err(errors), lint.warnings);
    }
    // The same checks as `lint`, stopping at the first; what `ork run` acts on.
    match ork_protocol::decide(answer, policy) {
        Ok(_) => (Ok(answer.clone()), lint.warnings),
        Err(e) => (
            Err(vec![format!("the answer breaks the protocol: {e}")]),
            lint.warnings,
        ),
    }
}

/// The service's own error in a valid answer (`result: error`, or `error`), if any: ork
/// would record `ServiceReported` and retry, never apply it.
fn reported_error(answer: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(answer).ok()?;
    let message = v["error"].as_str().filter(|e| !e.is_empty());
    if v["result"] == "error" || message.is_some() {
        return Some(
            message
                .unwrap_or("(no message)")
                .chars()
                .take(300)
                .collect(),
        );
    }
    None
}

/// A CR's spec in one line, cut at 300 characters.
fn spec_shown(cr: &Value) -> String {
    let text = cr
        .get("spec")
        .map_or_else(|| "(none)".to_string(), Value::to_string);
    if text.chars().count() > 300 {
        let cut: String = text.chars().take(300).collect();
        format!("{cut}… ({} bytes)", text.len())
    } else {
        text
    }
}

/// The request of `key`, or the check's verdict when there is none.
fn build(prober: &mut Prober, key: &str, finalizing: bool) -> Result<Built, Found> {
    prober.build(key, finalizing).map_err(|e| match e {
        Unbuilt::Denied(why) => (
            format!("ork sends no request for {key}: a validation rule of the Katalog denies it"),
            Verdict::Skip(format!("validation rule: {why}")),
            Vec::new(),
        ),
        Unbuilt::Failed(why) => (
            format!("ork cannot build the request for {key}"),
            Verdict::Fail(vec![why]),
            Vec::new(),
        ),
    })
}

async fn protocol(
    prober: &mut Prober,
    key: &str,
    promises: &Promises,
) -> (Found, Option<Built>, Option<Vec<u8>>) {
    let built = match build(prober, key, false) {
        Ok(b) => b,
        Err(found) => return (found, None, None),
    };
    let sent = prober.send(&built.cr, built.body.clone()).await;
    let (judged, notes) = judge(&sent, &built, promises);
    match judged {
        Ok(answer) if reported_error(&answer).is_some() => {
            let message = reported_error(&answer).unwrap_or_default();
            (
                (
                    format!(
                        "{key}: the answer follows protocol v1, but it is result: error for a CR its schema allows: ork would record ServiceReported and retry it, never reconcile it"
                    ),
                    Verdict::Fail(vec![
                        format!("the service's error: {message}"),
                        format!("sent for a CR with spec {}", spec_shown(&built.cr)),
                    ]),
                    notes,
                ),
                Some(built),
                None,
            )
        }
        Ok(answer) => (
            (
                format!(
                    "{key}: the answer follows protocol v1 ({} ms)",
                    sent.took.as_millis()
                ),
                Verdict::Pass,
                notes,
            ),
            Some(built),
            Some(answer),
        ),
        Err(problems) => (
            (
                format!("{key}: the answer is not usable"),
                Verdict::Fail(problems),
                notes,
            ),
            Some(built),
            None,
        ),
    }
}

fn no_base() -> Found {
    (
        "not checked".into(),
        Verdict::Skip("the request with every field of the schema got no usable answer".into()),
        Vec::new(),
    )
}

/// The same request, byte for byte, sent again at once must get the same answer.
async fn idempotence(
    prober: &Prober,
    base: Option<&(Built, Vec<u8>)>,
    promises: &Promises,
) -> Found {
    let Some((built, first)) = base else {
        return no_base();
    };
    let texts = Again {
        unusable: "the same request sent again got no usable answer",
        same: "the same request twice got the same answer",
        differs: "the same request twice got different answers (expected: the first answer; found: the second)",
    };
    sent_again(prober, built, built.body.clone(), first, promises, texts).await
}

/// Fields a later version of the protocol may add, at the top and inside `prepared`, must not
/// break the answer or change it.
async fn unknown_fields(
    prober: &Prober,
    base: Option<&(Built, Vec<u8>)>,
    promises: &Promises,
) -> Found {
    let Some((built, first)) = base else {
        return no_base();
    };
    let body = match with_unknown_fields(&built.body) {
        Ok(b) => b,
        Err(why) => return ("not checked".into(), Verdict::Fail(vec![why]), Vec::new()),
    };
    let sent = prober.send(&built.cr, body).await;
    let (judged, notes) = judge(&sent, built, promises);
    let answer = match judged {
        Ok(a) => a,
        Err(problems) => {
            return (
                format!(
                    "a request with the unknown fields {UNKNOWN} and prepared.{UNKNOWN} broke the answer"
                ),
                Verdict::Fail(problems),
                notes,
            );
        }
    };
    let diff = differences(first, &answer);
    if diff.is_empty() {
        (
            format!("the unknown fields {UNKNOWN} and prepared.{UNKNOWN} changed nothing"),
            Verdict::Pass,
            notes,
        )
    } else {
        (
            format!(
                "the unknown fields {UNKNOWN} and prepared.{UNKNOWN} changed the answer (expected: the answer without them)"
            ),
            Verdict::Fail(diff),
            notes,
        )
    }
}

/// The name of the fields no version of the protocol has.
const UNKNOWN: &str = "orkConformUnknown";

fn with_unknown_fields(body: &[u8]) -> Result<Vec<u8>, String> {
    let mut request: Value =
        serde_json::from_slice(body).map_err(|e| format!("the request is not JSON: {e}"))?;
    request[UNKNOWN] =
        json!({"addedBy": "ork conform", "why": "a field a later protocol version may add"});
    request["prepared"][UNKNOWN] = json!(true);
    serde_json::to_vec(&request).map_err(|e| format!("encoding the request: {e}"))
}

/// A CR close to the size the API server stores must get an answer within the timeout.
async fn large(prober: &mut Prober, (key, bulk): &(String, String), promises: &Promises) -> Found {
    let built = match build(prober, key, false) {
        Ok(b) => b,
        Err(found) => return found,
    };
    let size = built.body.len();
    let sent = prober.send(&built.cr, built.body.clone()).await;
    let (judged, notes) = judge(&sent, &built, promises);
    let what = format!(
        "a request of {:.1} MiB ({bulk} holds the bulk)",
        size as f64 / (1024.0 * 1024.0)
    );
    match judged {
        Ok(_) => (
            format!("{what} got a valid answer in {} ms", sent.took.as_millis()),
            Verdict::Pass,
            notes,
        ),
        Err(problems) => (
            format!("{what} got no usable answer"),
            Verdict::Fail(problems),
            notes,
        ),
    }
}

/// A finalize call (`prepared.finalizing: true`) must be answered with `finalized: true`
/// (ork calls again until it is).
async fn finalizing(prober: &mut Prober, key: &str, promises: &Promises) -> Found {
    if !promises.finalize {
        return (
            "not checked".into(),
            Verdict::Skip(
                "the entry does not set remote.finalize: true, so ork never sends finalizing requests"
                    .into(),
            ),
            Vec::new(),
        );
    }
    let built = match build(prober, key, true) {
        Ok(b) => b,
        Err(found) => return found,
    };
    let sent = prober.send(&built.cr, built.body.clone()).await;
    let (judged, notes) = judge(&sent, &built, promises);
    let answer = match judged {
        Ok(a) => a,
        Err(problems) => {
            return (
                "the finalize call got no usable answer".into(),
                Verdict::Fail(problems),
                notes,
            );
        }
    };
    let finalized = serde_json::from_slice::<Value>(&answer)
        .ok()
        .and_then(|v| v.get("finalized").cloned());
    match finalized {
        Some(Value::Bool(true)) => (
            "a request with prepared.finalizing: true got finalized: true".into(),
            Verdict::Pass,
            notes,
        ),
        other => (
            "a request with prepared.finalizing: true was not finalized: the CR could never be deleted".into(),
            Verdict::Fail(vec![format!(
                "finalized: expected true, found {}",
                other.map_or_else(|| "it absent".to_string(), |v| v.to_string())
            )]),
            notes,
        ),
    }
}

/// As many requests for different keys as ork has in flight (the entry's `workers`, at least
/// two), sent at once, must each be answered within the timeout, as when sent alone.
async fn concurrency(prober: &mut Prober, keys: &[String], promises: &Promises) -> Found {
    let mut built = Vec::new();
    for key in keys {
        match build(prober, key, false) {
            Ok(b) => built.push(b),
            Err(found) => return found,
        }
    }
    let mut alone = Vec::new();
    for b in &built {
        alone.push(prober.send(&b.cr, b.body.clone()).await);
    }
    let together =
        futures::future::join_all(built.iter().map(|b| prober.send(&b.cr, b.body.clone()))).await;
    let n = built.len();
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    // Requests that fail when sent alone say nothing of concurrency: told apart.
    let mut failed_alone = Vec::new();
    for ((b, alone), together) in built.iter().zip(&alone).zip(&together) {
        let (first, _) = judge(alone, b, promises);
        let (second, warnings) = judge(together, b, promises);
        notes.extend(warnings);
        match (first, second) {
            (Err(why), _) => {
                failed_alone.extend(why.into_iter().map(|w| format!("{} alone: {w}", b.key)))
            }
            (Ok(_), Err(why)) => problems.extend(why.into_iter().map(|w| {
                format!(
                    "{} with {n} in flight: {w}; alone it answered in {} ms",
                    b.key,
                    alone.took.as_millis()
                )
            })),
            (Ok(a), Ok(t)) => problems.extend(
                differences(&a, &t)
                    .into_iter()
                    .map(|d| format!("{} with {n} in flight, against alone: {d}", b.key)),
            ),
        }
    }
    notes.sort();
    notes.dedup();
    let slowest = together.iter().map(|s| s.took).max().unwrap_or_default();
    if problems.is_empty() && !failed_alone.is_empty() {
        // Nothing failed that did not fail alone: not a concurrency problem.
        notes.extend(failed_alone);
        return (
            "not judged".into(),
            Verdict::Skip(format!(
                "each request that failed at once failed alone too, so the service's concurrency is not what failed (see the protocol checks); {n} requests sent"
            )),
            notes,
        );
    }
    if !failed_alone.is_empty() {
        problems.push(format!(
            "besides: {} request(s) failed alone too, which is not concurrency's doing",
            failed_alone.len()
        ));
        problems.extend(failed_alone);
    }
    if problems.is_empty() {
        (
            format!(
                "{n} requests for different keys at once were each answered as alone, the slowest in {} ms (timeout {})",
                slowest.as_millis(),
                shown(promises.timeout)
            ),
            Verdict::Pass,
            notes,
        )
    } else {
        (
            format!(
                "{n} requests for different keys at once (as ork sends them with workers: {}) were not all answered as alone within the timeout of {}",
                promises.workers,
                shown(promises.timeout)
            ),
            Verdict::Fail(problems),
            notes,
        )
    }
}

/// The first request, sent again after every other call and with its fields in another
/// order, must get the first answer: the answer depends on the request alone.
async fn determinism(
    prober: &Prober,
    base: Option<&(Built, Vec<u8>)>,
    promises: &Promises,
) -> Found {
    let Some((built, first)) = base else {
        return no_base();
    };
    let body = match serde_json::from_slice::<Value>(&built.body) {
        Ok(v) => {
            let mut text = String::new();
            reversed(&v, &mut text);
            text.into_bytes()
        }
        Err(e) => {
            return (
                "not checked".into(),
                Verdict::Fail(vec![format!("the request is not JSON: {e}")]),
                Vec::new(),
            );
        }
    };
    let texts = Again {
        unusable: "the first request sent again got no usable answer",
        same: "the first request, sent again after the others with its fields in reverse order, got the same answer",
        differs: "the first request, sent again after the others with its fields in reverse order, got another answer (expected: the first answer)",
    };
    sent_again(prober, built, body, first, promises, texts).await
}

/// What a check that sends a request again says in each case.
struct Again {
    unusable: &'static str,
    same: &'static str,
    differs: &'static str,
}

/// Sends `body` for the base request's CR and compares its answer with the `first` one.
async fn sent_again(
    prober: &Prober,
    built: &Built,
    body: Vec<u8>,
    first: &[u8],
    promises: &Promises,
    texts: Again,
) -> Found {
    let sent = prober.send(&built.cr, body).await;
    let (judged, notes) = judge(&sent, built, promises);
    let answer = match judged {
        Ok(a) => a,
        Err(problems) => return (texts.unusable.into(), Verdict::Fail(problems), notes),
    };
    let diff = differences(first, &answer);
    if diff.is_empty() {
        (texts.same.into(), Verdict::Pass, notes)
    } else {
        (texts.differs.into(), Verdict::Fail(diff), notes)
    }
}

/// `v` as JSON with the keys of every object in reverse order (JSON objects have no order; a
/// service that reads them as if they had breaks here).
fn reversed(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            keys.reverse();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                reversed(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reversed(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A duration as the Katalog writes it (`10s`, `1.5s`, `300ms`).
fn shown(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_go_at_the_top_and_inside_prepared() {
        let body =
            with_unknown_fields(br#"{"key":"a","prepared":{"finalizing":false}}"#).expect("json");
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["prepared"][UNKNOWN], true);
        assert_eq!(v[UNKNOWN]["addedBy"], "ork conform");
        assert_eq!(v["key"], "a");
    }

    #[test]
    fn the_reversed_request_is_the_same_json_in_another_order() {
        let v = json!({"a": 1, "b": {"c": [1, {"d": "x\"y", "e": null}]}, "f": true});
        let mut text = String::new();
        reversed(&v, &mut text);
        assert_eq!(
            text,
            r#"{"f":true,"b":{"c":[1,{"e":null,"d":"x\"y"}]},"a":1}"#
        );
        assert_eq!(serde_json::from_str::<Value>(&text).expect("json"), v);
    }

    #[test]
    fn durations_read_as_in_the_katalog() {
        assert_eq!(shown(Duration::from_secs(10)), "10s");
        assert_eq!(shown(Duration::from_millis(300)), "300ms");
        assert_eq!(shown(Duration::from_millis(1500)), "1.5s");
    }
}
