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
            self.bytes -= previous.exchange.size();
            previous.exchange = Exchange::default();
        }
        if self.bytes + record.exchange.size() > ENTRY_BYTES {
            record.exchange = Exchange::default();
        }
        self.bytes += record.exchange.size();
        records.push_back(record);
        if records.len() > DEPTH {
            records.pop_front();
        }
    }

    /// The CR is gone.
    pub fn forget(&mut self, key: &str) {
        if let Some(records) = self.by_key.remove(key) {
            self.bytes -= records.iter().map(|r| r.exchange.size()).sum::<usize>();
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
    fn past_the_entry_s_cap_new_records_keep_no_exchange() {
        let mut r = Recorder::default();
        r.add("ns/a", record(0, ENTRY_BYTES - 100));
        r.add("ns/b", record(0, 100));
        assert!(r.last("ns/b").is_some_and(|x| x.exchange.size() == 0));
        assert!(r.bytes <= ENTRY_BYTES);
    }
}
