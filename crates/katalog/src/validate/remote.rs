//! `operatorBox.reconcile.remote`: the transport and its limits here; managed resources,
//! payload, auth and TLS by their own modules, in the order `ork validate` reports them.

use serde_json::Value;

use super::auth::{check_auth, check_tls};
use super::findings::{Findings, Scope};
use super::functions::{check_functions, check_template_str};
use super::managed::check_managed_resources;
use super::payload::check_payload;
use crate::limits::{HTTP_TRANSPORT, MAX_BURST, MAX_QPS, MIN_BURST, MIN_QPS, MIN_RESPONSE_BYTES};
use crate::model::{RateLimit, Remote};
use crate::template::{Template, is_template};

pub(super) fn check_remote(f: &mut Findings, rp: &str, remote: &Remote, scope: &Scope) {
    check_transport(f, rp, remote, scope);
    check_exec_only(f, rp, remote);
    check_call_limits(f, rp, remote);
    for (key, value) in &remote.args {
        if let Value::String(s) = value
            && is_template(s)
        {
            check_template_str(f, &format!("{rp}.args.{key}"), s, scope);
        }
    }
    check_managed_resources(f, rp, &remote.managed_resources);
    if let Some(auth) = &remote.auth {
        check_auth(f, rp, auth);
    }
    check_payload(f, rp, remote);
    if let Some(tls) = &remote.tls {
        check_tls(f, rp, remote, tls);
    }
    if let Some(rl) = &remote.rate_limit {
        check_rate_limit(f, rp, rl);
    }
    if let Some(admission) = &remote.admission {
        check_admission(f, rp, remote, admission);
    }
    if let Some(rollout) = &remote.rollout {
        check_rollout(f, rp, remote, rollout);
    }
}

/// A rollout's candidate is a literal URL beside an HTTP `endpoint`; its shares are
/// percentages that only grow; its halt rule is a rate, a count and a span.
fn check_rollout(f: &mut Findings, rp: &str, remote: &Remote, r: &crate::model::Rollout) {
    let at = format!("{rp}.rollout");
    if remote.endpoint.is_none() {
        f.add(
            at.clone(),
            "a rollout needs `endpoint`: the candidate is another HTTP endpoint beside the stable one",
            None,
        );
    }
    if r.endpoint.is_literal() {
        check_endpoint(f, &at, &r.endpoint);
        if remote
            .endpoint
            .as_ref()
            .is_some_and(|e| e.source() == r.endpoint.source())
        {
            f.add(
                format!("{at}.endpoint"),
                "the candidate is the stable endpoint itself",
                None,
            );
        }
    } else {
        f.add(
            format!("{at}.endpoint"),
            "the candidate endpoint must be a literal URL: a CR does not choose which version serves it",
            None,
        );
    }
    if r.percent > 100 {
        f.add(
            format!("{at}.percent"),
            format!("percent {} is outside 0..100", r.percent),
            None,
        );
    }
    let mut before = r.percent;
    for (i, step) in r.steps.iter().enumerate() {
        if *step > 100 {
            f.add(
                format!("{at}.steps[{i}]"),
                format!("step {step} is outside 0..100"),
                None,
            );
        } else if *step <= before {
            f.add(
                format!("{at}.steps[{i}]"),
                format!("step {step} does not grow the share ({before} before it)"),
                Some("list the percentages in increasing order, e.g. steps: [25, 50, 100]"),
            );
        }
        before = *step;
    }
    if !r.steps.is_empty() && r.interval.is_none() {
        f.add(
            format!("{at}.interval"),
            "steps need an interval: how long each share runs before the next",
            Some("e.g. interval: 10m"),
        );
    }
    if r.interval
        .is_some_and(|i| i.0 < std::time::Duration::from_secs(1))
    {
        f.add(
            format!("{at}.interval"),
            "interval must be at least 1s",
            None,
        );
    }
    let h = &r.halt;
    if !(0.0..=1.0).contains(&h.max_failure_rate) {
        f.add(
            format!("{at}.halt.maxFailureRate"),
            format!("maxFailureRate {} is outside 0..1", h.max_failure_rate),
            Some("a share of the candidate's reconciles, e.g. 0.2 for one in five"),
        );
    }
    if h.min_reconciles == 0 {
        f.add(
            format!("{at}.halt.minReconciles"),
            "minReconciles must be at least 1",
            None,
        );
    }
    if h.window.0 < std::time::Duration::from_secs(1) {
        f.add(
            format!("{at}.halt.window"),
            "window must be at least 1s",
            None,
        );
    }
}

/// Admission asks the HTTP endpoint's own host, named in the Katalog (a CR being admitted
/// does not choose where it is judged), within the API server's patience.
fn check_admission(f: &mut Findings, rp: &str, remote: &Remote, a: &crate::model::Admission) {
    let ap = format!("{rp}.admission");
    match &remote.endpoint {
        None => f.add(
            ap.clone(),
            "admission needs `endpoint` (the API server's webhook is HTTPS; ork asks the service over HTTP)",
            None,
        ),
        Some(t) if !t.is_literal() => f.add(
            format!("{rp}.endpoint"),
            "admission needs a literal endpoint: the object being admitted does not choose where it is judged",
            None,
        ),
        Some(_) => {}
    }
    if !a.path.starts_with('/') || a.path.contains(['?', '#', ' ']) {
        f.add(
            format!("{ap}.path"),
            format!("{:?} is not a path (`/admit`)", a.path),
            None,
        );
    }
    if !a.validate && !a.mutate {
        f.add(
            ap.clone(),
            "admission with neither validate nor mutate asks nothing",
            Some("set validate: true, mutate: true, or both"),
        );
    }
    if a.operations.is_empty() {
        f.add(format!("{ap}.operations"), "no operation to admit", None);
    }
    let timeout = a.timeout.0;
    if timeout > crate::model::MAX_ADMISSION_TIMEOUT
        || timeout < std::time::Duration::from_millis(100)
    {
        f.add(
            format!("{ap}.timeout"),
            format!(
                "timeout {timeout:?} is outside 100ms..{:?} (the API server's webhook timeout is at most 10 s, one second of it ork's)",
                crate::model::MAX_ADMISSION_TIMEOUT
            ),
            None,
        );
    }
}

/// Exactly one of `endpoint` (HTTP) and `command` (exec), each well formed.
fn check_transport(f: &mut Findings, rp: &str, remote: &Remote, scope: &Scope) {
    match (&remote.endpoint, &remote.command) {
        (None, None) => f.add(
            format!("{rp}.endpoint"),
            "reconcile.remote.endpoint is required",
            Some("the URL ork POSTs each reconcile request to, e.g. http://127.0.0.1:8080/reconcile (or `command: [./reconcile.sh]` for the exec transport)"),
        ),
        (Some(_), Some(_)) => f.add(
            format!("{rp}.command"),
            "set either `endpoint` (HTTP) or `command` (exec), not both",
            None,
        ),
        (Some(endpoint), None) => {
            check_functions(f, &format!("{rp}.endpoint"), endpoint, scope, false);
            check_endpoint(f, rp, endpoint);
        }
        (None, Some(cmd)) => {
            if cmd.first().is_none_or(|p| p.trim().is_empty()) {
                f.add(format!("{rp}.command"), "command needs a program", Some("e.g. command: [./reconcile.sh]"));
            }
            if remote.auth.is_some() {
                f.add(
                    format!("{rp}.auth"),
                    "auth applies to an HTTP endpoint; a command runs locally",
                    Some("pass what the command needs through `env:`"),
                );
            }
        }
    }
}

/// A literal endpoint is an http(s) URL with a host.
fn check_endpoint(f: &mut Findings, rp: &str, endpoint: &Template) {
    let path = format!("{rp}.endpoint");
    if !endpoint.is_literal() {
        return;
    }
    let url = endpoint.source();
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        f.add(
            path,
            format!("endpoint \"{url}\" is not an http(s) URL"),
            Some("e.g. http://127.0.0.1:8080/reconcile"),
        );
        return;
    };
    if rest.split(['/', '?']).next().is_none_or(str::is_empty) {
        f.add(path, format!("endpoint \"{url}\" has no host"), None);
    }
}

/// `workingDir` and `env` belong to the exec transport.
fn check_exec_only(f: &mut Findings, rp: &str, remote: &Remote) {
    if remote.command.is_some() {
        return;
    }
    if remote.working_dir.is_some() {
        f.add(
            format!("{rp}.workingDir"),
            "workingDir applies to `command:` only",
            None,
        );
    }
    if !remote.env.is_empty() {
        f.add(format!("{rp}.env"), "env applies to `command:` only", None);
    }
}

/// `type` is `http`; `timeout` and `maxResponseBytes` are positive.
fn check_call_limits(f: &mut Findings, rp: &str, remote: &Remote) {
    if let Some(t) = &remote.transport
        && t != HTTP_TRANSPORT
    {
        f.add(
            format!("{rp}.type"),
            format!("unsupported transport \"{t}\""),
            Some(if t == "grpc" {
                "grpc is reserved in Orkestra too; use `http` (or `command:` for the exec transport)"
            } else {
                "only `http` is supported (or `command:` for the exec transport)"
            }),
        );
    }
    if remote.timeout.is_zero() {
        f.add(
            format!("{rp}.timeout"),
            "timeout must be greater than zero",
            None,
        );
    }
    if remote.max_response_bytes < MIN_RESPONSE_BYTES {
        f.add(
            format!("{rp}.maxResponseBytes"),
            format!("maxResponseBytes must be at least {MIN_RESPONSE_BYTES}"),
            None,
        );
    }
}

fn check_rate_limit(f: &mut Findings, rp: &str, rl: &RateLimit) {
    if !(rl.qps.is_finite() && (MIN_QPS..=MAX_QPS).contains(&rl.qps)) {
        f.add(
            format!("{rp}.rateLimit.qps"),
            format!(
                "qps must be between {MIN_QPS} and {MAX_QPS}, got {}",
                rl.qps
            ),
            Some("calls per second, e.g. qps: 5 (0.1 is one call every 10s)"),
        );
    }
    if !(MIN_BURST..=MAX_BURST).contains(&rl.burst) {
        f.add(
            format!("{rp}.rateLimit.burst"),
            format!(
                "burst must be between {MIN_BURST} and {MAX_BURST}, got {}",
                rl.burst
            ),
            None,
        );
    }
}
