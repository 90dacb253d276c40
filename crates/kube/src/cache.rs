//! What the watches saw, kept small: each object as its compact JSON text (the watches already
//! drop `managedFields`), packed against an object of its kind ([`crate::packed`]), unpacked and
//! parsed again only when a reconcile or a cross lookup reads it.
//!
//! kube-runtime's reflector store held every object as a parsed `DynamicObject`: about 3.6 KB
//! of heap for a small ConfigMap (a tree node per map, an `ApiResource` copy in every key).
//! Text costs what the object's JSON costs, a few hundred bytes, and packed about a quarter of
//! that; a reconcile unpacks and parses its CR and its children, a few microseconds against the
//! milliseconds of its API calls.
//!
//! Same contract as the reflector store: a (re-)list is buffered and replaces the whole content
//! only when it is complete, so readers never see half a list; [`Cache::readiness`] tells when
//! the first complete list is in.
//!
//! The same store holds other small values per object: [`Holder`]s, who owns each object of a
//! child type that ork's label selector leaves out, from a metadata-only watch.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use kube::core::{DynamicObject, ObjectMeta};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tokio::sync::watch;

use crate::labels::OWNER_UID;
use crate::packed::{Packed, Packer};
use crate::wire::Lean;

type Objects<V> = HashMap<Box<str>, V>;

/// The reading side, cheap to clone. `V` is what is kept per object: by default its JSON text,
/// packed.
pub(crate) struct Cache<V = Packed> {
    objects: Arc<RwLock<Objects<V>>>,
    ready: watch::Receiver<bool>,
}

impl<V> Clone for Cache<V> {
    fn clone(&self) -> Self {
        Cache {
            objects: self.objects.clone(),
            ready: self.ready.clone(),
        }
    }
}

/// The writing side: one per watch.
pub(crate) struct CacheWriter<V = Packed> {
    objects: Arc<RwLock<Objects<V>>>,
    ready: watch::Sender<bool>,
    /// The (re-)list in progress.
    listing: Option<Objects<V>>,
}

/// One step of a watch as the cache keeps it: the object's key and value (`None`: not kept),
/// prepared where the event is read so that the writer only stores.
#[derive(Debug)]
pub(crate) enum Stored<V = Packed> {
    Init,
    Listed(Box<str>, Option<V>),
    InitDone,
    Put(Box<str>, Option<V>),
    Remove(Box<str>),
}

/// Who holds an object, as far as ork's adopt check cares: the owner label, when ork's field
/// manager wrote the object (anyone else's copy of that label means nothing), and the UID of
/// its controller owner reference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Holder {
    pub owner_label: Option<Box<str>>,
    pub controller: Option<Box<str>>,
}

impl Holder {
    /// From an object's metadata, its owner label taken as it is.
    pub fn of(meta: &ObjectMeta) -> Holder {
        Holder {
            owner_label: meta
                .labels
                .as_ref()
                .and_then(|l| l.get(OWNER_UID))
                .map(|v| v.as_str().into()),
            controller: meta
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.controller == Some(true))
                .map(|r| r.uid.as_str().into()),
        }
    }
}

/// The cache key of an object: `namespace/name`, or `name` when cluster-scoped (as queue keys).
pub(crate) fn cache_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// The cache key (and queue key) of an object.
pub(crate) fn key_of<K: Resource>(obj: &K) -> String {
    cache_key(obj.meta().namespace.as_deref(), &obj.name_any())
}

impl<V> CacheWriter<V> {
    pub fn new() -> CacheWriter<V> {
        let (ready, _) = watch::channel(false);
        CacheWriter {
            objects: Arc::default(),
            ready,
            listing: None,
        }
    }

    pub fn reader(&self) -> Cache<V> {
        Cache {
            objects: self.objects.clone(),
            ready: self.ready.subscribe(),
        }
    }

    /// Keeps `value(o)` for each object of the event (nothing when it gives `None`).
    pub fn apply_with<K: Resource>(
        &mut self,
        event: &watcher::Event<K>,
        value: impl Fn(&K) -> Option<V>,
    ) {
        match event {
            watcher::Event::Init => self.apply(Stored::Init),
            watcher::Event::InitApply(o) => self.apply(Stored::Listed(key_of(o).into(), value(o))),
            watcher::Event::InitDone => self.apply(Stored::InitDone),
            watcher::Event::Apply(o) => self.apply(Stored::Put(key_of(o).into(), value(o))),
            watcher::Event::Delete(o) => self.apply(Stored::Remove(key_of(o).into())),
        }
    }

    /// Applies one step of a watch, already reduced to what the cache keeps.
    pub fn apply(&mut self, step: Stored<V>) {
        match step {
            Stored::Init => self.listing = Some(Objects::new()),
            Stored::Listed(key, value) => {
                if let (Some(listing), Some(v)) = (&mut self.listing, value) {
                    listing.insert(key, v);
                }
            }
            Stored::InitDone => {
                if let Some(mut listing) = self.listing.take() {
                    listing.shrink_to_fit();
                    *self.write() = listing;
                }
                self.ready.send_replace(true);
            }
            Stored::Put(key, value) => {
                if let Some(v) = value {
                    self.write().insert(key, v);
                }
            }
            Stored::Remove(key) => {
                self.write().remove(&key);
            }
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Objects<V>> {
        self.objects.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
impl CacheWriter {
    /// Keeps each object of the event as its JSON text, packed.
    pub fn apply_watcher_event(&mut self, event: &watcher::Event<DynamicObject>) {
        let packer = Packer::default();
        self.apply_with(event, |o| pack(o, &packer));
    }
}

impl<V: Clone> Cache<V> {
    /// What is kept for the object at `key` (see [`cache_key`]).
    pub fn lookup(&self, key: &str) -> Option<V> {
        self.read().get(key).cloned()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    pub fn readiness(&self) -> Readiness {
        Readiness(self.ready.clone())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Objects<V>> {
        self.objects.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether a cache holds its first complete list, whatever it keeps per object.
pub(crate) struct Readiness(watch::Receiver<bool>);

impl Readiness {
    /// Returns once the first complete list is in, or `Err` when the writer is gone before.
    pub async fn wait(mut self) -> Result<(), watch::error::RecvError> {
        self.0.wait_for(|r| *r).await.map(drop)
    }
}

impl Cache {
    /// The object at `key` (see [`cache_key`]), parsed.
    pub fn get(&self, key: &str) -> Option<Arc<DynamicObject>> {
        let text = self.read().get(key)?.unpack()?;
        parse(&text)
    }

    /// Every object, or those of one namespace, parsed.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Arc<DynamicObject>> {
        let packed: Vec<Packed> = {
            let objects = self.read();
            let prefix = namespace.map(|ns| format!("{ns}/"));
            objects
                .iter()
                .filter(|(k, _)| prefix.as_deref().is_none_or(|p| k.starts_with(p)))
                .map(|(_, v)| v.clone())
                .collect()
        };
        packed.iter().filter_map(|p| parse(&p.unpack()?)).collect()
    }
}

/// What the cache keeps of `o`: its JSON text, packed by the packer of its kind.
pub(crate) fn pack(o: &DynamicObject, packer: &Packer) -> Option<Packed> {
    serde_json::to_string(o)
        .inspect_err(
            |e| tracing::error!(error = %e, "a watched object does not serialise; not cached"),
        )
        .ok()
        .map(|text| packer.pack(&text))
}

fn parse(text: &str) -> Option<Arc<DynamicObject>> {
    Lean::from_str(text)
        .inspect_err(|e| tracing::error!(error = %e, "a cached object does not parse"))
        .ok()
        .map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(ns: &str, name: &str, value: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": {"a": "b"}},
            "data": {"k": value},
        }))
        .expect("object")
    }

    #[test]
    fn objects_read_back_as_they_were_written() {
        let mut w = CacheWriter::new();
        let cache = w.reader();
        let o = cm("ns", "one", "v");
        w.apply_watcher_event(&watcher::Event::Apply(o.clone()));
        assert_eq!(cache.get("ns/one").as_deref(), Some(&o));
        assert_eq!(cache.get("other/one"), None);
        w.apply_watcher_event(&watcher::Event::Delete(o));
        assert_eq!(cache.get("ns/one"), None);
    }

    #[test]
    fn a_relist_replaces_the_content_only_when_complete() {
        let mut w = CacheWriter::new();
        let cache = w.reader();
        w.apply_watcher_event(&watcher::Event::Apply(cm("ns", "old", "v")));
        w.apply_watcher_event(&watcher::Event::Init);
        w.apply_watcher_event(&watcher::Event::InitApply(cm("ns", "new", "v")));
        assert!(
            cache.get("ns/old").is_some(),
            "the old list stays until the new one is whole"
        );
        assert!(cache.get("ns/new").is_none());
        w.apply_watcher_event(&watcher::Event::InitDone);
        assert!(cache.get("ns/old").is_none());
        assert!(cache.get("ns/new").is_some());
    }

    #[test]
    fn a_namespace_lists_only_its_objects() {
        let mut w = CacheWriter::new();
        let cache = w.reader();
        for (ns, name) in [("a", "x"), ("a", "y"), ("ab", "z")] {
            w.apply_watcher_event(&watcher::Event::Apply(cm(ns, name, "v")));
        }
        let mut names: Vec<String> = cache
            .list(Some("a"))
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        names.sort();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(cache.list(None).len(), 3);
    }

    #[tokio::test]
    async fn ready_after_the_first_complete_list() {
        let mut w = CacheWriter::new();
        let cache = w.reader();
        let waiting = tokio::spawn({
            let cache = cache.clone();
            async move { cache.readiness().wait().await }
        });
        w.apply_watcher_event(&watcher::Event::Init);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        w.apply_watcher_event(&watcher::Event::InitDone);
        assert!(waiting.await.expect("joins").is_ok());
    }
}
