//! Children of CRs that went without ork's finalizer: found, queued under the CR's key as a
//! sweep, and settled when they are gone or turn out to be someone else's.

use super::*;

impl Index {
    /// The keys with a sweep due that pass `mine` (queued with every resync of their key, and
    /// when a shard is taken over).
    pub fn due_sweeps_where(&self, mine: impl Fn(&str) -> bool) -> Vec<String> {
        self.gone.keys().filter(|k| mine(k)).cloned().collect()
    }

    /// The CR `uid` under `key` is gone. Children ork applied for it that no owner reference
    /// hands to the garbage collector (other namespaces, cluster-scoped) are ork's to delete:
    /// normally its finalizer sees to that, but a CR can go without it (a finalizer removed by
    /// hand, a delete that raced the finalizer's patch at the API server, kubernetes#77988).
    /// Their sweep is queued under the CR's key, so it runs where that key is reconciled (the
    /// leader, the shard's holder) and after a reconcile of the key in flight.
    pub(super) fn went(&mut self, key: String, uid: Uid) -> Option<Effect> {
        if !self.sweepable(&key, &uid) {
            return None;
        }
        self.gone.entry(key.clone()).or_default().insert(uid);
        // Queued every time, not only the first: the queue merges repeats, and a replica that
        // dropped the key (a shard it did not hold then) must get it again.
        Some(Effect::Enqueue(key, Reason::Sweep))
    }

    /// Whether the CR `uid` under `key` has children ork would sweep.
    pub(super) fn sweepable(&self, key: &str, uid: &Uid) -> bool {
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
    pub(super) fn settle(&mut self, key: Option<&str>, owner: &Uid) -> Option<Effect> {
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
    pub(super) fn orphans(&mut self) -> Vec<Effect> {
        let found: BTreeSet<(String, Uid)> = self
            .by_owner
            .iter()
            .filter(|(uid, _)| !self.live.contains(*uid))
            .flat_map(|(uid, children)| {
                children
                    .iter()
                    .filter_map(|c| self.children.get(c))
                    .filter(|state| state.sweepable)
                    .filter_map(|state| {
                        Some((state.owner_key.as_deref()?.to_string(), uid.clone()))
                    })
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
    pub(super) fn stray_seen(&mut self, child: &ChildRef) -> Option<Effect> {
        if !self.crs_listed || self.listing_crs.is_some() {
            return None;
        }
        let state = self.children.get(child)?;
        let owner = state.owner_uid.as_ref()?;
        if !state.sweepable || self.live.contains(owner) || self.kept.contains(owner) {
            return None;
        }
        let (key, owner) = (state.owner_key.as_deref()?.to_string(), owner.clone());
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
                        uid: state.uid.to_string(),
                        owner_uid: owner.to_string(),
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
            .insert(Uid::new(owner_uid));
    }

    /// The CR `owner_uid` exists, outside the entry's view: its children stay.
    pub fn keep(&mut self, owner_uid: &str) {
        self.kept.insert(Uid::new(owner_uid));
    }

    /// Children ork deleted (a reconcile's prune, a sweep): their deletion events are not drift.
    pub fn swept(&mut self, deleted: Vec<(ChildRef, String)>) {
        for (child, uid) in deleted {
            // Its deletion event is still to come: mark it so it is not taken for drift.
            let uid = Uid::new(&uid);
            if self.children.get(&child).is_some_and(|c| c.uid == uid) {
                self.deleted_by_ork.insert(uid);
            }
        }
    }
}
