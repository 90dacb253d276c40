//! Per-entry health (SPEC §3.6): totals, consecutive failures, state, degraded at a threshold.

use ork_protocol::HealthSummary;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum State {
    Pending,
    Healthy,
    Degraded,
    Gated,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Healthy => "healthy",
            State::Degraded => "degraded",
            State::Gated => "gated",
        }
    }
}

/// The health of one Katalog entry, as served at `/katalog/{entry}/health` and stamped on CRs.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub state: State,
    pub total_reconciles: u64,
    pub failed_reconciles: u64,
    pub consecutive_fails: u32,
    pub error_rate_percent: f64,
    pub last_error: Option<String>,
    pub last_reconcile: Option<String>,
    pub gated_reason: Option<String>,
    /// Why the entry cannot see its CRs (the API server no longer serves their type: the CRD
    /// was deleted): degraded, and not ready, until the watch works again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unserved: Option<String>,
    #[serde(skip)]
    failure_threshold: u32,
}

impl Health {
    pub fn new(failure_threshold: u32) -> Self {
        Health {
            state: State::Pending,
            total_reconciles: 0,
            failed_reconciles: 0,
            consecutive_fails: 0,
            error_rate_percent: 0.0,
            last_error: None,
            last_reconcile: None,
            gated_reason: None,
            unserved: None,
            failure_threshold: failure_threshold.max(1),
        }
    }

    /// The CRs' type is not served (`why`): degraded whatever the reconciles said.
    pub fn record_unserved(&mut self, why: &str) {
        self.unserved = Some(why.to_string());
        self.state = State::Degraded;
    }

    /// The CRs' type is served again: the state the reconciles say.
    pub fn record_served(&mut self) {
        if self.unserved.take().is_some() {
            self.state = if self.consecutive_fails >= self.failure_threshold {
                State::Degraded
            } else if self.total_reconciles > 0 {
                State::Healthy
            } else {
                State::Pending
            };
        }
    }

    pub fn record_success(&mut self, now: &str) {
        self.total_reconciles += 1;
        self.consecutive_fails = 0;
        self.state = if self.unserved.is_some() {
            State::Degraded
        } else {
            State::Healthy
        };
        self.gated_reason = None;
        // The entry is healthy again: an old error no longer describes it.
        self.last_error = None;
        self.last_reconcile = Some(now.to_string());
        self.update_rate();
    }

    pub fn record_failure(&mut self, error: &str, now: &str) {
        self.total_reconciles += 1;
        self.failed_reconciles += 1;
        self.consecutive_fails += 1;
        self.last_error = Some(error.to_string());
        self.last_reconcile = Some(now.to_string());
        self.gated_reason = None;
        if self.consecutive_fails >= self.failure_threshold {
            self.state = State::Degraded;
        } else if self.state == State::Gated {
            self.state = State::Pending;
        }
        self.update_rate();
    }

    /// A gated object is not a failure; the entry shows `gated` until the next reconcile.
    pub fn record_gated(&mut self, reason: &str) {
        if self.state != State::Degraded {
            self.state = State::Gated;
        }
        self.gated_reason = Some(reason.to_string());
    }

    /// Whether the entry can see its CRs.
    pub fn is_served(&self) -> bool {
        self.unserved.is_none()
    }

    /// Served as 200 (healthy, pending, gated) or 503 (degraded).
    pub fn is_serving(&self) -> bool {
        self.state != State::Degraded
    }

    pub fn summary(&self) -> HealthSummary {
        HealthSummary {
            state: self.state.as_str().to_string(),
            consecutive_fails: self.consecutive_fails,
            error_rate_percent: self.error_rate_percent,
        }
    }

    fn update_rate(&mut self) {
        self.error_rate_percent = if self.total_reconciles == 0 {
            0.0
        } else {
            (self.failed_reconciles as f64 * 1000.0 / self.total_reconciles as f64).round() / 10.0
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unserved_type_degrades_the_entry_until_it_is_served_again() {
        let mut h = Health::new(3);
        h.record_success("t1");
        h.record_unserved("gone");
        assert!(!h.is_serving() && !h.is_served());
        h.record_success("t2");
        assert_eq!(h.state, State::Degraded, "a reconcile does not hide it");
        h.record_served();
        assert_eq!(h.state, State::Healthy);
        assert!(h.is_served() && h.unserved.is_none());
    }

    #[test]
    fn degraded_at_threshold_and_healthy_after_success() {
        let mut h = Health::new(3);
        assert_eq!(h.state, State::Pending);
        h.record_failure("boom", "t1");
        h.record_failure("boom", "t2");
        assert_eq!(h.state, State::Pending);
        h.record_failure("boom", "t3");
        assert_eq!(h.state, State::Degraded);
        assert!(!h.is_serving());
        h.record_success("t4");
        assert_eq!(h.state, State::Healthy);
        assert_eq!(h.consecutive_fails, 0);
        assert_eq!(h.error_rate_percent, 75.0);
        assert_eq!(h.last_error, None, "a success clears the last error");
    }

    #[test]
    fn gated_is_not_a_failure() {
        let mut h = Health::new(1);
        h.record_gated("paused");
        assert_eq!(h.state, State::Gated);
        assert_eq!(h.failed_reconciles, 0);
        assert!(h.is_serving());
    }
}
