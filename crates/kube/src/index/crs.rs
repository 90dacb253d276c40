//! The CRs in the index: what of each counts as a change, what a re-list of them resets, the
//! sentinels for the reconcile gate.

use super::*;

impl Index {
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
                        .filter(|k| !listed.contains(&k[..]))
                        .map(|k| k.to_string())
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
    pub(super) fn replaced(&mut self, view: &CrView) -> Option<Effect> {
        let state = self.crs.get(view.key.as_str())?;
        if state.uid == Uid::new(&view.uid) {
            return None;
        }
        let old = self.crs.remove(view.key.as_str())?.uid;
        self.live.remove(&old);
        self.went(view.key.clone(), old)
    }

    pub(super) fn cr_changed(&mut self, view: CrView, gate: GateContext<'_>) -> Option<Effect> {
        let keep_json = self.wants_json();
        let previous = self.crs.get(view.key.as_str());
        // A new `requested-at` (ork's own prefix, so not in the fingerprint) asks for now.
        let requested = view.requested_at.is_some()
            && previous.is_some_and(|p| p.requested_at != view.requested_at);
        if !requested && previous.is_some_and(|p| p.fingerprint == view.fingerprint) {
            // ork's own write (status, annotations, finalizer) or a status-only change.
            if let Some(state) = self.crs.get_mut(view.key.as_str()) {
                state.requested_at = view.requested_at;
                if keep_json {
                    state.previous = view.json.map(Box::new);
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
        let before = previous.and_then(|p| p.previous.as_deref().cloned());
        let uid = Uid::new(&view.uid);
        self.kept.remove(&uid);
        self.live.insert(uid.clone());
        let state = CrState {
            uid,
            fingerprint: view.fingerprint,
            previous: if keep_json {
                view.json.clone().map(Box::new)
            } else {
                None
            },
            requested_at: view.requested_at.clone(),
        };
        // A known key keeps its text (its children share it).
        match self.crs.get_mut(view.key.as_str()) {
            Some(known) => *known = state,
            None => {
                self.crs.insert(view.key.as_str().into(), state);
            }
        }
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

    pub(super) fn forget_cr(&mut self, key: String) -> Vec<Effect> {
        let state = self.crs.remove(key.as_str());
        self.sentinels.remove(&key);
        self.drifted.remove(&key);
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

    /// The sentinels computed when `key` was last triggered (consumed by its reconcile).
    pub fn take_sentinels(&mut self, key: &str) -> BTreeMap<Sentinel, bool> {
        self.sentinels.remove(key).unwrap_or_default()
    }

    /// The sentinels of `key` without consuming them (`ork check`).
    pub fn peek_sentinels(&self, key: &str) -> BTreeMap<Sentinel, bool> {
        self.sentinels.get(key).cloned().unwrap_or_default()
    }
}
