//! The status page (SPEC §14): a few server-rendered HTML pages on ork's HTTP port, read-only,
//! with no script. It shows:
//! - `/status`: the entries and their health;
//! - `/status/{entry}`: the counts and every CR with where it stands;
//! - `/status/{entry}/{namespace}/{name}`: one CR's explain view, namely the timeline, the plan,
//!   the last error, request and answer (`_` for the namespace of a cluster-scoped CR).
//!
//! Authorization is the same as for `/katalog`. A browser that cannot send a bearer token posts
//! it once to `/status/login`, which keeps it in an `HttpOnly`, `SameSite=Strict` cookie for the
//! page's path (`Secure` behind an HTTPS proxy; ork itself serves plain HTTP, meant for
//! loopback and `kubectl port-forward`); `/status/logout` forgets it. Both refuse a form another
//! site posted (`Origin` / `Sec-Fetch-Site`).

use std::fmt::Write as _;

use axum::extract::{ConnectInfo, Form, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use ork_kube::access::ReadCheck;

use crate::guard::{AppState, COOKIE, entry_check, entry_checks};

#[derive(serde::Deserialize)]
pub(crate) struct Login {
    token: String,
}

/// Keeps the posted token in the page's cookie and goes to the overview; only for a form
/// this page itself posted (login CSRF: another site must not sign a browser in as its own
/// user).
pub(crate) async fn login(headers: HeaderMap, Form(login): Form<Login>) -> Response {
    let Some(origin) = same_origin(&headers) else {
        return cross_site();
    };
    let token: String = login
        .token
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .collect();
    see_overview(&cookie(&token, origin.secure, None))
}

/// Forgets the page's cookie and goes to the overview.
pub(crate) async fn logout(headers: HeaderMap) -> Response {
    let Some(origin) = same_origin(&headers) else {
        return cross_site();
    };
    see_overview(&cookie("", origin.secure, Some(0)))
}

/// The page's cookie holding `token`: never readable by script, never sent by another site's
/// request, `Secure` when the page was loaded over HTTPS (a TLS proxy in front of ork).
fn cookie(token: &str, secure: bool, max_age: Option<u32>) -> String {
    let mut c = format!("{COOKIE}={token}; Path=/status; HttpOnly; SameSite=Strict");
    if secure {
        c.push_str("; Secure");
    }
    if let Some(age) = max_age {
        c.push_str(&format!("; Max-Age={age}"));
    }
    c
}

fn see_overview(cookie: &str) -> Response {
    let mut resp = (StatusCode::SEE_OTHER, [(header::LOCATION, "/status")]).into_response();
    if let Ok(v) = HeaderValue::from_str(cookie) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

pub(crate) use ork_kube::access::request::SameOrigin;

/// `Some` when the browser says the form came from this page: `Sec-Fetch-Site: same-origin`,
/// or an `Origin` whose host and port are the request's `Host`. Without either (another site's
/// form, or a client that says nothing), `None`.
pub(crate) fn same_origin(headers: &HeaderMap) -> Option<SameOrigin> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    ork_kube::access::request::FormOrigin {
        origin: text("origin"),
        host: text("host"),
        sec_fetch_site: text("sec-fetch-site"),
        forwarded_proto: text("x-forwarded-proto"),
    }
    .same_origin()
}

/// The answer to a form another site posted.
fn cross_site() -> Response {
    (
        StatusCode::FORBIDDEN,
        "refused: the sign-in form must be posted from ork's own status page\n",
    )
        .into_response()
}

/// A refused request, as a page: the reason, and the form for a token.
fn refused(resp: Response) -> Response {
    let status = resp.status();
    if status == StatusCode::NOT_FOUND {
        return resp;
    }
    let body = format!(
        "<p>{} — ork asks the API server whether the holder of a token may read these CRs.</p>\
         <form method=\"post\" action=\"/status/login\"><label>Bearer token \
         <input type=\"password\" name=\"token\" autocomplete=\"off\"></label> \
         <button>Show</button></form>",
        esc(status.canonical_reason().unwrap_or("refused"))
    );
    (status, page("ork: sign in", &body)).into_response()
}

/// `/status`: every entry with its health.
pub(crate) async fn overview(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let served = runtime.entry_configs();
    let checks: Vec<ReadCheck> = served
        .iter()
        .flat_map(|(_, e)| ReadCheck::lists_of(e))
        .collect();
    if let Err(r) = guard.admit(peer, &headers, &checks).await {
        return refused(r);
    }
    let mut body = String::new();
    let name = runtime.metadata().name.clone();
    let _ = write!(
        body,
        "<h1>ork: {}</h1><table id=\"entries\"><tr><th>entry</th><th>kind</th><th>state</th>\
         <th>reconciles</th><th>failed</th><th>failing in a row</th><th>queued</th>\
         <th>in flight</th><th>last error</th></tr>",
        esc(&name)
    );
    let shown = runtime
        .entries()
        .into_iter()
        .filter(|e| served.iter().any(|(n, _)| *n == e.name));
    for e in shown {
        let h = e.health.as_ref();
        let _ = write!(
            body,
            "<tr class=\"entry\"><td><a href=\"/status/{n}\">{n}</a></td><td>{}</td>\
             <td class=\"state {s}\">{s}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr>",
            esc(&e.kind),
            h.map_or(0, |h| h.total_reconciles),
            h.map_or(0, |h| h.failed_reconciles),
            h.map_or(0, |h| h.consecutive_fails),
            e.queue_depth,
            e.workers_busy,
            cut_cell(
                "message",
                h.and_then(|h| h.last_error.as_deref()).unwrap_or(""),
                MESSAGE_CELL_CHARS
            ),
            n = esc(&e.name),
            s = esc(&e.state),
        );
    }
    body.push_str("</table>");
    page(&format!("ork: {name}"), &body).into_response()
}

/// `/status/{entry}`: the counts and every CR.
pub(crate) async fn entry(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    headers: HeaderMap,
    Path(entry): Path<String>,
) -> Response {
    let Some(checks) = entry_checks(&runtime, &entry) else {
        return refused(guard.unknown(peer, &headers, not_found(&entry)).await);
    };
    if let Err(r) = guard.admit(peer, &headers, &checks).await {
        return refused(r);
    }
    let Some(objects) = runtime.inspect(&entry, None).await else {
        return not_found(&entry);
    };
    let mut body = format!(
        "<p><a href=\"/status\">all entries</a></p><h1>{}</h1><ul id=\"counts\">",
        esc(&entry)
    );
    for (label, field) in [
        ("CRs", "total"),
        ("ready", "ready"),
        ("not ready", "notReady"),
        ("in flight", "inFlight"),
        ("queued", "queued"),
        ("backing off", "backingOff"),
    ] {
        let _ = write!(
            body,
            "<li data-count=\"{field}\">{label}: <b>{}</b></li>",
            objects["counts"][field].as_u64().unwrap_or(0)
        );
    }
    body.push_str(
        "</ul><table id=\"objects\"><tr><th>CR</th><th>state</th><th>Ready</th>\
         <th>Reconciling</th><th>Stalled</th><th>trigger</th><th>attempt</th><th>reason</th>\
         <th>message</th><th>next try</th></tr>",
    );
    for o in objects["objects"].as_array().into_iter().flatten() {
        let key = text(&o["key"]);
        let href = match key.split_once('/') {
            Some((ns, name)) => format!("/status/{entry}/{ns}/{name}"),
            None => format!("/status/{entry}/_/{key}"),
        };
        let message = text(&o["message"]);
        let _ = write!(
            body,
            "<tr class=\"object\"><td><a href=\"{}\">{}</a></td><td class=\"state\">{}</td>\
             {}<td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td></tr>",
            esc(&href),
            esc(&key),
            esc(&text(&o["state"])),
            conditions(&o["conditions"]),
            esc(&text(&o["trigger"])),
            esc(&text(&o["attempt"])),
            esc(&text(&o["reason"])),
            cut_cell("message", &message, MESSAGE_CELL_CHARS),
            esc(&text(&o["next"])),
        );
    }
    body.push_str("</table>");
    page(&format!("ork: {entry}"), &body).into_response()
}

/// `/status/{entry}/{namespace}/{name}`: one CR's explain view (`_`: cluster-scoped).
pub(crate) async fn object(
    State(AppState { runtime, guard }): State<AppState>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    headers: HeaderMap,
    Path((entry, namespace, name)): Path<(String, String, String)>,
) -> Response {
    let Some(check) = entry_check(&runtime, &entry) else {
        return refused(guard.unknown(peer, &headers, not_found(&entry)).await);
    };
    let namespace = (namespace != "_").then_some(namespace);
    let check = check.get(namespace.clone(), &name);
    if let Err(r) = guard.admit(peer, &headers, &[check]).await {
        return refused(r);
    }
    let key = match &namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name,
    };
    let Some(record) = runtime.inspect(&entry, Some(key.clone())).await else {
        return not_found(&entry);
    };
    let records = record["records"].as_array().cloned().unwrap_or_default();
    let last = records.first();
    let mut body = format!(
        "<p><a href=\"/status/{e}\">{e}</a></p><h1>{}</h1><p id=\"state\">now: <b>{}</b>",
        esc(&key),
        esc(&text(&record["state"])),
        e = esc(&entry)
    );
    if let Some(next) = last.and_then(|r| r["next"].as_str()) {
        let _ = write!(body, ", next try at {}", esc(next));
    }
    body.push_str("</p><table id=\"conditions\"><tr><th>Ready</th><th>Reconciling</th><th>Stalled</th></tr><tr>");
    body.push_str(&conditions(&record["conditions"]));
    body.push_str("</tr></table>");
    if record["conditions"]["stalled"] == true {
        body.push_str(
            "<p id=\"stalled\">Stalled: a retry alone is not expected to fix it; ork still retries at its backoff's pace, but it takes a change to the CR, the Katalog, the service or ork's RBAC.</p>",
        );
    }
    if let Some(message) = last.and_then(|r| r["message"].as_str()) {
        let _ = write!(
            body,
            "<h2>Last error ({})</h2><pre id=\"error\" class=\"wrap\">{}</pre>",
            esc(&text(&last.map_or(Value::Null, |r| r["reason"].clone()))),
            esc(message)
        );
    }
    let planned = crate::record::Planned::find(&records);
    let _ = write!(
        body,
        "<h2>{}</h2><ul id=\"plan\">",
        esc(&crate::record::Planned::heading(
            planned.as_ref(),
            "Children"
        ))
    );
    match planned.map(|p| p.steps) {
        Some(steps) => {
            for s in steps {
                let _ = write!(
                    body,
                    "<li>{} {}: {}{}</li>",
                    esc(&text(&s["kind"])),
                    esc(&text(&s["name"])),
                    esc(&text(&s["action"])),
                    esc(&s["reason"]
                        .as_str()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()),
                );
            }
        }
        None => body.push_str("<li>no plan yet (no answer was applied)</li>"),
    }
    body.push_str(
        "</ul><h2>Last reconciles</h2><table id=\"timeline\"><tr><th>at</th><th>trigger</th>\
         <th>attempt</th><th>outcome</th><th>reason</th><th>ms</th><th>service ms</th></tr>",
    );
    for r in &records {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&text(&r["at"])),
            esc(&{
                let mut trigger = text(&r["trigger"]);
                if let Some(cause) = r["cause"].as_str() {
                    trigger.push_str(&format!(" ({cause})"));
                }
                if let Some(n) = r["times"].as_u64() {
                    trigger.push_str(&format!(" ×{n}"));
                }
                trigger
            }),
            esc(&text(&r["attempt"])),
            esc(&text(&r["outcome"])),
            esc(&text(&r["reason"])),
            esc(&text(&r["durationMs"])),
            esc(&text(&r["callMs"])),
        );
    }
    body.push_str("</table>");
    for (title, field) in [("Last request", "request"), ("Last answer", "answer")] {
        let shown = last
            .map(|r| &r[field])
            .filter(|v| !v.is_null())
            .map_or_else(
                || "none recorded".to_string(),
                |v| serde_json::to_string_pretty(v).unwrap_or_default(),
            );
        let _ = write!(
            body,
            "<h2>{title}</h2><pre id=\"{field}\">{}</pre>",
            esc(&shown)
        );
    }
    page(&format!("ork: {key}"), &body).into_response()
}

/// How many characters of a message the objects table shows; the CR's page has it whole.
const MESSAGE_CELL_CHARS: usize = 300;

/// The Ready, Reconciling and Stalled cells of `c` (`{ready, reconciling, stalled}`).
fn conditions(c: &Value) -> String {
    let mut out = String::new();
    for (field, class) in [
        ("ready", "is-ready"),
        ("reconciling", "is-reconciling"),
        ("stalled", "is-stalled"),
    ] {
        let on = c[field] == true;
        let _ = write!(
            out,
            "<td class=\"condition {class}{}\" data-condition=\"{field}\">{}</td>",
            if on { " on" } else { "" },
            if on { "True" } else { "False" }
        );
    }
    out
}

/// A table cell of `text` cut at `max` characters: a cut one ends in an ellipsis and carries
/// the whole text as its title (shown on hover), so a cut never reads as the whole.
fn cut_cell(name: &str, text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return format!("<td class=\"{name}\">{}</td>", esc(text));
    }
    let cut: String = text.chars().take(max).collect();
    format!(
        "<td class=\"{name} cut\" title=\"{}\">{}…</td>",
        esc(text),
        esc(&cut)
    )
}

fn not_found(entry: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        page(
            "ork: not found",
            &format!("<p>no entry {} running</p>", esc(entry)),
        ),
    )
        .into_response()
}

/// A whole page: `body` in ork's small layout, as HTML that never caches.
fn page(title: &str, body: &str) -> impl IntoResponse {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>\
         body{{font:14px system-ui,sans-serif;margin:1.5em;color:#222}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}}\
         th{{background:#f3f3f3}}pre{{background:#f7f7f7;padding:.5em;overflow:auto;max-height:30em}}\
         pre.wrap{{white-space:pre-wrap;overflow-wrap:anywhere}}\
         td.message{{max-width:40em;white-space:normal;overflow-wrap:anywhere}}\
         td.condition.on.is-ready{{color:#176f2c}}td.condition.on.is-stalled{{color:#a4161a}}\
         .healthy,.ready{{color:#176f2c}}.degraded,.failed{{color:#a4161a}}\
         ul#counts li{{display:inline;margin-right:1.5em}}form#signout{{float:right}}</style></head><body>\
         <form id=\"signout\" method=\"post\" action=\"/status/logout\"><button>Sign out</button></form>\
         {body}</body></html>",
        esc(title)
    );
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `s` safe inside HTML text and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_a_form_posted_from_the_page_itself_signs_in() {
        fn same(pairs: &[(&'static str, &'static str)]) -> Result<SameOrigin, StatusCode> {
            same_origin(&headers(pairs)).ok_or(StatusCode::FORBIDDEN)
        }
        let host = ("host", "127.0.0.1:8080");
        assert_eq!(
            same(&[host, ("origin", "http://127.0.0.1:8080")]),
            Ok(SameOrigin { secure: false })
        );
        assert_eq!(
            same(&[host, ("sec-fetch-site", "same-origin")]),
            Ok(SameOrigin { secure: false })
        );
        assert_eq!(
            same(&[("host", "ork.example"), ("origin", "https://ork.example")]),
            Ok(SameOrigin { secure: true })
        );
        for refused in [
            &[host][..],
            &[host, ("origin", "http://evil.example")],
            &[host, ("origin", "null")],
            &[host, ("origin", "http://127.0.0.1:8080.evil.example")],
            &[
                host,
                ("origin", "http://127.0.0.1:8080"),
                ("sec-fetch-site", "cross-site"),
            ],
            &[host, ("sec-fetch-site", "same-site")],
        ] {
            assert_eq!(same(refused), Err(StatusCode::FORBIDDEN), "{refused:?}");
        }
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_over_https() {
        assert_eq!(
            cookie("t", false, None),
            "ork_token=t; Path=/status; HttpOnly; SameSite=Strict"
        );
        assert_eq!(
            cookie("", true, Some(0)),
            "ork_token=; Path=/status; HttpOnly; SameSite=Strict; Secure; Max-Age=0"
        );
    }

    #[test]
    fn text_from_a_cr_cannot_become_markup() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}
