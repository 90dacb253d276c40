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

use crate::reconcile::{Exchange, Plan};

/// A plan as the recorder keeps it.
pub(crate) fn compact(plan: &Plan) -> Box<str> {
    serde_json::to_string(plan)
        .unwrap_or_default()
        .into_boxed_str()
}

/// Records kept per CR.
pub(crate) const DEPTH: usize = 16;

/// Bytes of requests and answers kept for one entry; past it, new records keep none.
pub(crate) const ENTRY_BYTES: usize = 64 * 1024 * 1024;

/// Of those, the bytes of answers of reconciles that went well: what a healthy CR's explain
/// shows, kept for the first CRs only when there are many, so that a large healthy entry pays
/// only its records' summaries (a few hundred bytes per CR).
pub(crate) const OK_BYTES: usize = 1024 * 1024;

/// One reconcile, as recorded.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    /// When it ended (RFC 3339).
    pub at: String,
    pub trigger: &'static str,
    pub attempt: u32,
    /// `ok`, `error`, `gated`, `deleting`, `finalized`, `finalizing` (the service has not
    /// finalized yet).
    pub outcome: &'static str,
    /// The condition reason of a failure (`ServiceUnreachable`, `AnswerRejected`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// The error or gate message, whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// ork will not succeed without a change (kstatus `Stalled`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stalled: bool,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_ms: Option<u64>,
    /// The plan as JSON text (kept compact: it is there for every CR).
    #[serde(skip)]
    pub plan: Option<Box<str>>,
    /// When the next retry or requeue is due (RFC 3339), as scheduled when it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    #[serde(skip)]
    pub exchange: Exchange,
}

impl Record {
    fn json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            for (field, text) in [
                ("plan", &self.plan),
                ("request", &self.exchange.request),
                ("answer", &self.exchange.answer),
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

/// The records of one entry's CRs.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    by_key: HashMap<String, VecDeque<Record>>,
    /// Bytes of requests and answers kept.
    bytes: usize,
    /// Of those, of reconciles that went well.
    ok_bytes: usize,
}

impl Recorder {
    /// Keeps `record` as the newest of `key`; the one before it lets go of its exchange.
    pub fn add(&mut self, key: &str, mut record: Record) {
        // Most CRs only ever have a record or two: room for one at first, not the default's.
        let records = self
            .by_key
            .entry(key.to_string())
            .or_insert_with(|| VecDeque::with_capacity(1));
        if let Some(previous) = records.back_mut() {
            let size = previous.exchange.size();
            self.bytes -= size;
            if previous.outcome == "ok" {
                self.ok_bytes -= size;
            }
            previous.exchange = Exchange::default();
        }
        let size = record.exchange.size();
        let ok = record.outcome == "ok";
        if self.bytes + size > ENTRY_BYTES || (ok && self.ok_bytes + size > OK_BYTES) {
            record.exchange = Exchange::default();
        }
        let size = record.exchange.size();
        self.bytes += size;
        if ok {
            self.ok_bytes += size;
        }
        records.push_back(record);
        if records.len() > DEPTH {
            records.pop_front();
        }
    }

    /// The CR is gone.
    pub fn forget(&mut self, key: &str) {
        if let Some(records) = self.by_key.remove(key) {
            for r in &records {
                self.bytes -= r.exchange.size();
                if r.outcome == "ok" {
                    self.ok_bytes -= r.exchange.size();
                }
            }
        }
    }

    /// The newest record of `key`.
    pub fn last(&self, key: &str) -> Option<&Record> {
        self.by_key.get(key)?.back()
    }

    /// What the recorder holds of `key`, newest first.
    pub fn show(&self, key: &str) -> Value {
        let records: Vec<Value> = self
            .by_key
            .get(key)
            .into_iter()
            .flatten()
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
            at: format!("t{n}"),
            trigger: "resync",
            attempt: 1,
            outcome: "ok",
            reason: None,
            message: None,
            stalled: false,
            duration_ms: 1,
            call_ms: Some(1),
            plan: None,
            next: None,
            exchange: Exchange {
                request: Some("r".repeat(body).into()),
                answer: Some("{\"result\":\"ok\"}".into()),
                call: None,
            },
        }
    }

    #[test]
    fn the_last_records_are_kept_with_the_exchange_of_the_newest_only() {
        let mut r = Recorder::default();
        for n in 0..DEPTH + 4 {
            r.add("ns/a", record(n, 100));
        }
        let shown = r.show("ns/a");
        let records = shown.as_array().expect("a list");
        assert_eq!(records.len(), DEPTH);
        assert_eq!(records[0]["at"], format!("t{}", DEPTH + 3), "newest first");
        assert_eq!(records[0]["answer"]["result"], "ok");
        assert!(records[1].get("request").is_none());
        assert_eq!(r.bytes, 100 + 15);
        r.forget("ns/a");
        assert_eq!(r.bytes, 0);
        assert_eq!(r.show("ns/a"), json!([]));
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
        assert_eq!(r.last("ns/over").map(|x| x.exchange.size()), Some(0));
        let mut failed = record(0, 1000);
        failed.outcome = "error";
        r.add("ns/failing", failed);
        assert!(
            r.last("ns/failing")
                .is_some_and(|x| x.exchange.size() > 1000)
        );
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
        assert!(r.last("ns/b").is_some_and(|x| x.exchange.size() == 0));
        assert!(r.bytes <= ENTRY_BYTES);
    }
}
