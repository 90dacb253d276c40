//! A scripted reconcile service on 127.0.0.1: answers each POST with a function of the request
//! and records every request (head and JSON body) for the test to inspect.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};

use crate::pki::TestPki;

/// What the service does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Answer with this HTTP status and body.
    Respond(u16, String),
    /// Keep the connection open without answering (a hung service).
    Hang,
    /// Close the connection without answering (a service that crashed on the request).
    Close,
}

impl Reply {
    pub fn ok(body: impl ToString) -> Reply {
        Reply::Respond(200, body.to_string())
    }
}

/// How the service answers a request.
pub type Script = Box<dyn Fn(&Value) -> Reply + Send>;

/// One request as the service received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// Request line and headers, as sent (header names in their original case).
    pub head: String,
    pub body: Value,
}

impl Received {
    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

#[derive(Clone)]
pub struct FakeService {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<Script>>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for FakeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeService")
            .field("url", &self.url)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl FakeService {
    /// Binds 127.0.0.1 on a free port and serves until the test's runtime ends.
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub async fn start(
        script: impl Fn(&Value) -> Reply + Send + 'static,
    ) -> std::io::Result<FakeService> {
        FakeService::launch(Box::new(script), None).await
    }

    /// The same service over HTTPS with the PKI's server certificate; with `require_client_cert`
    /// only clients presenting a certificate of the PKI's CA get through the handshake.
    ///
    /// # Errors
    /// No loopback port, or the PKI's PEM does not load.
    pub async fn start_tls(
        script: impl Fn(&Value) -> Reply + Send + 'static,
        pki: &TestPki,
        require_client_cert: bool,
    ) -> std::io::Result<FakeService> {
        let bad = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        let certs = CertificateDer::pem_slice_iter(pki.server_cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(pki.server_key_pem.as_bytes())
            .map_err(|e| bad(e.to_string()))?;
        let provider = std::sync::Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(e.to_string()))?;
        let config = if require_client_cert {
            let mut roots = RootCertStore::empty();
            for ca in CertificateDer::pem_slice_iter(pki.ca_pem.as_bytes()) {
                roots
                    .add(ca.map_err(|e| bad(e.to_string()))?)
                    .map_err(|e| bad(e.to_string()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| bad(e.to_string()))?;
            builder
                .with_client_cert_verifier(verifier)
                .with_single_cert(certs, key)
        } else {
            builder.with_no_client_auth().with_single_cert(certs, key)
        }
        .map_err(|e| bad(e.to_string()))?;
        FakeService::launch(Box::new(script), Some(TlsAcceptor::from(Arc::new(config)))).await
    }

    /// Binds 127.0.0.1 and accepts connections (through `tls` when given) until the runtime ends.
    async fn launch(script: Script, tls: Option<TlsAcceptor>) -> std::io::Result<FakeService> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let svc = FakeService {
            url: format!("{scheme}://{}/reconcile", listener.local_addr()?),
            received: Arc::default(),
            script: Arc::new(Mutex::new(script)),
            connections: Arc::default(),
        };
        let s = svc.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                s.connections
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (s, tls) = (s.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None => s.serve(conn).await,
                        // A failed handshake (no or wrong client certificate) just ends the connection.
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(conn).await {
                                s.serve(stream).await;
                            }
                        }
                    }
                });
            }
        });
        Ok(svc)
    }

    /// Serves HTTP/1.1 keep-alive requests on one connection.
    async fn serve(self, mut conn: impl AsyncRead + AsyncWrite + Unpin) {
        let mut buf = Vec::new();
        loop {
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                if !read_more(&mut conn, &mut buf).await {
                    return;
                }
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                if !read_more(&mut conn, &mut buf).await {
                    return;
                }
            }
            let body: Value =
                serde_json::from_slice(&buf[end + 4..end + 4 + len]).unwrap_or(Value::Null);
            buf.drain(..end + 4 + len);
            let reply = (lock(&self.script))(&body);
            lock(&self.received).push(Received { head, body });
            match reply {
                Reply::Hang => {
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    return;
                }
                Reply::Close => return,
                Reply::Respond(status, text) => {
                    let resp = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                        text.len()
                    );
                    if conn.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    /// Replaces how the service answers from now on.
    pub fn set_script(&self, script: impl Fn(&Value) -> Reply + Send + 'static) {
        *lock(&self.script) = Box::new(script);
    }

    /// How many requests arrived so far.
    pub fn calls(&self) -> usize {
        lock(&self.received).len()
    }

    /// How many TCP connections were accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.received).clone()
    }
}

/// The example's answer (a Deployment intent and a full-form Service named after the CR), built
/// from the request the way `examples/webapp/reconciler.py` does.
pub fn webapp_answer(req: &Value) -> Reply {
    let name = req["object"]["metadata"]["name"]
        .as_str()
        .unwrap_or("x")
        .to_string();
    let image = req["object"]["spec"]["image"].clone();
    Reply::ok(serde_json::json!({
        "result": "ok",
        "status": {"phase": "Ready"},
        "resources": [
            {"type": "deployment", "fields": {"name": name, "image": image, "replicas": 1, "port": 80}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
             "spec": {"selector": {"orkestra-owner": name}, "ports": [{"port": 80, "protocol": "TCP"}]}}
        ]
    }))
}

async fn read_more(conn: &mut (impl AsyncRead + Unpin), buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    match conn.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}
