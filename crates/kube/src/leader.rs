//! Leader election on a `coordination.k8s.io/v1` Lease (`orkestra-konductor` in ork's
//! namespace): only the leader reconciles; standbys keep their caches warm.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::Client;

use crate::lease::LeaseClient;
use crate::runtime::Runtime;

pub use crate::lease::LEASE_NAME;

/// Timing of the election.
#[derive(Debug, Clone, Copy)]
pub struct LeaseConfig {
    /// How long a lease stays valid after its last renewal.
    pub duration: Duration,
    /// A leader that could not renew for this long stops reconciling (before others may take over).
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry: Duration,
}

impl LeaseConfig {
    /// Kubernetes' usual proportions for a given lease duration.
    pub fn with_duration(duration: Duration) -> LeaseConfig {
        LeaseConfig {
            duration,
            renew_deadline: duration.mul_f64(2.0 / 3.0),
            retry: duration / 7,
        }
    }
}

/// A candidate for the lease.
#[derive(Debug, Clone)]
pub struct Elector {
    lease: LeaseClient,
    config: LeaseConfig,
}

impl Elector {
    pub fn new(client: Client, namespace: &str, identity: String, config: LeaseConfig) -> Elector {
        Elector {
            lease: LeaseClient::new(client, namespace, identity, config.duration),
            config,
        }
    }

    /// Campaigns forever: switches `runtime` active while this process holds the lease.
    pub async fn campaign(&self, runtime: Runtime) {
        let identity = self.lease.identity().to_string();
        let mut leading = false;
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            match self.lease.claim(LEASE_NAME, Timestamp::now()).await {
                Ok(true) => {
                    last_renewal = tokio::time::Instant::now();
                    if !leading {
                        leading = true;
                        tracing::info!(%identity, lease = LEASE_NAME, "became the leader; reconciling");
                        runtime.set_active(true);
                    }
                }
                Ok(false) => {
                    if leading {
                        leading = false;
                        tracing::warn!(%identity, "another process holds the lease; standing by");
                        runtime.set_active(false);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "lease update failed");
                    if leading && last_renewal.elapsed() > self.config.renew_deadline {
                        leading = false;
                        tracing::warn!("could not renew the lease in time; stopped reconciling");
                        runtime.set_active(false);
                    }
                }
            }
            tokio::time::sleep(self.config.retry).await;
        }
    }

    /// Gives the lease up (graceful shutdown) so a standby takes over at its next round.
    pub async fn release(&self) {
        if self.lease.release(LEASE_NAME).await {
            tracing::info!("lease released");
        }
    }
}
