//! Per-object exponential backoff that resets on success (kube-runtime has none: kube-rs#1916).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use ork_katalog::RetryBackoff;

#[derive(Debug)]
pub struct Backoff<K> {
    initial: Duration,
    max: Duration,
    multiplier: f64,
    failures: HashMap<K, u32>,
}

impl<K: Hash + Eq> Backoff<K> {
    pub fn new(config: &RetryBackoff) -> Self {
        Backoff {
            initial: config.initial.get(),
            max: config.max.get(),
            multiplier: config.multiplier,
            failures: HashMap::new(),
        }
    }

    /// Records a failure of `key`; returns how long to wait before the retry.
    pub fn failed(&mut self, key: K) -> Duration {
        let n = self.failures.entry(key).or_insert(0);
        let delay = self.initial.as_secs_f64() * self.multiplier.powi((*n).min(64) as i32);
        *n = n.saturating_add(1);
        Duration::from_secs_f64(delay.min(self.max.as_secs_f64()))
    }

    /// Consecutive failures of `key` so far.
    pub fn failures(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    pub fn reset(&mut self, key: &K) {
        self.failures.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_the_cap_and_resets_on_success() {
        let cfg = RetryBackoff {
            initial: "1s".parse().expect("duration"),
            max: "5s".parse().expect("duration"),
            multiplier: 2.0,
        };
        let mut b = Backoff::new(&cfg);
        let waits: Vec<u64> = (0..5).map(|_| b.failed("a").as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        assert_eq!(b.failed("other").as_secs(), 1, "keys are independent");
        b.reset(&"a");
        assert_eq!(b.failed("a").as_secs(), 1);
    }
}
