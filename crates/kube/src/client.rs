//! ork's client of the API server: kube's, over HTTP/1.1 (what `ork run` speaks unless told
//! `--api-http2`) or over HTTP/2 when the server offers it.
//!
//! kube's own client speaks HTTP/1.1 only: every request in flight holds a TLS connection of
//! its own, and each answer wakes ork for a read of its own. Over HTTP/2 (what client-go and so
//! kubectl and every controller manager use) all requests and watches share one connection:
//! answers that arrive together come in one read, which saved about a tenth of ork's CPU at
//! 2,000 CRs; under a long burst of writes that one connection set the pace (20,000 new CRs:
//! 170.6 s over HTTP/2, 140.7 s over HTTP/1.1, the plain client's time), so HTTP/1.1 is
//! `ork run`'s default. The layers are kube's (base URL, auth, headers, retries of refused
//! requests); only the connection differs. Behind a proxy, kube's own client does the work.
//!
//! On the HTTP/2 connection Nagle's algorithm is off, as Go's clients have it: HTTP/2 writes
//! small frames (a window update, a short request) that would otherwise wait for the server's
//! delayed acknowledgement: with it on, an edit reached its child in 10 ms p50 and 50 ms p99
//! instead of 6 and 11 (2,000 CRs, then 50 edits at rest). An earlier trial of HTTP/2, with
//! kube's connector settings (Nagle on), was dropped for its latency (24 ms p50). kube's
//! HTTP/1.1 client leaves Nagle on; it writes each request whole and waits for its answer, so
//! the delayed acknowledgement has nothing to hold back there (9 ms p50, 25 ms p99 after
//! 100,000 CRs).

use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::retry::RetryPolicy;
use kube::client::{ClientBuilder, ConfigExt};
use kube::{Client, Config};
use tower::retry::RetryLayer;
use tower::{BoxError, ServiceBuilder};

/// After how long without a frame from the server an HTTP/2 connection is pinged, and how long
/// the answer may take before the connection counts as dead (its requests fail, its watches
/// start again): client-go's read-idle and ping timeouts.
const PING_EVERY: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// Which HTTP ork may speak with the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// HTTP/2 where the server offers it (TLS with ALPN), else HTTP/1.1.
    Negotiated,
    /// HTTP/1.1 only: kube's own client. `ork run`'s default.
    #[default]
    Http1,
}

/// A client of the API server `config` names.
///
/// # Errors
/// The TLS or auth settings of `config` are unusable.
pub fn client(config: Config, protocol: Protocol) -> Result<Client, kube::Error> {
    if protocol == Protocol::Http1 || config.proxy_url.is_some() {
        return Client::try_from(config);
    }
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(config.connect_timeout);
    let mut tls = config.rustls_client_config()?;
    // hyper-rustls offers the protocols it is built for; a fixed server name is kube's way.
    tls.alpn_protocols.clear();
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let builder = match &config.tls_server_name {
        Some(name) => {
            let name = rustls::pki_types::ServerName::try_from(name.clone()).map_err(|e| {
                kube::Error::RustlsTls(kube::client::RustlsTlsError::InvalidServerName(e))
            })?;
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => builder,
    };
    let https = builder.enable_all_versions().wrap_connector(tcp);
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .http2_keep_alive_interval(PING_EVERY)
        .http2_keep_alive_timeout(PING_TIMEOUT)
        .http2_keep_alive_while_idle(true)
        .build(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(hyper);
    Ok(ClientBuilder::new(service, config.default_namespace.clone()).build())
}

/// What ork says of the API server it reached: its `gitVersion` and the HTTP it answered in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub version: String,
    pub http: http::Version,
}

impl Server {
    /// `GET /version`.
    ///
    /// # Errors
    /// The API server could not be reached, refused, or answered something else than a version.
    pub async fn ask(client: &Client) -> Result<Server, kube::Error> {
        let request = http::Request::get("/version")
            .body(kube::client::Body::empty())
            .map_err(kube::Error::HttpError)?;
        let response = client.send(request).await?;
        let http = response.version();
        let body = response.into_body().collect_bytes().await?;
        let info: k8s_openapi::apimachinery::pkg::version::Info =
            serde_json::from_slice(&body).map_err(kube::Error::SerdeError)?;
        Ok(Server {
            version: info.git_version,
            http,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(server_name: Option<&str>) -> Config {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config = Config::new("https://127.0.0.1:6443".parse().expect("url"));
        config.tls_server_name = server_name.map(str::to_string);
        config
    }

    #[tokio::test]
    async fn a_server_name_that_is_no_name_is_an_error_not_a_panic() {
        match client(config(Some("not a name")), Protocol::Negotiated) {
            Err(err) => assert!(err.to_string().contains("server name"), "{err}"),
            Ok(_) => panic!("a server name with spaces was taken"),
        }
        assert!(client(config(Some("kubernetes.default")), Protocol::Negotiated).is_ok());
        assert!(client(config(None), Protocol::Http1).is_ok());
    }
}
