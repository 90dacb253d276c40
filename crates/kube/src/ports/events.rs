//! Kubernetes events (`events.k8s.io/v1`) about CRs. The same event (type, reason and message)
//! on the same object within [`SERIES_TTL`] becomes a series on the first event object (its count and last time patched)
//! instead of a new object, as the Events API intends.
//!
//! Written for the write economy of SPEC §10 rather than taken from kube-runtime's recorder,
//! which keeps a full copy of every event it sent, walks all of them on every publish (quadratic
//! in the number of CRs over a burst) and decodes every response: here the series memory is a
//! name and a count per recent event, swept once a minute, and responses are not decoded.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::Resource;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use serde_json::json;

use super::write::send;

/// How long a repeat still joins the series of an earlier event (as kube-runtime and client-go).
const SERIES_TTL: Duration = Duration::from_secs(6 * 60);

/// How often series older than [`SERIES_TTL`] are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Series remembered at most (client-go's event correlator keeps as many): past it, the oldest
/// quarter is forgotten. A burst of 100,000 new CRs sends a success event each within minutes;
/// remembering each for [`SERIES_TTL`] cost 140 bytes per CR, for repeats that do not come.
const MAX_SERIES: usize = 4096;

/// The event object a series lives on.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    count: u32,
    last: Instant,
}

#[derive(Debug)]
struct Series {
    by_key: HashMap<u64, Seen>,
    swept: Instant,
}

impl Series {
    fn new(now: Instant) -> Series {
        Series {
            by_key: HashMap::new(),
            swept: now,
        }
    }

    /// The series of `key` if it is recent at `now`; sweeps old series now and then.
    fn recent(&mut self, key: u64, now: Instant) -> Option<Seen> {
        if now.saturating_duration_since(self.swept) >= SWEEP_EVERY {
            self.by_key
                .retain(|_, seen| now.saturating_duration_since(seen.last) < SERIES_TTL);
            self.swept = now;
        }
        self.by_key
            .get(&key)
            .filter(|seen| now.saturating_duration_since(seen.last) < SERIES_TTL)
            .cloned()
    }

    /// `key`'s series is on the event `name`, `count` times, the last at `now`.
    fn remember(&mut self, key: u64, name: String, count: u32, now: Instant) {
        if self.by_key.len() >= MAX_SERIES && !self.by_key.contains_key(&key) {
            self.forget_oldest();
        }
        self.by_key.insert(
            key,
            Seen {
                name,
                count,
                last: now,
            },
        );
    }

    /// What a publish of `key` at `now` does, decided and recorded at once: count on in its
    /// recent series, or create the event `fresh`, which the series lives on from now.
    fn claim(&mut self, key: u64, fresh: String, now: Instant) -> Claim {
        match self.recent(key, now) {
            Some(seen) => {
                let count = seen.count + 1;
                self.remember(key, seen.name.clone(), count, now);
                Claim::Patch {
                    name: seen.name,
                    count,
                }
            }
            None => {
                self.remember(key, fresh, 1, now);
                Claim::Create
            }
        }
    }

    fn forget(&mut self, key: u64) {
        self.by_key.remove(&key);
    }

    /// Forgets the oldest quarter of the series (one pass per [`MAX_SERIES`] / 4 new ones).
    fn forget_oldest(&mut self) {
        let mut by_age: Vec<(Instant, u64)> = self
            .by_key
            .iter()
            .map(|(key, seen)| (seen.last, *key))
            .collect();
        let cut = (by_age.len() / 4).max(1);
        by_age.select_nth_unstable(cut - 1);
        for (_, key) in &by_age[..cut] {
            self.by_key.remove(key);
        }
    }
}

/// What one publish does: count on in a series, or create the event.
#[derive(Debug, PartialEq)]
enum Claim {
    Patch { name: String, count: u32 },
    Create,
}

/// Publishes events as controller `ork` (instance: the pod's name when set).
pub(crate) struct EventRecorder {
    client: Client,
    controller: String,
    instance: String,
    series: Mutex<Series>,
}

impl EventRecorder {
    pub fn new(client: Client, controller: &str, instance: Option<String>) -> EventRecorder {
        EventRecorder {
            client,
            controller: controller.to_string(),
            instance: instance.unwrap_or_else(|| controller.to_string()),
            series: Mutex::new(Series::new(Instant::now())),
        }
    }

    /// Creates the event about `regarding`, or adds to the series of the same event sent
    /// within [`SERIES_TTL`].
    ///
    /// # Errors
    /// The API server refused the event.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let key = key(event, regarding);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let url = K8sEvent::url_path(&(), Some(namespace));
        let now = Timestamp::now();
        let object = self.object(event, regarding, namespace, now);
        let fresh = object.metadata.name.clone().unwrap_or_default();
        // Claimed under the lock before any await: a second publish of the same event that
        // comes meanwhile counts on in the same series instead of starting another one (or
        // sending the same count again).
        let claim = self.lock().claim(key, fresh, Instant::now());
        if let Claim::Patch { name, count } = claim {
            let patch = json!({"series": {"count": count, "lastObservedTime": MicroTime(now)}});
            let request = kube::core::Request::new(&url).patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            );
            match send(&self.client, request).await {
                Ok(()) => return Ok(()),
                // The event object expired or was deleted: start a new one.
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    let name = object.metadata.name.clone().unwrap_or_default();
                    self.lock().remember(key, name, 1, Instant::now());
                }
                Err(e) => return Err(e),
            }
        }
        let body = serde_json::to_vec(&object).map_err(kube::Error::SerdeError)?;
        let request = kube::core::Request::new(&url).create(&PostParams::default(), body);
        if let Err(e) = send(&self.client, request).await {
            // Nothing was created: the next one starts the series.
            self.lock().forget(key);
            return Err(e);
        }
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, Series> {
        self.series
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn object(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        namespace: &str,
        now: Timestamp,
    ) -> K8sEvent {
        let about = regarding.name.as_deref().unwrap_or(&self.controller);
        K8sEvent {
            metadata: ObjectMeta {
                name: Some(format!("{about}.{:x}", now.as_nanosecond())),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: event.note.clone(),
            type_: Some(type_name(event.type_).to_string()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..K8sEvent::default()
        }
    }
}

fn type_name(t: EventType) -> &'static str {
    match t {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

/// What makes two events the same (the note may differ: a repeated failure with a new text
/// still counts in the first one's series, as client-go does).
fn key(event: &Event, regarding: &ObjectReference) -> u64 {
    let mut h = DefaultHasher::new();
    type_name(event.type_).hash(&mut h);
    event.action.hash(&mut h);
    event.reason.hash(&mut h);
    // A changed cause is a new series (SPEC §14): `kubectl describe` shows the count beside
    // the message it counts, never attempts 2-4 under attempt 1's message.
    event.note.hash(&mut h);
    for r in std::iter::once(regarding).chain(event.secondary.as_ref()) {
        r.api_version.hash(&mut h);
        r.kind.hash(&mut h);
        r.namespace.hash(&mut h);
        r.name.hash(&mut h);
        r.uid.hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(note.into()),
            action: "Reconcile".into(),
            secondary: None,
        }
    }

    fn about(uid: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("WebApp".into()),
            name: Some("web".into()),
            namespace: Some("team".into()),
            uid: Some(uid.into()),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn a_series_is_one_reason_and_message_about_one_object() {
        let first = key(&event("Failed", "boom"), &about("u1"));
        assert_eq!(first, key(&event("Failed", "boom"), &about("u1")));
        assert_ne!(
            first,
            key(&event("Failed", "bang"), &about("u1")),
            "a changed cause starts a new series"
        );
        assert_ne!(first, key(&event("Failed", "boom"), &about("u2")));
        assert_ne!(first, key(&event("Retried", "boom"), &about("u1")));
    }

    #[test]
    fn publishes_of_one_event_claim_one_series_and_each_its_own_count() {
        let start = Instant::now();
        let mut series = Series::new(start);
        assert_eq!(series.claim(7, "web.1".into(), start), Claim::Create);
        // Claimed before the first create landed: the second counts on in the same series.
        assert_eq!(
            series.claim(7, "web.2".into(), start),
            Claim::Patch {
                name: "web.1".into(),
                count: 2
            }
        );
        assert_eq!(
            series.claim(7, "web.3".into(), start),
            Claim::Patch {
                name: "web.1".into(),
                count: 3
            }
        );
        // A create that failed is forgotten: the next one starts the series again.
        series.forget(7);
        assert_eq!(series.claim(7, "web.4".into(), start), Claim::Create);
        assert_eq!(
            series.claim(7, "web.5".into(), start + SERIES_TTL),
            Claim::Create,
            "an expired series is not continued"
        );
    }

    #[test]
    fn series_are_remembered_for_a_while_and_only_so_many() {
        let start = Instant::now();
        let mut series = Series::new(start);
        series.remember(1, "web.1".into(), 1, start);
        let later = start + Duration::from_secs(10);
        let seen = series.recent(1, later).expect("a recent series");
        assert_eq!((seen.name.as_str(), seen.count), ("web.1", 1));
        assert!(series.recent(1, start + SERIES_TTL).is_none(), "expired");

        // A burst of new events: the oldest are forgotten, never the newest.
        let mut series = Series::new(start);
        let n = u64::try_from(MAX_SERIES).unwrap_or(u64::MAX) * 3;
        for k in 0..n {
            series.remember(k, format!("e.{k}"), 1, start + Duration::from_millis(k));
        }
        assert!(series.by_key.len() <= MAX_SERIES);
        let now = start + Duration::from_millis(n);
        assert!(series.recent(n - 1, now).is_some(), "the newest is kept");
        assert!(series.recent(0, now).is_none(), "the oldest is forgotten");

        // Series of the same instant are forgotten as well.
        let mut series = Series::new(start);
        for k in 0..n {
            series.remember(k, format!("e.{k}"), 1, start);
        }
        assert!(series.by_key.len() <= MAX_SERIES);
    }
}
