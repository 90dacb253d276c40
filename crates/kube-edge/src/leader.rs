//! Leader election on a `coordination.k8s.io/v1` Lease (`orkestra-konductor` in ork's
//! namespace): only the leader reconciles; standbys keep their caches warm. Written directly on
//! GET/create/replace with resourceVersion, so two candidates can never both win a round.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};

use crate::runtime::Runtime;

pub const LEASE_NAME: &str = "orkestra-konductor";

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

/// What to do with the lease as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// Ours: renew it.
    Renew,
    /// Free or expired: take it over.
    TakeOver,
    /// Someone else holds it.
    Standby,
}

fn claim(
    holder: Option<&str>,
    renewed: Option<Timestamp>,
    duration: Duration,
    me: &str,
    now: Timestamp,
) -> Claim {
    match holder.filter(|h| !h.is_empty()) {
        Some(h) if h == me => Claim::Renew,
        None => Claim::TakeOver,
        Some(_) => {
            let valid_until = renewed
                .map(|r| r + SignedDuration::try_from(duration).unwrap_or(SignedDuration::ZERO));
            if valid_until.is_none_or(|until| until < now) {
                Claim::TakeOver
            } else {
                Claim::Standby
            }
        }
    }
}

/// A candidate for the lease.
#[derive(Debug, Clone)]
pub struct Elector {
    api: Api<Lease>,
    identity: String,
    config: LeaseConfig,
}

impl Elector {
    pub fn new(client: Client, namespace: &str, identity: String, config: LeaseConfig) -> Elector {
        Elector {
            api: Api::namespaced(client, namespace),
            identity,
            config,
        }
    }

    /// Campaigns forever: switches `runtime` active while this process holds the lease.
    pub async fn campaign(&self, runtime: Runtime) {
        let mut leading = false;
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    last_renewal = tokio::time::Instant::now();
                    if !leading {
                        leading = true;
                        tracing::info!(identity = %self.identity, lease = LEASE_NAME, "became the leader; reconciling");
                        runtime.set_active(true);
                    }
                }
                Ok(false) => {
                    if leading {
                        leading = false;
                        tracing::warn!(identity = %self.identity, "another process holds the lease; standing by");
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

    /// One round: `Ok(true)` if this process holds the lease afterwards.
    async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let seconds = i32::try_from(self.config.duration.as_secs().max(1)).unwrap_or(i32::MAX);
        let Some(mut lease) = self.api.get_opt(LEASE_NAME).await? else {
            let lease = Lease {
                metadata: kube::core::ObjectMeta {
                    name: Some(LEASE_NAME.into()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(seconds),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        let decision = claim(
            spec.holder_identity.as_deref(),
            spec.renew_time.as_ref().map(|t| t.0),
            Duration::from_secs(spec.lease_duration_seconds.unwrap_or(seconds).max(1) as u64),
            &self.identity,
            now,
        );
        match decision {
            Claim::Standby => return Ok(false),
            Claim::Renew => {}
            Claim::TakeOver => {
                spec.holder_identity = Some(self.identity.clone());
                spec.acquire_time = Some(MicroTime(now));
                spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
        }
        spec.renew_time = Some(MicroTime(now));
        spec.lease_duration_seconds = Some(seconds);
        // replace carries the resourceVersion we read: a concurrent winner makes this a 409.
        match self
            .api
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the lease up (graceful shutdown) so a standby takes over at its next round.
    pub async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(LEASE_NAME).await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.renew_time = None;
        match self
            .api
            .replace(&lease.name_any(), &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!("lease released"),
            Err(e) => tracing::warn!(error = %e, "lease not released; it expires on its own"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid timestamp")
    }

    #[test]
    fn own_lease_is_renewed_free_or_expired_is_taken_valid_is_respected() {
        let d = Duration::from_secs(15);
        assert_eq!(
            claim(Some("me"), Some(at(0)), d, "me", at(100)),
            Claim::Renew
        );
        assert_eq!(claim(None, None, d, "me", at(0)), Claim::TakeOver);
        assert_eq!(
            claim(Some(""), Some(at(0)), d, "me", at(1)),
            Claim::TakeOver
        );
        assert_eq!(
            claim(Some("other"), Some(at(0)), d, "me", at(10)),
            Claim::Standby
        );
        assert_eq!(
            claim(Some("other"), Some(at(0)), d, "me", at(16)),
            Claim::TakeOver
        );
        assert_eq!(claim(Some("other"), None, d, "me", at(0)), Claim::TakeOver);
    }
}
