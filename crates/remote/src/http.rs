//! The HTTP transport: one POST per reconcile over a shared keep-alive client.

use std::fmt;
use std::time::Duration;

use rand::Rng;
use reqwest::header::CONTENT_TYPE;

use crate::credential::Credential;
use crate::endpoint::Endpoint;
use crate::error::{CallError, SNIPPET_CHARS};
use crate::text::Keep;

/// How much of a non-200 body is read for the error snippet.
const ERROR_BODY_BYTES: u64 = 8 * 1024;

/// One call's parameters. `Debug` shows the URL without user info and the body's size only.
pub struct Call<'a> {
    /// The rendered endpoint. The transport parses it with [`Endpoint::parse`], the parser the
    /// credential check ([`crate::credential_allowed`]) must use, and connects to that parse.
    pub url: &'a str,
    pub body: Vec<u8>,
    pub credential: Option<&'a Credential>,
    pub timeout: Duration,
    pub max_bytes: u64,
}

impl fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = Endpoint::parse(self.url).map_or_else(|e| format!("<{e}>"), |e| e.to_string());
        f.debug_struct("Call")
            .field("url", &url)
            .field("body_bytes", &self.body.len())
            .field("credential", &self.credential)
            .field("timeout", &self.timeout)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
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
        // Requests go out over HTTP/1.1 with Title-Case header names as Go's client writes them
        // (SPEC §9: a bash reconciler matching `^Content-Length:` works), and a 3xx is an answer,
        // never followed: a redirect must not carry the credential to another host.
        let mut builder = reqwest::Client::builder()
            .http1_only()
            .http1_title_case_headers()
            .redirect(reqwest::redirect::Policy::none())
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
        let client = builder.build().map_err(|e| {
            // reqwest says only "builder error"; the cause is further down the chain.
            let cause = causes(&e);
            let hint = if cause.contains("UnsupportedCertVersion") || cause.contains("Version") {
                " (an X.509 v1 certificate: the TLS stack takes v3 certificates only; reissue it with v3 extensions, e.g. `openssl x509 -req … -extfile` with basicConstraints and keyUsage)"
            } else {
                ""
            };
            CallError::Config(format!("cannot build the HTTP client: {cause}{hint}"))
        })?;
        Ok(HttpTransport { client })
    }

    /// POSTs the request; returns the body of a 200 answer.
    ///
    /// `call.url` is parsed once with [`Endpoint::parse`] (the parser behind the credential
    /// check) and that parsed URL is what the client connects to. With a credential, a URL with
    /// user info is refused.
    ///
    /// # Errors
    /// A URL that is not http(s), timeout, connection failure, a redirect, a status other than
    /// 200, or a body over `max_bytes`.
    pub async fn call(&self, call: Call<'_>) -> Result<Vec<u8>, CallError> {
        let endpoint = match call.credential {
            Some(_) => Endpoint::for_credential(call.url)?,
            None => Endpoint::parse(call.url)?,
        };
        let mut redactor = call
            .credential
            .map(Credential::redactor)
            .unwrap_or_default();
        for part in endpoint.user_info_parts() {
            redactor.add(&part);
        }
        let url = endpoint.to_string();
        let mut req = self
            .client
            .post(endpoint.url().clone())
            .timeout(call.timeout)
            .header(CONTENT_TYPE, "application/json")
            .header("traceparent", traceparent())
            .header("x-ork-delivery", random_hex(16))
            .header(DEADLINE, deadline_millis(call.timeout))
            .body(call.body);
        if let Some(c) = call.credential {
            req = req.header(c.header.clone(), c.value.clone());
        }
        let classify = |e: reqwest::Error| {
            let e = e.without_url();
            let reason = redactor.sanitize(&root_cause(&e), SNIPPET_CHARS, Keep::Start);
            if e.is_timeout() {
                CallError::Timeout {
                    url: url.clone(),
                    after: call.timeout,
                }
            } else if e.is_connect() {
                CallError::Connect {
                    url: url.clone(),
                    reason,
                }
            } else if closed_without_answer(&e) {
                CallError::Closed {
                    url: url.clone(),
                    reason,
                }
            } else {
                CallError::Transport {
                    url: url.clone(),
                    reason,
                }
            }
        };
        let mut resp = req.send().await.map_err(classify)?;
        let status = resp.status().as_u16();
        // 429 with `Retry-After` (seconds): the service asks to be called again then, which is
        // no failure of its logic (Metacontroller's hooks answer so under load).
        if status == 429
            && let Some(after) = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        {
            return Err(CallError::Busy {
                url,
                after: Duration::from_secs(after.clamp(1, MAX_RETRY_AFTER_SECS)),
            });
        }
        if resp.status().is_redirection() {
            return Err(CallError::Redirect { url, status });
        }
        // A failure's body only feeds a short snippet; a large one is not a size failure.
        let limit = if status == 200 {
            call.max_bytes
        } else {
            call.max_bytes.min(ERROR_BODY_BYTES)
        };
        if status == 200 && resp.content_length().is_some_and(|n| n > limit) {
            return Err(CallError::TooLarge { url, limit });
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(classify)? {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > limit {
                if status == 200 {
                    return Err(CallError::TooLarge { url, limit });
                }
                break;
            }
        }
        if status != 200 {
            let snippet =
                redactor.sanitize(&String::from_utf8_lossy(&body), SNIPPET_CHARS, Keep::Start);
            let body = if snippet.is_empty() {
                String::new()
            } else {
                format!(": {snippet}")
            };
            return Err(CallError::Status { url, status, body });
        }
        Ok(body)
    }
}

/// The longest `Retry-After` ork honours: an hour.
const MAX_RETRY_AFTER_SECS: u64 = 3600;

/// Whether the connection ended before a whole answer: hyper's "incomplete message", or the
/// peer resetting or aborting the connection after the request was sent.
fn closed_without_answer(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && h.is_incomplete_message()
        {
            return true;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        cur = err.source();
    }
    false
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// The header with the time ork stops waiting for the answer, in milliseconds since the Unix
/// epoch: a request that reaches the service later (a retransmission after a partition, a queue
/// in a proxy) was given up on, and its answer will not be read.
pub const DEADLINE: &str = "x-ork-deadline";

fn deadline_millis(timeout: std::time::Duration) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (now + timeout).as_millis().to_string()
}

fn traceparent() -> String {
    format!("00-{}-{}-01", random_hex(16), random_hex(8))
}

/// `bytes` random bytes as lowercase hex, in one allocation (three of these go with every call).
pub(crate) fn random_hex(bytes: usize) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut rng = rand::rng();
    let mut out = String::with_capacity(2 * bytes);
    for _ in 0..bytes {
        let b: u8 = rng.random();
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// `e` and every cause below it, joined by `: ` (each told once).
fn causes(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = cause.source();
    }
    parts.join(": ")
}
