//! What a watch makes of each event before it goes to the entry loop: what the cache keeps of
//! the object and what the index needs to know (fingerprints, and whose child an object is by
//! evidence a tenant cannot forge). Computed where the event is read, from the entry's compiled
//! context only, so the loop only stores and decides.

use std::sync::Arc;

use kube::ResourceExt;
use kube::core::DynamicObject;
use kube::runtime::watcher;
use serde_json::Value;

use crate::cache::{Stored, key_of, pack};
use crate::entry::EntryContext;
use crate::index::{ChildRef, ChildView, CrView, Seen, child_fingerprint, cr_fingerprint};
use crate::labels::{OWNER, OWNER_KIND, OWNER_MARK, OWNER_UID, REQUESTED_AT};
use crate::packed::Packer;

/// One watch event, reduced: for the cache and for the index.
#[derive(Debug)]
pub(crate) struct Step<T> {
    pub stored: Stored,
    pub seen: Seen<T>,
}

/// Turns an entry's watch events into [`Step`]s.
#[derive(Clone)]
pub(crate) struct Observer {
    ctx: Arc<EntryContext>,
    /// The index compares CRs' JSON (sentinels, the enqueue gate).
    wants_json: bool,
    /// What packs the cached CRs, and the children of each managed type (all its watch scopes):
    /// objects of one kind pack best against each other.
    packers: Arc<Packers>,
}

#[derive(Debug, Default)]
struct Packers {
    crs: Packer,
    children: Vec<Packer>,
}

impl Observer {
    pub fn new(ctx: Arc<EntryContext>) -> Observer {
        let wants_json = !ctx.entry.operator_box.pre_reconcile.sentinels.is_empty()
            || ctx.enqueue_gate.is_some();
        let packers = Arc::new(Packers {
            crs: Packer::default(),
            children: ctx.children.iter().map(|_| Packer::default()).collect(),
        });
        Observer {
            ctx,
            wants_json,
            packers,
        }
    }

    /// A watch event of the CRs. A CR in a namespace the entry does not allow
    /// (`allowedNamespaces`, `restrictedNamespaces`) is not the entry's: it is seen as absent
    /// and never reconciled (`None`: a listed one is left out).
    pub fn cr(&self, event: &watcher::Event<DynamicObject>) -> Option<Step<CrView>> {
        let allowed = |o: &DynamicObject| {
            o.namespace()
                .is_none_or(|ns| self.ctx.entry.namespace_allowed(&ns))
        };
        let view = |o: &DynamicObject| CrView {
            key: key_of(o),
            uid: o.uid().unwrap_or_default(),
            fingerprint: cr_fingerprint(o, &self.ctx.own_metadata),
            json: self
                .wants_json
                .then(|| serde_json::to_value(o).unwrap_or(Value::Null)),
            requested_at: o.annotations().get(REQUESTED_AT).cloned(),
        };
        Some(match event {
            watcher::Event::Apply(o) if !allowed(o) => removed(o, view),
            watcher::Event::InitApply(o) if !allowed(o) => return None,
            other => step(other, &self.packers.crs, view),
        })
    }

    /// A watch event of the children of managed type `type_index`.
    pub fn child(
        &self,
        type_index: usize,
        event: &watcher::Event<DynamicObject>,
    ) -> Step<ChildView> {
        let fallback = Packer::default();
        let packer = self.packers.children.get(type_index).unwrap_or(&fallback);
        step(event, packer, |o| {
            let evidence = self.ownership(type_index, o);
            let by_mark = matches!(evidence, Some((_, _, Evidence::Mark)));
            let (owner_uid, owner_key) = match evidence {
                Some((uid, key, _)) => (Some(uid), key),
                None => (None, None),
            };
            ChildView {
                child: ChildRef::new(type_index, o.metadata.namespace.as_deref(), &o.name_any()),
                uid: o.uid().unwrap_or_default(),
                sweepable: by_mark && o.annotations().get(OWNER_KIND) == Some(&self.ctx.owner_kind),
                marked: by_mark,
                owner_uid,
                owner_key,
                fingerprint: child_fingerprint(o),
            }
        })
    }

    /// Whose child `o` is, by evidence a tenant cannot forge (SPEC §11): the owner's UID and
    /// key, when either a controller owner reference to the UID of ork's owner label sits in
    /// the namespace ork's owner annotation names (owner references do not cross namespaces,
    /// and writing there takes write access to the CR's namespace), or ork's mark over owner
    /// and child verifies. Labels, annotations and field managers alone are anyone's to write.
    fn ownership(
        &self,
        type_index: usize,
        o: &DynamicObject,
    ) -> Option<(String, Option<String>, Evidence)> {
        let uid = o.labels().get(OWNER_UID)?;
        let annotation = o.annotations().get(OWNER)?;
        let key = owner_key(&self.ctx.name, annotation);
        let referenced = o
            .owner_references()
            .iter()
            .any(|r| r.controller == Some(true) && &r.uid == uid);
        if referenced {
            let owner_ns = annotation.split('/').nth(1).unwrap_or_default();
            return (o.namespace().unwrap_or_default() == owner_ns)
                .then(|| (uid.clone(), key, Evidence::Reference));
        }
        let t = self.ctx.children.get(type_index)?;
        let mark = o.annotations().get(OWNER_MARK)?;
        let (namespace, name) = (o.namespace().unwrap_or_default(), o.name_any());
        let marked = crate::mark::Marked {
            owner_uid: uid,
            owner: annotation,
            group: &t.managed.group,
            kind: &t.managed.kind,
            namespace: &namespace,
            name: &name,
        };
        self.ctx
            .mark_key
            .verifies(mark, &marked)
            .then(|| (uid.clone(), key, Evidence::Mark))
    }
}

/// How a child's ownership is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Evidence {
    /// A controller owner reference, in the CR's namespace.
    Reference,
    /// ork's mark ([`crate::mark`]).
    Mark,
}

/// A watcher event as a [`Step`], each object seen through `view`.
fn step<T>(
    event: &watcher::Event<DynamicObject>,
    packer: &Packer,
    view: impl Fn(&DynamicObject) -> T,
) -> Step<T> {
    match event {
        watcher::Event::Init => Step {
            stored: Stored::Init,
            seen: Seen::Init,
        },
        watcher::Event::InitDone => Step {
            stored: Stored::InitDone,
            seen: Seen::InitDone,
        },
        watcher::Event::InitApply(o) => Step {
            stored: Stored::Listed(key_of(o).into(), pack(o, packer)),
            seen: Seen::Object {
                listing: true,
                object: view(o),
            },
        },
        watcher::Event::Apply(o) => Step {
            stored: Stored::Put(key_of(o).into(), pack(o, packer)),
            seen: Seen::Object {
                listing: false,
                object: view(o),
            },
        },
        watcher::Event::Delete(o) => removed(o, view),
    }
}

fn removed<T>(o: &DynamicObject, view: impl Fn(&DynamicObject) -> T) -> Step<T> {
    Step {
        stored: Stored::Remove(key_of(o).into()),
        seen: Seen::Deleted(view(o)),
    }
}

/// The owner key from a child's owner annotation `<entry>/<namespace>/<name>`, if it names
/// this entry.
fn owner_key(entry: &str, annotation: &str) -> Option<String> {
    let mut parts = annotation.splitn(3, '/');
    let (e, ns, name) = (parts.next()?, parts.next()?, parts.next()?);
    if e != entry {
        return None;
    }
    Some(if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    })
}
