//! The lower-priority lane: the CR annotations and events reconciles call for, coalesced per
//! CR and written after them, so they never delay another CR's convergence (SPEC §10).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::reconcile::Later;

#[derive(Debug, Default)]
pub(crate) struct Lane {
    waiting: Mutex<Waiting>,
    wake: Notify,
}

#[derive(Debug, Default)]
struct Waiting {
    order: VecDeque<String>,
    by_key: HashMap<String, Later>,
}

impl Lane {
    /// Adds the writes of a reconcile of `key`, folded into any still waiting for it.
    pub fn push(&self, key: &str, later: Later) {
        let mut w = self.lock();
        match w.by_key.get_mut(key) {
            Some(waiting) => waiting.merge(later),
            None => {
                w.by_key.insert(key.to_string(), later);
                w.order.push_back(key.to_string());
            }
        }
        drop(w);
        self.wake.notify_one();
    }

    /// Up to `n` waiting writes, oldest first.
    pub fn take(&self, n: usize) -> Vec<Later> {
        let mut w = self.lock();
        let mut out = Vec::new();
        while out.len() < n {
            let Some(key) = w.order.pop_front() else {
                break;
            };
            if let Some(later) = w.by_key.remove(&key) {
                out.push(later);
            }
        }
        out
    }

    /// Waits until something is pushed.
    pub async fn wait(&self) {
        self.wake.notified().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
