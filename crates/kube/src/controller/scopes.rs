//! One watch made of several: an entry that lives in a few exact namespaces watches each of
//! them (so its RBAC can be Roles there, not a ClusterRole reaching kube-system), and its loop
//! still sees one watch of its CRs. Each namespace's watcher (re)lists on its own; a merged
//! stream must not let one namespace's relist reset the others' objects, so:
//!
//! - the first lists of all namespaces are one list: `Init`, every namespace's `InitApply`,
//!   and `InitDone` once the last namespace has listed;
//! - a later relist of one namespace is told as what changed: each listed object an `Apply`
//!   (the index finds the unchanged ones unchanged), and a `Delete` for each object of that
//!   namespace the relist no longer has.
//!
//! What it keeps per object is its name and UID, to tell those deletes.

use std::collections::HashMap;

use futures::stream::{self, BoxStream, StreamExt};
use kube::Resource;
use kube::api::ObjectMeta;
use kube::runtime::watcher::{self, Event};

/// One watch's events.
pub(super) type Watch<K> = BoxStream<'static, watcher::Result<Event<K>>>;

/// What an object looked like, enough to tell its deletion: its name and UID.
type Known = HashMap<String, Option<String>>;

struct Scope {
    /// Its namespace: every object of the scope's watch is there.
    namespace: Option<String>,
    known: Known,
    /// During this scope's (re)list: what it has listed so far.
    listing: Option<Known>,
    listed_once: bool,
}

/// The state of a merge: each scope's objects and whether the first list is still going.
struct Merge<K> {
    scopes: Vec<Scope>,
    /// Until every scope's first list is done.
    first_list: bool,
    /// Deletes found while the first list was going, told after its `InitDone`.
    pending: Vec<K>,
    /// An object with only this metadata, for a `Delete`.
    tombstone: fn(ObjectMeta) -> K,
}

impl<K: Resource> Merge<K> {
    fn step(
        &mut self,
        index: usize,
        item: watcher::Result<Event<K>>,
    ) -> Vec<watcher::Result<Event<K>>> {
        let event = match item {
            Ok(event) => event,
            Err(e) => return vec![Err(e)],
        };
        let first_list = self.first_list;
        let Some(scope) = self.scopes.get_mut(index) else {
            return Vec::new();
        };
        let out = match event {
            Event::Init => {
                scope.listing = Some(Known::new());
                Vec::new()
            }
            Event::InitApply(o) => {
                let (name, uid) = identity(&o);
                if let Some(listing) = &mut scope.listing {
                    listing.insert(name.clone(), uid.clone());
                }
                scope.known.insert(name, uid);
                vec![if first_list {
                    Event::InitApply(o)
                } else {
                    Event::Apply(o)
                }]
            }
            Event::InitDone => {
                let listed = scope.listing.take().unwrap_or_default();
                let gone: Vec<(String, Option<String>)> = scope
                    .known
                    .iter()
                    .filter(|(name, _)| !listed.contains_key(*name))
                    .map(|(n, u)| (n.clone(), u.clone()))
                    .collect();
                scope.known = listed;
                scope.listed_once = true;
                let tombstone = self.tombstone;
                let deletes: Vec<K> = gone
                    .into_iter()
                    .map(|(name, uid)| {
                        tombstone(ObjectMeta {
                            name: Some(name),
                            namespace: scope.namespace.clone(),
                            uid,
                            ..ObjectMeta::default()
                        })
                    })
                    .collect();
                if first_list {
                    self.pending.extend(deletes);
                    if self.scopes.iter().all(|s| s.listed_once) {
                        self.first_list = false;
                        let mut out = vec![Event::InitDone];
                        out.extend(self.pending.drain(..).map(Event::Delete));
                        out
                    } else {
                        Vec::new()
                    }
                } else {
                    deletes.into_iter().map(Event::Delete).collect()
                }
            }
            Event::Apply(o) => {
                let (name, uid) = identity(&o);
                scope.known.insert(name, uid);
                vec![Event::Apply(o)]
            }
            Event::Delete(o) => {
                scope.known.remove(&identity(&o).0);
                vec![Event::Delete(o)]
            }
        };
        out.into_iter().map(Ok).collect()
    }
}

fn identity<K: Resource>(o: &K) -> (String, Option<String>) {
    let meta = o.meta();
    (meta.name.clone().unwrap_or_default(), meta.uid.clone())
}

/// The watches of `scopes` (one per namespace, in order) as one watch; `tombstone` makes the
/// object a `Delete` carries from its metadata. With one scope, that scope's watch unchanged.
pub(super) fn merged<K: Resource + Send + 'static>(
    scopes: Vec<(Option<String>, Watch<K>)>,
    tombstone: fn(ObjectMeta) -> K,
) -> Watch<K> {
    if scopes.len() == 1 {
        if let Some((_, only)) = scopes.into_iter().next() {
            return only;
        }
        return stream::empty().boxed();
    }
    let states = scopes
        .iter()
        .map(|(namespace, _)| Scope {
            namespace: namespace.clone(),
            known: Known::new(),
            listing: None,
            listed_once: false,
        })
        .collect();
    let tagged = stream::select_all(
        scopes
            .into_iter()
            .enumerate()
            .map(|(i, (_, s))| s.map(move |item| (i, item))),
    );
    let mut merge = Merge {
        scopes: states,
        first_list: true,
        pending: Vec::new(),
        tombstone,
    };
    let events = tagged.flat_map(move |(i, item)| stream::iter(merge.step(i, item)));
    stream::once(async { Ok(Event::Init) })
        .chain(events)
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(ns: &str, name: &str, uid: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                uid: Some(uid.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn tombstone(metadata: ObjectMeta) -> ConfigMap {
        ConfigMap {
            metadata,
            ..ConfigMap::default()
        }
    }

    fn merge(scopes: &[&str]) -> Merge<ConfigMap> {
        Merge {
            scopes: scopes
                .iter()
                .map(|ns| Scope {
                    namespace: Some(ns.to_string()),
                    known: Known::new(),
                    listing: None,
                    listed_once: false,
                })
                .collect(),
            first_list: true,
            pending: Vec::new(),
            tombstone,
        }
    }

    /// Each event as `Init`, `InitApply ns/name`, `InitDone`, `Apply ns/name`, `Delete ns/name`.
    fn told(events: Vec<watcher::Result<Event<ConfigMap>>>) -> Vec<String> {
        let at = |o: &ConfigMap| {
            format!(
                "{}/{}",
                o.metadata.namespace.clone().unwrap_or_default(),
                o.metadata.name.clone().unwrap_or_default()
            )
        };
        events
            .into_iter()
            .map(|e| match e {
                Ok(Event::Init) => "Init".to_string(),
                Ok(Event::InitApply(o)) => format!("InitApply {}", at(&o)),
                Ok(Event::InitDone) => "InitDone".to_string(),
                Ok(Event::Apply(o)) => format!("Apply {}", at(&o)),
                Ok(Event::Delete(o)) => format!("Delete {}", at(&o)),
                Err(e) => format!("Err {e}"),
            })
            .collect()
    }

    fn feed(m: &mut Merge<ConfigMap>, steps: Vec<(usize, Event<ConfigMap>)>) -> Vec<String> {
        told(
            steps
                .into_iter()
                .flat_map(|(i, e)| m.step(i, Ok(e)))
                .collect(),
        )
    }

    #[test]
    fn the_first_lists_of_every_namespace_are_one_list() {
        let mut m = merge(&["a", "b"]);
        let out = feed(
            &mut m,
            vec![
                (0, Event::Init),
                (1, Event::Init),
                (0, Event::InitApply(cm("a", "x", "1"))),
                (1, Event::InitApply(cm("b", "y", "2"))),
                (0, Event::InitDone),
                // `a` is listed; `b` is not yet: a change in `a` waits for nobody.
                (0, Event::Apply(cm("a", "x", "1"))),
                (1, Event::InitDone),
            ],
        );
        assert_eq!(
            out,
            ["InitApply a/x", "InitApply b/y", "Apply a/x", "InitDone"]
        );
    }

    #[test]
    fn a_relist_of_one_namespace_drops_adds_and_changes_only_its_own_objects() {
        let mut m = merge(&["a", "b"]);
        feed(
            &mut m,
            vec![
                (0, Event::Init),
                (0, Event::InitApply(cm("a", "x", "1"))),
                (0, Event::InitApply(cm("a", "gone", "2"))),
                (0, Event::InitDone),
                (1, Event::Init),
                (1, Event::InitApply(cm("b", "y", "3"))),
                (1, Event::InitDone),
            ],
        );
        // `a`'s watch expired and lists again: `gone` was deleted, `new` created, `x` edited
        // meanwhile. `b`'s object is none of its business.
        let out = feed(
            &mut m,
            vec![
                (0, Event::Init),
                (0, Event::InitApply(cm("a", "x", "1"))),
                (0, Event::InitApply(cm("a", "new", "4"))),
                (0, Event::InitDone),
            ],
        );
        assert_eq!(out, ["Apply a/x", "Apply a/new", "Delete a/gone"]);
        // And a later relist of `b` that finds it empty deletes `b/y` only.
        let out = feed(&mut m, vec![(1, Event::Init), (1, Event::InitDone)]);
        assert_eq!(out, ["Delete b/y"]);
        // An object deleted while watched is not told twice by the next relist.
        let out = feed(
            &mut m,
            vec![
                (0, Event::Delete(cm("a", "new", "4"))),
                (0, Event::Init),
                (0, Event::InitApply(cm("a", "x", "1"))),
                (0, Event::InitDone),
            ],
        );
        assert_eq!(out, ["Delete a/new", "Apply a/x"]);
    }

    #[test]
    fn a_namespace_that_lists_again_during_the_first_list_loses_nothing_it_no_longer_has() {
        let mut m = merge(&["a", "b"]);
        let out = feed(
            &mut m,
            vec![
                (0, Event::Init),
                (0, Event::InitApply(cm("a", "x", "1"))),
                // The list failed half-way and starts over; `x` was deleted meanwhile.
                (0, Event::Init),
                (0, Event::InitApply(cm("a", "z", "2"))),
                (0, Event::InitDone),
                (1, Event::Init),
                (1, Event::InitDone),
            ],
        );
        assert_eq!(
            out,
            ["InitApply a/x", "InitApply a/z", "InitDone", "Delete a/x"]
        );
    }

    #[tokio::test]
    async fn merged_streams_start_with_one_init_and_one_scope_is_its_own_watch() {
        let scope = |ns: &str, name: &str| {
            let o = cm(ns, name, name);
            stream::iter(vec![
                Ok(Event::Init),
                Ok(Event::InitApply(o)),
                Ok(Event::InitDone),
            ])
            .boxed()
        };
        let two = merged(
            vec![
                (Some("a".into()), scope("a", "x")),
                (Some("b".into()), scope("b", "y")),
            ],
            tombstone,
        );
        let out = told(two.collect().await);
        assert_eq!(out.first().map(String::as_str), Some("Init"));
        assert_eq!(out.last().map(String::as_str), Some("InitDone"));
        assert_eq!(out.iter().filter(|e| *e == "Init").count(), 1);
        assert_eq!(out.len(), 4, "{out:?}");
        let one = merged(vec![(Some("a".into()), scope("a", "x"))], tombstone);
        assert_eq!(
            told(one.collect().await),
            ["Init", "InitApply a/x", "InitDone"]
        );
    }
}
