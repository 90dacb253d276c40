//! Per-object exponential backoff that resets on success (kube-runtime has none: kube-rs#1916).
//!
//! The arithmetic saturates: no configuration (even one validation would refuse) and no number
//! of failures makes a delay overflow, go negative or exceed `max`.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use ork_katalog::{Queue, RetryBackoff};

/// The exponent stops growing here: with the smallest growing multiplier ork accepts that
/// matters (1.01) and the smallest initial delay (1ns), 1.01^4096 ns is already past a year.
const MAX_EXPONENT: u32 = 4096;

#[derive(Debug)]
pub struct Backoff<K> {
    initial: Duration,
    max: Duration,
    multiplier: f64,
    max_attempts: Option<u32>,
    failures: HashMap<K, u32>,
}

impl<K: Hash + Eq> Backoff<K> {
    pub fn new(config: &RetryBackoff) -> Self {
        Backoff {
            initial: config.initial.get(),
            max: config.max.get().max(config.initial.get()),
            multiplier: if config.multiplier.is_finite() && config.multiplier >= 1.0 {
                config.multiplier
            } else {
                1.0
            },
            max_attempts: config.max_attempts,
            failures: HashMap::new(),
        }
    }

    /// A backoff with the queue's `retryBackoff` and `maxAttempts`.
    pub fn from_queue(queue: &Queue) -> Self {
        let mut b = Backoff::new(&queue.retry_backoff);
        b.max_attempts = queue.max_attempts();
        b
    }

    /// Records a failure of `key`; returns how long to wait before the retry.
    pub fn failed(&mut self, key: K) -> Duration {
        let n = self.failures.entry(key).or_insert(0);
        let exponent = (*n).min(MAX_EXPONENT);
        *n = n.saturating_add(1);
        let factor = self.multiplier.powf(f64::from(exponent));
        let secs = self.initial.as_secs_f64() * factor;
        let delay = if secs.is_finite() {
            Duration::try_from_secs_f64(secs).unwrap_or(self.max)
        } else {
            self.max
        };
        delay.min(self.max)
    }

    /// Consecutive failures of `key` so far.
    pub fn failures(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    /// True when `key` has used all of `maxAttempts` (calls, the first included) in its
    /// current failure series: it waits for its next event or resync instead of a retry.
    pub fn exhausted(&self, key: &K) -> bool {
        self.max_attempts
            .is_some_and(|max| self.failures(key) >= max)
    }

    pub fn reset(&mut self, key: &K) {
        self.failures.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(initial: &str, max: &str, multiplier: f64) -> RetryBackoff {
        RetryBackoff {
            initial: initial.parse().expect("duration"),
            max: max.parse().expect("duration"),
            multiplier,
            max_attempts: None,
        }
    }

    #[test]
    fn grows_to_the_cap_and_resets_on_success() {
        let mut b = Backoff::new(&cfg("1s", "5s", 2.0));
        let waits: Vec<u64> = (0..5).map(|_| b.failed("a").as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
        assert_eq!(b.failed("other").as_secs(), 1, "keys are independent");
        b.reset(&"a");
        assert_eq!(b.failed("a").as_secs(), 1);
    }

    #[test]
    fn extreme_configurations_never_panic_or_overflow() {
        let year = "8760h";
        for c in [
            cfg("1ns", year, 10.0),
            cfg(year, year, 10.0),
            cfg("1ns", "1ns", 1.0),
            cfg("1s", year, f64::MAX),
            cfg("1s", year, f64::NAN),
            cfg("1s", year, f64::INFINITY),
            cfg("1s", "1ms", 2.0),
        ] {
            let mut b = Backoff::new(&c);
            let mut last = Duration::ZERO;
            for _ in 0..10_000 {
                let d = b.failed(1u8);
                assert!(d <= c.max.get().max(c.initial.get()));
                assert!(d >= last || d == c.max.get().max(c.initial.get()));
                last = d;
            }
        }
        let mut b = Backoff::new(&cfg("1s", year, 10.0));
        b.failures.insert(7u8, u32::MAX);
        assert_eq!(b.failed(7).as_secs(), 365 * 24 * 3600);
        assert_eq!(b.failures(&7), u32::MAX);
    }

    #[test]
    fn max_attempts_ends_a_failure_series() {
        let q = Queue {
            max_attempts: Some(2),
            ..Queue::default()
        };
        let mut b = Backoff::from_queue(&q);
        assert!(!b.exhausted(&"a"));
        b.failed("a");
        assert!(!b.exhausted(&"a"));
        b.failed("a");
        assert!(b.exhausted(&"a"));
        b.reset(&"a");
        assert!(!b.exhausted(&"a"));
        assert!(!Backoff::<&str>::new(&RetryBackoff::default()).exhausted(&"a"));
    }
}
