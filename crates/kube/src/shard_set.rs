//! Which shard a key belongs to and which shards this process holds (SPEC §12); the Lease
//! protocol that decides the latter is the shard manager's.

use std::collections::BTreeSet;

use crate::fnv::Fnv;

/// The shard of a queue key: FNV-1a of `namespace/name`, modulo `total` (stable everywhere).
pub fn shard_of(key: &str, total: u32) -> u32 {
    let mut h = Fnv::default();
    h.bytes(key.as_bytes());
    u32::try_from(h.finish() % u64::from(total.max(1))).unwrap_or(0)
}

/// Which shards this process may reconcile.
#[derive(Debug)]
pub struct ShardSet {
    total: u32,
    held: std::sync::RwLock<BTreeSet<u32>>,
}

impl ShardSet {
    /// One shard, held: no sharding (the default, and leader election's case).
    pub fn single() -> ShardSet {
        ShardSet {
            total: 1,
            held: std::sync::RwLock::new(BTreeSet::from([0])),
        }
    }

    /// `total` shards, none held yet.
    pub fn new(total: u32) -> ShardSet {
        ShardSet {
            total: total.max(1),
            held: std::sync::RwLock::default(),
        }
    }

    pub fn total(&self) -> u32 {
        self.total
    }

    pub fn is_sharded(&self) -> bool {
        self.total > 1
    }

    /// Whether `key` is in a shard this process holds.
    pub fn holds(&self, key: &str) -> bool {
        let shard = shard_of(key, self.total);
        self.held.read().is_ok_and(|h| h.contains(&shard))
    }

    pub fn held(&self) -> BTreeSet<u32> {
        self.held.read().map(|h| h.clone()).unwrap_or_default()
    }

    pub(crate) fn set(&self, shard: u32, held: bool) {
        if let Ok(mut h) = self.held.write() {
            if held {
                h.insert(shard);
            } else {
                h.remove(&shard);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_of_keys_are_stable_and_spread() {
        assert_eq!(shard_of("ns/a", 9), shard_of("ns/a", 9));
        // Replicas of different versions must agree: the value itself is fixed.
        assert_eq!(shard_of("ns/a", 1024), 798);
        let mut counts = [0u32; 9];
        for i in 0..9000 {
            counts[shard_of(&format!("ns/cr-{i}"), 9) as usize] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
    }
}
