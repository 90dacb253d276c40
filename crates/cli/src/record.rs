//! What a CR's flight record (`/katalog/{entry}/objects/...`) says, read the same way by
//! `ork explain` and the status page.

use std::fmt::Write as _;

use serde_json::Value;

/// The newest record with a plan: the children are as that reconcile planned them, as a newer
/// one that applied nothing (a failed call, a refused answer) leaves them.
pub(crate) struct Planned<'a> {
    /// How many newer records applied no answer.
    pub newer: usize,
    pub record: &'a Value,
    pub steps: &'a Vec<Value>,
}

impl<'a> Planned<'a> {
    pub fn find(records: &'a [Value]) -> Option<Planned<'a>> {
        records.iter().enumerate().find_map(|(newer, record)| {
            Some(Planned {
                newer,
                record,
                steps: record["plan"]["steps"].as_array()?,
            })
        })
    }

    /// `title` (`children`), and which reconcile planned them.
    pub fn heading(planned: Option<&Planned<'_>>, title: &str) -> String {
        let Some(p) = planned else {
            return title.to_string();
        };
        let mut s = format!(
            "{title}, as the reconcile at {} planned them ({} #{}",
            text(&p.record["at"]),
            text(&p.record["trigger"]),
            p.record["attempt"].as_u64().unwrap_or(1)
        );
        if p.newer > 0 {
            let _ = write!(s, "; {} newer reconcile(s) applied no answer", p.newer);
        }
        s.push(')');
        s
    }
}

/// A record's field as text: a string as it is, `null` as `-`, anything else as JSON.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}
