//! Handing queued keys to reconciles (at most `workers`, only while active), periodic resync,
//! and what happens to a key when its reconcile ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ork_engine::queue::Reason;
use tracing::Instrument;

use super::Shared;

pub(super) async fn resync(shared: Arc<Shared>) {
    let period = shared.entry.operator_box.reconcile.resync.get();
    if period.is_zero() {
        return;
    }
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tick.tick().await;
        let mut st = shared.lock();
        let keys: Vec<String> = st.crs.keys().cloned().collect();
        for k in keys {
            st.queue.add(k, Reason::Resync);
        }
        drop(st);
        shared.wake.notify_one();
    }
}

pub(super) async fn dispatch(shared: Arc<Shared>) {
    let workers = shared.entry.operator_box.reconcile.workers as usize;
    let mut active = shared.process.active.clone();
    loop {
        // A standby (or a process shutting down) keeps its caches but starts no reconcile.
        if !*active.borrow_and_update() {
            if active.changed().await.is_err() {
                return;
            }
            continue;
        }
        let deadline = {
            let mut st = shared.lock();
            st.queue.promote(Instant::now());
            while st.busy < workers {
                let Some((key, reason)) = st.queue.pop() else {
                    break;
                };
                st.busy += 1;
                let shared = shared.clone();
                let span = tracing::info_span!("reconcile", %key, trigger = reason.as_str());
                tokio::spawn(
                    async move {
                        let next = crate::reconcile::reconcile(&shared, &key, reason).await;
                        finish(&shared, &key, next);
                    }
                    .instrument(span),
                );
            }
            st.queue.next_deadline()
        };
        let sleep = deadline.map_or(Duration::from_secs(3600), |d| {
            d.saturating_duration_since(Instant::now())
        });
        tokio::select! {
            () = shared.wake.notified() => {}
            () = tokio::time::sleep(sleep) => {}
            _ = active.changed() => {}
        }
    }
}

/// What to do with a key after its reconcile.
#[derive(Debug)]
pub(crate) enum Next {
    Idle,
    After(Duration, Reason),
}

fn finish(shared: &Shared, key: &str, next: Next) {
    let mut st = shared.lock();
    st.busy -= 1;
    let k = key.to_string();
    st.queue.done(&k);
    if let Some((rv, reason)) = st.deferred.remove(key)
        && !st.own_rvs.contains(&rv)
    {
        st.queue.add(k.clone(), reason);
    }
    if let Next::After(delay, reason) = next {
        st.queue.add_at(k, reason, Instant::now() + delay);
    }
    drop(st);
    shared.wake.notify_one();
}
