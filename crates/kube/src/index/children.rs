//! The children in the index: whose each is, found by owner, and whether a change to one is
//! drift (someone else's) or ork's own write, judged when the owner's reconcile ends.

use super::*;

impl Index {
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

    pub(super) fn child_changed(&mut self, view: ChildView) -> Vec<Effect> {
        let ChildView {
            child,
            uid,
            owner_uid,
            owner_key,
            sweepable,
            marked,
            fingerprint,
        } = view;
        let uid = Uid::new(&uid);
        let owner_uid = owner_uid.as_deref().map(Uid::new);
        let expected = match self.children.get(&child) {
            Some(known) => known.expected,
            None => self.expected_unseen.remove(&child),
        };
        let previous = self.children.insert(
            child.clone(),
            ChildState {
                uid,
                owner_uid: owner_uid.clone(),
                owner_key: owner_key.as_deref().map(|k| self.shared_key(k)),
                sweepable,
                marked,
                fingerprint,
                expected,
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
                // A CR has a few children: room for them, not the default's four.
                children.reserve_exact(1);
                children.insert(at, child.clone());
            }
        }
        out.extend(self.stray_seen(&child));
        let changed = previous
            .as_ref()
            .is_none_or(|p| p.fingerprint != fingerprint);
        if changed && expected == Some(fingerprint) {
            // The echo of ork's own apply.
            out.extend(self.written(owner_key.as_deref()));
        } else if changed && previous.is_some() {
            // A child that appears is ork's own apply, or an object someone labelled; only a
            // change or a deletion of a known child is drift.
            out.extend(self.drift(owner_key, child, None));
        }
        out
    }

    /// The watch showed a write of the owner's last reconcile: for a protocol that sees its
    /// own writes, a sync of the owner (not while a reconcile of it runs: its end judges that).
    fn written(&self, owner_key: Option<&str>) -> Option<Effect> {
        let owner = owner_key.filter(|k| self.observes_own_writes && self.crs.contains_key(*k))?;
        (!self.in_flight.contains_key(owner))
            .then(|| Effect::Enqueue(owner.to_string(), Reason::Written))
    }

    pub(super) fn child_gone(&mut self, child: &ChildRef) -> Vec<Effect> {
        let Some(state) = self.children.remove(child) else {
            return Vec::new();
        };
        self.expected_unseen.remove(child);
        let mut out = Vec::new();
        if let Some(owner) = &state.owner_uid {
            self.unlink(owner.clone(), child);
            out.extend(self.settle(state.owner_key.as_deref(), owner));
        }
        if self.deleted_by_ork.remove(&state.uid) {
            out.extend(self.written(state.owner_key.as_deref()));
        } else {
            out.extend(self.drift(
                state.owner_key.as_deref().map(String::from),
                child.clone(),
                Some(state.uid.to_string()),
            ));
        }
        out
    }

    /// Someone changed or deleted a child: its owner is reconciled, or, while the owner's
    /// reconcile runs, judged when it finishes.
    pub(super) fn drift(
        &mut self,
        owner_key: Option<String>,
        child: ChildRef,
        gone_uid: Option<String>,
    ) -> Option<Effect> {
        let owner = owner_key.filter(|k| self.crs.contains_key(k.as_str()))?;
        self.drifted
            .insert(owner.clone(), (child.clone(), gone_uid.is_some()));
        if let Some(waiting) = self.in_flight.get_mut(&owner) {
            waiting.push((child, gone_uid));
            return None;
        }
        Some(Effect::Enqueue(owner, Reason::Child))
    }

    pub(super) fn unlink(&mut self, owner: Uid, child: &ChildRef) {
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
            .get(&Uid::new(owner_uid))
            .into_iter()
            .flatten()
            .filter(|c| {
                c.namespace.as_deref() == owner_namespace
                    || self.children.get(*c).is_some_and(|s| s.marked)
            })
            .cloned()
            .collect()
    }

    /// The child whose change (`false`) or deletion (`true`) last queued `key`'s reconcile.
    pub fn take_drift(&mut self, key: &str) -> Option<(ChildRef, bool)> {
        self.drifted.remove(key)
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
            match self.children.get_mut(&a.child) {
                Some(known) => known.expected = Some(a.fingerprint),
                None => {
                    self.expected_unseen.insert(a.child.clone(), a.fingerprint);
                }
            }
        }
        let drifted = waiting.iter().any(|(child, gone_uid)| match gone_uid {
            // Deleted meanwhile: drift unless ork deleted it, or applied it anew after (the
            // object it got back is another one).
            Some(uid) => !own.deleted.iter().any(|(_, u)| u == uid) && !recreated(child, uid),
            // Changed meanwhile: drift unless it now is exactly what ork applied.
            None => self
                .children
                .get(child)
                .is_none_or(|state| state.expected != Some(state.fingerprint)),
        });
        // Writes whose echo came during the reconcile: the watch shows them already.
        let echoed = self.observes_own_writes
            && (own.applied.iter().any(|a| {
                self.children
                    .get(&a.child)
                    .is_some_and(|s| s.fingerprint == a.fingerprint)
            }) || own
                .deleted
                .iter()
                .any(|(c, _)| !self.children.contains_key(c)));
        self.swept(own.deleted);
        if !self.crs.contains_key(key) {
            Vec::new()
        } else if drifted {
            vec![Effect::Enqueue(key.to_string(), Reason::Child)]
        } else if echoed {
            vec![Effect::Enqueue(key.to_string(), Reason::Written)]
        } else {
            Vec::new()
        }
    }
}
