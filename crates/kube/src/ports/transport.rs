//! Transports to the service: [`HttpPort`] (templated endpoint, credential only for the allowed
//! host, per-entry TLS), [`ExecPort`] (a local program), and the layers [`RateLimited`] and
//! [`Timed`]. Record and replay are in `tap`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use ork_engine::ratelimit::TokenBucket;
use ork_katalog::Remote;
use ork_katalog::template::Template;
use ork_remote::{Call, CallError, Endpoint, ExecCall, credential_allowed, exec};
use serde_json::Value;

use crate::auth::{AuthError, CredentialSource, TransportSource};

/// Why a call produced no answer. Never carries a credential.
#[derive(Debug, thiserror::Error)]
pub enum CallFailed {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("endpoint template: {0}")]
    Endpoint(String),
    #[error(
        "endpoint host {host} is neither the Katalog's literal host nor in remote.allowedHosts; not called"
    )]
    HostNotAllowed { host: String },
    #[error("credential: {0}")]
    Credential(AuthError),
    #[error("TLS: {0}")]
    Tls(AuthError),
    #[error("{0}")]
    Replay(#[from] ReplayError),
}

/// Why a replayed call has no answer.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("replay: {file}: {reason} (was the run recorded with the same CRs?)")]
    Missing { file: String, reason: String },
    /// Every recorded exchange was replayed: the recording ends here.
    #[error("replay: the recording ends after {recorded} exchange(s)")]
    Exhausted { recorded: usize },
    #[error("replay: {file}: {reason}")]
    Unreadable { file: String, reason: String },
    #[error("replay: {file} answered {then:?}, but this call is for {now:?}")]
    OtherKey {
        file: String,
        then: String,
        now: String,
    },
    /// The recorded call failed; replayed as the same failure.
    #[error("{0}")]
    Recorded(String),
}

/// An entry with neither `remote.endpoint` nor `remote.command`.
#[derive(Debug, thiserror::Error)]
#[error("the entry has neither remote.endpoint nor remote.command")]
pub struct NoTransport;

/// Sends one request to the service and returns its answer.
pub(crate) trait Transport: Send + Sync {
    /// Sends `body`, the request for the CR `cr` (an endpoint may be a template over it).
    fn call<'a>(
        &'a self,
        cr: &'a Value,
        body: Vec<u8>,
    ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>>;

    /// The transport this one wraps, if it is a layer (rate limit, timing, recording): what
    /// it does not say itself, it answers from there.
    fn inner(&self) -> Option<&dyn Transport> {
        None
    }

    /// `text` (from the service) without the credential this transport sends.
    fn redact(&self, text: &str) -> String {
        self.inner()
            .map_or_else(|| text.to_string(), |t| t.redact(text))
    }

    /// A Secret it needs (credential, TLS) has not been read yet.
    fn pending(&self) -> bool {
        self.inner().is_some_and(Transport::pending)
    }
}

/// POST to the entry's endpoint.
pub(crate) struct HttpPort {
    pub endpoint: Template,
    /// The endpoint rendered without any CR: when a CR renders to this same URL, the URL is the
    /// Katalog author's (notes, runtime facts), not the CR author's, and gets the credential.
    pub katalog_url: Option<String>,
    pub allowed_hosts: Vec<String>,
    pub credential: CredentialSource,
    pub client: TransportSource,
    pub timeout: Duration,
    pub max_bytes: u64,
}

impl HttpPort {
    /// Calls (and with them the credential and the client certificate) go only to the
    /// Katalog's own URL, its literal host or `allowedHosts` — with the URL parsed as the HTTP
    /// client parses it, so the host checked is the host called.
    fn may_call(&self, url: &str) -> Result<(), CallFailed> {
        let target = Endpoint::for_credential(url).map_err(CallError::from)?;
        let katalogs_own = self.katalog_url.as_deref() == Some(url);
        if katalogs_own || credential_allowed(&target, self.endpoint.source(), &self.allowed_hosts)
        {
            Ok(())
        } else {
            Err(CallFailed::HostNotAllowed {
                host: target.authority(),
            })
        }
    }
}

impl Transport for HttpPort {
    fn call<'a>(
        &'a self,
        cr: &'a Value,
        body: Vec<u8>,
    ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>> {
        Box::pin(async move {
            let url = self
                .endpoint
                .render_url(cr)
                .map_err(|e| CallFailed::Endpoint(e.to_string()))?;
            // Every call, with or without a credential or client certificate (SPEC §11): a
            // CR's fields must not aim ork at another host and read its answer back.
            self.may_call(&url)?;
            let credential = self.credential.current().map_err(CallFailed::Credential)?;
            let client = self.client.current().map_err(CallFailed::Tls)?;
            Ok(client
                .call(Call {
                    url: &url,
                    body,
                    credential: credential.as_ref(),
                    timeout: self.timeout,
                    max_bytes: self.max_bytes,
                })
                .await?)
        })
    }

    fn redact(&self, text: &str) -> String {
        match self.credential.current() {
            Ok(Some(c)) => c.redact(text),
            _ => text.to_string(),
        }
    }

    fn pending(&self) -> bool {
        matches!(self.credential.current(), Err(AuthError::Pending(_)))
            || matches!(self.client.current(), Err(AuthError::Pending(_)))
    }
}

/// A local program: the request on stdin, the answer on stdout.
pub(crate) struct ExecPort {
    pub command: Vec<String>,
    pub working_dir: PathBuf,
    pub env: BTreeMap<String, String>,
    pub timeout: Duration,
    pub max_bytes: u64,
}

impl Transport for ExecPort {
    fn call<'a>(
        &'a self,
        _cr: &'a Value,
        body: Vec<u8>,
    ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>> {
        Box::pin(async move {
            Ok(exec(ExecCall {
                command: &self.command,
                working_dir: &self.working_dir,
                env: &self.env,
                body,
                timeout: self.timeout,
                max_bytes: self.max_bytes,
            })
            .await?)
        })
    }
}

/// `remote.rateLimit`: calls wait for a token.
pub(crate) struct RateLimited {
    pub bucket: Mutex<TokenBucket>,
    pub inner: Box<dyn Transport>,
}

impl Transport for RateLimited {
    fn call<'a>(
        &'a self,
        cr: &'a Value,
        body: Vec<u8>,
    ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>> {
        Box::pin(async move {
            let wait = self
                .bucket
                .lock()
                .map(|mut b| b.reserve(Instant::now()))
                .unwrap_or(Duration::ZERO);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            self.inner.call(cr, body).await
        })
    }

    fn inner(&self) -> Option<&dyn Transport> {
        Some(self.inner.as_ref())
    }
}

/// Adds up the time spent in the service (`ork simulate` reports ork's own time as the rest).
pub(crate) struct Timed {
    pub nanos: AtomicU64,
    pub inner: Box<dyn Transport>,
}

impl Timed {
    pub fn spent(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// A layer for one reconcile whose request carries Secret values (inputs with `values: true`,
/// SPEC §20): the service's text that ork keeps or shows (a condition, an event, the flight
/// recorder) is searched for each of them too, as for the credential.
pub(crate) struct KeepsSecrets<'s> {
    pub inner: &'s dyn Transport,
    pub values: &'s [String],
}

impl Transport for KeepsSecrets<'_> {
    fn call<'a>(
        &'a self,
        cr: &'a Value,
        body: Vec<u8>,
    ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>> {
        self.inner.call(cr, body)
    }

    fn inner(&self) -> Option<&dyn Transport> {
        Some(self.inner)
    }

    fn redact(&self, text: &str) -> String {
        let mut text = self.inner.redact(text);
        for value in self.values {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), crate::redact::REDACTED);
            }
        }
        text
    }
}

impl Transport for Timed {
    fn call<'a>(
        &'a self,
        cr: &'a Value,
        body: Vec<u8>,
    ) -> BoxFuture<'a, Result<Vec<u8>, CallFailed>> {
        Box::pin(async move {
            let started = Instant::now();
            let answer = self.inner.call(cr, body).await;
            let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.nanos.fetch_add(took, Ordering::Relaxed);
            answer
        })
    }

    fn inner(&self) -> Option<&dyn Transport> {
        Some(self.inner.as_ref())
    }
}

/// The entry's transport: exec when `remote.command` is set, else HTTP; rate limited when
/// `remote.rateLimit` is set.
///
/// # Errors
/// An entry with neither `endpoint` nor `command`.
pub(crate) fn for_remote(
    remote: &Remote,
    katalog_dir: &Path,
    credential: CredentialSource,
    client: TransportSource,
) -> Result<Box<dyn Transport>, NoTransport> {
    let base: Box<dyn Transport> = match (&remote.command, &remote.endpoint) {
        (Some(command), _) => Box::new(ExecPort {
            command: command.clone(),
            working_dir: katalog_dir.join(remote.working_dir.as_deref().unwrap_or(".")),
            env: remote.env.clone(),
            timeout: remote.timeout.get(),
            max_bytes: remote.max_response_bytes,
        }),
        (None, Some(endpoint)) => Box::new(HttpPort {
            katalog_url: endpoint.render(&Value::Object(Default::default())).ok(),
            endpoint: endpoint.clone(),
            allowed_hosts: remote.allowed_hosts.clone(),
            credential,
            client,
            timeout: remote.timeout.get(),
            max_bytes: remote.max_response_bytes,
        }),
        (None, None) => return Err(NoTransport),
    };
    Ok(match remote.rate_limit {
        Some(rl) => Box::new(RateLimited {
            bucket: Mutex::new(TokenBucket::new(rl.qps, rl.burst, Instant::now())),
            inner: base,
        }),
        None => base,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(endpoint: &str, allowed: &[&str]) -> HttpPort {
        let endpoint = Template::parse(endpoint).expect("template");
        HttpPort {
            katalog_url: endpoint.render(&Value::Object(Default::default())).ok(),
            endpoint,
            allowed_hosts: allowed.iter().map(|s| s.to_string()).collect(),
            credential: CredentialSource::None,
            // Never called here: the check comes before any client is needed.
            client: TransportSource::Watched(std::sync::Arc::new(std::sync::RwLock::new(Err(
                AuthError::NotReady("unused".into()),
            )))),
            timeout: Duration::from_secs(1),
            max_bytes: 1,
        }
    }

    #[test]
    fn the_katalog_s_own_url_gets_the_credential_a_cr_steered_one_does_not() {
        // Orkestra's style: the endpoint comes from a template with no CR input.
        let p = port(
            "{{ if .ork.inCluster }}http://svc.team:8080/r{{ else }}http://127.0.0.1:8025/r{{ end }}",
            &[],
        );
        assert!(p.may_call("http://127.0.0.1:8025/r").is_ok());
        let p = port(
            "http://{{ .spec.host | default \"127.0.0.1:8025\" }}/r",
            &[],
        );
        assert!(p.may_call("http://127.0.0.1:8025/r").is_ok());
        assert!(p.may_call("http://127.0.0.1:9002/r").is_err());
        let p = port("http://{{ .spec.host }}/r", &["127.0.0.1:9001"]);
        assert!(p.may_call("http://127.0.0.1:9001/r").is_ok());
        assert!(
            p.may_call("http://127.0.0.1:9002\\@127.0.0.1:9001/r")
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_cr_steered_host_is_not_called_even_without_a_credential() {
        let p = port("http://{{ .spec.host }}/r", &[]);
        let cr = serde_json::json!({"spec": {"host": "127.0.0.1:9"}});
        let e = p
            .call(&cr, b"{}".to_vec())
            .await
            .expect_err("not the Katalog's host");
        assert!(
            matches!(&e, CallFailed::HostNotAllowed { host } if host == "127.0.0.1:9"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_rendered_path_segment_is_encoded_and_dot_segments_are_refused() {
        let p = port(
            "http://127.0.0.1:8025/tenants/{{ .spec.tenant }}/reconcile",
            &[],
        );
        for tenant in ["..", "%2e%2e", "."] {
            let cr = serde_json::json!({"spec": {"tenant": tenant}});
            let e = p.call(&cr, Vec::new()).await.expect_err(tenant).to_string();
            if tenant == "%2e%2e" {
                // The `%` is encoded: `%252e%252e` is a name, not a dot-segment; no template
                // error, the call just fails on the unused client.
                assert!(!e.contains("dot-segment"), "{tenant}: {e}");
            } else {
                assert!(e.contains("dot-segment"), "{tenant}: {e}");
            }
        }
        let url = p
            .endpoint
            .render_url(&serde_json::json!({"spec": {"tenant": "../../admin/wipe-all-tenants?"}}))
            .expect("one segment");
        assert_eq!(
            url,
            "http://127.0.0.1:8025/tenants/..%2F..%2Fadmin%2Fwipe-all-tenants%3F/reconcile"
        );
        // Finding L1: what a template prints into the host may hold host characters only.
        let p = port("http://{{ .spec.host }}/reconcile", &["127.0.0.1:9001"]);
        for host in [
            "127.0.0.1:9001/admin/wipe?all=1&x=",
            "127.0.0.1:9001?x=",
            "127.0.0.1:9001#",
            "127.0.0.1:9001\\x",
            "evil@127.0.0.1:9001",
            "127.0.0.1:9001 x",
        ] {
            let cr = serde_json::json!({"spec": {"host": host}});
            let e = p.endpoint.render_url(&cr).expect_err(host).to_string();
            assert!(e.contains("is not a host character"), "{host}: {e}");
        }
        for host in ["127.0.0.1:9001", "svc.team-a_x:8080", "[::1]:9001"] {
            let cr = serde_json::json!({"spec": {"host": host}});
            assert!(p.endpoint.render_url(&cr).is_ok(), "{host}");
        }
        let literal = Template::parse("http://127.0.0.1:8025/a/%2E%2e/b").expect("template");
        assert!(
            literal.render_url(&Value::Null).is_err(),
            "a literal dot-segment too"
        );
    }
}
