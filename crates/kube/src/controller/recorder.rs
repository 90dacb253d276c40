//! The flight recorder (SPEC §14): per CR, its last reconciles, in bounded memory. Each record
//! says what triggered the reconcile, the attempt, how it ended and why (the condition reason),
//! how long it took and the service's part of that, the plan for the children, and when the
//! next retry is due. The request and answer (without secrets, see
//! [`crate::reconcile::Exchange`]) are kept for the newest record of a CR only: the one
//! `ork explain` shows and `--save` replays; of a reconcile that went well, the answer only.
//! Owned by the entry loop; served read-only.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;
use serde_json::{Value, json};

use crate::packed::{Packed, Packer};
use crate::reconcile::{Exchange, Plan};

/// Records kept per CR.
pub(crate) const DEPTH: usize = 16;

/// Bytes of requests and answers kept for one entry; past it, new records keep none.
pub(crate) const ENTRY_BYTES: usize = 64 * 1024 * 1024;

/// Of those, the bytes of answers of reconciles that went well: what a healthy CR's explain
/// shows, kept for the first CRs only when there are many, so that a large healthy entry pays
/// only its records' summaries (a few hundred bytes per CR).
pub(crate) const OK_BYTES: usize = 1024 * 1024;

/// One reconcile, as recorded; kept small (about a hundred bytes besides its plan), since every
/// CR has some.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    /// When it ended (Unix milliseconds; RFC 3339 when shown). For records folded together,
    /// the last one's.
    #[serde(skip)]
    pub at: i64,
    pub trigger: &'static str,
    /// For a `child` trigger, which child changed or went (`Deployment ns/web deleted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Box<str>>,
    pub attempt: u32,
    /// `ok`, `error`, `gated`, `deleting`, `finalized`, `finalizing` (the service has not
    /// finalized yet).
    pub outcome: &'static str,
    /// The condition reason of a failure (`ServiceUnreachable`, `AnswerRejected`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// The error or gate message, whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Box<str>>,
    /// ork will not succeed without a change (kstatus `Stalled`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stalled: bool,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_ms: Option<u64>,
    /// The endpoint that served it, for an entry with a rollout: `stable` or `candidate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<&'static str>,
    /// The plan as JSON text, packed (it is there for every CR): see [`Recorder::plan`].
    #[serde(skip)]
    pub plan: Option<Packed>,
    /// When the next retry or requeue is due (Unix milliseconds), as scheduled when it ended.
    #[serde(skip)]
    pub next: Option<i64>,
    /// How many reconciles in a row this record stands for: the same trigger, outcome, reason,
    /// message and plan (a resync that changes nothing, a failure that repeats) fold into one.
    #[serde(skip_serializing_if = "is_one")]
    pub times: u32,
    #[serde(skip)]
    pub exchange: Option<Box<Exchange>>,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `ms` (Unix milliseconds) in RFC 3339.
pub(crate) fn rfc3339(ms: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

impl Record {
    /// Whether it is a reconcile that went well or failed, as the metrics annotation counts
    /// them: not a gated, deleting or finalizing pass.
    fn counted(&self) -> bool {
        matches!(self.outcome, "ok" | "error")
    }

    fn size(&self) -> usize {
        self.exchange.as_ref().map_or(0, |e| e.size())
    }

    /// Whether `newer` says what this record says (it may then fold into it).
    fn same_as(&self, newer: &Record) -> bool {
        self.trigger == newer.trigger
            && self.cause == newer.cause
            && self.outcome == newer.outcome
            && self.reason == newer.reason
            && self.message == newer.message
            && self.stalled == newer.stalled
            && self.endpoint == newer.endpoint
            && self.plan == newer.plan
    }

    fn json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("at".into(), Value::String(rfc3339(self.at)));
            if let Some(next) = self.next {
                m.insert("next".into(), Value::String(rfc3339(next)));
            }
            let exchange = self.exchange.as_deref();
            let plan = self.plan.as_ref().and_then(Packed::unpack);
            for (field, text) in [
                ("plan", plan.as_deref()),
                ("request", exchange.and_then(|e| e.request.as_deref())),
                ("answer", exchange.and_then(|e| e.answer.as_deref())),
            ] {
                if let Some(text) = text {
                    let shown = serde_json::from_str(text)
                        .unwrap_or_else(|_| Value::String(text.to_string()));
                    m.insert(field.into(), shown);
                }
            }
        }
        v
    }
}

/// What the recorder holds of one CR.
#[derive(Debug)]
struct Held {
    /// Counted reconciles ([`Record::counted`]) since ork started (the metrics annotation's
    /// count): more than the records kept.
    reconciles: u64,
    records: VecDeque<Record>,
}

/// The records of one entry's CRs.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    by_key: HashMap<String, Held>,
    /// Bytes of requests and answers kept.
    bytes: usize,
    /// Of those, of reconciles that went well.
    ok_bytes: usize,
    /// Plans look alike (the same children, the same actions): each is packed against another.
    plans: Packer,
}

impl Recorder {
    /// A plan as the recorder keeps it.
    pub fn plan(&self, plan: &Plan) -> Packed {
        self.plans
            .pack(&serde_json::to_string(plan).unwrap_or_default())
    }

    /// Keeps `record` as the newest of `key`; the one before it lets go of its exchange. A
    /// record that says what the newest says folds into it (counted, with the newer times).
    pub fn add(&mut self, key: &str, mut record: Record) {
        // Most CRs only ever have a record or two: room for one at first, not the default's.
        let held = self.by_key.entry(key.to_string()).or_insert_with(|| Held {
            reconciles: 0,
            records: VecDeque::with_capacity(1),
        });
        if record.counted() {
            held.reconciles += 1;
        }
        let records = &mut held.records;
        let fold = records.back().is_some_and(|p| p.same_as(&record));
        if let Some(previous) = records.back_mut() {
            let size = previous.size();
            self.bytes -= size;
            if previous.outcome == "ok" {
                self.ok_bytes -= size;
            }
            previous.exchange = None;
            if fold {
                record.times = previous.times.saturating_add(1);
                records.pop_back();
            }
        }
        let size = record.size();
        let ok = record.outcome == "ok";
        if self.bytes + size > ENTRY_BYTES || (ok && self.ok_bytes + size > OK_BYTES) {
            record.exchange = None;
        }
        let size = record.size();
        self.bytes += size;
        if ok {
            self.ok_bytes += size;
        }
        // One more record's room, not the doubling `push_back` takes (a CR's second record
        // would hold room for four): at 100,000 CRs that is 37 MB.
        if records.len() == records.capacity() {
            records.reserve_exact(1);
        }
        records.push_back(record);
        if records.len() > DEPTH {
            records.pop_front();
        }
    }

    /// The CR is gone.
    pub fn forget(&mut self, key: &str) {
        if let Some(held) = self.by_key.remove(key) {
            for r in &held.records {
                self.bytes -= r.size();
                if r.outcome == "ok" {
                    self.ok_bytes -= r.size();
                }
            }
        }
    }

    /// The newest record of `key`.
    pub fn last(&self, key: &str) -> Option<&Record> {
        self.by_key.get(key)?.records.back()
    }

    #[cfg(test)]
    pub fn last_mut(&mut self, key: &str) -> Option<&mut Record> {
        self.by_key.get_mut(key)?.records.back_mut()
    }

    /// Whether the newest counted reconcile of `key` ([`Record::counted`]) went well.
    pub fn last_ok(&self, key: &str) -> Option<bool> {
        let held = self.by_key.get(key)?;
        held.records
            .iter()
            .rev()
            .find(|r| r.counted())
            .map(|r| r.outcome == "ok")
    }

    /// How many counted reconciles of `key` ([`Record::counted`]) ran since ork started.
    pub fn reconciles(&self, key: &str) -> u64 {
        self.by_key.get(key).map_or(0, |held| held.reconciles)
    }

    /// What the recorder holds of `key`, newest first.
    pub fn show(&self, key: &str) -> Value {
        let records: Vec<Value> = self
            .by_key
            .get(key)
            .into_iter()
            .flat_map(|held| &held.records)
            .rev()
            .map(Record::json)
            .collect();
        json!(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: usize, body: usize) -> Record {
        Record {
            at: i64::try_from(n).unwrap_or_default() * 1000,
            trigger: "resync",
            cause: None,
            attempt: 1,
            outcome: "ok",
            reason: None,
            message: None,
            stalled: false,
            duration_ms: 1,
            call_ms: Some(1),
            endpoint: None,
            plan: None,
            next: None,
            times: 1,
            exchange: Some(Box::new(Exchange {
                request: Some("r".repeat(body).into()),
                answer: Some("{\"result\":\"ok\"}".into()),
                call: None,
            })),
        }
    }

    /// `record(n, body)` with a plan of its own, so that it does not fold into the one before.
    fn distinct(n: usize, body: usize) -> Record {
        let mut r = record(n, body);
        r.plan = Some(Packer::default().pack(&format!("[{n}]")));
        r
    }

    #[test]
    fn the_last_records_are_kept_with_the_exchange_of_the_newest_only() {
        let mut r = Recorder::default();
        for n in 0..DEPTH + 4 {
            r.add("ns/a", distinct(n, 100));
        }
        let shown = r.show("ns/a");
        let records = shown.as_array().expect("a list");
        assert_eq!(records.len(), DEPTH);
        assert_eq!(records[0]["plan"], json!([DEPTH + 3]), "newest first");
        assert_eq!(
            records[0]["at"],
            rfc3339(i64::try_from(DEPTH + 3).unwrap_or_default() * 1000)
        );
        assert_eq!(records[0]["answer"]["result"], "ok");
        assert!(records[1].get("request").is_none());
        assert_eq!(r.bytes, 100 + 15);
        r.forget("ns/a");
        assert_eq!(r.bytes, 0);
        assert_eq!(r.show("ns/a"), json!([]));
    }

    #[test]
    fn a_cr_holds_room_for_the_records_it_has_and_no_more() {
        let mut r = Recorder::default();
        for n in 0..DEPTH + 4 {
            r.add("ns/a", distinct(n, 10));
            // Room for the records held, and for one more once the oldest are let go.
            assert!(r.by_key["ns/a"].records.capacity() <= (n + 1).min(DEPTH + 1));
        }
    }

    #[test]
    fn reconciles_are_counted_beyond_the_records_kept_and_gated_passes_are_not() {
        let mut r = Recorder::default();
        for n in 0..DEPTH + 4 {
            r.add("ns/a", distinct(n, 10));
        }
        let mut failed = distinct(100, 10);
        failed.outcome = "error";
        r.add("ns/a", failed);
        let mut gated = distinct(101, 10);
        gated.outcome = "gated";
        r.add("ns/a", gated);
        assert_eq!(r.reconciles("ns/a"), u64::try_from(DEPTH + 5).unwrap_or(0));
        assert_eq!(
            r.last_ok("ns/a"),
            Some(false),
            "the failure, not the gated pass"
        );
        assert_eq!(r.last_ok("ns/b"), None);
        r.forget("ns/a");
        assert_eq!(r.reconciles("ns/a"), 0);
    }

    #[test]
    fn reconciles_that_say_the_same_fold_into_one_record_that_counts_them() {
        let mut r = Recorder::default();
        r.add("ns/a", distinct(0, 10));
        for n in 1..40 {
            r.add("ns/a", record(n, 10));
        }
        let shown = r.show("ns/a");
        let records = shown.as_array().expect("a list");
        assert_eq!(records.len(), 2, "{shown}");
        assert_eq!(records[0]["times"], 39);
        assert_eq!(records[0]["at"], rfc3339(39_000), "the newest time");
        assert!(records[1].get("times").is_none());
        // Only the newest keeps its exchange, folded or not.
        assert_eq!(r.bytes, 10 + 15);
    }

    #[test]
    fn answers_of_reconciles_that_went_well_have_a_budget_of_their_own() {
        let mut r = Recorder::default();
        let mut n = 0;
        while r.ok_bytes + 1015 <= OK_BYTES {
            r.add(&format!("ns/{n}"), record(0, 1000));
            n += 1;
        }
        r.add("ns/over", record(0, 1000));
        assert_eq!(r.last("ns/over").map(Record::size), Some(0));
        let mut failed = record(0, 1000);
        failed.outcome = "error";
        r.add("ns/failing", failed);
        assert!(r.last("ns/failing").is_some_and(|x| x.size() > 1000));
    }

    #[test]
    fn past_the_entry_s_cap_new_records_keep_no_exchange() {
        let mut r = Recorder::default();
        let mut big = record(0, ENTRY_BYTES - 100);
        big.outcome = "error";
        r.add("ns/a", big);
        let mut small = record(0, 100);
        small.outcome = "error";
        r.add("ns/b", small);
        assert!(r.last("ns/b").is_some_and(|x| x.size() == 0));
        assert!(r.bytes <= ENTRY_BYTES);
    }
}
