//! Who may read ork's inspection pages and endpoints (`/katalog…`, `/status…`): a caller whose
//! bearer token (or the status page's cookie holding one) the API server authenticates and
//! allows to read the CRs concerned (SPEC §11, §14).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::FromRef;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kube::Client;
use ork_kube::Runtime;
use ork_kube::access::{Access, ReadCheck, review};

/// Who may read `/katalog`.
#[derive(Clone)]
pub struct Guard {
    /// Asks the API server (TokenReview, SubjectAccessReview); `None` serves nobody.
    pub client: Option<Client>,
    /// Callers on loopback need no token (`--unauthenticated-loopback`, local development).
    pub loopback_open: bool,
    /// Entry → the CRs a reader must be allowed to list.
    pub entries: Arc<BTreeMap<String, ReadCheck>>,
}

#[derive(Clone)]
pub(crate) struct AppState {
    pub runtime: Runtime,
    pub guard: Guard,
}

impl FromRef<AppState> for Runtime {
    fn from_ref(s: &AppState) -> Runtime {
        s.runtime.clone()
    }
}

/// The cookie that holds a browser's token.
pub(crate) const COOKIE: &str = "ork_token";

/// The token a request carries: its bearer token, else the status page's cookie.
pub(crate) fn token_of(headers: &HeaderMap) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if let Some(t) = bearer {
        return Some(t.to_string());
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(&format!("{COOKIE}=")))
        .map(str::to_string)
        .find(|t| !t.is_empty())
}

impl Guard {
    /// `Ok` when the caller may read what `entries` name; else the response to send (401
    /// without a usable token, 403 when the API server says no, 503 when it cannot be asked).
    /// The token is never logged nor echoed.
    pub(crate) async fn admit<'a>(
        &self,
        peer: SocketAddr,
        headers: &HeaderMap,
        entries: impl Iterator<Item = &'a String>,
    ) -> Result<(), Response> {
        let checks: Vec<ReadCheck> = entries
            .filter_map(|e| self.entries.get(e).cloned())
            .collect();
        self.admit_for(peer, headers, &checks).await
    }

    /// [`Guard::admit`] for what `checks` name.
    pub(crate) async fn admit_for(
        &self,
        peer: SocketAddr,
        headers: &HeaderMap,
        checks: &[ReadCheck],
    ) -> Result<(), Response> {
        if self.loopback_open && peer.ip().is_loopback() {
            return Ok(());
        }
        let unauthorized = || {
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a bearer token of a user who may list these CRs is required\n",
            )
                .into_response()
        };
        let Some(token) = token_of(headers) else {
            return Err(unauthorized());
        };
        let Some(client) = &self.client else {
            return Err(unauthorized());
        };
        match review(client, &token, checks).await {
            Ok(Access::Allowed) => Ok(()),
            Ok(Access::Unauthenticated) => Err(unauthorized()),
            Ok(Access::Forbidden { user, what }) => {
                Err((StatusCode::FORBIDDEN, format!("{user} may not {what}\n")).into_response())
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot ask the API server who reads /katalog");
                Err((
                    StatusCode::SERVICE_UNAVAILABLE,
                    "cannot reach the API server to authorize the request\n",
                )
                    .into_response())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_token_comes_from_the_bearer_header_or_the_page_s_cookie() {
        let mut h = HeaderMap::new();
        assert_eq!(token_of(&h), None);
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; ork_token=t0k"),
        );
        assert_eq!(token_of(&h).as_deref(), Some("t0k"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer xyz"),
        );
        assert_eq!(token_of(&h).as_deref(), Some("xyz"));
    }

    fn guard(loopback_open: bool) -> Guard {
        Guard {
            client: None,
            loopback_open,
            entries: Arc::default(),
        }
    }

    #[tokio::test]
    async fn loopback_is_open_only_when_asked_and_the_network_never() {
        let local: SocketAddr = "127.0.0.1:5000".parse().expect("addr");
        let remote: SocketAddr = "10.1.2.3:5000".parse().expect("addr");
        let none = HeaderMap::new();
        let entries: Vec<String> = Vec::new();
        assert!(
            guard(true)
                .admit(local, &none, entries.iter())
                .await
                .is_ok()
        );
        for (g, peer) in [(guard(false), local), (guard(true), remote)] {
            let refused = g
                .admit(peer, &none, entries.iter())
                .await
                .expect_err("no token");
            assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        }
    }
}
