//! The bench's eyes on the cluster, by watch (no polling lists, whose cost would grow with N):
//! how many Widgets carry the service's status, and when a child ConfigMap shows an edit.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::core::DynamicObject;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// Counts Widgets whose `status.phase` is `Ready` (the service's status has been written).
#[derive(Debug)]
pub struct ReadyWatch {
    count: watch::Receiver<usize>,
    /// How often the watch failed and started again with a new list (each a LIST of every
    /// Widget, which the API server's figures of the phase then carry).
    restarts: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl ReadyWatch {
    /// Starts watching and returns once the initial list is in.
    ///
    /// # Errors
    /// When the watch does not start within 60 s.
    pub async fn start(api: Api<DynamicObject>) -> Result<ReadyWatch> {
        let (tx, count) = watch::channel(0usize);
        let (synced_tx, synced) = oneshot::channel();
        let restarts = Arc::new(AtomicUsize::new(0));
        let failed = restarts.clone();
        let task = tokio::spawn(async move {
            let mut ready: HashSet<String> = HashSet::new();
            let mut synced_tx = Some(synced_tx);
            let mut stream = watcher::watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(Event::Apply(o) | Event::InitApply(o)) => {
                        if o.data["status"]["phase"] == "Ready" {
                            ready.insert(o.name_any());
                        } else {
                            ready.remove(&o.name_any());
                        }
                    }
                    Ok(Event::Delete(o)) => {
                        ready.remove(&o.name_any());
                    }
                    Ok(Event::InitDone) => {
                        if let Some(s) = synced_tx.take() {
                            let _ = s.send(());
                        }
                    }
                    Ok(Event::Init) => {}
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        eprintln!("ork-bench: the watch of the Widgets failed, listing again: {e}");
                    }
                }
                tx.send_replace(ready.len());
            }
        });
        tokio::time::timeout(Duration::from_secs(60), synced).await??;
        Ok(ReadyWatch {
            count,
            restarts,
            task,
        })
    }

    /// The count of Ready Widgets, as it changes.
    pub fn count(&self) -> watch::Receiver<usize> {
        self.count.clone()
    }

    /// How often the watch has failed and listed again so far.
    pub fn restarts(&self) -> usize {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Waits until at least `n` Widgets are Ready; returns when that was seen.
    ///
    /// # Errors
    /// After `limit`, naming how many were Ready.
    pub async fn wait_for(&mut self, n: usize, limit: Duration) -> Result<Instant> {
        let reached = matches!(
            tokio::time::timeout(limit, self.count.wait_for(|c| *c >= n)).await,
            Ok(Ok(_))
        );
        match reached {
            true => Ok(Instant::now()),
            false => bail!(
                "timed out after {limit:?}: {} of {n} Widgets Ready",
                *self.count.borrow()
            ),
        }
    }
}

impl Drop for ReadyWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Waiters = HashMap<String, (String, oneshot::Sender<Instant>)>;

/// Tells when a ConfigMap's `data.size` becomes an expected value (edit → child updated).
#[derive(Debug)]
pub struct ChildWatch {
    waiters: Arc<Mutex<Waiters>>,
    task: JoinHandle<()>,
}

impl ChildWatch {
    /// # Errors
    /// When the watch does not start within 60 s.
    pub async fn start(client: &Client, ns: &str) -> Result<ChildWatch> {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let waiters: Arc<Mutex<Waiters>> = Arc::default();
        let (synced_tx, synced) = oneshot::channel();
        let w = waiters.clone();
        let task = tokio::spawn(async move {
            let mut synced_tx = Some(synced_tx);
            let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(Event::Apply(cm) | Event::InitApply(cm)) => {
                        let size = cm.data.as_ref().and_then(|d| d.get("size"));
                        let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
                        let name = cm.name_any();
                        if size.is_some_and(|s| w.get(&name).is_some_and(|(want, _)| want == s))
                            && let Some((_, tx)) = w.remove(&name)
                        {
                            let _ = tx.send(Instant::now());
                        }
                    }
                    Ok(Event::InitDone) => {
                        if let Some(s) = synced_tx.take() {
                            let _ = s.send(());
                        }
                    }
                    _ => {}
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(120), synced).await??;
        Ok(ChildWatch { waiters, task })
    }

    /// A receiver that fires when ConfigMap `name` shows `data.size == size`.
    pub fn expect(&self, name: &str, size: &str) -> oneshot::Receiver<Instant> {
        let (tx, rx) = oneshot::channel();
        self.waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string(), (size.to_string(), tx));
        rx
    }
}

impl Drop for ChildWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}
