//! Admission by the entry's own service (SPEC §21): an `AdmissionReview` from the API server
//! becomes one call to the service at `remote.admission.path`, and its answer (`allowed`,
//! `message`, `warnings`, and for a mutation a JSON Patch or the defaulted object) the
//! review's response. The answer is checked whole before anything of it is used: a patch that
//! touches the object's identity, its status or ork's own marks is refused, as is anything
//! that is not the answer's shape. A service that fails, is slow or answers garbage gives the
//! entry's `failurePolicy` outcome, with a message naming ork and the cause.

use std::sync::Arc;
use std::time::Instant;

use ork_katalog::FailurePolicy;
use serde_json::{Map, Value, json};

use crate::metrics::Metrics;
use crate::ports::Transport;

/// The largest AdmissionReview ork reads (the API server sends objects of at most 1.5 MiB,
/// twice for an update).
pub const MAX_REVIEW_BYTES: usize = 8 * 1024 * 1024;
/// At most this many warnings reach `kubectl`, each at most [`MAX_WARNING`] characters.
const MAX_WARNINGS: usize = 16;
const MAX_WARNING: usize = 256;
/// A denial message is kept to this many characters.
const MAX_MESSAGE: usize = 1024;

/// Which webhook of the entry a review came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Validate,
    Mutate,
}

impl Phase {
    pub fn parse(s: &str) -> Option<Phase> {
        match s {
            "validate" => Some(Phase::Validate),
            "mutate" => Some(Phase::Mutate),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Validate => "validate",
            Phase::Mutate => "mutate",
        }
    }
}

/// One entry's admission: where its service is asked and what a failure means.
pub struct Admitter {
    pub(crate) entry: String,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) failure_policy: FailurePolicy,
    pub(crate) validate: bool,
    pub(crate) mutate: bool,
    pub(crate) metrics: Metrics,
}

impl std::fmt::Debug for Admitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitter")
            .field("entry", &self.entry)
            .finish_non_exhaustive()
    }
}

/// A review ork cannot read: answered with HTTP 400.
#[derive(Debug, thiserror::Error)]
pub enum BadReview {
    #[error("the AdmissionReview is over {MAX_REVIEW_BYTES} bytes")]
    TooLarge,
    #[error("not an AdmissionReview: {0}")]
    Malformed(String),
    #[error("entry {entry} does not {phase} at admission")]
    NotServed { entry: String, phase: &'static str },
}

/// What the service decided, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub allowed: bool,
    pub message: Option<String>,
    pub warnings: Vec<String>,
    /// JSON Patch operations (mutation only).
    pub patch: Vec<Value>,
}

impl Admitter {
    /// Answers one AdmissionReview (`body`) sent to the entry's `phase` webhook.
    ///
    /// # Errors
    /// A review that is too large or is not an AdmissionReview, or a phase the entry does not
    /// serve.
    pub async fn review(&self, phase: Phase, body: &[u8]) -> Result<Vec<u8>, BadReview> {
        let started = Instant::now();
        if body.len() > MAX_REVIEW_BYTES {
            return Err(BadReview::TooLarge);
        }
        let served = match phase {
            Phase::Validate => self.validate,
            Phase::Mutate => self.mutate,
        };
        if !served {
            return Err(BadReview::NotServed {
                entry: self.entry.clone(),
                phase: phase.as_str(),
            });
        }
        let review: Value =
            serde_json::from_slice(body).map_err(|e| BadReview::Malformed(e.to_string()))?;
        let request = review
            .get("request")
            .and_then(Value::as_object)
            .ok_or_else(|| BadReview::Malformed("no `request`".into()))?;
        let uid = request
            .get("uid")
            .and_then(Value::as_str)
            .ok_or_else(|| BadReview::Malformed("no `request.uid`".into()))?
            .to_string();
        let verdict = self.decide(phase, request).await;
        let (response, result) = match verdict {
            Ok(v) => {
                let result = match (v.allowed, v.patch.is_empty()) {
                    (false, _) => "denied",
                    (true, false) => "patched",
                    (true, true) => "allowed",
                };
                (self.respond(&uid, &v), result)
            }
            Err(why) => {
                tracing::warn!(entry = %self.entry, phase = phase.as_str(), error = %why, "admission service failed");
                self.failed(&uid, phase, &why)
            }
        };
        self.metrics
            .admission(&self.entry, phase.as_str(), result, started.elapsed());
        Ok(serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }))
        .unwrap_or_default())
    }

    /// Asks the service about the write `request` describes (an AdmissionReview's `request`),
    /// and checks its answer whole.
    ///
    /// # Errors
    /// The service did not answer, or not with a verdict (what went wrong, for the outcome
    /// `failurePolicy` gives).
    pub async fn decide(
        &self,
        phase: Phase,
        request: &Map<String, Value>,
    ) -> Result<Verdict, String> {
        let object = request.get("object").cloned().unwrap_or(Value::Null);
        let asked = service_request(phase, request);
        let answered = self
            .transport
            .call(&object, serde_json::to_vec(&asked).unwrap_or_default())
            .await;
        match answered {
            Err(e) => Err(self.transport.redact(&e.to_string())),
            Ok(answer) => verdict(&answer, phase, &object),
        }
    }

    fn respond(&self, uid: &str, v: &Verdict) -> Value {
        let mut response = json!({"uid": uid, "allowed": v.allowed});
        if !v.allowed {
            response["status"] = json!({
                "code": 403,
                "reason": "Forbidden",
                "message": v.message.clone().unwrap_or_else(|| format!("denied by the admission service of entry {}", self.entry)),
            });
        }
        if !v.warnings.is_empty() {
            response["warnings"] = json!(v.warnings);
        }
        if v.allowed && !v.patch.is_empty() {
            let patch = serde_json::to_vec(&v.patch).unwrap_or_default();
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                serde_json::to_value(k8s_openapi::ByteString(patch)).unwrap_or(Value::Null);
        }
        response
    }

    /// The outcome `failurePolicy` gives when the service did not decide.
    fn failed(&self, uid: &str, phase: Phase, why: &str) -> (Value, &'static str) {
        let what = format!(
            "ork: the admission service of entry {} ({}) did not answer: {why}",
            self.entry,
            phase.as_str()
        );
        match self.failure_policy {
            FailurePolicy::Fail => (
                json!({"uid": uid, "allowed": false, "status": {
                    "code": 500, "reason": "InternalError",
                    "message": format!("{what}; refused (failurePolicy: Fail)")}}),
                "failed-denied",
            ),
            FailurePolicy::Ignore => (
                json!({"uid": uid, "allowed": true,
                    "warnings": [clip(&format!("{what}; admitted (failurePolicy: Ignore)"), MAX_WARNING)]}),
                "failed-allowed",
            ),
        }
    }
}

/// `endpoint` (a literal URL) with its path (and query) replaced by `path`.
pub(crate) fn url(endpoint: &str, path: &str) -> String {
    let after_scheme = endpoint.find("://").map_or(0, |i| i + 3);
    let end = endpoint[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(endpoint.len(), |i| after_scheme + i);
    format!("{}{path}", &endpoint[..end])
}

/// The service's request: the write, as the API server described it.
fn service_request(phase: Phase, request: &Map<String, Value>) -> Value {
    let get = |k: &str| request.get(k).cloned().unwrap_or(Value::Null);
    let namespace = request.get("namespace").and_then(Value::as_str);
    let name = request
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .or_else(|| {
            request
                .get("object")
                .and_then(|o| o.pointer("/metadata/name"))
                .and_then(Value::as_str)
        })
        .unwrap_or_default();
    let key = match namespace.filter(|n| !n.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    json!({
        "phase": phase.as_str(),
        "operation": get("operation"),
        "kind": get("kind"),
        "key": key,
        "object": get("object"),
        "oldObject": get("oldObject"),
        "userInfo": get("userInfo"),
        "dryRun": request.get("dryRun").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// The service's answer, checked whole: `allowed` a boolean, `message` a string, `warnings`
/// strings, and for a mutation either `patch` (JSON Patch operations that leave the object's
/// identity, status and ork's marks alone) or `object` (turned into such a patch).
fn verdict(answer: &[u8], phase: Phase, object: &Value) -> Result<Verdict, String> {
    let v: Value =
        serde_json::from_slice(answer).map_err(|e| format!("the answer is not JSON ({e})"))?;
    let m = v
        .as_object()
        .ok_or_else(|| "the answer is not a JSON object".to_string())?;
    let allowed = match m.get("allowed") {
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("`allowed` is {other}, not true or false")),
        None => return Err("the answer has no `allowed`".into()),
    };
    let message = match m.get("message") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(clip(s, MAX_MESSAGE)),
        Some(other) => return Err(format!("`message` is {other}, not a string")),
    };
    let warnings = match m.get("warnings") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .take(MAX_WARNINGS)
            .map(|w| {
                w.as_str()
                    .map(|s| clip(s, MAX_WARNING))
                    .ok_or_else(|| format!("a warning is {w}, not a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`warnings` is {other}, not a list")),
    };
    let mut patch = Vec::new();
    if phase == Phase::Mutate && allowed {
        patch = match (m.get("patch"), m.get("object")) {
            (Some(p), Some(o)) if !p.is_null() && !o.is_null() => {
                return Err("the answer has both `patch` and `object`: give one".into());
            }
            (Some(Value::Array(ops)), _) => ops.clone(),
            (Some(p), _) if !p.is_null() => return Err(format!("`patch` is {p}, not a list")),
            (_, Some(o)) if o.is_object() => diff(object, o),
            (_, Some(o)) if !o.is_null() => return Err(format!("`object` is {o}, not an object")),
            _ => Vec::new(),
        };
        for (i, op) in patch.iter().enumerate() {
            check_op(op, object)
                .map_err(|why| format!("patch[{i}]: {why}; nothing of it applied"))?;
        }
    }
    Ok(Verdict {
        allowed,
        message,
        warnings,
        patch,
    })
}

/// One JSON Patch operation, well formed and touching what a mutation may.
fn check_op(op: &Value, object: &Value) -> Result<(), String> {
    let kind = op.get("op").and_then(Value::as_str).unwrap_or_default();
    if !matches!(
        kind,
        "add" | "remove" | "replace" | "move" | "copy" | "test"
    ) {
        return Err(format!("op {kind:?} is not a JSON Patch operation"));
    }
    let path = op.get("path").and_then(Value::as_str).ok_or("no `path`")?;
    if matches!(kind, "add" | "replace" | "test") && op.get("value").is_none() {
        return Err(format!("{kind} {path} has no `value`"));
    }
    let mut touched = vec![path];
    if matches!(kind, "move" | "copy") {
        let from = op.get("from").and_then(Value::as_str).ok_or("no `from`")?;
        if kind == "move" {
            touched.push(from);
        }
    }
    for p in touched {
        // A whole map of labels or annotations may be set where ork has none there and the
        // new one holds none of ork's (an object's first labels).
        let whole_map = ["/metadata/labels", "/metadata/annotations"].contains(&p);
        if whole_map && kind == "add" && !has_ours(object.pointer(p)) && !has_ours(op.get("value"))
        {
            continue;
        }
        if let Some(why) = forbidden(p) {
            return Err(format!("{p} {why}"));
        }
    }
    Ok(())
}

/// Whether a map of labels or annotations holds a key of ork's.
fn has_ours(map: Option<&Value>) -> bool {
    map.and_then(Value::as_object)
        .is_some_and(|m| m.keys().any(|k| k.starts_with(crate::labels::PREFIX)))
}

/// Why a mutation may not touch `path` (a JSON Pointer), if it may not.
fn forbidden(path: &str) -> Option<&'static str> {
    if !path.starts_with('/') && !path.is_empty() {
        return Some("is not a JSON Pointer");
    }
    let under = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
    let identity = [
        "/apiVersion",
        "/kind",
        "/metadata/name",
        "/metadata/namespace",
        "/metadata/uid",
        "/metadata/generateName",
        "/metadata/resourceVersion",
        "/metadata/generation",
        "/metadata/creationTimestamp",
        "/metadata/deletionTimestamp",
        "/metadata/ownerReferences",
        "/metadata/managedFields",
    ];
    if path.is_empty() || path == "/metadata" || identity.iter().any(|p| under(p)) {
        return Some("is the object's identity, which a mutation may not change");
    }
    if under("/status") {
        return Some("is status, which only the reconcile writes");
    }
    // `/` in a key is `~1` in a pointer: ork's labels, annotations and finalizer.
    let ours = crate::labels::PREFIX.replace('/', "~1");
    for map in ["/metadata/labels", "/metadata/annotations"] {
        if path == map {
            return Some("replaces every label or annotation, ork's among them");
        }
        if path.starts_with(&format!("{map}/{ours}")) {
            return Some("is one of ork's own marks");
        }
    }
    if under("/metadata/finalizers") {
        return Some("holds ork's finalizer, which only ork sets");
    }
    None
}

/// The JSON Patch from `a` to `b`: objects key by key, anything else replaced whole.
fn diff(a: &Value, b: &Value) -> Vec<Value> {
    let mut ops = Vec::new();
    diff_at("", a, b, &mut ops);
    ops
}

fn diff_at(path: &str, a: &Value, b: &Value, ops: &mut Vec<Value>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = format!("{path}/{}", escape(k));
                match y.get(k) {
                    Some(vb) => diff_at(&p, va, vb, ops),
                    None => ops.push(json!({"op": "remove", "path": p})),
                }
            }
            for (k, vb) in y {
                if !x.contains_key(k) {
                    let p = format!("{path}/{}", escape(k));
                    ops.push(json!({"op": "add", "path": p, "value": vb}));
                }
            }
        }
        _ if a == b => {}
        _ => ops.push(json!({"op": "replace", "path": path, "value": b})),
    }
}

/// Applies JSON Patch `ops` to `doc` (what the API server does with a mutation's patch).
///
/// # Errors
/// An operation whose path does not exist where it must, or a failed `test`.
pub fn apply_patch(doc: &mut Value, ops: &[Value]) -> Result<(), String> {
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or_default();
        let path = op.get("path").and_then(Value::as_str).unwrap_or_default();
        let value = || op.get("value").cloned().unwrap_or(Value::Null);
        match kind {
            "add" => put(doc, path, value(), true)?,
            "replace" => put(doc, path, value(), false)?,
            "remove" => {
                take(doc, path)?;
            }
            "move" | "copy" => {
                let from = op.get("from").and_then(Value::as_str).unwrap_or_default();
                let moved = if kind == "move" {
                    take(doc, from)?
                } else {
                    doc.pointer(from)
                        .cloned()
                        .ok_or_else(|| format!("copy from {from}: no such path"))?
                };
                put(doc, path, moved, true)?;
            }
            "test" => {
                if doc.pointer(path) != Some(&value()) {
                    return Err(format!("test {path} failed"));
                }
            }
            other => return Err(format!("op {other:?} is not a JSON Patch operation")),
        }
    }
    Ok(())
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn parent<'a>(doc: &'a mut Value, path: &str) -> Result<(&'a mut Value, String), String> {
    let (up, last) = path
        .rsplit_once('/')
        .ok_or_else(|| format!("{path:?} is not a JSON Pointer"))?;
    let at = doc
        .pointer_mut(up)
        .ok_or_else(|| format!("{path}: {up:?} does not exist"))?;
    Ok((at, unescape(last)))
}

fn put(doc: &mut Value, path: &str, value: Value, add: bool) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (at, key) = parent(doc, path)?;
    match at {
        Value::Object(m) => {
            if !add && !m.contains_key(&key) {
                return Err(format!("replace {path}: no such member"));
            }
            m.insert(key, value);
        }
        Value::Array(a) => {
            let index = if key == "-" {
                a.len()
            } else {
                key.parse::<usize>()
                    .map_err(|_| format!("{path}: not an index"))?
            };
            match (add, index <= a.len(), index < a.len()) {
                (true, true, _) => a.insert(index, value),
                (false, _, true) => a[index] = value,
                _ => return Err(format!("{path}: index out of range")),
            }
        }
        _ => {
            return Err(format!(
                "{path}: the parent is neither an object nor a list"
            ));
        }
    }
    Ok(())
}

fn take(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (at, key) = parent(doc, path)?;
    match at {
        Value::Object(m) => m
            .remove(&key)
            .ok_or_else(|| format!("remove {path}: no such member")),
        Value::Array(a) => {
            let index: usize = key.parse().map_err(|_| format!("{path}: not an index"))?;
            (index < a.len())
                .then(|| a.remove(index))
                .ok_or_else(|| format!("{path}: index out of range"))
        }
        _ => Err(format!(
            "{path}: the parent is neither an object nor a list"
        )),
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object() -> Value {
        json!({"apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
            "metadata": {"name": "web", "namespace": "a", "labels": {"app": "web"}},
            "spec": {"image": "nginx"}})
    }

    #[test]
    fn a_defaulted_object_becomes_a_patch_of_what_changed() {
        let mut defaulted = object();
        defaulted["spec"]["replicas"] = json!(2);
        defaulted["metadata"]["labels"]["tier"] = json!("web");
        let answer = json!({"allowed": true, "object": defaulted}).to_string();
        let v = verdict(answer.as_bytes(), Phase::Mutate, &object()).expect("checked");
        assert_eq!(
            v.patch,
            vec![
                json!({"op": "add", "path": "/metadata/labels/tier", "value": "web"}),
                json!({"op": "add", "path": "/spec/replicas", "value": 2}),
            ]
        );
    }

    #[test]
    fn a_patch_applies_as_the_api_server_applies_it() {
        let mut doc = object();
        let mut defaulted = object();
        defaulted["spec"]["replicas"] = json!(2);
        defaulted["spec"]["image"] = json!("nginx:1");
        defaulted["metadata"]["labels"]["a/b"] = json!("x");
        apply_patch(&mut doc, &diff(&object(), &defaulted)).expect("applies");
        assert_eq!(doc, defaulted);
        let ops = [
            json!({"op": "add", "path": "/spec/ports", "value": [80]}),
            json!({"op": "add", "path": "/spec/ports/-", "value": 443}),
            json!({"op": "copy", "from": "/spec/image", "path": "/spec/was"}),
            json!({"op": "test", "path": "/spec/ports/1", "value": 443}),
            json!({"op": "remove", "path": "/spec/ports/0"}),
        ];
        apply_patch(&mut doc, &ops).expect("applies");
        assert_eq!(doc["spec"]["ports"], json!([443]));
        assert_eq!(doc["spec"]["was"], "nginx:1");
        assert!(
            apply_patch(
                &mut doc,
                &[json!({"op": "replace", "path": "/spec/none", "value": 1})]
            )
            .is_err()
        );
    }

    #[test]
    fn a_patch_of_identity_status_or_ork_s_marks_is_refused_whole() {
        for path in [
            "/metadata/name",
            "/metadata/namespace",
            "/metadata/uid",
            "/status",
            "/status/phase",
            "/metadata/labels/orkestra.orkspace.io~1managed",
            "/metadata/annotations/orkestra.orkspace.io~1requested-at",
            "/metadata/finalizers/0",
            "",
        ] {
            let answer = json!({"allowed": true, "patch": [
                {"op": "add", "path": "/spec/replicas", "value": 1},
                {"op": "replace", "path": path, "value": "x"}]})
            .to_string();
            let err = verdict(answer.as_bytes(), Phase::Mutate, &object()).expect_err(path);
            assert!(err.contains("nothing of it applied"), "{path}: {err}");
        }
        let moved = json!({"allowed": true, "patch": [
            {"op": "move", "from": "/metadata/name", "path": "/spec/name"}]})
        .to_string();
        assert!(verdict(moved.as_bytes(), Phase::Mutate, &object()).is_err());
        let fine = json!({"allowed": true, "patch": [
            {"op": "add", "path": "/metadata/labels/team", "value": "a"}]})
        .to_string();
        assert!(verdict(fine.as_bytes(), Phase::Mutate, &object()).is_ok());
        // An object's first annotations, none of them ork's.
        let first = json!({"allowed": true, "patch": [
            {"op": "add", "path": "/metadata/annotations", "value": {"team": "a"}}]})
        .to_string();
        assert!(verdict(first.as_bytes(), Phase::Mutate, &object()).is_ok());
    }

    #[test]
    fn a_garbled_answer_is_named() {
        for (answer, says) in [
            ("not json", "not JSON"),
            ("[1]", "not a JSON object"),
            ("{}", "no `allowed`"),
            (r#"{"allowed": "yes"}"#, "not true or false"),
            (r#"{"allowed": false, "message": 3}"#, "not a string"),
            (r#"{"allowed": true, "warnings": [1]}"#, "not a string"),
            (
                r#"{"allowed": true, "patch": {}, "object": null}"#,
                "not a list",
            ),
            (
                r#"{"allowed": true, "patch": [], "object": {}}"#,
                "both `patch` and `object`",
            ),
        ] {
            let err = verdict(answer.as_bytes(), Phase::Mutate, &object()).expect_err(answer);
            assert!(err.contains(says), "{answer}: {err}");
        }
        // A validation ignores what only a mutation uses.
        let v = verdict(
            br#"{"allowed": false, "message": "no", "patch": [{"op": "bogus"}]}"#,
            Phase::Validate,
            &object(),
        )
        .expect("a denial");
        assert_eq!((v.allowed, v.message.as_deref()), (false, Some("no")));
    }

    #[test]
    fn the_service_is_told_the_write() {
        let request = json!({"uid": "u", "operation": "CREATE", "namespace": "a", "name": "",
            "kind": {"group": "demo.ork.dev", "version": "v1", "kind": "WebApp"},
            "object": object(), "userInfo": {"username": "alice"}, "dryRun": true});
        let asked = service_request(Phase::Validate, request.as_object().expect("a map"));
        assert_eq!(asked["key"], "a/web");
        assert_eq!(asked["phase"], "validate");
        assert_eq!(asked["dryRun"], true);
        assert_eq!(asked["userInfo"]["username"], "alice");
        assert_eq!(asked["oldObject"], Value::Null);
    }
}
