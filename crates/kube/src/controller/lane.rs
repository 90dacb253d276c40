//! The lower-priority lane: the CR annotations and events reconciles call for, coalesced per
//! CR and written after them, so they never delay another CR's convergence (SPEC §10): while
//! reconciles are running or fresh changes wait, only writes that waited longer than a patience
//! go, one at a time. A stopping ork writes what waits within `--shutdown-grace` (the seals
//! with it, so the next start skips the CRs they cover).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
// tokio's clock, so a test with paused time can let a lane's patience pass.
use tokio::time::Instant;

use crate::packed::{Packed, Packer};
use crate::reconcile::Later;

#[derive(Debug, Default)]
pub(crate) struct Lane {
    waiting: Mutex<Waiting>,
    wake: Notify,
}

#[derive(Debug, Default)]
struct Waiting {
    /// Keys in the order their first write came, with when that was.
    order: VecDeque<(String, Instant)>,
    /// What waits per key, packed: during a burst, every CR's writes wait here.
    by_key: HashMap<String, Packed>,
    packer: Packer,
}

impl Lane {
    /// Adds the writes of a reconcile of `key`, folded into any still waiting for it.
    pub fn push(&self, key: &str, later: Later) {
        let mut guard = self.lock();
        let w = &mut *guard;
        match w.by_key.get_mut(key) {
            Some(waiting) => {
                let merged = match Later::unpack(waiting) {
                    Some(mut older) => {
                        older.merge(later);
                        older
                    }
                    None => later,
                };
                *waiting = merged.pack(&w.packer);
            }
            None => {
                let packed = later.pack(&w.packer);
                w.by_key.insert(key.to_string(), packed);
                w.order.push_back((key.to_string(), Instant::now()));
            }
        }
        drop(guard);
        self.wake.notify_one();
    }

    /// Up to `n` waiting writes, oldest first.
    pub fn take(&self, n: usize) -> Vec<Later> {
        self.take_waited(n, Duration::ZERO)
    }

    /// Up to `n` of the writes that have waited at least `patience`, oldest first.
    pub fn take_waited(&self, n: usize, patience: Duration) -> Vec<Later> {
        let mut w = self.lock();
        let mut out = Vec::new();
        while out.len() < n {
            match w.order.front() {
                Some((_, since)) if since.elapsed() >= patience => {}
                _ => break,
            }
            let Some((key, _)) = w.order.pop_front() else {
                break;
            };
            if let Some(later) = w.by_key.remove(&key).as_ref().and_then(Later::unpack) {
                out.push(later);
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.lock().by_key.is_empty()
    }

    /// CRs whose writes wait.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// Waits until something is pushed.
    pub async fn wait(&self) {
        self.wake.notified().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::ports::CrRef;

    fn later(note: &str) -> Later {
        let mut annotations = Map::new();
        annotations.insert("note".into(), json!(note));
        let cr = CrRef {
            namespace: None,
            name: "a".into(),
            uid: None,
            resource_version: None,
        };
        Later::new(cr, Some(annotations), Vec::new())
    }

    #[test]
    fn writes_for_one_cr_fold_and_only_those_that_waited_go_while_converging() {
        let lane = Lane::default();
        lane.push("ns/a", later("1"));
        lane.push("ns/a", later("2"));
        lane.push("ns/b", later("1"));
        assert!(
            lane.take_waited(1, Duration::from_secs(60)).is_empty(),
            "nothing waited long enough"
        );
        let first = lane.take(8);
        assert_eq!(first.len(), 2, "one write per CR");
        assert_eq!(first[0].metadata().expect("metadata")["note"], "2");
        assert!(lane.is_empty());
    }

    #[test]
    fn what_waits_packed_comes_back_whole() {
        use kube::runtime::events::{Event, EventType};
        let lane = Lane::default();
        let event = |reason: &str, type_| Event {
            type_,
            reason: reason.into(),
            note: Some(format!("{reason}: ünïcode note")),
            action: "Reconcile".into(),
            secondary: Some(k8s_openapi::api::core::v1::ObjectReference {
                kind: Some("ConfigMap".into()),
                name: Some("web".into()),
                ..Default::default()
            }),
        };
        let mut first = later("1");
        first.cr.uid = Some("u-1".into());
        first.merge(Later::new(
            first.cr.clone(),
            None,
            vec![event("A", EventType::Normal)],
        ));
        lane.push("ns/a", first);
        lane.push(
            "ns/a",
            Later::new(later("x").cr, None, vec![event("B", EventType::Warning)]),
        );
        let taken = lane.take(8);
        let [w] = taken.as_slice() else {
            panic!("one write for the CR: {taken:?}");
        };
        assert_eq!(w.metadata().expect("the first metadata stays")["note"], "1");
        let events = w.events();
        assert_eq!(events.len(), 2);
        let fields = |e: &Event| {
            (
                e.type_ == EventType::Warning,
                e.reason.clone(),
                e.note.clone(),
                e.action.clone(),
                e.secondary.clone(),
            )
        };
        assert_eq!(fields(&events[0]), fields(&event("A", EventType::Normal)));
        assert_eq!(fields(&events[1]), fields(&event("B", EventType::Warning)));
    }
}
