//! `operatorBox.reconcile`: workers, the retry queue, and the `remote` block ork requires.

use super::findings::{Findings, Scope};
use super::remote::check_remote;
use crate::model::{Queue, Reconcile};

pub(super) fn check_reconcile(f: &mut Findings, p: &str, r: &Reconcile, plain: &Scope) {
    let rp = format!("{p}.operatorBox.reconcile");
    if r.workers == 0 || r.workers > 64 {
        f.add(
            format!("{rp}.workers"),
            "workers must be between 1 and 64",
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
    if !(b.multiplier >= 1.0 && b.multiplier <= 10.0) {
        f.add(
            format!("{rp}.queue.retryBackoff.multiplier"),
            "multiplier must be between 1 and 10",
            None,
        );
    }
    for (path, attempts) in [
        ("queue.maxAttempts", queue.max_attempts),
        ("queue.retryBackoff.maxAttempts", b.max_attempts),
    ] {
        if attempts == Some(0) {
            f.add(
                format!("{rp}.{path}"),
                "maxAttempts must be at least 1 (the first call counts)",
                Some("remove it for unlimited retries"),
            );
        }
    }
    if queue.failure_threshold == 0 {
        f.add(
            format!("{rp}.queue.failureThreshold"),
            "failureThreshold must be at least 1",
            None,
        );
    }
}
