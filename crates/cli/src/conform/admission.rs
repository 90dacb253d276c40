//! The admission checks of `ork conform` (SPEC §21), for an entry with `remote.admission`: its
//! service is asked exactly as `ork run`'s webhook asks it, the mutation first and then the
//! validation of the mutated object, with the schema's samples as the writes.

use std::time::Instant;

use ork_kube::simulate::{Admitted, OfflineAdmission, Write};
use serde_json::Value;

use super::checks::{Checked, Found, Verdict, checked};

/// The samples the writes are made of.
pub struct Samples<'a> {
    /// Every field of the schema filled.
    pub full: &'a Value,
    /// Only the required fields.
    pub minimal: &'a Value,
}

/// Runs the admission checks: each write answered with a verdict, a mutation that changes
/// nothing on a second pass, an update and a dry run answered as a create is.
pub async fn run(admission: &OfflineAdmission, samples: &Samples<'_>) -> Vec<Checked> {
    let mut out = Vec::new();
    let started = Instant::now();
    let full = admission.admit(&create(samples.full)).await;
    out.push(checked(
        "admission: a create with every field",
        answered(&full),
        started,
    ));
    let started = Instant::now();
    let minimal = admission.admit(&create(samples.minimal)).await;
    out.push(checked(
        "admission: a create with only the required fields",
        answered(&minimal),
        started,
    ));
    let started = Instant::now();
    let found = if !admission.mutates() {
        skipped("the entry does not mutate")
    } else {
        idempotent(admission, &[&full, &minimal]).await
    };
    out.push(checked(
        "admission: the mutation is idempotent",
        found,
        started,
    ));
    let started = Instant::now();
    let update = Write {
        operation: "UPDATE".into(),
        object: full.object.clone(),
        old_object: Some(full.object.clone()),
        dry_run: false,
    };
    let updated = admission.admit(&update).await;
    out.push(checked(
        "admission: an update that changes nothing",
        unchanged_update(&full, &updated),
        started,
    ));
    let started = Instant::now();
    let dry = Write {
        dry_run: true,
        ..create(samples.full)
    };
    let dried = admission.admit(&dry).await;
    out.push(checked(
        "admission: a dry run is judged as the write",
        same_verdict(&full, &dried),
        started,
    ));
    out
}

fn create(object: &Value) -> Write {
    Write {
        operation: "CREATE".into(),
        object: object.clone(),
        old_object: None,
        dry_run: false,
    }
}

fn skipped(why: &str) -> Found {
    (why.to_string(), Verdict::Skip(why.to_string()), Vec::new())
}

/// What the service said, in one sentence.
fn said(a: &Admitted) -> String {
    match (a.allowed, a.patch.len()) {
        (true, 0) => "allowed".into(),
        (true, n) => format!("allowed with a patch of {n} operation(s)"),
        (false, _) => format!("denied: {}", a.message.as_deref().unwrap_or("(no message)")),
    }
}

/// The service answered with a verdict, and a denial says why.
fn answered(a: &Admitted) -> Found {
    if let Some(why) = &a.failed {
        return (
            "no verdict".into(),
            Verdict::Fail(vec![why.clone()]),
            Vec::new(),
        );
    }
    let mut notes = a.warnings.clone();
    if !a.allowed && a.message.as_deref().is_none_or(str::is_empty) {
        notes.push("a denial without a message leaves the writer guessing why".into());
    }
    (said(a), Verdict::Pass, notes)
}

/// Each mutated object, sent again, is allowed with no patch: the API server may call a
/// mutating webhook twice (reinvocation), and a mutation that keeps changing the object never
/// settles.
async fn idempotent(admission: &OfflineAdmission, firsts: &[&Admitted]) -> Found {
    let mut problems = Vec::new();
    let mut passes = 0;
    for first in firsts.iter().filter(|a| a.allowed && a.failed.is_none()) {
        let again = admission.admit(&create(&first.object)).await;
        passes += 1;
        if let Some(why) = &again.failed {
            problems.push(format!("the second pass got no verdict: {why}"));
        } else if !again.allowed {
            problems.push(format!(
                "the mutated object is denied on a second pass: {}",
                again.message.as_deref().unwrap_or("(no message)")
            ));
        } else if !again.patch.is_empty() {
            problems.push(format!(
                "the second pass patches again: {}",
                Value::Array(again.patch.clone())
            ));
        }
    }
    if passes == 0 {
        return skipped("no sample was allowed, so none could be sent twice");
    }
    if problems.is_empty() {
        (
            format!("{passes} mutated sample(s) allowed unchanged on a second pass"),
            Verdict::Pass,
            Vec::new(),
        )
    } else {
        (
            "the mutation does not settle".into(),
            Verdict::Fail(problems),
            Vec::new(),
        )
    }
}

/// An update to the object the create admitted, changing nothing, is admitted as well: a
/// service that refuses it refuses every later `kubectl apply` of the same CR.
fn unchanged_update(create: &Admitted, update: &Admitted) -> Found {
    if create.failed.is_some() || !create.allowed {
        return skipped("the create was not admitted");
    }
    if let Some(why) = &update.failed {
        return (
            "no verdict".into(),
            Verdict::Fail(vec![why.clone()]),
            Vec::new(),
        );
    }
    if update.allowed {
        (said(update), Verdict::Pass, update.warnings.clone())
    } else {
        (
            said(update),
            Verdict::Fail(vec![
                "an update of the admitted object that changes nothing is denied".into(),
            ]),
            Vec::new(),
        )
    }
}

/// A server-side dry run gets the verdict the write gets (`dryRun: true` is for side
/// effects, not for a different answer).
fn same_verdict(write: &Admitted, dry: &Admitted) -> Found {
    if let Some(why) = &dry.failed {
        return (
            "no verdict".into(),
            Verdict::Fail(vec![why.clone()]),
            Vec::new(),
        );
    }
    if write.failed.is_some() {
        return skipped("the write itself got no verdict");
    }
    if write.allowed == dry.allowed && write.object == dry.object {
        (said(dry), Verdict::Pass, Vec::new())
    } else {
        (
            "the dry run is judged differently".into(),
            Verdict::Fail(vec![
                format!("the write: {}", said(write)),
                format!("the dry run: {}", said(dry)),
            ]),
            Vec::new(),
        )
    }
}
