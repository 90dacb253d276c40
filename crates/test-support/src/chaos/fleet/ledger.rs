//! Who wrote what: every child write and every Lease write as the watches saw them, with their
//! resourceVersions (one etcd orders them all, so "written while another replica held the
//! Lease" is exact whatever the watch lag), and the service's calls of one key in flight from
//! two replicas at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::watcher;

use super::super::check;
use super::super::service::Call;
use super::super::stage::{Stage, lock};

/// A child write as the watch saw it.
#[derive(Debug, Clone)]
struct ChildWrite {
    name: String,
    /// `data.writer` (None: an unstamped child).
    writer: Option<String>,
    rv: u64,
}

/// A Lease write (acquire, renew, release) as the watch saw it.
#[derive(Debug, Clone)]
struct LeaseWrite {
    lease: String,
    holder: Option<String>,
    rv: u64,
    at: Instant,
}

#[derive(Debug, Default)]
struct Seen {
    writes: Vec<ChildWrite>,
    leases: Vec<LeaseWrite>,
    /// (object, resourceVersion) already recorded: a re-list repeats objects.
    known: BTreeSet<(String, u64)>,
}

/// Watches every managed ConfigMap of the stage's namespace and every Lease of ork's namespace.
#[derive(Debug)]
pub(super) struct Ledger {
    seen: Arc<Mutex<Seen>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn rv_of(meta: &kube::core::ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl Ledger {
    /// Starts both watches and returns once both have listed.
    pub(super) async fn start(stage: &Stage) -> Result<Ledger> {
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let (cm_ready, lease_ready) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let cms = Api::<ConfigMap>::namespaced(stage.client.clone(), &stage.ns.name);
        let leases = Api::<Lease>::namespaced(stage.client.clone(), &stage.home.name);
        let children = {
            let (seen, listed) = (seen.clone(), cm_ready.clone());
            tokio::spawn(async move {
                let wc = watcher::Config::default().labels(check::MANAGED);
                let mut s = std::pin::pin!(watcher(cms, wc));
                while let Some(ev) = s.next().await {
                    match ev {
                        Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) => {
                            let (name, rv) = (cm.name_any(), rv_of(&cm.metadata));
                            let mut st = lock(&seen);
                            if st.known.insert((format!("cm/{name}"), rv)) {
                                let writer =
                                    cm.data.as_ref().and_then(|d| d.get("writer").cloned());
                                st.writes.push(ChildWrite { name, writer, rv });
                            }
                        }
                        Ok(watcher::Event::InitDone) => listed.store(true, Ordering::SeqCst),
                        _ => {}
                    }
                }
            })
        };
        let lease_task = {
            let (seen, listed) = (seen.clone(), lease_ready.clone());
            tokio::spawn(async move {
                let mut s = std::pin::pin!(watcher(leases, watcher::Config::default()));
                while let Some(ev) = s.next().await {
                    match ev {
                        Ok(watcher::Event::Apply(l) | watcher::Event::InitApply(l)) => {
                            let (lease, rv) = (l.name_any(), rv_of(&l.metadata));
                            let mut st = lock(&seen);
                            if st.known.insert((format!("lease/{lease}"), rv)) {
                                let holder = l
                                    .spec
                                    .and_then(|s| s.holder_identity)
                                    .filter(|h| !h.is_empty());
                                st.leases.push(LeaseWrite {
                                    lease,
                                    holder,
                                    rv,
                                    at: Instant::now(),
                                });
                            }
                        }
                        Ok(watcher::Event::InitDone) => listed.store(true, Ordering::SeqCst),
                        _ => {}
                    }
                }
            })
        };
        let started = Instant::now();
        while !(cm_ready.load(Ordering::SeqCst) && lease_ready.load(Ordering::SeqCst)) {
            if started.elapsed() > Duration::from_secs(30) {
                bail!("the ledger's watches did not list within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Ledger {
            seen,
            tasks: vec![children, lease_task],
        })
    }

    /// Child writes made while the Lease that governs the child (`lease_of` its name) was held
    /// by another replica or by nobody, in resourceVersion order: a write by the previous
    /// holder after a handover is a key written by two replicas at once. Returns how many
    /// stamped writes were checked and the offending ones.
    pub(super) fn written_without_the_lease(
        &self,
        lease_of: impl Fn(&str) -> String,
        labels: &BTreeMap<String, String>,
    ) -> (usize, Vec<String>) {
        let st = lock(&self.seen);
        let mut by_lease: BTreeMap<&str, Vec<&LeaseWrite>> = BTreeMap::new();
        for l in &st.leases {
            by_lease.entry(l.lease.as_str()).or_default().push(l);
        }
        for v in by_lease.values_mut() {
            v.sort_by_key(|l| l.rv);
        }
        let label = |id: &str| labels.get(id).cloned().unwrap_or_else(|| id.to_string());
        let (mut checked, mut bad) = (0, Vec::new());
        for w in &st.writes {
            let Some(writer) = &w.writer else { continue };
            checked += 1;
            let lease = lease_of(&w.name);
            let before = by_lease
                .get(lease.as_str())
                .and_then(|v| v.iter().rev().find(|l| l.rv < w.rv));
            let holder = before.and_then(|l| l.holder.as_deref()).map(label);
            if holder.as_deref() != Some(writer.as_str()) {
                bad.push(format!(
                    "ConfigMap {} written by {writer} at revision {} while {lease} was {}",
                    w.name,
                    w.rv,
                    match (before, holder) {
                        (None, _) => "not yet held by anyone".to_string(),
                        (Some(l), None) => format!("released (revision {})", l.rv),
                        (Some(l), Some(h)) => format!("held by {h} (revision {})", l.rv),
                    }
                ));
            }
        }
        (checked, bad)
    }

    /// Holder changes of `lease` (renewals left out): (when the watch saw it, new holder label).
    pub(super) fn handovers(
        &self,
        lease: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<(Instant, String)> {
        let st = lock(&self.seen);
        let mut writes: Vec<&LeaseWrite> = st.leases.iter().filter(|l| l.lease == lease).collect();
        writes.sort_by_key(|l| l.rv);
        let mut out: Vec<(Instant, String)> = Vec::new();
        for l in writes {
            let who = l.holder.as_deref().map_or_else(
                || "nobody".to_string(),
                |id| labels.get(id).cloned().unwrap_or_else(|| id.to_string()),
            );
            if out.last().map(|(_, h)| h) != Some(&who) {
                out.push((l.at, who));
            }
        }
        out
    }

    /// How many Leases `identity` held at `since` (member Leases aside) and how long after it
    /// the last of them was held by another replica, by the watch's clock; None when one of
    /// them never was.
    pub(super) fn taken_over(&self, identity: &str, since: Instant) -> Option<(usize, Duration)> {
        let st = lock(&self.seen);
        let mut by_lease: BTreeMap<&str, Vec<&LeaseWrite>> = BTreeMap::new();
        for l in st.leases.iter().filter(|l| !l.lease.contains("-member-")) {
            by_lease.entry(l.lease.as_str()).or_default().push(l);
        }
        let (mut held_then, mut longest) = (0, Duration::ZERO);
        for writes in by_lease.values_mut() {
            writes.sort_by_key(|l| l.rv);
            let held = writes
                .iter()
                .rev()
                .find(|l| l.at <= since)
                .is_some_and(|l| l.holder.as_deref() == Some(identity));
            if !held {
                continue;
            }
            held_then += 1;
            let next = writes
                .iter()
                .find(|l| l.at > since && l.holder.as_deref().is_some_and(|h| h != identity))?;
            longest = longest.max(next.at.saturating_duration_since(since));
        }
        Some((held_then, longest))
    }

    /// Holder changes across every Lease named `<prefix>…` (releases not counted).
    pub(super) fn moves(&self, prefix: &str) -> usize {
        let st = lock(&self.seen);
        let mut last: BTreeMap<&str, &str> = BTreeMap::new();
        let mut leases: Vec<&LeaseWrite> = st
            .leases
            .iter()
            .filter(|l| l.lease.starts_with(prefix))
            .collect();
        leases.sort_by_key(|l| l.rv);
        let mut moves = 0;
        for l in leases {
            let Some(h) = l.holder.as_deref() else {
                continue;
            };
            if last.insert(l.lease.as_str(), h).is_some_and(|p| p != h) {
                moves += 1;
            }
        }
        moves
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Calls of one key from two replicas in flight at once, by the service's clock.
pub(super) fn calls_at_once(calls: &[Call], t0: Instant) -> Vec<String> {
    let now = Instant::now();
    let mut by_key: BTreeMap<&str, Vec<&Call>> = BTreeMap::new();
    for c in calls {
        by_key.entry(c.key.as_str()).or_default().push(c);
    }
    let secs = |t: Instant| t.saturating_duration_since(t0).as_secs_f64();
    let mut out = Vec::new();
    for (key, mut cs) in by_key {
        cs.sort_by_key(|c| c.at);
        for (i, a) in cs.iter().enumerate() {
            let end = a.ended.unwrap_or(now);
            for b in cs[i + 1..].iter().take_while(|b| b.at < end) {
                if b.replica != a.replica {
                    out.push(format!(
                        "{key}: {} called {:.3}–{:.3} s, {} called at {:.3} s",
                        a.replica,
                        secs(a.at),
                        secs(end),
                        b.replica,
                        secs(b.at)
                    ));
                }
            }
        }
    }
    out
}

/// Calls per replica, in the order the replicas first called.
pub(super) fn calls_by_replica(calls: &[Call]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for c in calls {
        if !n.contains_key(c.replica.as_str()) {
            order.push(&c.replica);
        }
        *n.entry(&c.replica).or_insert(0) += 1;
    }
    order
        .iter()
        .map(|r| format!("{r} {}", n[r]))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(leases: &[(&str, Option<&str>, u64)], writes: &[(&str, &str, u64)]) -> Ledger {
        let at = Instant::now();
        let seen = Seen {
            leases: leases
                .iter()
                .map(|(lease, holder, rv)| LeaseWrite {
                    lease: lease.to_string(),
                    holder: holder.map(str::to_string),
                    rv: *rv,
                    at,
                })
                .collect(),
            writes: writes
                .iter()
                .map(|(name, writer, rv)| ChildWrite {
                    name: name.to_string(),
                    writer: Some(writer.to_string()),
                    rv: *rv,
                })
                .collect(),
            known: BTreeSet::new(),
        };
        Ledger {
            seen: Arc::new(Mutex::new(seen)),
            tasks: Vec::new(),
        }
    }

    #[test]
    fn a_write_by_the_previous_holder_after_the_handover_is_a_double_write() {
        let labels: BTreeMap<String, String> = [("id-a", "a"), ("id-b", "b")]
            .into_iter()
            .map(|(i, l)| (i.to_string(), l.to_string()))
            .collect();
        // a holds the Lease from revision 10, releases it at 20, b takes it at 22.
        let leases = [
            ("L", Some("id-a"), 10),
            ("L", Some("id-a"), 15),
            ("L", None, 20),
            ("L", Some("id-b"), 22),
        ];
        let clean = ledger(
            &leases,
            &[("x-cfg", "a", 12), ("x-cfg", "a", 19), ("x-cfg", "b", 30)],
        );
        let (checked, bad) = clean.written_without_the_lease(|_| "L".into(), &labels);
        assert_eq!((checked, bad.len()), (3, 0), "{bad:?}");
        let late = ledger(
            &leases,
            &[("x-cfg", "a", 21), ("x-cfg", "a", 25), ("y-cfg", "b", 5)],
        );
        let (_, bad) = late.written_without_the_lease(|_| "L".into(), &labels);
        assert_eq!(bad.len(), 3, "{bad:?}");
        assert!(bad[0].contains("released"), "{}", bad[0]);
        assert!(bad[1].contains("held by b"), "{}", bad[1]);
        assert!(bad[2].contains("not yet held"), "{}", bad[2]);
    }

    #[test]
    fn calls_of_one_key_overlap_only_across_replicas_and_only_while_in_flight() {
        let t0 = Instant::now();
        let call = |key: &str, replica: &str, from: u64, to: u64| Call {
            key: key.into(),
            replica: replica.into(),
            finalizing: false,
            rev: Some(0),
            at: t0 + Duration::from_millis(from),
            ended: Some(t0 + Duration::from_millis(to)),
            outcome: "ok",
        };
        let calls = [
            call("ns/a", "r1", 0, 100),
            call("ns/a", "r1", 50, 150),
            call("ns/a", "r2", 150, 200),
            call("ns/b", "r1", 0, 100),
            call("ns/b", "r2", 99, 120),
        ];
        let found = calls_at_once(&calls, t0);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("ns/b: r1"), "{}", found[0]);
    }
}
