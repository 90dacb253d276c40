//! A token bucket (`remote.rateLimit {qps, burst}`) that protects the service.
//!
//! Never panics and never overflows: `qps` is clamped to the range the Katalog accepts, the
//! debt of waiting callers is bounded, and waits are computed with `Duration::try_from_secs_f64`.

use std::time::{Duration, Instant};

use ork_katalog::{MAX_BURST, MAX_QPS, MIN_QPS};

/// The longest wait the bucket ever asks for (one year, as every duration in ork).
const MAX_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);

#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(qps: f64, burst: u32, now: Instant) -> Self {
        let qps = if qps.is_nan() {
            MIN_QPS
        } else {
            qps.clamp(MIN_QPS, MAX_QPS)
        };
        let burst = f64::from(burst.clamp(1, MAX_BURST));
        TokenBucket {
            qps,
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Takes one token; returns how long the caller must wait before using it.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now.max(self.last);
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        // The debt never exceeds what a year of refill repays, so `tokens` stays finite.
        let floor = -(MAX_WAIT.as_secs_f64() * self.qps);
        self.tokens = (self.tokens - 1.0).max(floor);
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-self.tokens / self.qps)
                .unwrap_or(MAX_WAIT)
                .min(MAX_WAIT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_steady_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(2.0, 2, t0);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::from_millis(500));
        assert_eq!(b.reserve(t0), Duration::from_millis(1000));
        // After the waits have passed the bucket is empty but not in debt.
        assert_eq!(b.reserve(t0 + Duration::from_millis(1500)), Duration::ZERO);
    }

    #[test]
    fn any_configuration_and_any_load_stays_finite() {
        let t0 = Instant::now();
        for (qps, burst) in [
            (0.0, 0),
            (-1.0, 1),
            (f64::NAN, 1),
            (f64::INFINITY, u32::MAX),
            (MIN_QPS, 1),
            (MAX_QPS, MAX_BURST),
            (1e-300, 1),
        ] {
            let mut b = TokenBucket::new(qps, burst, t0);
            let mut last = Duration::ZERO;
            for i in 0..100_000u64 {
                let w = b.reserve(t0);
                assert!(w <= MAX_WAIT, "{qps} {burst}: {w:?}");
                assert!(w >= last || w == MAX_WAIT);
                last = w;
                if i % 10_000 == 0 {
                    // Time going backwards is ignored.
                    let _ = b.reserve(t0);
                }
            }
            let far = t0 + Duration::from_secs(400 * 24 * 3600);
            assert_eq!(
                b.reserve(far),
                Duration::ZERO,
                "{qps}: a year repays any debt"
            );
        }
    }
}
