//! Who may read ork's inspection pages and endpoints (`/katalog…`, `/status…`): a caller whose
//! bearer token (or the status page's cookie holding one) the API server authenticates and
//! allows to read the CRs concerned (SPEC §11, §14).

use std::net::SocketAddr;

use axum::extract::FromRef;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ork_kube::Runtime;
use ork_kube::access::{Access, ReadCheck, Reviewer};

/// Who may read `/katalog` and `/status`.
#[derive(Clone)]
pub struct Guard {
    /// Asks the API server (TokenReview, SubjectAccessReview); `None` serves nobody.
    pub reviewer: Option<Reviewer>,
    /// Callers on loopback need no token (`--unauthenticated-loopback`, local development).
    pub loopback_open: bool,
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

/// The token a request carries: its bearer token (the scheme in any case, as RFC 9110 has
/// it), else the status page's cookie.
pub(crate) fn token_of(headers: &HeaderMap) -> Option<String> {
    use ork_kube::access::request::{bearer, cookie};
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    bearer
        .or_else(|| {
            cookie(
                headers
                    .get_all(header::COOKIE)
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
                COOKIE,
            )
        })
        .map(str::to_string)
}

/// What a reader of `entry` must be allowed (`list` on its CRs), while the runtime serves it:
/// a Katalog entry or a Metacontroller controller's, as they are now.
/// The entry a path names: by its name, or by its CRs' type as `Kind.group` (what `ork explain`
/// asks by, so that a caller who may read one CR need not `list` every entry to find its
/// name); `None` when no entry, or more than one, has that type.
pub(crate) fn resolve_entry(runtime: &Runtime, segment: &str) -> Option<String> {
    if runtime.config(segment).is_some() {
        return Some(segment.to_string());
    }
    let mut by_type = runtime.entry_configs().into_iter().filter(|(_, e)| {
        let t = &e.api_types;
        !t.kind.is_empty() && format!("{}.{}", t.kind, t.group) == segment
    });
    match (by_type.next(), by_type.next()) {
        (Some((name, _)), None) => Some(name),
        _ => None,
    }
}

/// The check a read of one of `entry`'s CRs starts from ([`ReadCheck::get`] narrows it).
pub(crate) fn entry_check(runtime: &Runtime, entry: &str) -> Option<ReadCheck> {
    entry_checks(runtime, entry)?.into_iter().next()
}

/// What a reader of `entry` must be allowed ([`ReadCheck::lists_of`]); never empty.
pub(crate) fn entry_checks(runtime: &Runtime, entry: &str) -> Option<Vec<ReadCheck>> {
    runtime
        .config(entry)
        .map(|e| ReadCheck::lists_of(&e))
        .filter(|checks| !checks.is_empty())
}

impl Guard {
    /// `Ok` when the caller may read what `checks` name (never when they name nothing); else
    /// the response to send: 401 without a usable token, 403 when the API server says no (or
    /// there is nothing to check), 429 when the caller's address presented too many refused
    /// tokens, 503 when the API server cannot be asked. The token is never logged nor echoed.
    pub(crate) async fn admit(
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
        let Some(reviewer) = &self.reviewer else {
            return Err(unauthorized());
        };
        match reviewer.review(peer.ip(), &token, checks).await {
            Ok(Access::Allowed) => Ok(()),
            Ok(Access::Unauthenticated) => Err(unauthorized()),
            Ok(Access::Forbidden { user, what }) => {
                Err((StatusCode::FORBIDDEN, format!("{user} may not {what}\n")).into_response())
            }
            Ok(Access::Throttled { retry_after }) => {
                let secs = retry_after.as_secs_f64().ceil().max(1.0);
                let mut resp = (
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many refused tokens from this address; try again later\n",
                )
                    .into_response();
                if let Ok(v) = HeaderValue::from_str(&format!("{secs}")) {
                    resp.headers_mut().insert(header::RETRY_AFTER, v);
                }
                Err(resp)
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

    /// The answer about an entry the runtime does not serve: `not_found` for a caller the API
    /// server authenticates (or an open loopback), else the refusal an unauthenticated caller
    /// gets for any entry, so that entry names are not told to the network.
    pub(crate) async fn unknown(
        &self,
        peer: SocketAddr,
        headers: &HeaderMap,
        not_found: Response,
    ) -> Response {
        match self.admit(peer, headers, &[]).await {
            Ok(()) => not_found,
            Err(refused) if refused.status() == StatusCode::FORBIDDEN => not_found,
            Err(refused) => refused,
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
        for (header, token) in [
            ("bearer lower", Some("lower")),
            ("BEARER  upper ", Some("upper")),
            ("Basic dXNlcg==", Some("t0k")),
            ("Bearer", Some("t0k")),
        ] {
            h.insert(header::AUTHORIZATION, HeaderValue::from_static(header));
            assert_eq!(token_of(&h).as_deref(), token, "{header}");
        }
    }

    fn guard(loopback_open: bool) -> Guard {
        Guard {
            reviewer: None,
            loopback_open,
        }
    }

    #[tokio::test]
    async fn loopback_is_open_only_when_asked_and_the_network_never() {
        let local: SocketAddr = "127.0.0.1:5000".parse().expect("addr");
        let remote: SocketAddr = "10.1.2.3:5000".parse().expect("addr");
        let none = HeaderMap::new();
        assert!(guard(true).admit(local, &none, &[]).await.is_ok());
        for (g, peer) in [(guard(false), local), (guard(true), remote)] {
            let refused = g.admit(peer, &none, &[]).await.expect_err("no token");
            assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        }
    }
}
