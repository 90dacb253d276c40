//! What the inspector's reviews remember between requests, pure and clocked from outside: each
//! TokenReview and SubjectAccessReview answer for a short while, keyed by the token's SHA-256
//! (never the token itself), and how many reviews of tokens it has not seen an address and the
//! whole process may still ask for (token buckets), so that a flood of made-up tokens costs the
//! API server a bounded number of calls.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::check::ReadCheck;

/// How long an authenticated token's user is trusted without asking again (so a revoked token
/// reads at most this much longer).
pub const USER_TTL: Duration = Duration::from_secs(30);
/// How long a token the API server refused stays refused without asking again.
pub const REFUSED_TTL: Duration = Duration::from_secs(10);
/// How long a SubjectAccessReview's answer holds (a revoked binding reads this much longer).
pub const DECISION_TTL: Duration = Duration::from_secs(10);
/// Answers kept at most, of each kind; when full, new answers are not kept (only asked again).
pub const MAX_KEPT: usize = 10_000;
/// Refused tokens one address may present in a burst, and how many per second after it.
pub const FAILURES_BURST: f64 = 10.0;
pub const FAILURES_PER_SECOND: f64 = 0.5;
/// TokenReviews of unseen tokens the whole process asks in a burst, and per second after it.
pub const REVIEWS_BURST: f64 = 100.0;
pub const REVIEWS_PER_SECOND: f64 = 20.0;

/// A token's SHA-256: the only form in which ork keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenKey([u8; 32]);

impl TokenKey {
    pub fn of(token: &str) -> TokenKey {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let mut key = [0; 32];
        key.copy_from_slice(digest.as_ref());
        TokenKey(key)
    }
}

/// Who a token authenticates as, as the SubjectAccessReviews name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub username: Option<String>,
    pub uid: Option<String>,
    pub groups: Option<Vec<String>>,
    pub extra: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

/// A token bucket: `burst` at most, refilled at `per_second`.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(burst: f64, now: Instant) -> Bucket {
        Bucket {
            tokens: burst,
            at: now,
        }
    }

    fn refill(&mut self, burst: f64, per_second: f64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_second).min(burst);
        self.at = now;
    }

    /// How long until one token is there (zero: there is one).
    fn wait(&self, per_second: f64) -> Duration {
        if self.tokens >= 1.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((1.0 - self.tokens) / per_second)
        }
    }
}

/// The reviews' memory; one per listener's guard, locked only between awaits.
#[derive(Debug)]
pub struct Memo {
    users: HashMap<TokenKey, (Option<User>, Instant)>,
    decisions: HashMap<(TokenKey, ReadCheck), (bool, Instant)>,
    failures: HashMap<IpAddr, Bucket>,
    reviews: Bucket,
}

/// A review ork will not ask for now, and when it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    pub retry_after: Duration,
}

impl Memo {
    pub fn new(now: Instant) -> Memo {
        Memo {
            users: HashMap::new(),
            decisions: HashMap::new(),
            failures: HashMap::new(),
            reviews: Bucket::full(REVIEWS_BURST, now),
        }
    }

    /// The remembered answer of the TokenReview of `key`: `Some(None)` refused, `None` not
    /// known (or expired).
    pub fn user(&self, key: &TokenKey, now: Instant) -> Option<Option<User>> {
        self.users
            .get(key)
            .filter(|(_, until)| now < *until)
            .map(|(user, _)| user.clone())
    }

    /// Whether a TokenReview of an unseen token from `peer` may be asked now; takes its share
    /// of the process's budget when it may.
    ///
    /// # Errors
    /// `peer` presented too many refused tokens, or the process asked too many reviews.
    pub fn may_review(&mut self, peer: IpAddr, now: Instant) -> Result<(), Throttled> {
        if let Some(b) = self.failures.get_mut(&peer) {
            b.refill(FAILURES_BURST, FAILURES_PER_SECOND, now);
            let wait = b.wait(FAILURES_PER_SECOND);
            if !wait.is_zero() {
                return Err(Throttled { retry_after: wait });
            }
        }
        self.reviews.refill(REVIEWS_BURST, REVIEWS_PER_SECOND, now);
        let wait = self.reviews.wait(REVIEWS_PER_SECOND);
        if !wait.is_zero() {
            return Err(Throttled { retry_after: wait });
        }
        self.reviews.tokens -= 1.0;
        Ok(())
    }

    /// Keeps the TokenReview's answer for `key`; a refusal also counts against `peer`.
    pub fn remember_user(&mut self, key: TokenKey, user: Option<User>, peer: IpAddr, now: Instant) {
        if user.is_none() {
            if self.failures.len() >= MAX_KEPT {
                self.failures.retain(|_, b| {
                    b.refill(FAILURES_BURST, FAILURES_PER_SECOND, now);
                    b.tokens < FAILURES_BURST
                });
            }
            let b = self
                .failures
                .entry(peer)
                .or_insert_with(|| Bucket::full(FAILURES_BURST, now));
            b.refill(FAILURES_BURST, FAILURES_PER_SECOND, now);
            b.tokens -= 1.0;
        }
        let ttl = if user.is_some() {
            USER_TTL
        } else {
            REFUSED_TTL
        };
        if self.users.len() >= MAX_KEPT {
            self.users.retain(|_, (_, until)| now < *until);
        }
        if self.users.len() < MAX_KEPT {
            self.users.insert(key, (user, now + ttl));
        }
    }

    /// The remembered SubjectAccessReview answer for `key` doing `check`.
    pub fn decision(&self, key: &TokenKey, check: &ReadCheck, now: Instant) -> Option<bool> {
        self.decisions
            .get(&(*key, check.clone()))
            .filter(|(_, until)| now < *until)
            .map(|(allowed, _)| *allowed)
    }

    pub fn remember_decision(
        &mut self,
        key: TokenKey,
        check: ReadCheck,
        allowed: bool,
        now: Instant,
    ) {
        if self.decisions.len() >= MAX_KEPT {
            self.decisions.retain(|_, (_, until)| now < *until);
        }
        if self.decisions.len() < MAX_KEPT {
            self.decisions
                .insert((key, check), (allowed, now + DECISION_TTL));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> Option<User> {
        Some(User {
            username: Some("alice".into()),
            uid: None,
            groups: None,
            extra: None,
        })
    }

    fn check() -> ReadCheck {
        ReadCheck {
            verb: "list",
            group: "demo.ork.dev".into(),
            resource: "webapps".into(),
            namespace: None,
            name: None,
        }
    }

    #[test]
    fn a_token_s_answer_is_remembered_by_its_digest_until_it_expires() {
        let t0 = Instant::now();
        let peer: IpAddr = "10.0.0.1".parse().expect("ip");
        let mut memo = Memo::new(t0);
        let key = TokenKey::of("s3cr3t-token");
        assert_ne!(key, TokenKey::of("s3cr3t-tokeN"));
        assert_eq!(memo.user(&key, t0), None, "never asked");
        memo.remember_user(key, user(), peer, t0);
        assert_eq!(memo.user(&key, t0 + USER_TTL / 2), Some(user()));
        assert_eq!(memo.user(&key, t0 + USER_TTL), None, "expired");
        let bad = TokenKey::of("made-up");
        memo.remember_user(bad, None, peer, t0);
        assert_eq!(memo.user(&bad, t0 + REFUSED_TTL / 2), Some(None));
        assert_eq!(memo.user(&bad, t0 + REFUSED_TTL), None);
        // What is kept holds no trace of the token's text.
        let kept = format!("{memo:?}");
        assert!(!kept.contains("s3cr3t"), "{kept}");
        memo.remember_decision(key, check(), true, t0);
        assert_eq!(memo.decision(&key, &check(), t0), Some(true));
        assert_eq!(memo.decision(&bad, &check(), t0), None, "per token");
        assert_eq!(memo.decision(&key, &check(), t0 + DECISION_TTL), None);
    }

    #[test]
    fn an_address_that_presents_refused_tokens_is_throttled_and_recovers() {
        let t0 = Instant::now();
        let (flood, other): (IpAddr, IpAddr) = (
            "10.0.0.1".parse().expect("ip"),
            "10.0.0.2".parse().expect("ip"),
        );
        let mut memo = Memo::new(t0);
        let mut asked = 0;
        for i in 0..100 {
            if memo.may_review(flood, t0).is_ok() {
                asked += 1;
                memo.remember_user(TokenKey::of(&format!("bad-{i}")), None, flood, t0);
            }
        }
        assert_eq!(
            asked, FAILURES_BURST as usize,
            "reviews asked for the flood"
        );
        let refused = memo.may_review(flood, t0).expect_err("throttled");
        assert_eq!(refused.retry_after, Duration::from_secs(2));
        assert!(
            memo.may_review(other, t0).is_ok(),
            "other addresses are not"
        );
        assert!(memo.may_review(flood, t0 + Duration::from_secs(2)).is_ok());
    }

    #[test]
    fn the_process_asks_a_bounded_number_of_reviews_of_unseen_tokens() {
        let t0 = Instant::now();
        let mut memo = Memo::new(t0);
        let asked = (0..1000u32)
            .filter(|i| {
                let peer = IpAddr::from([10, 1, (i / 256) as u8, (i % 256) as u8]);
                memo.may_review(peer, t0).is_ok()
            })
            .count();
        assert_eq!(asked, REVIEWS_BURST as usize);
        let peer: IpAddr = "10.9.9.9".parse().expect("ip");
        assert!(memo.may_review(peer, t0).is_err());
        assert!(
            memo.may_review(peer, t0 + Duration::from_millis(50))
                .is_ok()
        );
    }
}
