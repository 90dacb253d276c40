//! ork's HTTP endpoints on one port: `/healthz`, `/readyz`, `/metrics` (open, as probes and
//! scrapers expect); `/katalog`, `/katalog/{entry}`, `/katalog/{entry}/health` and
//! `/katalog/{entry}/objects` (only for a caller the API server allows to list the CRs
//! concerned, SPEC §11: they carry the CRs' health and service text);
//! `/katalog/{entry}/objects/{ns}/{name}` (one CR's flight recorder, for a caller who may get
//! that CR, SPEC §14); and the status page, `/status…` ([`crate::status_page`]).

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ork_kube::Runtime;

use crate::guard::AppState;
pub use crate::guard::Guard;

/// Binds `addr` and serves until the process ends.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(addr: SocketAddr, runtime: Runtime, guard: Guard) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/katalog", get(katalog))
        .route("/katalog/{entry}", get(entry_report))
        .route("/katalog/{entry}/health", get(entry_health))
        .route("/katalog/{entry}/objects", get(objects))
        .route("/katalog/{entry}/cr", get(objects))
        .route("/katalog/{entry}/objects/{name}", get(cluster_object))
        .route("/katalog/{entry}/objects/{namespace}/{name}", get(object))
        .route("/katalog/{entry}/cr/{namespace}/{name}", get(object))
        .route("/status", get(crate::status_page::overview))
        .route(
            "/status/login",
            axum::routing::post(crate::status_page::login),
        )
        .route("/status/{entry}", get(crate::status_page::entry))
        .route(
            "/status/{entry}/{namespace}/{name}",
            get(crate::status_page::object),
        )
        .with_state(AppState { runtime, guard });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving /healthz /readyz /metrics /katalog");
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}

/// Ready once every entry's cache holds its initial list and the API server serves every
/// entry's CR type, for leader and standby alike.
async fn readyz(State(runtime): State<Runtime>) -> Response {
    if runtime.ready() {
        (StatusCode::OK, "ready").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: caches not synced yet, or a CR type is not served (see /katalog)",
        )
            .into_response()
    }
}

async fn metrics(State(runtime): State<Runtime>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        runtime.metrics_text().await,
    )
        .into_response()
}

/// The Katalog's metadata and every entry with its health.
async fn katalog(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = guard.admit(peer, &headers, guard.entries.keys()).await {
        return refused;
    }
    let body = serde_json::json!({
        "metadata": runtime.metadata(),
        "entries": runtime.entries(),
    });
    json(StatusCode::OK, &body)
}

/// 200 for healthy, pending and gated; 503 for degraded or not started; 404 for no such entry.
async fn entry_health(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(entry): Path<String>,
) -> Response {
    if let Err(refused) = guard.admit(peer, &headers, std::iter::once(&entry)).await {
        return refused;
    }
    match runtime.entry(&entry) {
        Some(report) => json(
            StatusCode::from_u16(report.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            &report,
        ),
        None => (
            StatusCode::NOT_FOUND,
            format!("no entry {entry:?} in the Katalog"),
        )
            .into_response(),
    }
}

/// The entry's configuration and state (Orkestra's `/katalog/{crd}`: config and stats).
async fn entry_report(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(entry): Path<String>,
) -> Response {
    if let Err(refused) = guard.admit(peer, &headers, std::iter::once(&entry)).await {
        return refused;
    }
    let (Some(config), Some(report)) = (runtime.config(&entry), runtime.entry(&entry)) else {
        return no_entry(&entry);
    };
    json(
        StatusCode::OK,
        &serde_json::json!({"name": entry, "config": config, "stats": report}),
    )
}

/// Every CR of the entry with where it stands and its last reconcile, and the counts.
async fn objects(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(entry): Path<String>,
) -> Response {
    if let Err(refused) = guard.admit(peer, &headers, std::iter::once(&entry)).await {
        return refused;
    }
    match runtime.inspect(&entry, None).await {
        Some(v) => json(StatusCode::OK, &v),
        None => no_entry(&entry),
    }
}

/// The flight recorder of one namespaced CR: only for a caller who may `get` it.
async fn object(
    state: State<AppState>,
    peer: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path((entry, namespace, name)): Path<(String, String, String)>,
) -> Response {
    record(state, peer, headers, entry, Some(namespace), name).await
}

/// The flight recorder of one cluster-scoped CR.
async fn cluster_object(
    state: State<AppState>,
    peer: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path((entry, name)): Path<(String, String)>,
) -> Response {
    record(state, peer, headers, entry, None, name).await
}

async fn record(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    entry: String,
    namespace: Option<String>,
    name: String,
) -> Response {
    let Some(check) = guard.entries.get(&entry) else {
        return no_entry(&entry);
    };
    let check = check.get(namespace.clone(), &name);
    if let Err(refused) = guard.admit_for(peer, &headers, &[check]).await {
        return refused;
    }
    let key = match &namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name,
    };
    match runtime.inspect(&entry, Some(key)).await {
        Some(v) => json(StatusCode::OK, &v),
        None => no_entry(&entry),
    }
}

fn no_entry(entry: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!("no entry {entry:?} running in the Katalog\n"),
    )
        .into_response()
}

fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_string_pretty(value) {
        Ok(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
