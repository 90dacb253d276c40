//! Scale out (SPEC §12): objects hashed by `namespace/name` into N shards, one Lease per shard
//! (`orkestra-konductor-shard-<i>`) in ork's namespace. Each replica also renews a member Lease
//! (`orkestra-konductor-member-<identity>`), so every replica knows how many are alive and takes
//! its even share: shards are released (after their in-flight reconciles finish) when a replica
//! holds more than its share and taken over when free or expired. A replica reconciles only keys
//! of the shards it holds; on gaining one it reconciles each of its objects once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::{Client, ResourceExt};

pub use crate::shard_set::{ShardSet, shard_of};

use crate::leader::{LEASE_NAME, LeaseConfig};
use crate::lease::{LeaseClient, holder};
use crate::runtime::Runtime;

/// What one round should do, from what the Leases say.
#[derive(Debug, Default, PartialEq, Eq)]
struct Plan {
    acquire: Vec<u32>,
    release: Vec<u32>,
}

/// This replica's share of `total` shards among `members` (sorted identities, `me` included):
/// `total / k`, plus one for the first `total % k` members.
fn share(total: u32, members: &[String], me: &str) -> u32 {
    let k = u32::try_from(members.len().max(1)).unwrap_or(u32::MAX);
    let index = members.iter().position(|m| m == me).unwrap_or(0);
    let index = u32::try_from(index).unwrap_or(u32::MAX);
    total / k + u32::from(index < total % k)
}

/// `holders`: the valid holder of each shard (absent: free or expired).
fn plan(total: u32, members: &[String], me: &str, holders: &BTreeMap<u32, String>) -> Plan {
    let target = share(total, members, me) as usize;
    let mine: Vec<u32> = (0..total)
        .filter(|s| holders.get(s).is_some_and(|h| h == me))
        .collect();
    let mut p = Plan::default();
    if mine.len() > target {
        p.release = mine[target..].to_vec();
    } else {
        p.acquire = (0..total)
            .filter(|s| !holders.contains_key(s))
            .take(target - mine.len())
            .collect();
    }
    p
}

/// A Lease name from an identity (DNS subdomain: lowercase alphanumerics and dashes).
fn member_lease(identity: &str) -> String {
    let clean: String = identity
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let clean = clean.trim_matches('-');
    let short: String = clean.chars().take(40).collect();
    format!(
        "{LEASE_NAME}-member-{short}-{:x}",
        shard_of(identity, u32::MAX)
    )
}

fn shard_lease(shard: u32) -> String {
    format!("{LEASE_NAME}-shard-{shard}")
}

/// Runs the shard protocol for one replica.
#[derive(Debug, Clone)]
pub struct ShardManager {
    leases: LeaseClient,
    identity: String,
    config: LeaseConfig,
    /// How long a shard's in-flight reconciles may take to finish before it is released anyway.
    drain: Duration,
}

impl ShardManager {
    pub fn new(
        client: Client,
        namespace: &str,
        identity: String,
        config: LeaseConfig,
        drain: Duration,
    ) -> ShardManager {
        ShardManager {
            leases: LeaseClient::new(client, namespace, identity.clone(), config.duration),
            identity,
            config,
            drain,
        }
    }

    /// Rounds forever: renew, rebalance, take over lost replicas' shards.
    pub async fn run(&self, runtime: Runtime) {
        let shards = runtime.shards();
        let mut last_ok = tokio::time::Instant::now();
        loop {
            match self.round(&runtime).await {
                Ok(()) => last_ok = tokio::time::Instant::now(),
                Err(e) => {
                    tracing::warn!(error = %e, "shard round failed");
                    // Leases we could not renew in time may be someone else's soon: stop.
                    if last_ok.elapsed() > self.config.renew_deadline {
                        for s in shards.held() {
                            shards.set(s, false);
                            tracing::warn!(
                                shard = s,
                                "could not renew in time; stopped reconciling it"
                            );
                        }
                        runtime.shards_changed();
                    }
                }
            }
            tokio::time::sleep(self.config.retry).await;
        }
    }

    async fn round(&self, runtime: &Runtime) -> Result<(), kube::Error> {
        let shards = runtime.shards();
        let total = shards.total();
        let now = Timestamp::now();
        self.leases
            .claim(&member_lease(&self.identity), now)
            .await?;
        let leases = self.leases.list().await?;
        let mut members = BTreeSet::from([self.identity.clone()]);
        let mut holders = BTreeMap::new();
        for lease in &leases {
            let Some((holder, valid)) = holder(lease, now) else {
                continue;
            };
            if !valid {
                continue;
            }
            let name = lease.name_any();
            if name.starts_with(&format!("{LEASE_NAME}-member-")) {
                members.insert(holder);
            } else if let Some(i) = name
                .strip_prefix(&format!("{LEASE_NAME}-shard-"))
                .and_then(|i| i.parse::<u32>().ok())
                .filter(|i| *i < total)
            {
                holders.insert(i, holder);
            }
        }
        // A shard whose Lease is no longer ours (expired, taken over) stops here.
        for shard in shards.held() {
            if holders.get(&shard) != Some(&self.identity) {
                shards.set(shard, false);
                runtime.shards_changed();
                tracing::warn!(shard, "shard lease lost");
            }
        }
        // Renew what we hold.
        for (shard, holder) in holders.clone() {
            if holder != self.identity {
                continue;
            }
            if self.leases.claim(&shard_lease(shard), now).await? {
                if !shards.held().contains(&shard) {
                    self.gained(runtime, shard);
                }
            } else {
                holders.remove(&shard);
                shards.set(shard, false);
                runtime.shards_changed();
            }
        }
        let members: Vec<String> = members.into_iter().collect();
        let plan = plan(total, &members, &self.identity, &holders);
        for shard in plan.release {
            self.release_shard(runtime, shard).await;
        }
        for shard in plan.acquire {
            if self.leases.claim(&shard_lease(shard), now).await? {
                self.gained(runtime, shard);
            }
        }
        Ok(())
    }

    fn gained(&self, runtime: &Runtime, shard: u32) {
        tracing::info!(shard, identity = %self.identity, "shard gained; reconciling its objects");
        runtime.shards().set(shard, true);
        runtime.shards_changed();
        runtime.reconcile_shard(shard);
    }

    /// Stops dispatching the shard, lets its reconciles finish (bounded), then frees its Lease.
    /// While it waits, its Lease and the ones this replica keeps are renewed as `run` would (a
    /// drain can outlast a Lease: without renewing, another replica could take this shard while
    /// its reconciles still run here, or a shard this one still dispatches, and a key would be
    /// reconciled twice at once, SPEC §12).
    async fn release_shard(&self, runtime: &Runtime, shard: u32) {
        runtime.shards().set(shard, false);
        runtime.shards_changed();
        let deadline = tokio::time::Instant::now() + self.drain;
        let mut renewed = tokio::time::Instant::now();
        while runtime.in_flight_in_shard(shard) > 0 && tokio::time::Instant::now() < deadline {
            if renewed.elapsed() >= self.config.retry {
                self.renew_kept(runtime, shard).await;
                renewed = tokio::time::Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.leases.release(&shard_lease(shard)).await;
        tracing::info!(shard, "shard released to rebalance");
    }

    /// Renews the member Lease, the Lease of the shard `draining` and every shard Lease held;
    /// a held shard whose Lease another replica took meanwhile stops here.
    async fn renew_kept(&self, runtime: &Runtime, draining: u32) {
        let now = Timestamp::now();
        let _ = self.leases.claim(&member_lease(&self.identity), now).await;
        if matches!(
            self.leases.claim(&shard_lease(draining), now).await,
            Ok(false)
        ) {
            tracing::warn!(shard = draining, "the shard being drained was taken over");
        }
        let shards = runtime.shards();
        for held in shards.held() {
            // An error (the API server away) is `run`'s to judge, by its renew deadline.
            if matches!(self.leases.claim(&shard_lease(held), now).await, Ok(false)) {
                shards.set(held, false);
                runtime.shards_changed();
                tracing::warn!(shard = held, "shard lease lost while draining another");
            }
        }
    }

    /// Gives up every Lease this replica holds (graceful shutdown).
    pub async fn release_all(&self, runtime: &Runtime) {
        for shard in runtime.shards().held() {
            self.leases.release(&shard_lease(shard)).await;
        }
        self.leases.release(&member_lease(&self.identity)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("r{i}")).collect()
    }

    #[test]
    fn live_replicas_split_the_shards_evenly() {
        let m = members(3);
        let shares: Vec<u32> = m.iter().map(|me| share(9, &m, me)).collect();
        assert_eq!(shares, [3, 3, 3]);
        let m = members(2);
        let shares: Vec<u32> = m.iter().map(|me| share(9, &m, me)).collect();
        assert_eq!(shares, [5, 4]);
    }

    #[test]
    fn a_replica_takes_free_shards_up_to_its_share_and_releases_extras() {
        let m = members(3);
        let empty = BTreeMap::new();
        assert_eq!(plan(9, &m, "r0", &empty).acquire, [0, 1, 2]);

        // r1 died: its shards 3..6 expired (absent); r0 holds 0..3 and must take two more.
        let holders: BTreeMap<u32, String> = [
            (0, "r0"),
            (1, "r0"),
            (2, "r0"),
            (6, "r2"),
            (7, "r2"),
            (8, "r2"),
        ]
        .into_iter()
        .map(|(s, h)| (s, h.to_string()))
        .collect();
        let two = vec!["r0".to_string(), "r2".to_string()];
        assert_eq!(plan(9, &two, "r0", &holders).acquire, [3, 4]);

        // A new replica joins: r0 holding 5 of 9 with three members gives two back.
        let holders: BTreeMap<u32, String> = (0..5).map(|s| (s, "r0".to_string())).collect();
        assert_eq!(plan(9, &m, "r0", &holders).release, [3, 4]);
    }

    #[test]
    fn member_lease_names_are_valid_and_distinct() {
        let a = member_lease("Host_1-2345");
        assert!(
            a.starts_with("orkestra-konductor-member-host-1-2345-"),
            "{a}"
        );
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
        assert_ne!(member_lease("a.b"), member_lease("a_b"));
    }
}
