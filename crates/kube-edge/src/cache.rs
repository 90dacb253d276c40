//! What the watches saw, kept small: each object as its compact JSON text (the watches already
//! drop `managedFields`), parsed again only when a reconcile or a cross lookup reads it.
//!
//! kube-runtime's reflector store held every object as a parsed `DynamicObject`: about 3.6 KB
//! of heap for a small ConfigMap (a tree node per map, an `ApiResource` copy in every key).
//! Text costs what the object's JSON costs, a few hundred bytes; a reconcile parses its CR and
//! its children, a few microseconds against the milliseconds of its API calls.
//!
//! Same contract as the reflector store: a (re-)list is buffered and replaces the whole content
//! only when it is complete, so readers never see half a list; [`Cache::wait_until_ready`]
//! returns after the first complete list.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use kube::ResourceExt;
use kube::core::DynamicObject;
use kube::runtime::watcher;
use tokio::sync::watch;

use crate::wire::Lean;

type Objects = HashMap<Box<str>, Box<str>>;

/// The reading side, cheap to clone.
#[derive(Clone)]
pub(crate) struct Cache {
    objects: Arc<RwLock<Objects>>,
    ready: watch::Receiver<bool>,
}

/// The writing side: one per watch.
pub(crate) struct CacheWriter {
    objects: Arc<RwLock<Objects>>,
    ready: watch::Sender<bool>,
    /// The (re-)list in progress.
    listing: Option<Objects>,
}

/// The cache key of an object: `namespace/name`, or `name` when cluster-scoped (as queue keys).
pub(crate) fn cache_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

/// The cache key (and queue key) of an object.
pub(crate) fn key_of(obj: &DynamicObject) -> String {
    cache_key(obj.metadata.namespace.as_deref(), &obj.name_any())
}

impl CacheWriter {
    pub fn new() -> CacheWriter {
        let (ready, _) = watch::channel(false);
        CacheWriter {
            objects: Arc::default(),
            ready,
            listing: None,
        }
    }

    pub fn reader(&self) -> Cache {
        Cache {
            objects: self.objects.clone(),
            ready: self.ready.subscribe(),
        }
    }

    pub fn apply_watcher_event(&mut self, event: &watcher::Event<DynamicObject>) {
        match event {
            watcher::Event::Init => self.listing = Some(Objects::new()),
            watcher::Event::InitApply(o) => {
                if let (Some(listing), Some(text)) = (&mut self.listing, compact(o)) {
                    listing.insert(key_of(o).into(), text);
                }
            }
            watcher::Event::InitDone => {
                if let Some(mut listing) = self.listing.take() {
                    listing.shrink_to_fit();
                    *self.write() = listing;
                }
                self.ready.send_replace(true);
            }
            watcher::Event::Apply(o) => {
                if let Some(text) = compact(o) {
                    self.write().insert(key_of(o).into(), text);
                }
            }
            watcher::Event::Delete(o) => {
                self.write().remove(key_of(o).as_str());
            }
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Objects> {
        self.objects.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Cache {
    /// The object at `key` (see [`cache_key`]), parsed.
    pub fn get(&self, key: &str) -> Option<Arc<DynamicObject>> {
        let text = self.read().get(key)?.clone();
        parse(&text)
    }

    /// Every object, or those of one namespace, parsed.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Arc<DynamicObject>> {
        let texts: Vec<Box<str>> = {
            let objects = self.read();
            let prefix = namespace.map(|ns| format!("{ns}/"));
            objects
                .iter()
                .filter(|(k, _)| prefix.as_deref().is_none_or(|p| k.starts_with(p)))
                .map(|(_, v)| v.clone())
                .collect()
        };
        texts.iter().filter_map(|t| parse(t)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Returns once the first complete list is in, or `Err` when the writer is gone before.
    pub async fn wait_until_ready(&self) -> Result<(), watch::error::RecvError> {
        let mut ready = self.ready.clone();
        ready.wait_for(|r| *r).await.map(drop)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Objects> {
        self.objects.read().unwrap_or_else(PoisonError::into_inner)
    }
}

fn compact(o: &DynamicObject) -> Option<Box<str>> {
    serde_json::to_string(o)
        .inspect_err(
            |e| tracing::error!(error = %e, "a watched object does not serialise; not cached"),
        )
        .ok()
        .map(String::into_boxed_str)
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
            async move { cache.wait_until_ready().await }
        });
        w.apply_watcher_event(&watcher::Event::Init);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        w.apply_watcher_event(&watcher::Event::InitDone);
        assert!(waiting.await.expect("joins").is_ok());
    }
}
