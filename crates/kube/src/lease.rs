//! One Lease in ork's namespace, taken, renewed and released by one identity: written on
//! GET then create/replace with the resourceVersion read, so two candidates never both win a
//! round. Leader election and the shard protocol are both made of these.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};

/// The leader-election Lease; the shard protocol's Leases are named after it.
pub const LEASE_NAME: &str = "orkestra-konductor";

/// Label on every Lease ork writes.
pub(crate) const GROUP_LABEL: &str = "orkestra.orkspace.io/lease-group";

#[derive(Debug, Clone)]
pub(crate) struct LeaseClient {
    api: Api<Lease>,
    identity: String,
    duration: Duration,
}

impl LeaseClient {
    pub fn new(client: Client, namespace: &str, identity: String, duration: Duration) -> Self {
        LeaseClient {
            api: Api::namespaced(client, namespace),
            identity,
            duration,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Every Lease of ork's group in the namespace.
    pub async fn list(&self) -> Result<Vec<Lease>, kube::Error> {
        let lp = ListParams::default().labels(&format!("{GROUP_LABEL}={LEASE_NAME}"));
        Ok(self.api.list(&lp).await?.items)
    }

    /// Takes or renews the Lease `name`; `Ok(false)` when another replica validly holds it or
    /// won the race.
    pub async fn claim(&self, name: &str, now: Timestamp) -> Result<bool, kube::Error> {
        let seconds = i32::try_from(self.duration.as_secs().max(1)).unwrap_or(i32::MAX);
        let Some(mut lease) = self.api.get_opt(name).await? else {
            let mut lease = Lease {
                metadata: kube::core::ObjectMeta {
                    name: Some(name.into()),
                    labels: Some(BTreeMap::from([(GROUP_LABEL.into(), LEASE_NAME.into())])),
                    ..Default::default()
                },
                spec: Some(LeaseSpec::default()),
            };
            stamp(&mut lease, &self.identity, seconds, now, true);
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let taking_over = match holder(&lease, now) {
            Some((h, _)) if h == self.identity => false,
            Some((_, true)) => return Ok(false),
            _ => true,
        };
        stamp(&mut lease, &self.identity, seconds, now, taking_over);
        match self.api.replace(name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up if this identity holds it; `true` when released. A renewal that
    /// landed between the read and the write (409) is read again and the release retried.
    pub async fn release(&self, name: &str) -> bool {
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            let Ok(Some(mut lease)) = self.api.get_opt(name).await else {
                return false;
            };
            let Some(spec) = lease.spec.as_mut() else {
                return false;
            };
            if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
                return false;
            }
            spec.holder_identity = None;
            spec.renew_time = None;
            match self.api.replace(name, &PostParams::default(), &lease).await {
                Ok(_) => return true,
                Err(kube::Error::Api(s)) if s.code == 409 && attempt < ATTEMPTS => {}
                Err(e) => {
                    tracing::warn!(lease = name, error = %e, "lease not released; it expires on its own");
                    return false;
                }
            }
        }
        false
    }
}

/// The holder of a lease and whether its lease is still valid at `now`.
pub(crate) fn holder(lease: &Lease, now: Timestamp) -> Option<(String, bool)> {
    let spec = lease.spec.as_ref()?;
    let holder = spec.holder_identity.clone().filter(|h| !h.is_empty())?;
    let duration = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64);
    let valid = spec.renew_time.as_ref().is_some_and(|r| {
        r.0 + SignedDuration::try_from(duration).unwrap_or(SignedDuration::ZERO) >= now
    });
    Some((holder, valid))
}

fn stamp(lease: &mut Lease, me: &str, seconds: i32, now: Timestamp, taking_over: bool) {
    let spec = lease.spec.get_or_insert_with(Default::default);
    if taking_over {
        spec.holder_identity = Some(me.to_string());
        spec.acquire_time = Some(MicroTime(now));
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    }
    spec.renew_time = Some(MicroTime(now));
    spec.lease_duration_seconds = Some(seconds);
    let labels = lease.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(GROUP_LABEL.into(), LEASE_NAME.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid timestamp")
    }

    fn lease(holder: Option<&str>, renewed: Option<i64>) -> Lease {
        Lease {
            metadata: Default::default(),
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_string),
                renew_time: renewed.map(|s| MicroTime(at(s))),
                lease_duration_seconds: Some(15),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_lease_is_valid_until_its_duration_after_the_last_renewal() {
        assert_eq!(
            holder(&lease(Some("a"), Some(0)), at(10)),
            Some(("a".into(), true))
        );
        assert_eq!(
            holder(&lease(Some("a"), Some(0)), at(16)),
            Some(("a".into(), false))
        );
        assert_eq!(
            holder(&lease(Some("a"), None), at(0)),
            Some(("a".into(), false))
        );
        assert_eq!(holder(&lease(Some(""), Some(0)), at(1)), None, "released");
        assert_eq!(holder(&lease(None, None), at(1)), None);
    }
}
