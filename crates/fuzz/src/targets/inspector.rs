//! The inspector's request parsing (SPEC §11, §14): `ork_kube::access::request`, which reads
//! the bearer token (an `Authorization` header, else the status page's cookie) and decides
//! whether a posted sign-in form came from the page itself, on hostile header values.
//!
//! Properties: no panic; a bearer token is a non-empty, trimmed piece of the header whose
//! scheme is `bearer` in some case, and none for any other scheme; a cookie's value is that of
//! a pair whose name is exactly the cookie's (never `xork_token` or `ork_token2`), non-empty;
//! a form is the page's only when `Sec-Fetch-Site` says `same-origin`, or, without it, when
//! the `Origin` is `http(s)://` followed by the `Host` exactly (in any case): never for a
//! `cross-site` or `same-site` form, a `null` or absent `Origin`, or another host.

use ork_kube::access::request::{FormOrigin, bearer, cookie};

use crate::generate::Gen;
use crate::runner::{Case, Target};

#[derive(Debug)]
pub struct Inspector;

const COOKIE: &str = "ork_token";

impl Target for Inspector {
    fn name(&self) -> &'static str {
        "inspector"
    }

    fn about(&self) -> &'static str {
        "the inspector's token and same-origin parsing on hostile header values"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        let authorization = header_value(g, &["Bearer ", "bearer ", "BEARER", "Basic ", " ", ""]);
        let cookies: Vec<String> = (0..g.below(3))
            .map(|_| header_value(g, &["ork_token=", "xork_token=", "ork_token2=", "; ", "="]))
            .collect();
        let host = host(g);
        let origin = match g.below(6) {
            0 => None,
            1 => Some("null".to_string()),
            2 => Some(format!("http://{host}")),
            3 => Some(format!("https://{}", host.to_uppercase())),
            4 => Some(format!(
                "{}://{}",
                g.pick(&["http", "https", "ftp", ""]),
                self::host(g)
            )),
            _ => Some(g.hostile_str()),
        };
        let site = match g.below(5) {
            0 => None,
            1 => Some("same-origin".to_string()),
            2 => Some("cross-site".to_string()),
            3 => Some("same-site".to_string()),
            _ => Some(g.hostile_str()),
        };
        let host = (!g.one_in(8)).then_some(host);
        case.note("authorization", &format!("{authorization:?}"));
        case.note("cookies", &format!("{cookies:?}"));
        case.note("origin", &format!("{origin:?}"));
        case.note("host", &format!("{host:?}"));
        case.note("sec-fetch-site", &format!("{site:?}"));

        case.begin();
        let token = bearer(&authorization);
        let cookie_token = cookie(cookies.iter().map(String::as_str), COOKIE);
        let form = FormOrigin {
            origin: origin.as_deref(),
            host: host.as_deref(),
            sec_fetch_site: site.as_deref(),
            forwarded_proto: None,
        }
        .same_origin();

        if let Some(t) = token {
            case.check(
                !t.is_empty() && t == t.trim() && authorization.contains(t),
                "bearer-token",
                || format!("bearer gave {t:?}: empty, untrimmed or not from the header"),
            );
        }
        let scheme = authorization.trim_start().split(' ').next().unwrap_or("");
        case.check(
            token.is_none() || scheme.eq_ignore_ascii_case("bearer"),
            "bearer-scheme",
            || format!("a token taken from the {scheme:?} scheme"),
        );
        if let Some(v) = cookie_token {
            let named = cookies.iter().flat_map(|c| c.split(';')).any(|pair| {
                pair.trim()
                    .split_once('=')
                    .is_some_and(|(k, val)| k == COOKIE && val.trim() == v)
            });
            case.check(!v.is_empty() && named, "cookie-name", || {
                format!("cookie {v:?} is not the value of a pair named exactly {COOKIE}")
            });
        }
        if form.is_some() {
            let pages = match site.as_deref() {
                Some(s) => s == "same-origin",
                None => match (origin.as_deref(), host.as_deref()) {
                    (Some(o), Some(h)) if !h.is_empty() => {
                        ["http://", "https://"].iter().any(|p| {
                            o.len() == p.len() + h.len()
                                && o[..p.len()] == **p
                                && o[p.len()..].eq_ignore_ascii_case(h)
                        })
                    }
                    _ => false,
                },
            };
            case.check(pages, "same-origin", || {
                "a form another site posted (or one that says nothing of where it came from) counts as the page's".into()
            });
        }
    }
}

/// A header value: a prefix of interest, then anything.
fn header_value(g: &mut Gen, prefixes: &[&'static str]) -> String {
    let mut s = if g.coin() {
        (*g.pick(prefixes)).to_string()
    } else {
        String::new()
    };
    s.push_str(&g.hostile_str());
    if g.one_in(3) {
        const TAILS: [&str; 5] = ["; ork_token=t0k", " ", "=", ";", "\t"];
        let tail: &&str = g.pick(&TAILS);
        s.push_str(tail);
    }
    s
}

fn host(g: &mut Gen) -> String {
    match g.below(5) {
        0 => "127.0.0.1:8080".into(),
        1 => format!("{}:{}", g.dns_name(), g.below(70000)),
        2 => "[::1]:8080".into(),
        3 => String::new(),
        _ => g.hostile_str(),
    }
}
