//! `ork run`'s admission webhook (SPEC §21): HTTPS on `--webhook-addr` with a serving
//! certificate from the CA ork keeps in its namespace, `POST /admit/{entry}/{validate|mutate}`
//! answered by the entry's service, and with `--register-webhooks` the webhook configurations
//! registered to call this process.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use kube::Client;
use ork_kube::Runtime;
use ork_kube::admission::{MAX_REVIEW_BYTES, Phase};
use ork_kube::webhook::{ClientBase, ServingCert, WebhookCa};

use crate::args::RunArgs;

/// Connections the webhook holds at once: the API server's calls, at most a few per write.
const WEBHOOK_CONNECTIONS: usize = 256;

/// Loads (or creates) the CA, binds `addr`, serves the webhook, and registers the entries'
/// configurations when asked.
///
/// # Errors
/// The CA Secret cannot be had, the address cannot be bound, or the certificate minted.
pub async fn start(
    client: &Client,
    runtime: &Runtime,
    addr: SocketAddr,
    args: &RunArgs,
    ork_namespace: &str,
) -> Result<()> {
    let ca = WebhookCa::load_or_create(client, ork_namespace).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the admission webhook to {addr}"))?;
    let bound = listener.local_addr()?;
    let url = args
        .webhook_url
        .clone()
        .unwrap_or_else(|| format!("https://127.0.0.1:{}", bound.port()));
    let mut hosts = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    if let Some(host) = url_host(&url) {
        hosts.push(host);
    }
    let service = args
        .webhook_service
        .as_deref()
        .map(parse_service)
        .transpose()?;
    if let Some(ClientBase::Service {
        namespace, name, ..
    }) = &service
    {
        hosts.push(format!("{name}.{namespace}.svc"));
        hosts.push(format!("{name}.{namespace}.svc.cluster.local"));
    }
    hosts.extend(args.webhook_hosts.iter().cloned());
    hosts.sort();
    hosts.dedup();
    let cert = ServingCert::start(ca.clone(), hosts, args.webhook_cert_lifetime)?;
    let app = router(runtime.clone());
    let limits = crate::listener::Limits {
        max_connections: WEBHOOK_CONNECTIONS,
        header_read: args.http_header_timeout,
        idle: args.http_idle_timeout,
        // The API server gives up on a webhook after at most 10 s.
        request: Duration::from_secs(10),
    };
    tracing::info!(addr = %bound, "serving the admission webhook /admit");
    let tls = cert.server_config();
    tokio::spawn(async move {
        let _cert = cert;
        crate::listener::serve(listener, app, limits, Some(tls)).await;
    });
    match service {
        Some(service) => runtime.register_webhooks(service, ca.cert_pem.clone()),
        None if args.register_webhooks => {
            runtime.register_webhooks(ClientBase::Url(url), ca.cert_pem.clone());
        }
        None => {}
    }
    Ok(())
}

/// `NAMESPACE/NAME[:PORT]`.
fn parse_service(text: &str) -> Result<ClientBase> {
    let (namespace, rest) = text.split_once('/').ok_or_else(|| {
        anyhow::anyhow!("--webhook-service {text:?} is not NAMESPACE/NAME[:PORT]")
    })?;
    let (name, port) = match rest.split_once(':') {
        Some((name, port)) => (
            name,
            port.parse().map_err(|_| {
                anyhow::anyhow!("--webhook-service {text:?}: {port:?} is not a port")
            })?,
        ),
        None => (rest, 443),
    };
    if namespace.is_empty() || name.is_empty() {
        anyhow::bail!("--webhook-service {text:?} is not NAMESPACE/NAME[:PORT]");
    }
    Ok(ClientBase::Service {
        namespace: namespace.to_string(),
        name: name.to_string(),
        port,
    })
}

/// The host of `url` (`https://host:port/...`).
fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    (!host.is_empty()).then(|| host.to_string())
}

fn router(runtime: Runtime) -> Router {
    Router::new()
        .route("/admit/{entry}/{phase}", post(admit))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REVIEW_BYTES))
        .with_state(runtime)
}

async fn admit(
    State(runtime): State<Runtime>,
    Path((entry, phase)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Some(phase) = Phase::parse(&phase) else {
        return (
            StatusCode::NOT_FOUND,
            "the phases are validate and mutate\n",
        )
            .into_response();
    };
    match runtime.admit(&entry, phase, &body).await {
        Ok(answer) => ([(header::CONTENT_TYPE, "application/json")], answer).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, format!("ork: {e}\n")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_of_a_url() {
        assert_eq!(
            super::url_host("https://127.0.0.1:9443").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            super::url_host("https://ork.ork-system.svc/admit").as_deref(),
            Some("ork.ork-system.svc")
        );
        assert_eq!(
            super::url_host("https://[::1]:9443").as_deref(),
            Some("::1")
        );
    }
}
