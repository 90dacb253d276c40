//! The remote edge: one request per reconcile to the service, and its answer back as bytes for
//! `ork-protocol` to check. Two transports: HTTP ([`HttpTransport`]: POST with timeout, size
//! limit, auth header, trace headers) and exec ([`exec`]: a local program, request on stdin,
//! answer on stdout).
//!
//! Credentials are handed in as [`Credential`], whose `Debug` never shows the value, and no
//! error message here contains a header or a URL's user info.

mod exec;

use std::fmt;
use std::time::Duration;

use rand::Rng;
use reqwest::header::{CONTENT_TYPE, HeaderName, HeaderValue};

pub use exec::{ExecCall, exec};

/// A secret value with the header it goes in.
#[derive(Clone)]
pub struct Credential {
    header: HeaderName,
    value: HeaderValue,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Credential({}: <redacted>)", self.header)
    }
}

impl Credential {
    /// `Authorization` gets `Bearer <secret>`; any other header the raw value.
    ///
    /// # Errors
    /// When the header name or the value cannot be sent in HTTP (the value is not shown).
    pub fn new(header: &str, secret: &str) -> Result<Credential, CallError> {
        let name = HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| CallError::Config(format!("\"{header}\" is not a header name")))?;
        let text = if name == reqwest::header::AUTHORIZATION {
            format!("Bearer {}", secret.trim())
        } else {
            secret.trim().to_string()
        };
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            CallError::Config(format!(
                "the credential for header {header} contains characters HTTP headers cannot carry"
            ))
        })?;
        value.set_sensitive(true);
        Ok(Credential {
            header: name,
            value,
        })
    }
}

/// Why a call did not produce an answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("POST {url}: timed out after {after:?}")]
    Timeout { url: String, after: Duration },
    #[error("POST {url}: cannot connect: {reason}")]
    Connect { url: String, reason: String },
    #[error("POST {url}: unexpected status {status}{body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("POST {url}: response larger than the limit of {limit} bytes")]
    TooLarge { url: String, limit: u64 },
    #[error("POST {url}: {reason}")]
    Transport { url: String, reason: String },
    #[error("{0}")]
    Config(String),
    #[error("command {program}: cannot start: {reason}")]
    ExecSpawn { program: String, reason: String },
    #[error("command {program}: timed out after {after:?} and was killed{stderr}")]
    ExecTimeout {
        program: String,
        after: Duration,
        stderr: String,
    },
    #[error("command {program}: {status}{stderr}")]
    ExecFailed {
        program: String,
        status: String,
        stderr: String,
    },
    #[error(
        "command {program}: stdout larger than the limit of {limit} bytes; the command was killed"
    )]
    ExecTooLarge { program: String, limit: u64 },
    #[error("command {program}: stdout is not a JSON answer: {reason}{stderr}")]
    ExecGarbage {
        program: String,
        reason: String,
        stderr: String,
    },
}

/// One call's parameters.
#[derive(Debug)]
pub struct Call<'a> {
    pub url: &'a str,
    pub body: Vec<u8>,
    pub credential: Option<&'a Credential>,
    pub timeout: Duration,
    pub max_bytes: u64,
}

/// An HTTP client shared by every reconcile of a process: connections are kept alive and reused.
#[derive(Clone, Debug)]
pub struct HttpTransport {
    client: reqwest::Client,
}

/// TLS for one entry's endpoint (`remote.tls`): a CA to trust besides the system's, and a
/// client certificate for mTLS. Verification is always on.
#[derive(Clone, Default)]
pub struct TlsSettings {
    /// PEM certificates of CAs that sign the service's certificate.
    pub ca_pem: Option<Vec<u8>>,
    /// PEM certificate chain and private key ork presents to the service.
    pub client_cert_pem: Option<(Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("ca", &self.ca_pem.is_some())
            .field(
                "client_cert",
                &self.client_cert_pem.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl HttpTransport {
    /// A client that trusts the system's CAs.
    ///
    /// # Errors
    /// When the TLS stack cannot be set up (no crypto provider installed).
    pub fn new() -> Result<HttpTransport, CallError> {
        HttpTransport::with_tls(&TlsSettings::default())
    }

    /// A client with an extra trusted CA and/or a client certificate.
    ///
    /// # Errors
    /// PEM that does not hold a certificate or key (the key is never shown), or a TLS stack that
    /// cannot be set up.
    pub fn with_tls(tls: &TlsSettings) -> Result<HttpTransport, CallError> {
        let mut builder = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true)
            .user_agent(concat!("ork/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &tls.ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| CallError::Config(format!("tls CA bundle: {e}")))?;
            if certs.is_empty() {
                return Err(CallError::Config(
                    "tls CA bundle holds no certificate".into(),
                ));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if let Some((cert, key)) = &tls.client_cert_pem {
            let mut pem = cert.clone();
            pem.push(b'\n');
            pem.extend_from_slice(key);
            let identity = reqwest::Identity::from_pem(&pem).map_err(|_| {
                CallError::Config(
                    "tls client certificate: the PEM holds no usable certificate and key".into(),
                )
            })?;
            builder = builder.identity(identity);
        }
        let client = builder
            .build()
            .map_err(|e| CallError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(HttpTransport { client })
    }

    /// POSTs the request; returns the body of a 200 answer.
    ///
    /// # Errors
    /// Timeout, connection failure, a status other than 200, or a body over `max_bytes`.
    pub async fn call(&self, call: Call<'_>) -> Result<Vec<u8>, CallError> {
        let url = redact_userinfo(call.url);
        let mut req = self
            .client
            .post(call.url)
            .timeout(call.timeout)
            .header(CONTENT_TYPE, "application/json")
            .header("traceparent", traceparent())
            .header("X-Ork-Delivery", random_hex(16))
            .body(call.body);
        if let Some(c) = call.credential {
            req = req.header(c.header.clone(), c.value.clone());
        }
        let classify = |e: reqwest::Error| {
            let e = e.without_url();
            if e.is_timeout() {
                CallError::Timeout {
                    url: url.clone(),
                    after: call.timeout,
                }
            } else if e.is_connect() {
                CallError::Connect {
                    url: url.clone(),
                    reason: root_cause(&e),
                }
            } else {
                CallError::Transport {
                    url: url.clone(),
                    reason: root_cause(&e),
                }
            }
        };
        let mut resp = req.send().await.map_err(classify)?;
        let status = resp.status().as_u16();
        if resp.content_length().is_some_and(|n| n > call.max_bytes) {
            return Err(CallError::TooLarge {
                url,
                limit: call.max_bytes,
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(classify)? {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > call.max_bytes {
                return Err(CallError::TooLarge {
                    url,
                    limit: call.max_bytes,
                });
            }
        }
        if status != 200 {
            let text = String::from_utf8_lossy(&body);
            let snippet: String = text.chars().take(200).collect();
            let body = if snippet.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", snippet.trim())
            };
            return Err(CallError::Status { url, status, body });
        }
        Ok(body)
    }
}

/// The host (and port) of an http(s) URL.
pub fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    (!host.is_empty()).then_some(host)
}

fn redact_userinfo(url: &str) -> String {
    match (url.split_once("://"), host_of(url)) {
        (Some((scheme, rest)), Some(host))
            if rest.split('/').next().is_some_and(|a| a.contains('@')) =>
        {
            let path = rest.find('/').map_or("", |i| &rest[i..]);
            format!("{scheme}://{host}{path}")
        }
        _ => url.to_string(),
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

fn traceparent() -> String {
    format!("00-{}-{}-01", random_hex(16), random_hex(8))
}

fn random_hex(bytes: usize) -> String {
    let mut rng = rand::rng();
    (0..bytes)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_for_authorization_raw_otherwise_and_never_printed() {
        let c = Credential::new("Authorization", "s3cret").expect("valid");
        assert_eq!(c.value.to_str().ok(), Some("Bearer s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
        let c = Credential::new("X-Api-Key", "s3cret").expect("valid");
        assert_eq!(c.value.to_str().ok(), Some("s3cret"));
    }

    #[test]
    fn hosts_and_userinfo() {
        assert_eq!(
            host_of("http://127.0.0.1:8025/reconcile"),
            Some("127.0.0.1:8025")
        );
        assert_eq!(host_of("https://u:p@svc.ns/x"), Some("svc.ns"));
        assert_eq!(redact_userinfo("https://u:p@svc.ns/x"), "https://svc.ns/x");
    }
}
