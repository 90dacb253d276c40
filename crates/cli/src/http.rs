//! ork's HTTP endpoints, on two listeners ([`crate::listener`]):
//! - the probes' (`--probe-addr`): `/healthz`, `/readyz`, `/metrics`, open, as probes and
//!   scrapers expect (counts, never a credential);
//! - the inspector's (`--http-addr`): `/katalog`, `/katalog/{entry}`, `/katalog/{entry}/health`
//!   and `/katalog/{entry}/objects` (only for a caller the API server allows to list the CRs
//!   concerned, SPEC §11: they carry the CRs' health and service text);
//!   `/katalog/{entry}/objects/{ns}/{name}` (one CR's flight recorder, for a caller who may get
//!   that CR, SPEC §14); and the status page, `/status…` ([`crate::status_page`]). Every
//!   answer there forbids framing and content sniffing.
//!
//! Entries are the runtime's as they are at each request: the Katalog's and Metacontroller
//! controllers' alike.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ork_kube::Runtime;
use ork_kube::access::ReadCheck;

use crate::guard::AppState;
pub use crate::guard::Guard;
use crate::listener::Limits;

/// The probes' and scrapers' endpoints.
pub fn probes(runtime: Runtime) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(runtime)
        .layer(axum::middleware::map_response(hardened))
}

/// The inspector: `/katalog…` and the status page.
pub fn inspector(runtime: Runtime, guard: Guard) -> Router {
    Router::new()
        .route("/katalog", get(katalog))
        .route("/katalog/{entry}", get(entry_report))
        .route("/katalog/{entry}/health", get(entry_health))
        .route("/katalog/{entry}/rollout", get(rollout_status))
        .route("/katalog/{entry}/rollout/{action}", post(rollout_command))
        .route("/katalog/{entry}/objects", get(objects))
        .route("/katalog/{entry}/cr", get(objects))
        .route("/katalog/{entry}/objects/{name}", get(cluster_object))
        .route("/katalog/{entry}/objects/{namespace}/{name}", get(object))
        .route("/katalog/{entry}/cr/{namespace}/{name}", get(object))
        .route("/status", get(crate::status_page::overview))
        .route("/status/login", post(crate::status_page::login))
        .route("/status/logout", post(crate::status_page::logout))
        .route("/status/{entry}", get(crate::status_page::entry))
        .route(
            "/status/{entry}/{namespace}/{name}",
            get(crate::status_page::object),
        )
        .with_state(AppState { runtime, guard })
        // Only the sign-in form has a body, a token.
        .layer(DefaultBodyLimit::max(16 * 1024))
        .layer(axum::middleware::map_response(hardened))
}

/// Binds `addr` and serves `app` (`what` its paths, for the log) until the process ends.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    what: &'static str,
    app: Router,
    limits: Limits,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving {what}");
    crate::listener::serve(listener, app, limits, None).await;
    Ok(())
}

/// Every answer, the 404 of an unknown path included: never framed (clickjacking of the status
/// page's forms), never sniffed into another type than the one it says, never referred.
async fn hardened(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
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

/// The Katalog's metadata and every entry served now with its health, for a caller who may
/// list the CRs of every one of them (with no entry, nobody).
async fn katalog(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let served = runtime.entry_configs();
    let checks: Vec<ReadCheck> = served
        .iter()
        .flat_map(|(_, e)| ReadCheck::lists_of(e))
        .collect();
    if let Err(refused) = guard.admit(peer, &headers, &checks).await {
        return refused;
    }
    // Only the entries authorized above, even if a controller came meanwhile.
    let entries: Vec<_> = runtime
        .entries()
        .into_iter()
        .filter(|e| served.iter().any(|(n, _)| *n == e.name))
        .collect();
    let mut body = orkestra_summary(&entries, &served);
    body["metadata"] = serde_json::json!(runtime.metadata());
    let mut listed = serde_json::json!(entries);
    // Where each entry's progressive rollout stands, beside its health (SPEC §19): only the
    // loops of entries that have one are asked.
    if let Some(list) = listed.as_array_mut() {
        for (shown, e) in list.iter_mut().zip(&entries) {
            let rolls_out = served.iter().any(|(n, c)| *n == e.name && has_rollout(c));
            if rolls_out && let Some(Some(rollout)) = runtime.rollout(&e.name, None).await {
                shown["rollout"] = rollout;
            }
        }
    }
    body["entries"] = listed;
    json(StatusCode::OK, &body)
}

/// Orkestra's `/katalog` body (its `KatalogResponse`: `crds`, `total`, `totalEnabled`,
/// `healthy`, `status`, `statusCounts`), beside which ork adds `metadata` and `entries`.
/// `status` is the code Orkestra would answer (503 with a degraded entry); ork answers 200.
fn orkestra_summary(
    entries: &[ork_kube::EntryReport],
    served: &[(String, ork_katalog::CrdEntry)],
) -> serde_json::Value {
    let count = |state: &str| entries.iter().filter(|e| e.state == state).count();
    let degraded = count("degraded");
    let crds: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let config = served.iter().find(|(n, _)| *n == e.name).map(|(_, c)| c);
            let t = config.map(|c| c.api_types.clone()).unwrap_or_default();
            serde_json::json!({
                "name": e.name,
                "description": config.and_then(|c| c.description.clone()).unwrap_or_default(),
                "gvk": format!("{}/{}, Kind={}", t.group, t.version, t.kind),
                "gvr": format!("{}/{}, Resource={}", t.group, t.version, t.plural),
                "namespaced": config.is_some_and(|c| c.namespaced),
                "namespace": config.and_then(|c| c.namespace.clone()).unwrap_or_default(),
                "workers": config.map_or(0, |c| c.operator_box.reconcile.workers),
                "workersActive": e.workers_busy,
                "queueDepth": e.queue_depth,
                "state": e.state,
                "healthy": e.orkestra.healthy,
                "started": e.orkestra.started,
                "pending": e.orkestra.pending,
                "errorRate": e.orkestra.error_rate,
                "endpoints": {
                    "health": format!("/katalog/{}/health", e.name),
                    "info": format!("/katalog/{}", e.name),
                    "healthEnabled": true,
                    "infoEnabled": true,
                },
            })
        })
        .collect();
    serde_json::json!({
        "crds": crds,
        "total": entries.len(),
        "totalEnabled": entries.len(),
        "healthy": degraded == 0 && count("not started") == 0,
        "status": if degraded == 0 { 200 } else { 503 },
        "statusCounts": {
            "healthy": count("healthy"),
            "degraded": degraded,
            "started": entries.iter().filter(|e| e.orkestra.started).count(),
            "pending": count("pending"),
        },
    })
}

/// `Ok` with the entry's check when the caller may read `entry`; else the response.
async fn admit_entry(
    runtime: &Runtime,
    guard: &Guard,
    peer: SocketAddr,
    headers: &HeaderMap,
    entry: &str,
) -> Result<ReadCheck, Response> {
    let Some(checks) = crate::guard::entry_checks(runtime, entry) else {
        return Err(guard.unknown(peer, headers, no_entry(entry)).await);
    };
    guard.admit(peer, headers, &checks).await?;
    Ok(checks[0].clone())
}

/// 200 for healthy, pending and gated; 503 for degraded or not started; 404 for no such entry.
async fn entry_health(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(entry): Path<String>,
) -> Response {
    if let Err(refused) = admit_entry(&runtime, &guard, peer, &headers, &entry).await {
        return refused;
    }
    match runtime.entry(&entry) {
        Some(report) => json(
            StatusCode::from_u16(report.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            &report,
        ),
        None => no_entry(&entry),
    }
}

/// The entry's configuration and state (Orkestra's `/katalog/{crd}`: config and stats).
async fn entry_report(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(entry): Path<String>,
) -> Response {
    if let Err(refused) = admit_entry(&runtime, &guard, peer, &headers, &entry).await {
        return refused;
    }
    let (Some(config), Some(report)) = (runtime.config(&entry), runtime.entry(&entry)) else {
        return no_entry(&entry);
    };
    let rolls_out = has_rollout(&config);
    let mut body = serde_json::json!({"name": entry, "config": config, "stats": report});
    if rolls_out && let Some(Some(rollout)) = runtime.rollout(&entry, None).await {
        body["rollout"] = rollout;
    }
    json(StatusCode::OK, &body)
}

/// Whether the entry has a progressive rollout (`remote.rollout`).
fn has_rollout(config: &ork_katalog::CrdEntry) -> bool {
    config
        .operator_box
        .reconcile
        .remote
        .as_ref()
        .is_some_and(|r| r.rollout.is_some())
}

/// The entry's rollout as it stands (SPEC §19), for a caller who may read the entry.
async fn rollout_status(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(entry): Path<String>,
) -> Response {
    if let Err(refused) = admit_entry(&runtime, &guard, peer, &headers, &entry).await {
        return refused;
    }
    rollout_answer(&runtime, &entry, None).await
}

/// `ork rollout promote|abort|resume`: for a caller who may `patch` the entry's CRs wherever
/// the entry watches them (who may change every CR may choose which version serves them).
async fn rollout_command(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path((entry, action)): Path<(String, String)>,
) -> Response {
    let Some(command) = ork_kube::RolloutCommand::named(&action) else {
        return (
            StatusCode::NOT_FOUND,
            format!("{action:?} is not a rollout command (promote, abort, resume)\n"),
        )
            .into_response();
    };
    let Some(checks) = crate::guard::entry_checks(&runtime, &entry) else {
        return guard.unknown(peer, &headers, no_entry(&entry)).await;
    };
    let patches: Vec<ReadCheck> = checks
        .into_iter()
        .map(|c| ReadCheck { verb: "patch", ..c })
        .collect();
    if let Err(refused) = guard.admit(peer, &headers, &patches).await {
        return refused;
    }
    tracing::info!(entry = %entry, command = %action, "rollout command");
    rollout_answer(&runtime, &entry, Some(command)).await
}

async fn rollout_answer(
    runtime: &Runtime,
    entry: &str,
    command: Option<ork_kube::RolloutCommand>,
) -> Response {
    match runtime.rollout(entry, command).await {
        Some(Some(v)) => json(StatusCode::OK, &v),
        Some(None) => (
            StatusCode::NOT_FOUND,
            format!("entry {entry:?} has no remote.rollout\n"),
        )
            .into_response(),
        None => no_entry(entry),
    }
}

/// Every CR of the entry with where it stands and its last reconcile, and the counts.
async fn objects(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(entry): Path<String>,
) -> Response {
    if let Err(refused) = admit_entry(&runtime, &guard, peer, &headers, &entry).await {
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

/// One CR's record, for a caller who may `get` that CR: of a Katalog entry or of a
/// Metacontroller controller's parent alike.
async fn record(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    entry: String,
    namespace: Option<String>,
    name: String,
) -> Response {
    let entry = crate::guard::resolve_entry(&runtime, &entry).unwrap_or(entry);
    let Some(check) = crate::guard::entry_check(&runtime, &entry) else {
        return guard.unknown(peer, &headers, no_entry(&entry)).await;
    };
    let check = check.get(namespace.clone(), &name);
    if let Err(refused) = guard.admit(peer, &headers, &[check]).await {
        return refused;
    }
    let key = match &namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name,
    };
    match runtime.inspect(&entry, Some(key)).await {
        Some(mut v) => {
            // Asked for by type, the answer says which entry it is.
            v["entry"] = serde_json::Value::String(entry);
            json(StatusCode::OK, &v)
        }
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
