//! The per-entry index: what the watches have seen, in the shape reconciles need it (children by
//! owner UID, sentinels), and which keys a watch event must trigger. Pure: watch events in,
//! [`Effect`]s out; no I/O, no clock, no lock. One owner (the entry's controller) drives it.
//!
//! ork's own writes never trigger a call. For CRs that follows from the fingerprint: status,
//! ork's annotations and finalizers are not part of it, so only a change someone made to what the
//! service sees moves it. For children, ork's writes are told to the index when the reconcile
//! that made them finishes ([`Index::finish`]); an event about a child of a CR in flight waits
//! until then, so it is judged knowing every write that reconcile made.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use kube::core::DynamicObject;
use ork_engine::gate::{CompiledGate, sentinels};
use ork_engine::queue::Reason;
use ork_katalog::Sentinel;
use serde_json::Value;

use crate::fnv::Fnv;
use crate::labels::PREFIX;

/// What the index asks of the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Reconcile `key` for `reason`.
    Enqueue(String, Reason),
    /// The CR is gone: drop its queue entry, backoff and per-key state.
    Forget(String),
}

/// A child by type (index into the entry's managed types), namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ChildRef {
    pub type_index: usize,
    pub namespace: Option<String>,
    pub name: String,
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
    uid: String,
    fingerprint: u64,
    previous: Option<Value>,
    requested_at: Option<String>,
}

#[derive(Debug)]
struct ChildState {
    uid: String,
    owner_uid: Option<String>,
    owner_key: Option<String>,
    sweepable: bool,
    marked: bool,
    fingerprint: u64,
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
    crs: HashMap<String, CrState>,
    /// The UIDs of the CRs in `crs`.
    live: HashSet<String>,
    /// Whether the CRs' watch has completed a list: before, a child whose owner is not in
    /// `crs` may just not have been listed yet.
    crs_listed: bool,
    /// Per queue key, the UIDs of CRs under that key that went away while children ork applied
    /// for them and the garbage collector will not delete may still exist: their sweep is due.
    gone: HashMap<String, BTreeSet<String>>,
    /// Owner UIDs a sweep found alive outside the entry's view (see [`Index::keep`]).
    kept: HashSet<String>,
    sentinels: HashMap<String, BTreeMap<Sentinel, bool>>,
    children: HashMap<ChildRef, ChildState>,
    /// Per owner UID its children, sorted: a CR has a few, and a B-tree node per CR would cost
    /// more than its children.
    by_owner: HashMap<String, Vec<ChildRef>>,
    /// Fingerprints ork's own applies produced, per child.
    expected: HashMap<ChildRef, u64>,
    /// UIDs of children ork deleted: their deletion is not a change.
    deleted_by_ork: HashSet<String>,
    /// Keys whose reconcile runs; child events for them wait here until it finishes (with the
    /// UID of a child that was deleted).
    in_flight: HashMap<String, Vec<(ChildRef, Option<String>)>>,
    listing_crs: Option<HashSet<String>>,
    /// What a re-list triggers waits for its end: the watch's cache swaps the listed objects
    /// in only at `InitDone`, and a reconcile must read the new copies, not the old ones.
    /// Per watch: `None` for the CRs', else (type, scope) of a children's watch.
    held_back: HashMap<Option<(usize, Option<String>)>, Vec<Effect>>,
    /// Re-lists in progress, by type and watch scope (a namespace, or all).
    listing_children: HashMap<(usize, Option<String>), HashSet<ChildRef>>,
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
            expected: HashMap::new(),
            deleted_by_ork: HashSet::new(),
            in_flight: HashMap::new(),
            listing_crs: None,
            held_back: HashMap::new(),
            listing_children: HashMap::new(),
        }
    }

    /// Whether events must carry the CR's JSON (sentinels or an enqueue gate are declared).
    pub fn wants_json(&self) -> bool {
        !self.declared.is_empty() || self.enqueue_gate.is_some()
    }

    /// A watch event of the entry's CRs.
    pub fn cr_event(&mut self, seen: Seen<CrView>, gate: GateContext<'_>) -> Vec<Effect> {
        match seen {
            Seen::Init => {
                self.listing_crs = Some(HashSet::new());
                Vec::new()
            }
            Seen::InitDone => {
                let mut out = self.held_back.remove(&None).unwrap_or_default();
                if let Some(listed) = self.listing_crs.take() {
                    let gone: Vec<String> = self
                        .crs
                        .keys()
                        .filter(|k| !listed.contains(*k))
                        .cloned()
                        .collect();
                    for key in gone {
                        out.extend(self.forget_cr(key));
                    }
                }
                self.crs_listed = true;
                self.kept.clear();
                out.extend(self.orphans());
                out
            }
            Seen::Deleted(view) => self.forget_cr(view.key),
            Seen::Object {
                listing,
                object: view,
            } => {
                if listing && let Some(listed) = self.listing_crs.as_mut() {
                    listed.insert(view.key.clone());
                }
                let mut effects: Vec<Effect> = self.replaced(&view).into_iter().collect();
                effects.extend(self.cr_changed(view, gate));
                if listing {
                    self.held_back.entry(None).or_default().extend(effects);
                    Vec::new()
                } else {
                    effects
                }
            }
        }
    }

    /// A CR under a known key with another UID: the old one was deleted and this one created
    /// while the watch was away. The new one is new (a create, whatever its spec), and the old
    /// one's children are swept.
    fn replaced(&mut self, view: &CrView) -> Option<Effect> {
        let state = self.crs.get(&view.key)?;
        if state.uid == view.uid {
            return None;
        }
        let old = self.crs.remove(&view.key)?.uid;
        self.live.remove(&old);
        self.went(view.key.clone(), old)
    }

    fn cr_changed(&mut self, view: CrView, gate: GateContext<'_>) -> Option<Effect> {
        let keep_json = self.wants_json();
        let previous = self.crs.get(&view.key);
        // A new `requested-at` (ork's own prefix, so not in the fingerprint) asks for now.
        let requested = view.requested_at.is_some()
            && previous.is_some_and(|p| p.requested_at != view.requested_at);
        if !requested && previous.is_some_and(|p| p.fingerprint == view.fingerprint) {
            // ork's own write (status, annotations, finalizer) or a status-only change.
            if let Some(state) = self.crs.get_mut(&view.key) {
                state.requested_at = view.requested_at;
                if keep_json {
                    state.previous = view.json;
                }
            }
            return None;
        }
        let reason = if previous.is_none() {
            Reason::Create
        } else if requested {
            Reason::Manual
        } else {
            Reason::Update
        };
        let before = previous.and_then(|p| p.previous.clone());
        self.kept.remove(&view.uid);
        self.live.insert(view.uid.clone());
        self.crs.insert(
            view.key.clone(),
            CrState {
                uid: view.uid,
                fingerprint: view.fingerprint,
                previous: if keep_json { view.json.clone() } else { None },
                requested_at: view.requested_at.clone(),
            },
        );
        if keep_json {
            let current = view.json.unwrap_or(Value::Null);
            let s = sentinels(&self.declared, before.as_ref(), &current);
            if let Some(g) = &self.enqueue_gate
                && let Err(why) = g.evaluate(&gate(&current), &s)
            {
                tracing::debug!(key = %view.key, reason = %why, "enqueue gate closed");
                return None;
            }
            self.sentinels.insert(view.key.clone(), s);
        }
        Some(Effect::Enqueue(view.key, reason))
    }

    fn forget_cr(&mut self, key: String) -> Vec<Effect> {
        let state = self.crs.remove(&key);
        self.sentinels.remove(&key);
        let mut out = vec![Effect::Forget(key.clone())];
        if let Some(state) = state {
            self.live.remove(&state.uid);
            self.went(key.clone(), state.uid);
        }
        // The forget drops the key's queue place: a sweep still due under it (this CR's, or an
        // earlier one's under the same name) is queued again.
        if self.gone.contains_key(&key) {
            out.push(Effect::Enqueue(key, Reason::Sweep));
        }
        out
    }

    /// The keys with a sweep due (queued with every resync, and when a shard is taken over).
    pub fn due_sweeps(&self) -> Vec<String> {
        self.gone.keys().cloned().collect()
    }

    /// The CR `uid` under `key` is gone. Children ork applied for it that no owner reference
    /// hands to the garbage collector (other namespaces, cluster-scoped) are ork's to delete:
    /// normally its finalizer sees to that, but a CR can go without it (a finalizer removed by
    /// hand, a delete that raced the finalizer's patch at the API server, kubernetes#77988).
    /// Their sweep is queued under the CR's key, so it runs where that key is reconciled (the
    /// leader, the shard's holder) and after a reconcile of the key in flight.
    fn went(&mut self, key: String, uid: String) -> Option<Effect> {
        if !self.sweepable(&key, &uid) {
            return None;
        }
        self.gone.entry(key.clone()).or_default().insert(uid);
        // Queued every time, not only the first: the queue merges repeats, and a replica that
        // dropped the key (a shard it did not hold then) must get it again.
        Some(Effect::Enqueue(key, Reason::Sweep))
    }

    /// Whether the CR `uid` under `key` has children ork would sweep.
    fn sweepable(&self, key: &str, uid: &str) -> bool {
        self.by_owner.get(uid).is_some_and(|children| {
            children.iter().any(|c| {
                self.children
                    .get(c)
                    .is_some_and(|state| state.sweepable_for(key))
            })
        })
    }

    /// The last sweepable child of the CR `owner` under `key` is gone some other way (ork's
    /// finalize deleted it, someone else did, or the leader swept it while this replica
    /// stands by): the sweep due is dropped, and with it the key's place in the queue when no
    /// CR lives under it.
    fn settle(&mut self, key: Option<&str>, owner: &str) -> Option<Effect> {
        let key = key?;
        if !self
            .gone
            .get(key)
            .is_some_and(|owners| owners.contains(owner))
            || self.sweepable(key, owner)
        {
            return None;
        }
        let owners = self.gone.get_mut(key)?;
        if !owners.remove(owner) || !owners.is_empty() {
            return None;
        }
        self.gone.remove(key);
        (!self.crs.contains_key(key)).then(|| Effect::Forget(key.to_string()))
    }

    /// Every owner UID with sweepable children and no CR (once the CRs are listed: at start, or
    /// after a re-list): children whose CR went while ork was not watching.
    fn orphans(&mut self) -> Vec<Effect> {
        let found: BTreeSet<(String, String)> = self
            .by_owner
            .iter()
            .filter(|(uid, _)| !self.live.contains(*uid))
            .flat_map(|(uid, children)| {
                children
                    .iter()
                    .filter_map(|c| self.children.get(c))
                    .filter(|state| state.sweepable)
                    .filter_map(|state| Some((state.owner_key.clone()?, uid.clone())))
            })
            .collect();
        found
            .into_iter()
            .filter_map(|(key, uid)| self.went(key, uid))
            .collect()
    }

    /// A child whose owner is not among the CRs (known once they are listed, not during a
    /// re-list): its sweep is queued. A child of a CR that exists outside the entry's view
    /// (another label, a namespace the entry does not allow) is found alive by the sweep and
    /// kept; it is looked at again only after the next list of the CRs.
    fn stray_seen(&mut self, child: &ChildRef) -> Option<Effect> {
        if !self.crs_listed || self.listing_crs.is_some() {
            return None;
        }
        let state = self.children.get(child)?;
        let owner = state.owner_uid.as_ref()?;
        if !state.sweepable || self.live.contains(owner) || self.kept.contains(owner) {
            return None;
        }
        let (key, owner) = (state.owner_key.clone()?, owner.clone());
        self.went(key, owner)
    }

    /// The sweep due under `key`: the children of CRs that went under that key, still
    /// sweepable (see [`ChildView::sweepable`]), not deleted by ork, their CR not back.
    pub fn take_strays(&mut self, key: &str) -> Vec<Stray> {
        let Some(owners) = self.gone.remove(key) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for owner in owners.into_iter().filter(|o| !self.live.contains(o)) {
            for child in self.by_owner.get(&owner).into_iter().flatten() {
                let Some(state) = self.children.get(child) else {
                    continue;
                };
                if state.sweepable_for(key) && !self.deleted_by_ork.contains(&state.uid) {
                    out.push(Stray {
                        child: child.clone(),
                        uid: state.uid.clone(),
                        owner_uid: owner.clone(),
                    });
                }
            }
        }
        out
    }

    /// The sweep under `key` could not finish for the CR `owner_uid`: due again.
    pub fn sweep_again(&mut self, key: &str, owner_uid: &str) {
        self.gone
            .entry(key.to_string())
            .or_default()
            .insert(owner_uid.to_string());
    }

    /// The CR `owner_uid` exists, outside the entry's view: its children stay.
    pub fn keep(&mut self, owner_uid: &str) {
        self.kept.insert(owner_uid.to_string());
    }

    /// Children ork deleted (a reconcile's prune, a sweep): their deletion events are not drift.
    pub fn swept(&mut self, deleted: Vec<(ChildRef, String)>) {
        for (child, uid) in deleted {
            // Its deletion event is still to come: mark it so it is not taken for drift.
            if self.children.get(&child).is_some_and(|c| c.uid == uid) {
                self.deleted_by_ork.insert(uid);
            }
        }
    }

    /// A watch event of the children of managed type `type_index`, from the watch of `scope`
    /// (one namespace, or `None` for all).
    pub fn child_event(
        &mut self,
        type_index: usize,
        scope: Option<&str>,
        seen: Seen<ChildView>,
    ) -> Vec<Effect> {
        let id = (type_index, scope.map(str::to_string));
        match seen {
            Seen::Init => {
                self.listing_children.insert(id, HashSet::new());
                Vec::new()
            }
            Seen::InitDone => {
                let mut out = self.held_back.remove(&Some(id.clone())).unwrap_or_default();
                let Some(listed) = self.listing_children.remove(&id) else {
                    return out;
                };
                // Children listed before the CRs were: their owners are known now.
                for c in &listed {
                    out.extend(self.stray_seen(c));
                }
                // Children deleted while the watch was down: their owners must look again.
                let in_scope =
                    |c: &ChildRef| scope.is_none_or(|ns| c.namespace.as_deref() == Some(ns));
                let gone: Vec<ChildRef> = self
                    .children
                    .keys()
                    .filter(|c| c.type_index == type_index && in_scope(c) && !listed.contains(*c))
                    .cloned()
                    .collect();
                for c in gone {
                    out.extend(self.child_gone(&c));
                }
                out
            }
            Seen::Deleted(view) => self.child_gone(&view.child),
            Seen::Object {
                listing,
                object: view,
            } => {
                if listing && let Some(listed) = self.listing_children.get_mut(&id) {
                    listed.insert(view.child.clone());
                }
                let effect = self.child_changed(view);
                if listing {
                    self.held_back
                        .entry(Some(id.clone()))
                        .or_default()
                        .extend(effect);
                    Vec::new()
                } else {
                    effect.into_iter().collect()
                }
            }
        }
    }

    fn child_changed(&mut self, view: ChildView) -> Vec<Effect> {
        let ChildView {
            child,
            uid,
            owner_uid,
            owner_key,
            sweepable,
            marked,
            fingerprint,
        } = view;
        let previous = self.children.insert(
            child.clone(),
            ChildState {
                uid,
                owner_uid: owner_uid.clone(),
                owner_key: owner_key.clone(),
                sweepable,
                marked,
                fingerprint,
            },
        );
        // Taken over by another CR: a sweep due for the old owner may have nothing left.
        let mut out: Vec<Effect> = Vec::new();
        if let Some(prev) = &previous
            && let Some(prev_owner) = &prev.owner_uid
            && Some(prev_owner) != owner_uid.as_ref()
        {
            self.unlink(prev_owner.clone(), &child);
            out.extend(self.settle(prev.owner_key.as_deref(), prev_owner));
        }
        if let Some(owner) = &owner_uid {
            let children = self.by_owner.entry(owner.clone()).or_default();
            if let Err(at) = children.binary_search(&child) {
                children.insert(at, child.clone());
            }
        }
        out.extend(self.stray_seen(&child));
        // A child that appears is ork's own apply, or an object someone labelled; only a change
        // or a deletion of a known child is drift.
        if let Some(prev) = previous
            && prev.fingerprint != fingerprint
            && self.expected.get(&child) != Some(&fingerprint)
        {
            out.extend(self.drift(owner_key, child, None));
        }
        out
    }

    fn child_gone(&mut self, child: &ChildRef) -> Vec<Effect> {
        let Some(state) = self.children.remove(child) else {
            return Vec::new();
        };
        self.expected.remove(child);
        let mut out = Vec::new();
        if let Some(owner) = &state.owner_uid {
            self.unlink(owner.clone(), child);
            out.extend(self.settle(state.owner_key.as_deref(), owner));
        }
        if !self.deleted_by_ork.remove(&state.uid) {
            out.extend(self.drift(state.owner_key, child.clone(), Some(state.uid)));
        }
        out
    }

    /// Someone changed or deleted a child: its owner is reconciled, or, while the owner's
    /// reconcile runs, judged when it finishes.
    fn drift(
        &mut self,
        owner_key: Option<String>,
        child: ChildRef,
        gone_uid: Option<String>,
    ) -> Option<Effect> {
        let owner = owner_key.filter(|k| self.crs.contains_key(k))?;
        if let Some(waiting) = self.in_flight.get_mut(&owner) {
            waiting.push((child, gone_uid));
            return None;
        }
        Some(Effect::Enqueue(owner, Reason::Child))
    }

    fn unlink(&mut self, owner: String, child: &ChildRef) {
        if let Some(set) = self.by_owner.get_mut(&owner) {
            if let Ok(at) = set.binary_search(child) {
                set.remove(at);
            }
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
    }

    /// The children ork applied for the CR with `owner_uid` in `owner_namespace`
    /// (owner-indexed, no scan): those in the CR's namespace, and elsewhere only those whose
    /// ownership rests on ork's mark. An owner reference does not cross namespaces, so one to
    /// this CR's UID in another namespace is a tenant's forgery, not a child.
    pub fn children_of(&self, owner_uid: &str, owner_namespace: Option<&str>) -> Vec<ChildRef> {
        self.by_owner
            .get(owner_uid)
            .into_iter()
            .flatten()
            .filter(|c| {
                c.namespace.as_deref() == owner_namespace
                    || self.children.get(*c).is_some_and(|s| s.marked)
            })
            .cloned()
            .collect()
    }

    /// The sentinels computed when `key` was last triggered (consumed by its reconcile).
    pub fn take_sentinels(&mut self, key: &str) -> BTreeMap<Sentinel, bool> {
        self.sentinels.remove(key).unwrap_or_default()
    }

    /// The sentinels of `key` without consuming them (`ork check`).
    pub fn peek_sentinels(&self, key: &str) -> BTreeMap<Sentinel, bool> {
        self.sentinels.get(key).cloned().unwrap_or_default()
    }

    /// A reconcile of `key` starts.
    pub fn begin(&mut self, key: &str) {
        self.in_flight.insert(key.to_string(), Vec::new());
    }

    /// The reconcile of `key` ended having made `own` writes: child events that arrived
    /// meanwhile are judged now, knowing those writes.
    pub fn finish(&mut self, key: &str, own: OwnWrites) -> Vec<Effect> {
        let waiting = self.in_flight.remove(key).unwrap_or_default();
        let recreated = |child: &ChildRef, gone: &str| {
            own.applied
                .iter()
                .any(|a| &a.child == child && a.uid != gone)
        };
        for a in &own.applied {
            self.expected.insert(a.child.clone(), a.fingerprint);
        }
        let drifted = waiting.iter().any(|(child, gone_uid)| match gone_uid {
            // Deleted meanwhile: drift unless ork deleted it, or applied it anew after (the
            // object it got back is another one).
            Some(uid) => !own.deleted.iter().any(|(_, u)| u == uid) && !recreated(child, uid),
            // Changed meanwhile: drift unless it now is exactly what ork applied.
            None => self
                .children
                .get(child)
                .is_none_or(|state| self.expected.get(child) != Some(&state.fingerprint)),
        });
        self.swept(own.deleted);
        if drifted && self.crs.contains_key(key) {
            vec![Effect::Enqueue(key.to_string(), Reason::Child)]
        } else {
            Vec::new()
        }
    }

    /// Whether `key` is known (listed and not deleted).
    #[cfg(test)]
    pub fn has_cr(&self, key: &str) -> bool {
        self.crs.contains_key(key)
    }

    /// Every known CR key.
    pub fn keys(&self) -> Vec<String> {
        self.crs.keys().cloned().collect()
    }
}

/// What of a CR counts as a change to reconcile: its spec and data, labels and annotations that
/// are not ork's own (its prefix, and the keys in `own` the entry writes), and the deletion mark.
/// Not status, resourceVersion, managedFields or finalizers: ork's own writes touch only those.
/// Hashed as it is read, without building a copy: it runs for every watch event.
pub(crate) fn cr_fingerprint(obj: &DynamicObject, own: &BTreeSet<String>) -> u64 {
    let meta = &obj.metadata;
    let theirs = |(k, _): &(&String, &String)| !k.starts_with(PREFIX) && !own.contains(*k);
    let mut h = Fnv::default();
    h.pairs(meta.labels.iter().flatten().filter(theirs));
    h.pairs(meta.annotations.iter().flatten().filter(theirs));
    h.deletion(meta);
    h.without_status(&obj.data);
    h.finish()
}

/// What of a child counts as a change someone made: everything but server bookkeeping and
/// status.
pub(crate) fn child_fingerprint(obj: &DynamicObject) -> u64 {
    let meta = &obj.metadata;
    let mut h = Fnv::default();
    h.pairs(meta.labels.iter().flatten());
    h.pairs(meta.annotations.iter().flatten());
    h.bytes(b"[");
    for r in meta.owner_references.iter().flatten() {
        for part in [&r.api_version, &r.kind, &r.name, &r.uid] {
            h.str(part);
        }
        for flag in [r.controller, r.block_owner_deletion] {
            h.bytes(match flag {
                None => b"n",
                Some(true) => b"t",
                Some(false) => b"f",
            });
        }
    }
    h.bytes(b"]");
    h.deletion(meta);
    h.without_status(&obj.data);
    h.finish()
}

/// A stable 64-bit hash (FNV-1a) of a JSON value's canonical text: the same content gives the
/// same fingerprint in every run and on every machine (it is kept in the applied annotation).
pub(crate) fn fingerprint(v: &Value) -> u64 {
    let mut h = Fnv::default();
    h.value(v);
    h.finish()
}

/// The canonical byte streams of what the index compares, fed to [`Fnv`].
impl Fnv {
    /// A map's entries in the order given (a `BTreeMap`'s: canonical).
    fn pairs<'a>(&mut self, pairs: impl Iterator<Item = (&'a String, &'a String)>) {
        self.bytes(b"{");
        for (k, v) in pairs {
            self.str(k);
            self.str(v);
        }
        self.bytes(b"}");
    }

    fn deletion(&mut self, meta: &kube::core::ObjectMeta) {
        match &meta.deletion_timestamp {
            Some(t) => self.str(&t.0.to_string()),
            None => self.bytes(b"n"),
        }
    }

    /// The object's body but its `status`.
    fn without_status(&mut self, data: &Value) {
        match data {
            Value::Object(m) => {
                self.bytes(b"{");
                for (k, x) in m.iter().filter(|(k, _)| k.as_str() != "status") {
                    self.str(k);
                    self.value(x);
                }
                self.bytes(b"}");
            }
            other => self.value(other),
        }
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.bytes(b"n"),
            Value::Bool(b) => self.bytes(if *b { b"t" } else { b"f" }),
            Value::Number(n) => {
                self.bytes(b"#");
                self.bytes(n.to_string().as_bytes());
            }
            Value::String(s) => {
                self.bytes(b"\"");
                self.str(s);
            }
            Value::Array(a) => {
                self.bytes(b"[");
                for x in a {
                    self.value(x);
                }
                self.bytes(b"]");
            }
            Value::Object(m) => {
                // serde_json's map is ordered by key, so the order is canonical.
                self.bytes(b"{");
                for (k, x) in m {
                    self.str(k);
                    self.value(x);
                }
                self.bytes(b"}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_gate(_: &Value) -> Value {
        Value::Null
    }

    fn cr(key: &str, fingerprint: u64) -> Seen<CrView> {
        Seen::Object {
            listing: false,
            object: CrView {
                key: key.into(),
                uid: format!("uid-{key}"),
                fingerprint,
                json: None,
                requested_at: None,
            },
        }
    }

    fn child(name: &str, owner: &str, fingerprint: u64) -> ChildView {
        ChildView {
            child: ChildRef {
                type_index: 0,
                namespace: Some("ns".into()),
                name: name.into(),
            },
            uid: format!("uid-{name}"),
            owner_uid: Some(format!("uid-{owner}")),
            owner_key: Some(owner.into()),
            sweepable: false,
            marked: false,
            fingerprint,
        }
    }

    fn applied(name: &str, fingerprint: u64) -> Applied {
        Applied {
            child: child(name, "ns/a", fingerprint).child,
            fingerprint,
            uid: format!("uid-{name}"),
        }
    }

    fn seen(view: ChildView) -> Seen<ChildView> {
        Seen::Object {
            listing: false,
            object: view,
        }
    }

    fn enqueue(key: &str, reason: Reason) -> Vec<Effect> {
        vec![Effect::Enqueue(key.into(), reason)]
    }

    #[test]
    fn a_new_requested_at_asks_for_a_reconcile_now_and_the_same_one_does_not_again() {
        let asked = |at: Option<&str>| {
            let mut seen = cr("ns/a", 1);
            if let Seen::Object { object, .. } = &mut seen {
                object.requested_at = at.map(str::to_string);
            }
            seen
        };
        let mut ix = Index::new(vec![], None);
        assert_eq!(
            ix.cr_event(asked(Some("t0")), &no_gate),
            enqueue("ns/a", Reason::Create)
        );
        assert!(ix.cr_event(asked(Some("t0")), &no_gate).is_empty());
        assert_eq!(
            ix.cr_event(asked(Some("t1")), &no_gate),
            enqueue("ns/a", Reason::Manual),
            "a new value, the spec unchanged"
        );
        assert!(
            ix.cr_event(asked(None), &no_gate).is_empty(),
            "removing it asks for nothing"
        );
    }

    #[test]
    fn a_create_triggers_once_and_own_status_writes_do_not() {
        let mut ix = Index::new(vec![], None);
        assert_eq!(
            ix.cr_event(cr("ns/a", 1), &no_gate),
            enqueue("ns/a", Reason::Create)
        );
        // Status and annotation writes leave the fingerprint alone.
        assert!(ix.cr_event(cr("ns/a", 1), &no_gate).is_empty());
        assert_eq!(
            ix.cr_event(cr("ns/a", 2), &no_gate),
            enqueue("ns/a", Reason::Update)
        );
    }

    #[test]
    fn children_are_found_by_owner_and_a_relist_drops_the_deleted_ones() {
        let mut ix = Index::new(vec![], None);
        ix.cr_event(cr("ns/a", 1), &no_gate);
        ix.child_event(0, None, seen(child("one", "ns/a", 1)));
        ix.child_event(0, None, seen(child("two", "ns/a", 1)));
        assert_eq!(ix.children_of("uid-ns/a", Some("ns")).len(), 2);

        // The watch restarts; "two" was deleted during the gap.
        ix.child_event(0, None, Seen::Init);
        ix.child_event(
            0,
            None,
            Seen::Object {
                listing: true,
                object: child("one", "ns/a", 1),
            },
        );
        let effects = ix.child_event(0, None, Seen::InitDone);
        assert_eq!(
            effects,
            enqueue("ns/a", Reason::Child),
            "its owner recreates it"
        );
        let names: Vec<String> = ix
            .children_of("uid-ns/a", Some("ns"))
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["one"]);
    }

    #[test]
    fn a_relist_of_one_namespace_keeps_the_children_of_another() {
        let mut ix = Index::new(vec![], None);
        ix.cr_event(cr("ns/a", 1), &no_gate);
        let mut other = child("far", "ns/a", 1);
        other.child.namespace = Some("other".into());
        other.marked = true;
        ix.child_event(0, Some("other"), seen(other));
        ix.child_event(0, Some("ns"), seen(child("near", "ns/a", 1)));
        ix.child_event(0, Some("ns"), Seen::Init);
        assert!(
            ix.child_event(0, Some("ns"), Seen::InitDone).len() == 1,
            "near is gone"
        );
        let names: Vec<String> = ix
            .children_of("uid-ns/a", Some("ns"))
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(
            names,
            ["far"],
            "the other namespace's watch still holds far"
        );
    }

    #[test]
    fn an_unmarked_object_in_another_namespace_is_not_a_child_whatever_it_claims() {
        let mut ix = Index::new(vec![], None);
        ix.cr_event(cr("ns/a", 1), &no_gate);
        // A tenant's object elsewhere naming the CR's UID (label, owner reference): no mark.
        let mut forged = child("forged", "ns/a", 1);
        forged.child.namespace = Some("tenant".into());
        ix.child_event(0, Some("tenant"), seen(forged));
        assert!(ix.children_of("uid-ns/a", Some("ns")).is_empty());
    }

    #[test]
    fn a_hand_edit_of_a_child_triggers_its_owner_but_ork_s_apply_does_not() {
        let mut ix = Index::new(vec![], None);
        ix.cr_event(cr("ns/a", 1), &no_gate);
        ix.child_event(0, None, seen(child("one", "ns/a", 1)));
        assert_eq!(
            ix.child_event(0, None, seen(child("one", "ns/a", 2))),
            enqueue("ns/a", Reason::Child)
        );

        // ork applies while the owner is in flight; the watch event arrives before the apply
        // returns. Judged at finish: ork's own.
        ix.begin("ns/a");
        assert!(
            ix.child_event(0, None, seen(child("one", "ns/a", 3)))
                .is_empty()
        );
        let own = OwnWrites {
            applied: vec![applied("one", 3)],
            deleted: vec![],
        };
        assert!(ix.finish("ns/a", own).is_empty());
        // Later the same fingerprint again (resync of the watch): still ork's own.
        assert!(
            ix.child_event(0, None, seen(child("one", "ns/a", 3)))
                .is_empty()
        );
    }

    #[test]
    fn a_hand_edit_during_the_owner_s_reconcile_is_judged_at_finish() {
        let mut ix = Index::new(vec![], None);
        ix.cr_event(cr("ns/a", 1), &no_gate);
        ix.child_event(0, None, seen(child("one", "ns/a", 1)));
        ix.begin("ns/a");
        ix.child_event(0, None, seen(child("one", "ns/a", 5)));
        // ork applied fingerprint 4, someone else made it 5.
        let own = OwnWrites {
            applied: vec![applied("one", 4)],
            deleted: vec![],
        };
        assert_eq!(ix.finish("ns/a", own), enqueue("ns/a", Reason::Child));
    }

    #[test]
    fn ork_s_own_prune_is_not_drift_but_a_foreign_delete_is() {
        let mut ix = Index::new(vec![], None);
        ix.cr_event(cr("ns/a", 1), &no_gate);
        ix.child_event(0, None, seen(child("one", "ns/a", 1)));
        ix.child_event(0, None, seen(child("two", "ns/a", 1)));
        // ork prunes "one"; its deletion event comes after the reconcile finished.
        ix.begin("ns/a");
        let own = OwnWrites {
            applied: vec![],
            deleted: vec![(child("one", "ns/a", 1).child, "uid-one".into())],
        };
        assert!(ix.finish("ns/a", own).is_empty());
        assert!(
            ix.child_event(0, None, Seen::Deleted(child("one", "ns/a", 1)))
                .is_empty()
        );
        // Someone deletes "two".
        assert_eq!(
            ix.child_event(0, None, Seen::Deleted(child("two", "ns/a", 1))),
            enqueue("ns/a", Reason::Child)
        );
    }

    #[test]
    fn what_a_relist_triggers_waits_for_its_end() {
        // The store swaps the listed copies in at InitDone: a reconcile queued before that
        // would read the old copy (found by the chaos suite's API server restart).
        let mut ix = Index::new(vec![], None);
        ix.cr_event(cr("ns/a", 1), &no_gate);
        ix.cr_event(Seen::Init, &no_gate);
        let edited = Seen::Object {
            listing: true,
            object: CrView {
                key: "ns/a".into(),
                uid: "uid-ns/a".into(),
                fingerprint: 2,
                json: None,
                requested_at: None,
            },
        };
        assert!(ix.cr_event(edited, &no_gate).is_empty(), "held back");
        assert_eq!(
            ix.cr_event(Seen::InitDone, &no_gate),
            enqueue("ns/a", Reason::Update)
        );
    }

    #[test]
    fn a_deleted_cr_is_forgotten_also_when_a_relist_misses_it() {
        let mut ix = Index::new(vec![], None);
        ix.cr_event(cr("ns/a", 1), &no_gate);
        ix.cr_event(cr("ns/b", 1), &no_gate);
        ix.cr_event(Seen::Init, &no_gate);
        ix.cr_event(
            Seen::Object {
                listing: true,
                object: CrView {
                    key: "ns/a".into(),
                    uid: "uid-ns/a".into(),
                    fingerprint: 1,
                    json: None,
                    requested_at: None,
                },
            },
            &no_gate,
        );
        assert_eq!(
            ix.cr_event(Seen::InitDone, &no_gate),
            vec![Effect::Forget("ns/b".into())]
        );
        assert!(ix.has_cr("ns/a") && !ix.has_cr("ns/b"));
    }

    /// A child in another namespace than its CR's: no owner reference, ork deletes it.
    fn far(name: &str, owner: &str) -> ChildView {
        let mut view = child(name, owner, 1);
        view.child.namespace = Some("elsewhere".into());
        view.sweepable = true;
        view
    }

    fn listed(ix: &mut Index, keys: &[&str]) -> Vec<Effect> {
        ix.cr_event(Seen::Init, &no_gate);
        for key in keys {
            let Seen::Object { object, .. } = cr(key, 1) else {
                unreachable!()
            };
            ix.cr_event(
                Seen::Object {
                    listing: true,
                    object,
                },
                &no_gate,
            );
        }
        ix.cr_event(Seen::InitDone, &no_gate)
    }

    fn deleted(key: &str) -> Seen<CrView> {
        let Seen::Object { object, .. } = cr(key, 1) else {
            unreachable!()
        };
        Seen::Deleted(object)
    }

    #[test]
    fn a_far_child_outliving_its_cr_is_swept_under_the_cr_s_key_once() {
        let mut ix = Index::new(vec![], None);
        listed(&mut ix, &["ns/a"]);
        ix.child_event(0, None, seen(far("x", "ns/a")));
        ix.child_event(0, None, seen(child("near", "ns/a", 1)));
        assert_eq!(
            ix.cr_event(deleted("ns/a"), &no_gate),
            vec![
                Effect::Forget("ns/a".into()),
                Effect::Enqueue("ns/a".into(), Reason::Sweep)
            ]
        );
        let strays = ix.take_strays("ns/a");
        assert_eq!(
            strays,
            vec![Stray {
                child: far("x", "ns/a").child,
                uid: "uid-x".into(),
                owner_uid: "uid-ns/a".into(),
            }],
            "the same-namespace child is the garbage collector's"
        );
        assert!(ix.take_strays("ns/a").is_empty(), "taken once");
        ix.swept(vec![(strays[0].child.clone(), strays[0].uid.clone())]);
        assert!(
            ix.child_event(0, None, Seen::Deleted(far("x", "ns/a")))
                .is_empty()
        );
    }

    #[test]
    fn a_sweep_whose_children_went_some_other_way_is_dropped_with_its_queue_place() {
        // A standby replica: the leader finalized the CR; here its DELETED event came first.
        let mut ix = Index::new(vec![], None);
        listed(&mut ix, &["ns/a"]);
        ix.child_event(0, None, seen(far("x", "ns/a")));
        ix.child_event(0, None, seen(far("y", "ns/a")));
        ix.cr_event(deleted("ns/a"), &no_gate);
        assert!(
            ix.child_event(0, None, Seen::Deleted(far("x", "ns/a")))
                .is_empty(),
            "one child is left to sweep"
        );
        assert_eq!(
            ix.child_event(0, None, Seen::Deleted(far("y", "ns/a"))),
            vec![Effect::Forget("ns/a".into())]
        );
        assert!(ix.take_strays("ns/a").is_empty());
    }

    #[test]
    fn a_sweep_due_under_a_name_survives_the_forget_of_a_later_cr_of_that_name() {
        let mut ix = Index::new(vec![], None);
        listed(&mut ix, &["ns/a"]);
        ix.child_event(0, None, seen(far("x", "ns/a")));
        ix.cr_event(deleted("ns/a"), &no_gate);
        // A new CR under the same name comes and goes before the sweep ran.
        let Seen::Object { mut object, .. } = cr("ns/a", 1) else {
            unreachable!()
        };
        object.uid = "uid-2".into();
        ix.cr_event(
            Seen::Object {
                listing: false,
                object: object.clone(),
            },
            &no_gate,
        );
        assert_eq!(
            ix.cr_event(Seen::Deleted(object), &no_gate),
            vec![
                Effect::Forget("ns/a".into()),
                Effect::Enqueue("ns/a".into(), Reason::Sweep)
            ]
        );
        assert_eq!(ix.take_strays("ns/a")[0].owner_uid, "uid-ns/a");
        assert!(ix.due_sweeps().is_empty());
    }

    #[test]
    fn children_listed_before_the_crs_are_judged_when_their_list_ends() {
        let mut ix = Index::new(vec![], None);
        ix.child_event(0, None, Seen::Init);
        ix.child_event(
            0,
            None,
            Seen::Object {
                listing: true,
                object: far("x", "ns/gone"),
            },
        );
        listed(&mut ix, &[]);
        assert_eq!(
            ix.child_event(0, None, Seen::InitDone),
            enqueue("ns/gone", Reason::Sweep)
        );
    }

    #[test]
    fn a_child_taken_over_by_another_cr_is_not_swept_for_its_old_one() {
        let mut ix = Index::new(vec![], None);
        listed(&mut ix, &["ns/a", "ns/b"]);
        ix.child_event(0, None, seen(far("x", "ns/a")));
        ix.cr_event(deleted("ns/a"), &no_gate);
        // `adopt: true` on b's entry: b's apply moved the owner label before the sweep ran.
        assert_eq!(
            ix.child_event(0, None, seen(far("x", "ns/b"))),
            vec![Effect::Forget("ns/a".into())]
        );
        assert!(ix.take_strays("ns/a").is_empty());
        assert!(ix.due_sweeps().is_empty());
    }

    #[test]
    fn children_the_garbage_collector_takes_or_another_entry_owns_are_not_swept() {
        let mut ix = Index::new(vec![], None);
        listed(&mut ix, &["ns/a"]);
        ix.child_event(0, None, seen(child("near", "ns/a", 1)));
        let mut foreign = far("y", "ns/a");
        foreign.owner_key = None;
        ix.child_event(0, None, seen(foreign));
        assert_eq!(
            ix.cr_event(deleted("ns/a"), &no_gate),
            vec![Effect::Forget("ns/a".into())]
        );
        assert!(ix.take_strays("ns/a").is_empty());
    }

    #[test]
    fn a_child_applied_as_its_cr_went_is_swept_when_it_shows_up() {
        // kubernetes#77988: the delete raced ork's finalizer; the apply's event comes last.
        let mut ix = Index::new(vec![], None);
        listed(&mut ix, &["ns/a"]);
        assert_eq!(
            ix.cr_event(deleted("ns/a"), &no_gate),
            vec![Effect::Forget("ns/a".into())]
        );
        assert_eq!(
            ix.child_event(0, None, seen(far("x", "ns/a"))),
            enqueue("ns/a", Reason::Sweep)
        );
        assert_eq!(ix.take_strays("ns/a").len(), 1);
    }

    #[test]
    fn at_start_children_of_crs_that_went_meanwhile_are_swept_once_the_crs_are_listed() {
        let mut ix = Index::new(vec![], None);
        // The children's list comes first: nothing is judged before the CRs are listed.
        assert!(
            ix.child_event(0, None, seen(far("x", "ns/gone")))
                .is_empty()
        );
        ix.child_event(0, None, seen(far("y", "ns/a")));
        assert_eq!(
            listed(&mut ix, &["ns/a"]),
            vec![
                Effect::Enqueue("ns/a".into(), Reason::Create),
                Effect::Enqueue("ns/gone".into(), Reason::Sweep)
            ]
        );
        assert_eq!(ix.take_strays("ns/gone").len(), 1);
        assert!(ix.take_strays("ns/a").is_empty());
    }

    #[test]
    fn a_cr_recreated_while_the_watch_was_away_is_new_and_the_old_one_s_children_are_swept() {
        let mut ix = Index::new(vec![], None);
        listed(&mut ix, &["ns/a"]);
        ix.child_event(0, None, seen(far("x", "ns/a")));
        ix.cr_event(Seen::Init, &no_gate);
        let mut again = CrView {
            key: "ns/a".into(),
            uid: "uid-ns/a-2".into(),
            fingerprint: 1,
            json: None,
            requested_at: None,
        };
        ix.cr_event(
            Seen::Object {
                listing: true,
                object: again.clone(),
            },
            &no_gate,
        );
        assert_eq!(
            ix.cr_event(Seen::InitDone, &no_gate),
            vec![
                Effect::Enqueue("ns/a".into(), Reason::Sweep),
                Effect::Enqueue("ns/a".into(), Reason::Create),
                // Once more from the list's look for orphans: the queue merges them.
                Effect::Enqueue("ns/a".into(), Reason::Sweep)
            ],
            "the same spec, yet a new CR"
        );
        assert_eq!(ix.take_strays("ns/a")[0].owner_uid, "uid-ns/a");
        again.fingerprint = 2;
        assert_eq!(
            ix.cr_event(
                Seen::Object {
                    listing: false,
                    object: again
                },
                &no_gate
            ),
            enqueue("ns/a", Reason::Update)
        );
    }

    #[test]
    fn a_cr_found_alive_outside_the_view_keeps_its_children_until_the_next_list() {
        let mut ix = Index::new(vec![], None);
        listed(&mut ix, &["ns/a"]);
        ix.child_event(0, None, seen(far("x", "ns/a")));
        // The CR's label no longer matches the entry's selector: the watch says deleted.
        ix.cr_event(deleted("ns/a"), &no_gate);
        assert_eq!(ix.take_strays("ns/a").len(), 1);
        ix.keep("uid-ns/a");
        let mut edited = far("x", "ns/a");
        edited.fingerprint = 2;
        assert!(ix.child_event(0, None, seen(edited)).is_empty());
        assert_eq!(
            listed(&mut ix, &[]),
            enqueue("ns/a", Reason::Sweep),
            "looked at again after a list of the CRs"
        );
    }

    #[test]
    fn a_closed_enqueue_gate_drops_the_event_and_sentinels_reach_the_reconcile() {
        let gate: ork_katalog::Gate =
            serde_json::from_value(json!({"when": [{"field": "spec.enabled", "equals": true}]}))
                .expect("gate");
        let gate = CompiledGate::compile(&gate).expect("compiles");
        let mut ix = Index::new(vec![Sentinel::SpecChanged], Some(gate));
        let view = |fp: u64, enabled: bool| Seen::Object {
            listing: false,
            object: CrView {
                key: "ns/a".into(),
                uid: "uid-ns/a".into(),
                fingerprint: fp,
                json: Some(json!({"spec": {"enabled": enabled}})),
                requested_at: None,
            },
        };
        let ctx = |cr: &Value| cr.clone();
        assert!(ix.cr_event(view(1, false), &ctx).is_empty());
        assert_eq!(
            ix.cr_event(view(2, true), &ctx),
            enqueue("ns/a", Reason::Update)
        );
        assert!(ix.take_sentinels("ns/a")[&Sentinel::SpecChanged]);
    }

    #[test]
    fn the_applied_fingerprint_keeps_its_value_across_versions() {
        // Kept in every child's applied annotation: a new ork must compute the same.
        let v = json!({"a": 1, "b": [1, "x"], "s": {"t": null, "u": true}});
        assert_eq!(fingerprint(&v), 0xa7db_1a76_d6ac_3dee);
    }

    #[test]
    fn a_cr_s_fingerprint_follows_what_its_owner_changes_only() {
        let own: BTreeSet<String> = ["team.io/last-seen".to_string()].into();
        let cr = |v: Value| -> DynamicObject { serde_json::from_value(v).expect("cr") };
        let base = json!({
            "apiVersion": "x.io/v1", "kind": "W",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "a"},
                         "annotations": {"note": "n"}, "resourceVersion": "1"},
            "spec": {"size": 1},
        });
        let fp = cr_fingerprint(&cr(base.clone()), &own);
        let mut ork_wrote = base.clone();
        ork_wrote["status"] = json!({"phase": "Ready"});
        ork_wrote["metadata"]["resourceVersion"] = json!("2");
        ork_wrote["metadata"]["annotations"][format!("{PREFIX}health")] = json!("ok");
        ork_wrote["metadata"]["annotations"]["team.io/last-seen"] = json!("now");
        assert_eq!(cr_fingerprint(&cr(ork_wrote), &own), fp);
        for (path, value) in [
            ("/spec/size", json!(2)),
            ("/metadata/labels/app", json!("b")),
            ("/metadata/annotations/note", json!("m")),
            ("/metadata/deletionTimestamp", json!("2026-01-01T00:00:00Z")),
        ] {
            let mut edited = base.clone();
            let (parent, key) = path.rsplit_once('/').expect("path");
            edited.pointer_mut(parent).expect("parent")[key] = value;
            assert_ne!(cr_fingerprint(&cr(edited), &own), fp, "{path}");
        }
    }

    #[test]
    fn a_child_s_fingerprint_sees_its_owner_references() {
        let child = |controller: bool| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "ownerReferences": [{"apiVersion": "x.io/v1",
                    "kind": "W", "name": "a", "uid": "u1", "controller": controller}]},
                "data": {"k": "v"}, "status": {"ignored": true},
            }))
            .expect("child")
        };
        assert_ne!(
            child_fingerprint(&child(true)),
            child_fingerprint(&child(false))
        );
        let mut other = child(true);
        other.data["status"] = json!({"ignored": false});
        assert_eq!(child_fingerprint(&other), child_fingerprint(&child(true)));
    }

    #[test]
    fn fingerprints_are_stable_and_order_free() {
        let a = json!({"a": 1, "b": [1, "x"]});
        let b: Value = serde_json::from_str(r#"{"b": [1, "x"], "a": 1}"#).expect("json");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(
            fingerprint(&a),
            fingerprint(&json!({"a": 2, "b": [1, "x"]}))
        );
        assert_ne!(
            fingerprint(&json!(["ab", "c"])),
            fingerprint(&json!(["a", "bc"]))
        );
    }
}
