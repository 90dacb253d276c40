//! ork's HTTP endpoints on one port: `/healthz`, `/readyz`, `/metrics`, `/katalog`,
//! `/katalog/{entry}/health`.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ork_kube::Runtime;

/// Binds `addr` and serves until the process ends.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(addr: SocketAddr, runtime: Runtime) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/katalog", get(katalog))
        .route("/katalog/{entry}/health", get(entry_health))
        .with_state(runtime);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving /healthz /readyz /metrics /katalog");
    axum::serve(listener, app).await
}

/// Ready once every entry's cache holds its initial list, for leader and standby alike.
async fn readyz(State(runtime): State<Runtime>) -> Response {
    if runtime.ready() {
        (StatusCode::OK, "ready").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced yet").into_response()
    }
}

async fn metrics(State(runtime): State<Runtime>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        runtime.metrics_text(),
    )
        .into_response()
}

/// The Katalog's metadata and every entry with its health.
async fn katalog(State(runtime): State<Runtime>) -> Response {
    let body = serde_json::json!({
        "metadata": runtime.metadata(),
        "entries": runtime.entries(),
    });
    json(StatusCode::OK, &body)
}

/// 200 for healthy, pending and gated; 503 for degraded or not started; 404 for no such entry.
async fn entry_health(State(runtime): State<Runtime>, Path(entry): Path<String>) -> Response {
    match runtime.entries().into_iter().find(|e| e.name == entry) {
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

fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_string_pretty(value) {
        Ok(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
