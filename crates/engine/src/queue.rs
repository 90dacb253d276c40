//! The work queue of one entry: deduplicated keys, never two in flight for one object, delayed
//! adds for requeue/backoff/resync. Time is passed in, so tests need no clock.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::Instant;

/// Why a key was queued; sent to the service as `prepared.trigger.reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    Create,
    Update,
    Child,
    Resync,
    Requeue,
    Retry,
    Delete,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Create => "create",
            Reason::Update => "update",
            Reason::Child => "child",
            Reason::Resync => "resync",
            Reason::Requeue => "requeue",
            Reason::Retry => "retry",
            Reason::Delete => "delete",
        }
    }
}

#[derive(Debug)]
pub struct WorkQueue<K> {
    ready: VecDeque<K>,
    queued: HashMap<K, Reason>,
    in_flight: HashSet<K>,
    /// Keys that changed while in flight: queued again when done.
    dirty: HashMap<K, Reason>,
    delayed: BTreeMap<(Instant, u64), (K, Reason)>,
    delay_of: HashMap<K, (Instant, u64)>,
    seq: u64,
}

impl<K: Hash + Eq + Clone> Default for WorkQueue<K> {
    fn default() -> Self {
        WorkQueue {
            ready: VecDeque::new(),
            queued: HashMap::new(),
            in_flight: HashSet::new(),
            dirty: HashMap::new(),
            delayed: BTreeMap::new(),
            delay_of: HashMap::new(),
            seq: 0,
        }
    }
}

impl<K: Hash + Eq + Clone> WorkQueue<K> {
    /// Queues `key` now. A key already waiting is not added twice; a key in flight is queued
    /// again when its reconcile finishes. A pending delayed add is superseded.
    pub fn add(&mut self, key: K, reason: Reason) {
        self.cancel_delay(&key);
        if self.in_flight.contains(&key) {
            self.dirty.entry(key).or_insert(reason);
        } else if !self.queued.contains_key(&key) {
            self.queued.insert(key.clone(), reason);
            self.ready.push_back(key);
        }
    }

    /// Queues `key` at `at`, unless an earlier delayed add exists or it is already waiting.
    pub fn add_at(&mut self, key: K, reason: Reason, at: Instant) {
        if self.queued.contains_key(&key) || self.dirty.contains_key(&key) {
            return;
        }
        if let Some((existing, _)) = self.delay_of.get(&key)
            && *existing <= at
        {
            return;
        }
        self.cancel_delay(&key);
        self.seq += 1;
        self.delayed.insert((at, self.seq), (key.clone(), reason));
        self.delay_of.insert(key, (at, self.seq));
    }

    /// Moves delayed keys that are due at `now` to the ready queue.
    pub fn promote(&mut self, now: Instant) {
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (key, reason) = entry.remove();
            self.delay_of.remove(&key);
            self.add(key, reason);
        }
    }

    /// The next key to work on; it stays in flight until [`WorkQueue::done`].
    pub fn pop(&mut self) -> Option<(K, Reason)> {
        let key = self.ready.pop_front()?;
        let reason = self.queued.remove(&key).unwrap_or(Reason::Update);
        self.in_flight.insert(key.clone());
        Some((key, reason))
    }

    /// Ends the reconcile of `key`; if it changed meanwhile it is queued again.
    pub fn done(&mut self, key: &K) {
        self.in_flight.remove(key);
        if let Some(reason) = self.dirty.remove(key) {
            self.add(key.clone(), reason);
        }
    }

    /// Forgets a key entirely (the object is gone).
    pub fn forget(&mut self, key: &K) {
        self.cancel_delay(key);
        self.dirty.remove(key);
        if self.queued.remove(key).is_some() {
            self.ready.retain(|k| k != key);
        }
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.delayed.keys().next().map(|(at, _)| *at)
    }

    /// Keys waiting to be worked on now.
    pub fn depth(&self) -> usize {
        self.ready.len()
    }

    pub fn is_in_flight(&self, key: &K) -> bool {
        self.in_flight.contains(key)
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn cancel_delay(&mut self, key: &K) {
        if let Some(slot) = self.delay_of.remove(key) {
            self.delayed.remove(&slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn duplicate_adds_are_coalesced() {
        let mut q = WorkQueue::default();
        q.add("a", Reason::Create);
        q.add("a", Reason::Update);
        q.add("b", Reason::Create);
        assert_eq!(q.depth(), 2);
        assert_eq!(q.pop(), Some(("a", Reason::Create)));
        assert_eq!(q.pop(), Some(("b", Reason::Create)));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn a_key_in_flight_is_never_handed_out_twice() {
        let mut q = WorkQueue::default();
        q.add("a", Reason::Create);
        assert!(q.pop().is_some());
        q.add("a", Reason::Update);
        q.add("a", Reason::Update);
        assert_eq!(q.pop(), None, "a is in flight");
        q.done(&"a");
        assert_eq!(
            q.pop(),
            Some(("a", Reason::Update)),
            "requeued once after done"
        );
        q.done(&"a");
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn delayed_adds_fire_when_due_and_keep_the_earliest() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        q.add_at("a", Reason::Retry, t0 + Duration::from_secs(5));
        q.add_at("a", Reason::Resync, t0 + Duration::from_secs(9));
        q.add_at("a", Reason::Requeue, t0 + Duration::from_secs(2));
        assert_eq!(q.next_deadline(), Some(t0 + Duration::from_secs(2)));
        q.promote(t0 + Duration::from_secs(1));
        assert_eq!(q.pop(), None);
        q.promote(t0 + Duration::from_secs(2));
        assert_eq!(q.pop(), Some(("a", Reason::Requeue)));
        assert_eq!(q.next_deadline(), None);
    }

    #[test]
    fn an_event_supersedes_a_pending_retry() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        q.add_at("a", Reason::Retry, t0 + Duration::from_secs(60));
        q.add("a", Reason::Update);
        assert_eq!(q.pop(), Some(("a", Reason::Update)));
        assert_eq!(q.next_deadline(), None);
    }

    #[test]
    fn forget_drops_everything_for_a_key() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        q.add("a", Reason::Create);
        q.add_at("b", Reason::Retry, t0);
        q.forget(&"a");
        q.forget(&"b");
        q.promote(t0);
        assert_eq!(q.pop(), None);
    }
}
