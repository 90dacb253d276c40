//! `operatorBox.reconcile`: workers, the retry queue, and the `remote` block ork requires.

use super::findings::{Findings, Scope};
use super::remote::check_remote;
use crate::limits::{
    MAX_MULTIPLIER, MAX_WORKERS, MIN_ATTEMPTS, MIN_FAILURE_THRESHOLD, MIN_MULTIPLIER, MIN_WORKERS,
};
use crate::model::{Queue, Reconcile};

pub(super) fn check_reconcile(f: &mut Findings, p: &str, r: &Reconcile, plain: &Scope) {
    let rp = format!("{p}.operatorBox.reconcile");
    if !(MIN_WORKERS..=MAX_WORKERS).contains(&r.workers) {
        f.add(
            format!("{rp}.workers"),
            format!("workers must be between {MIN_WORKERS} and {MAX_WORKERS}"),
            None,
        );
    }
    check_queue(f, &rp, &r.queue);
    match &r.remote {
        None => f.add(
            &rp,
            "ork runs remote reconcilers: this entry has no `remote` block",
            Some("add `remote: {endpoint: ..., managedResources: [...]}` and `default: false`"),
        ),
        Some(remote) => {
            if r.default != Some(false) {
                f.add(
                    match r.default {
                        Some(true) => format!("{rp}.default"),
                        _ => format!("{rp}.remote"),
                    },
                    "`default: false` is required next to `remote`",
                    Some("without it Orkestra starts its built-in reconciler and ignores `remote`; add `default: false` under `reconcile`"),
                );
            }
            check_remote(f, &format!("{rp}.remote"), remote, plain);
        }
    }
}

/// `queue`: a backoff that grows from a positive start to its cap, attempts and the failure
/// threshold at least 1.
fn check_queue(f: &mut Findings, rp: &str, queue: &Queue) {
    let b = &queue.retry_backoff;
    if b.initial.is_zero() || b.initial > b.max {
        f.add(
            format!("{rp}.queue.retryBackoff"),
            format!(
                "retryBackoff needs 0 < initial ({}) <= max ({})",
                b.initial, b.max
            ),
            None,
        );
    }
    if !(MIN_MULTIPLIER..=MAX_MULTIPLIER).contains(&b.multiplier) {
        f.add(
            format!("{rp}.queue.retryBackoff.multiplier"),
            format!("multiplier must be between {MIN_MULTIPLIER} and {MAX_MULTIPLIER}"),
            None,
        );
    }
    for (path, attempts) in [
        ("queue.maxAttempts", queue.max_attempts),
        ("queue.retryBackoff.maxAttempts", b.max_attempts),
    ] {
        if attempts.is_some_and(|n| n < MIN_ATTEMPTS) {
            f.add(
                format!("{rp}.{path}"),
                format!("maxAttempts must be at least {MIN_ATTEMPTS} (the first call counts)"),
                Some("remove it for unlimited retries"),
            );
        }
    }
    if queue.failure_threshold < MIN_FAILURE_THRESHOLD {
        f.add(
            format!("{rp}.queue.failureThreshold"),
            format!("failureThreshold must be at least {MIN_FAILURE_THRESHOLD}"),
            None,
        );
    }
}
