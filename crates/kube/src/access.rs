//! Who may read ork's inspection endpoints (`/katalog`, SPEC §11 and §14): a caller with a
//! bearer token the API server authenticates (TokenReview) and allows to `list` the CRs
//! concerned (SubjectAccessReview), the same decision `kubectl get` would get. What those
//! endpoints show (health, service text) is about the CRs, so whoever may read the CRs may read
//! it; nobody else, from the network or not. A request that names no CRs to check is refused:
//! an authenticated token alone reads nothing.
//!
//! Answers are remembered briefly by the token's digest and reviews of unseen tokens are
//! rationed ([`memo`]), so a flood of requests costs the API server a bounded number of calls.

mod check;
pub mod memo;
pub mod request;

pub use check::ReadCheck;

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};

use crate::metrics::Metrics;
use memo::{Memo, TokenKey, User};

/// The API server's decision on one caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Allowed,
    /// No token, or one the API server does not accept.
    Unauthenticated,
    /// Authenticated as `user`, who may not do `what` (`list group/resource in ns`).
    Forbidden {
        user: String,
        what: String,
    },
    /// A token not seen before, from an address that presented too many refused ones (or while
    /// the process asks too many reviews): not reviewed; ask again after `retry_after`.
    Throttled {
        retry_after: Duration,
    },
}

/// Asks the API server, and remembers its answers briefly (SPEC §11).
#[derive(Clone)]
pub struct Reviewer {
    client: Client,
    memo: Arc<Mutex<Memo>>,
    metrics: Metrics,
}

impl std::fmt::Debug for Reviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reviewer").finish_non_exhaustive()
    }
}

impl Reviewer {
    pub(crate) fn new(client: Client, metrics: Metrics) -> Reviewer {
        Reviewer {
            client,
            memo: Arc::new(Mutex::new(Memo::new(Instant::now()))),
            metrics,
        }
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        // A panic while holding it cannot leave the memo inconsistent (every change is one
        // insert or one arithmetic step), so a poisoned lock is still a usable memo.
        self.memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the holder of `token`, calling from `peer`, may read what `checks` name; with no
    /// check at all, never.
    ///
    /// # Errors
    /// The reviews themselves failed (the API server is unreachable, or ork may not create them).
    pub async fn review(
        &self,
        peer: IpAddr,
        token: &str,
        checks: &[ReadCheck],
    ) -> Result<Access, kube::Error> {
        let key = TokenKey::of(token);
        let user = match self.authenticate(peer, key, token).await? {
            Ok(Some(user)) => user,
            Ok(None) => return Ok(Access::Unauthenticated),
            Err(retry_after) => return Ok(Access::Throttled { retry_after }),
        };
        let name = user.username.clone().unwrap_or_default();
        if checks.is_empty() {
            return Ok(Access::Forbidden {
                user: name,
                what: "read here: no entry names CRs to authorize this request against".into(),
            });
        }
        for check in checks {
            if !self.authorize(key, &user, check).await? {
                return Ok(Access::Forbidden {
                    user: name,
                    what: check.describe(),
                });
            }
        }
        Ok(Access::Allowed)
    }

    /// Whether `token` authenticates (the user) or not (`None`); `Err` when it is not asked.
    async fn authenticate(
        &self,
        peer: IpAddr,
        key: TokenKey,
        token: &str,
    ) -> Result<Result<Option<User>, Duration>, kube::Error> {
        {
            let mut memo = self.memo();
            let now = Instant::now();
            if let Some(known) = memo.user(&key, now) {
                return Ok(Ok(known));
            }
            if let Err(t) = memo.may_review(peer, now) {
                self.metrics.inspector_throttled();
                return Ok(Err(t.retry_after));
            }
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await;
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                self.metrics.inspector_review("token", "error");
                return Err(e);
            }
        };
        let status = answer.status.unwrap_or_default();
        let user = status
            .user
            .filter(|_| status.authenticated == Some(true))
            .map(|u| User {
                username: u.username,
                uid: u.uid,
                groups: u.groups,
                extra: u.extra,
            });
        self.metrics.inspector_review(
            "token",
            if user.is_some() {
                "authenticated"
            } else {
                "unauthenticated"
            },
        );
        self.memo()
            .remember_user(key, user.clone(), peer, Instant::now());
        Ok(Ok(user))
    }

    /// Whether `user` (of the token `key`) may do `check`.
    async fn authorize(
        &self,
        key: TokenKey,
        user: &User,
        check: &ReadCheck,
    ) -> Result<bool, kube::Error> {
        if let Some(allowed) = self.memo().decision(&key, check, Instant::now()) {
            return Ok(allowed);
        }
        let sar = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: user.extra.clone(),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(check.verb.into()),
                    group: Some(check.group.clone()),
                    resource: Some(check.resource.clone()),
                    namespace: check.namespace.clone(),
                    name: check.name.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let decided = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &sar)
            .await;
        let allowed = match decided {
            Ok(d) => d.status.is_some_and(|s| s.allowed),
            Err(e) => {
                self.metrics.inspector_review("access", "error");
                return Err(e);
            }
        };
        self.metrics
            .inspector_review("access", if allowed { "allowed" } else { "denied" });
        self.memo()
            .remember_decision(key, check.clone(), allowed, Instant::now());
        Ok(allowed)
    }
}
