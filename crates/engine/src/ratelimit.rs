//! A token bucket (`remote.rateLimit {qps, burst}`) that protects the service.

use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(qps: f64, burst: u32, now: Instant) -> Self {
        TokenBucket {
            qps,
            burst: f64::from(burst.max(1)),
            tokens: f64::from(burst.max(1)),
            last: now,
        }
    }

    /// Takes one token; returns how long the caller must wait before using it.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now.max(self.last);
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
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
}
