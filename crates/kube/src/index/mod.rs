//! The per-entry index: what the watches have seen, in the shape reconciles need it (children by
//! owner UID, sentinels), and which keys a watch event must trigger. Pure: watch events in,
//! [`Effect`]s out; no I/O, no clock, no lock. One owner (the entry loop) drives it. (Only
//! `ChildRef::new`, called where watch events and plans are read, takes a lock: that of the
//! process-wide set of namespace texts.)
//!
//! ork's own writes never trigger a call. For CRs that follows from the fingerprint: status,
//! ork's annotations and finalizers are not part of it, so only a change someone made to what the
//! service sees moves it. For children, ork's writes are told to the index when the reconcile
//! that made them finishes ([`Index::finish`]); an event about a child of a CR in flight waits
//! until then, so it is judged knowing every write that reconcile made.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use ork_engine::gate::{CompiledGate, sentinels};
use ork_engine::queue::Reason;
use ork_katalog::Sentinel;
use serde_json::Value;

mod children;
mod crs;
mod fingerprint;
mod sweep;
#[cfg(test)]
mod tests;
mod uid;

pub(crate) use fingerprint::{child_fingerprint, cr_fingerprint, fingerprint};
use uid::Uid;

/// What the index asks of the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Reconcile `key` for `reason`.
    Enqueue(String, Reason),
    /// The CR is gone: drop its queue entry, backoff and per-key state.
    Forget(String),
}

/// A child by type (index into the entry's managed types), namespace and name. The index keeps
/// each child's twice (by name, and in its owner's list): its texts are shared, and a namespace
/// is one text for all its children ([`shared_namespace`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ChildRef {
    pub type_index: usize,
    pub namespace: Option<Arc<str>>,
    pub name: Arc<str>,
}

impl ChildRef {
    pub fn new(type_index: usize, namespace: Option<&str>, name: &str) -> ChildRef {
        ChildRef {
            type_index,
            namespace: namespace.map(shared_namespace),
            name: name.into(),
        }
    }
}

/// The one text of namespace `ns` that every [`ChildRef`] in it points at. Texts no child
/// points at any more are let go when the set has doubled since it was last pruned, so a cluster
/// whose namespaces come and go keeps only those in use.
pub(crate) fn shared_namespace(ns: &str) -> Arc<str> {
    struct Shared {
        texts: HashSet<Arc<str>>,
        prune_at: usize,
    }
    static SHARED: Mutex<Option<Shared>> = Mutex::new(None);
    let mut guard = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    let shared = guard.get_or_insert_with(|| Shared {
        texts: HashSet::new(),
        prune_at: 64,
    });
    if let Some(text) = shared.texts.get(ns) {
        return text.clone();
    }
    if shared.texts.len() >= shared.prune_at {
        shared.texts.retain(|t| Arc::strong_count(t) > 1);
        shared.prune_at = (shared.texts.len() * 2).max(64);
    }
    let text: Arc<str> = ns.into();
    shared.texts.insert(text.clone());
    text
}

/// One watch event, reduced to what the index needs.
#[derive(Debug, Clone)]
pub(crate) enum Seen<T> {
    /// A (re-)list begins.
    Init,
    /// An object of the (re-)list, or a change outside it.
    Object {
        listing: bool,
        object: T,
    },
    /// The (re-)list is complete: what it did not contain is gone.
    InitDone,
    Deleted(T),
}

/// A CR as the index sees it.
#[derive(Debug, Clone)]
pub(crate) struct CrView {
    pub key: String,
    pub uid: String,
    /// Hash of what the service sees of the CR (no status, no server bookkeeping, no ork marks).
    pub fingerprint: u64,
    /// The CR as JSON; only needed when the entry declares sentinels or an enqueue gate.
    pub json: Option<Value>,
    /// Its `requested-at` annotation: a new value asks for a reconcile now.
    pub requested_at: Option<String>,
}

/// A child as the index sees it.
#[derive(Debug, Clone)]
pub(crate) struct ChildView {
    pub child: ChildRef,
    pub uid: String,
    /// UID of the CR that owns it (ork's owner label, present only on children ork applied).
    pub owner_uid: Option<String>,
    /// Queue key of the owner, when the owner annotation names this entry.
    pub owner_key: Option<String>,
    /// Whether ork deletes it when that CR goes without ork's finalizer: no owner reference
    /// hands it to the garbage collector (another namespace, cluster-scoped), and it names a CR
    /// of this entry's type (`OWNER_KIND`).
    pub sweepable: bool,
    /// Whether its ownership rests on ork's mark (SPEC §11) rather than an owner reference:
    /// only such a child may live outside its CR's namespace.
    pub marked: bool,
    /// Hash of the child without status and server bookkeeping.
    pub fingerprint: u64,
}

/// A child ork applied for a CR that is gone without ork having deleted its children (see
/// [`Index::take_strays`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stray {
    pub child: ChildRef,
    /// The UID of the child as the watch last saw it.
    pub uid: String,
    /// The UID of the CR it was applied for.
    pub owner_uid: String,
}

/// A child ork applied: the fingerprint and UID of the object the API server returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub child: ChildRef,
    pub fingerprint: u64,
    pub uid: String,
}

/// Writes one reconcile made, reported when it finishes.
#[derive(Debug, Default, Clone)]
pub(crate) struct OwnWrites {
    /// Children applied, as the API server returned them.
    pub applied: Vec<Applied>,
    /// Children deleted, with their UIDs.
    pub deleted: Vec<(ChildRef, String)>,
}

#[derive(Debug)]
struct CrState {
    uid: Uid,
    fingerprint: u64,
    /// What the enqueue gate and sentinels last read (kept only when the entry has them).
    previous: Option<Box<Value>>,
    requested_at: Option<String>,
}

#[derive(Debug)]
struct ChildState {
    uid: Uid,
    owner_uid: Option<Uid>,
    /// The owner's key: the text of its entry in `crs` when the CR is known.
    owner_key: Option<Arc<str>>,
    sweepable: bool,
    marked: bool,
    fingerprint: u64,
    /// The fingerprint ork's own last apply produced.
    expected: Option<u64>,
}

impl ChildState {
    /// Whether ork deletes this child when its owner, the CR under `key`, is gone.
    fn sweepable_for(&self, key: &str) -> bool {
        self.sweepable && self.owner_key.as_deref() == Some(key)
    }
}

/// What the gate of an event needs besides the CR: the entry's health as JSON.
pub(crate) type GateContext<'a> = &'a dyn Fn(&Value) -> Value;

#[derive(Debug)]
pub(crate) struct Index {
    declared: Vec<Sentinel>,
    enqueue_gate: Option<CompiledGate>,
    /// The CR keys are shared with the children that name them as owner.
    crs: HashMap<Arc<str>, CrState>,
    /// The UIDs of the CRs in `crs`.
    live: HashSet<Uid>,
    /// Whether the CRs' watch has completed a list: before, a child whose owner is not in
    /// `crs` may just not have been listed yet.
    crs_listed: bool,
    /// Per queue key, the UIDs of CRs under that key that went away while children ork applied
    /// for them and the garbage collector will not delete may still exist: their sweep is due.
    gone: HashMap<String, BTreeSet<Uid>>,
    /// Owner UIDs a sweep found alive outside the entry's view (see [`Index::keep`]).
    kept: HashSet<Uid>,
    sentinels: HashMap<String, BTreeMap<Sentinel, bool>>,
    children: HashMap<ChildRef, ChildState>,
    /// Per owner UID its children, sorted: a CR has a few, and a B-tree node per CR would cost
    /// more than its children.
    by_owner: HashMap<Uid, Vec<ChildRef>>,
    /// Fingerprints ork's own applies produced, of children the watch has not shown yet (of a
    /// known child, its state holds it).
    expected_unseen: HashMap<ChildRef, u64>,
    /// UIDs of children ork deleted: their deletion is not a change.
    deleted_by_ork: HashSet<Uid>,
    /// Keys whose reconcile runs; child events for them wait here until it finishes (with the
    /// UID of a child that was deleted).
    in_flight: HashMap<String, Vec<(ChildRef, Option<String>)>>,
    /// Per CR key, the child whose change (`false`) or deletion (`true`) last queued its
    /// reconcile: the flight recorder names it ([`Index::take_drift`]).
    drifted: HashMap<String, (ChildRef, bool)>,
    listing_crs: Option<HashSet<String>>,
    /// What a re-list triggers waits for its end: the watch's cache swaps the listed objects
    /// in only at `InitDone`, and a reconcile must read the new copies, not the old ones.
    /// Per watch: `None` for the CRs', else (type, scope) of a children's watch.
    held_back: HashMap<Option<(usize, Option<String>)>, Vec<Effect>>,
    /// Re-lists in progress, by type and watch scope (a namespace, or all).
    listing_children: HashMap<(usize, Option<String>), HashSet<ChildRef>>,
    /// Whether the entry's protocol sees its own writes ([`Index::observe_own_writes`]).
    observes_own_writes: bool,
}

impl Index {
    pub fn new(declared: Vec<Sentinel>, enqueue_gate: Option<CompiledGate>) -> Index {
        Index {
            declared,
            enqueue_gate,
            crs: HashMap::new(),
            live: HashSet::new(),
            crs_listed: false,
            gone: HashMap::new(),
            kept: HashSet::new(),
            sentinels: HashMap::new(),
            children: HashMap::new(),
            by_owner: HashMap::new(),
            expected_unseen: HashMap::new(),
            deleted_by_ork: HashSet::new(),
            in_flight: HashMap::new(),
            drifted: HashMap::new(),
            listing_crs: None,
            held_back: HashMap::new(),
            listing_children: HashMap::new(),
            observes_own_writes: false,
        }
    }

    /// The entry's protocol sees its own writes (a Metacontroller controller, SPEC §15): once
    /// the watch shows a child as a reconcile wrote it (applied, or deleted), its owner is
    /// queued with [`Reason::Written`], so the service observes the children it made.
    pub fn observe_own_writes(&mut self) {
        self.observes_own_writes = true;
    }

    /// Whether events must carry the CR's JSON (sentinels or an enqueue gate are declared).
    pub fn wants_json(&self) -> bool {
        !self.declared.is_empty() || self.enqueue_gate.is_some()
    }

    /// Whether `key` is known (listed and not deleted).
    pub fn has_cr(&self, key: &str) -> bool {
        self.crs.contains_key(key)
    }

    /// Every known CR key.
    pub fn keys(&self) -> Vec<String> {
        self.keys_where(|_| true)
    }

    /// The known CR keys that pass `mine`, copied only when they do (a resync tick looks at
    /// every key and takes a few hundredth of them).
    pub fn keys_where(&self, mine: impl Fn(&str) -> bool) -> Vec<String> {
        self.crs
            .keys()
            .filter(|k| mine(k))
            .map(|k| k.to_string())
            .collect()
    }

    /// `key` as a text shared with the CR's entry when the CR is known.
    fn shared_key(&self, key: &str) -> Arc<str> {
        self.crs
            .get_key_value(key)
            .map_or_else(|| Arc::from(key), |(k, _)| k.clone())
    }
}
