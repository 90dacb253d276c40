//! What the entries of one run share: the registry of entries, metrics, the switch that allows
//! reconciles (leadership, shutdown) and which entries' caches are synced.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::shard_set::ShardSet;

#[derive(Debug)]
pub(crate) struct Process {
    pub registry: Registry,
    pub metrics: Metrics,
    /// Whether workers may start reconciles: leader (or no election) and not shutting down.
    pub active: watch::Receiver<bool>,
    pub active_tx: watch::Sender<bool>,
    /// Entries whose caches hold the initial lists.
    synced: Mutex<HashSet<String>>,
    /// The shards this process reconciles (all of one shard without `--shards`).
    pub shards: Arc<ShardSet>,
    /// The admission of each entry that asks for it, by entry name (SPEC §21).
    admitters: RwLock<BTreeMap<String, Arc<crate::admission::Admitter>>>,
    /// Where the webhook configurations send the API server, and the CA they trust, when
    /// this process registers them itself (`--register-webhooks`): set once, before the
    /// entries start.
    pub webhook_registration: OnceLock<(crate::webhook::ClientBase, String)>,
}

impl Process {
    pub fn new(active: bool, shards: ShardSet) -> Process {
        let (active_tx, active_rx) = watch::channel(active);
        let metrics = Metrics::new();
        metrics.set_leader(active);
        Process {
            registry: Registry::default(),
            metrics,
            active: active_rx,
            active_tx,
            synced: Mutex::default(),
            shards: Arc::new(shards),
            admitters: RwLock::default(),
            webhook_registration: OnceLock::new(),
        }
    }

    /// Serves `entry`'s admission from now on.
    pub fn add_admitter(&self, entry: &str, admitter: Arc<crate::admission::Admitter>) {
        if let Ok(mut a) = self.admitters.write() {
            a.insert(entry.to_string(), admitter);
        }
    }

    /// Stops serving `entry`'s admission: a review for it is answered as not served.
    pub fn remove_admitter(&self, entry: &str) {
        if let Ok(mut a) = self.admitters.write() {
            a.remove(entry);
        }
    }

    pub fn admitter(&self, entry: &str) -> Option<Arc<crate::admission::Admitter>> {
        self.admitters.read().ok()?.get(entry).cloned()
    }

    /// The entry's caches hold their initial lists.
    pub fn mark_synced(&self, entry: &str) {
        if let Ok(mut s) = self.synced.lock() {
            s.insert(entry.to_string());
        }
    }

    /// The entry is gone (its controller was deleted or changed).
    pub fn forget_synced(&self, entry: &str) {
        if let Ok(mut s) = self.synced.lock() {
            s.remove(entry);
        }
    }

    pub fn is_synced(&self, entry: &str) -> bool {
        self.synced.lock().is_ok_and(|s| s.contains(entry))
    }
}
