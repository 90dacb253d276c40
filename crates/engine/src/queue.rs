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
    /// This replica took over the CR's shard: its CRs are looked at, and those unchanged since
    /// ork's last successful reconcile are not called (SPEC §17). At a start or a leadership
    /// gained the CRs come as `Create`, looked at the same way.
    Gained,
    /// An object the CR's related-objects rules select changed (a Metacontroller
    /// controller's customize hook, SPEC §15).
    Related,
    /// An object one of the CR's inputs read changed, appeared or went (SPEC §20).
    Input,
    /// Someone asked for a reconcile now (`ork retry`, the `requested-at` annotation): the
    /// backoff starts over.
    Manual,
    /// The last reconcile wrote children, and the protocol sees what it wrote before it is
    /// done (a Metacontroller controller's next sync observes the children it just made,
    /// SPEC §15).
    Written,
    /// The entry's rollout moved the CR to the other endpoint (a step, a halt, a promotion,
    /// SPEC §19): background work, like a resync.
    Rollout,
    /// Children of a CR that went without ork's finalizer are to be deleted. The weakest
    /// reason: any other one for the same key takes its place (the sweep runs all the same).
    Sweep,
}

impl Reason {
    /// A change someone made (create, edit, child drift): served before the periodic, retry and
    /// sweep work, so an edit is not stuck behind a full resync (SPEC §10).
    pub fn is_fresh(self) -> bool {
        matches!(
            self,
            Reason::Create
                | Reason::Update
                | Reason::Child
                | Reason::Related
                | Reason::Input
                | Reason::Manual
                | Reason::Written
        )
    }

    /// Whether `self` takes the place of `queued` for a key already waiting.
    fn overrides(self, queued: Reason) -> bool {
        (self.is_fresh() && !queued.is_fresh())
            || (queued == Reason::Sweep && self != Reason::Sweep)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Create => "create",
            Reason::Update => "update",
            Reason::Child => "child",
            Reason::Resync => "resync",
            Reason::Requeue => "requeue",
            Reason::Retry => "retry",
            Reason::Related => "related",
            Reason::Input => "input",
            Reason::Gained => "gained",
            Reason::Manual => "manual",
            Reason::Written => "written",
            Reason::Rollout => "rollout",
            Reason::Sweep => "sweep",
        }
    }
}

/// Two lanes: fresh changes first, then resync, requeue and retry. A key is in at most one
/// lane at a time as far as [`WorkQueue::pop`] is concerned; entries made stale by an upgrade
/// or a forget are skipped when reached (so both are O(1)).
#[derive(Debug)]
pub struct WorkQueue<K> {
    fresh: VecDeque<K>,
    slow: VecDeque<K>,
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
            fresh: VecDeque::new(),
            slow: VecDeque::new(),
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
        // A sweep runs now and leaves a delayed retry or requeue of the key to its time.
        if reason != Reason::Sweep {
            self.cancel_delay(&key);
        }
        if self.in_flight.contains(&key) {
            let slot = self.dirty.entry(key).or_insert(reason);
            if reason.overrides(*slot) {
                *slot = reason;
            }
            return;
        }
        match self.queued.get_mut(&key) {
            // Waiting in the slow lane and now changed: move it up front.
            Some(queued) if reason.is_fresh() && !queued.is_fresh() => {
                *queued = reason;
                self.fresh.push_back(key);
            }
            // A sweep only: the other reason is the one the reconcile reports.
            Some(queued) if reason.overrides(*queued) => *queued = reason,
            Some(_) => {}
            None => {
                self.queued.insert(key.clone(), reason);
                if reason.is_fresh() {
                    self.fresh.push_back(key);
                } else {
                    self.slow.push_back(key);
                }
            }
        }
    }

    /// Queues `key` at `at`, unless an earlier delayed add exists or it is already waiting.
    ///
    /// A sweep never hides another reason (see [`Reason::Sweep`]): beside a key waiting for a
    /// sweep only, the delayed add is kept for its time; of two delayed adds the earlier time
    /// is kept, with the stronger reason.
    pub fn add_at(&mut self, key: K, mut reason: Reason, at: Instant) {
        if self
            .queued
            .get(&key)
            .or_else(|| self.dirty.get(&key))
            .is_some_and(|waiting| *waiting != Reason::Sweep)
        {
            return;
        }
        if let Some(&slot) = self.delay_of.get(&key)
            && let Some((_, pending)) = self.delayed.get_mut(&slot)
        {
            if slot.0 <= at {
                if reason.overrides(*pending) {
                    *pending = reason;
                }
                return;
            }
            if pending.overrides(reason) {
                reason = *pending;
            }
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
        for fresh_lane in [true, false] {
            loop {
                let lane = if fresh_lane {
                    &mut self.fresh
                } else {
                    &mut self.slow
                };
                let Some(key) = lane.pop_front() else {
                    break;
                };
                // Skip entries made stale by an upgrade to the fresh lane or a forget.
                let live = self
                    .queued
                    .get(&key)
                    .is_some_and(|r| r.is_fresh() == fresh_lane);
                if live && let Some(reason) = self.queued.remove(&key) {
                    self.in_flight.insert(key.clone());
                    return Some((key, reason));
                }
            }
        }
        None
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
        self.queued.remove(key);
    }

    /// When `key` is due, if it waits for a time.
    pub fn due_at(&self, key: &K) -> Option<Instant> {
        self.delay_of.get(key).map(|(at, _)| *at)
    }

    /// Whether `key` waits to be worked on now.
    pub fn is_queued(&self, key: &K) -> bool {
        self.queued.contains_key(key)
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.delayed.keys().next().map(|(at, _)| *at)
    }

    /// Whether fresh changes (create, edit, child drift, delete) may be waiting: an entry made
    /// stale by a forget counts until it is reached.
    pub fn has_fresh(&self) -> bool {
        !self.fresh.is_empty()
    }

    /// Keys waiting to be worked on now.
    pub fn depth(&self) -> usize {
        self.queued.len()
    }

    pub fn is_in_flight(&self, key: &K) -> bool {
        self.in_flight.contains(key)
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// The keys being worked on.
    pub fn in_flight_keys(&self) -> impl Iterator<Item = &K> {
        self.in_flight.iter()
    }

    /// The keys waiting now.
    pub fn queued_keys(&self) -> impl Iterator<Item = &K> {
        self.queued.keys()
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
    fn fresh_changes_are_served_before_resync_and_retry_work() {
        let mut q = WorkQueue::default();
        q.add("r1", Reason::Resync);
        q.add("r2", Reason::Resync);
        q.add("edit", Reason::Update);
        q.add("r2", Reason::Child);
        assert_eq!(q.pop(), Some(("edit", Reason::Update)));
        assert_eq!(q.pop(), Some(("r2", Reason::Child)), "upgraded, not twice");
        assert_eq!(q.pop(), Some(("r1", Reason::Resync)));
        assert_eq!(q.pop(), None);
        assert_eq!(q.depth(), 0);
    }

    #[test]
    fn any_other_reason_takes_the_place_of_a_sweep() {
        let mut q = WorkQueue::default();
        q.add("a", Reason::Sweep);
        q.add("a", Reason::Resync);
        q.add("b", Reason::Sweep);
        q.add("b", Reason::Create);
        q.add("c", Reason::Resync);
        q.add("c", Reason::Sweep);
        let mut got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        got.sort_by_key(|(k, _)| *k);
        assert_eq!(
            got,
            vec![
                ("a", Reason::Resync),
                ("b", Reason::Create),
                ("c", Reason::Resync)
            ]
        );
        q.add("a", Reason::Sweep);
        q.add("a", Reason::Update);
        q.done(&"a");
        assert_eq!(
            q.pop(),
            Some(("a", Reason::Update)),
            "queued again when done"
        );
    }

    #[test]
    fn a_delayed_sweep_never_hides_a_retry_or_a_requeue() {
        let now = Instant::now();
        let (soon, later) = (now + Duration::from_secs(1), now + Duration::from_secs(5));
        let mut q = WorkQueue::default();
        q.add_at("a", Reason::Sweep, soon);
        q.add_at("a", Reason::Requeue, later);
        q.add_at("b", Reason::Retry, later);
        q.add_at("b", Reason::Sweep, soon);
        q.add("c", Reason::Sweep);
        q.add_at("c", Reason::Retry, later);
        q.add_at("d", Reason::Retry, later);
        q.add("d", Reason::Sweep);
        let mut now_due: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        now_due.sort_by_key(|(k, _)| *k);
        assert_eq!(now_due, vec![("c", Reason::Sweep), ("d", Reason::Sweep)]);
        q.done(&"c");
        q.done(&"d");
        q.promote(soon);
        let mut due: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        due.sort_by_key(|(k, _)| *k);
        assert_eq!(due, vec![("a", Reason::Requeue), ("b", Reason::Retry)]);
        q.promote(later);
        let mut due: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        due.sort_by_key(|(k, _)| *k);
        assert_eq!(
            due,
            vec![("c", Reason::Retry), ("d", Reason::Retry)],
            "at their own time"
        );
    }

    #[test]
    fn a_forgotten_key_is_skipped_and_can_come_back() {
        let mut q = WorkQueue::default();
        q.add("a", Reason::Create);
        q.forget(&"a");
        q.add("a", Reason::Create);
        assert_eq!(q.pop(), Some(("a", Reason::Create)));
        assert_eq!(q.pop(), None, "no duplicate");
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
