//! Endpoint URLs and the credential host check (SPEC §5, §11): a templated endpoint rendered
//! over a CR whose values are tricky URL pieces (backslashes, `@`, percent-encoding, IPv6,
//! user info, ports, tabs and newlines, Unicode dots and full-width letters), then
//! `ork_remote::Endpoint::parse`/`for_credential`, `credential_allowed`, `endpoint_host`,
//! `host_of`.
//!
//! The oracle is `reqwest::Url`, the parser the HTTP client connects with, and the
//! scenario's intent: the template's literal origin (scheme, host and port written before any
//! action) and the `allowedHosts` entries. Properties: whenever the credential would be sent,
//! the URL carries no user info and the host the client connects to is the literal host (same
//! scheme and port) or an allowed host (its port, when the entry has one); with well-formed
//! entries the check is also exact (every such URL is allowed); `host_of` and `endpoint_host`
//! name exactly the host and port the client uses; an endpoint's `Display`/`Debug` never show
//! its user info.

use ork_katalog::Template;
use ork_remote::{Endpoint, credential_allowed, endpoint_host, host_of};
use reqwest::Url;

use crate::doc::Node;
use crate::generate::Gen;
use crate::runner::{Case, Target};

#[derive(Debug)]
pub struct Urls;

/// Marks user info in generated URLs, so its absence from `Display` can be checked.
const MARKER: &str = "Zq9SECRET";

/// A host as the client normalises it, and ways to write it.
struct Host {
    canonical: &'static str,
    spellings: &'static [&'static str],
}

const TRUSTED: &[Host] = &[
    Host {
        canonical: "127.0.0.1",
        spellings: &[
            "127.0.0.1",
            "127.1",
            "0x7f.0.0.1",
            "2130706433",
            "0177.0.0.1",
        ],
    },
    Host {
        canonical: "svc.team",
        spellings: &["svc.team", "SVC.team", "Svc.Team"],
    },
    Host {
        canonical: "svc-a.team",
        spellings: &["svc-a.team", "SVC-A.TEAM"],
    },
    Host {
        canonical: "[::1]",
        spellings: &["[::1]", "[0:0:0:0:0:0:0:1]", "[::0001]"],
    },
    Host {
        canonical: "10.0.0.1",
        spellings: &["10.0.0.1", "10.1", "012.0.0.1"],
    },
];

const EVIL: &[&str] = &[
    "evil.com",
    "127.0.0.2",
    "svc.team.evil.com",
    "[::2]",
    "evil.com.",
    "10.0.0.2",
    "169.254.169.254",
    "localhost",
];

/// One scenario: what the Katalog trusts and what the CR sends.
struct Scenario {
    source: String,
    /// The literal origin the source has (scheme, host, port), as the oracle reads it.
    allowed: Vec<String>,
    /// Every entry is a well-formed `host[:port]` (the exactness check applies).
    well_formed: bool,
    cr: Node,
}

impl Target for Urls {
    fn name(&self) -> &'static str {
        "url"
    }

    fn about(&self) -> &'static str {
        "templated endpoints over tricky CR values: credential_allowed, host_of, endpoint_host vs reqwest::Url"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        let s = scenario(g);
        case.note("endpoint", &format!("{:?}", s.source));
        case.note("allowedHosts", &format!("{:?}", s.allowed));
        case.note("cr", &s.cr.to_json());
        case.begin();
        let url = match Template::parse(&s.source).and_then(|t| t.render(&s.cr.to_value())) {
            Ok(url) => url,
            Err(_) => {
                // Also the raw source, as if it were the rendered URL.
                s.source.clone()
            }
        };
        case.note("url", &format!("{url:?}"));
        check_url(&url, &s, case);
        if g.one_in(4) {
            // The raw CR value alone, as a URL.
            if let Some(Node::Obj(spec)) = find(&s.cr, "spec") {
                for (_, v) in spec {
                    if let Node::Str(text) = v {
                        check_url(text, &s, case);
                    }
                }
            }
        }
    }
}

fn find<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    match node {
        Node::Obj(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// The origin a source's literal part names, read with the client's parser: the text before
/// the first action must hold the whole authority (a `/`, `\`, `?` or `#` after it), or the
/// source has no action at all.
fn literal_origin(source: &str) -> Option<(String, String, u16)> {
    let prefix = match source.find("{{") {
        None => source,
        Some(at) => {
            let prefix = &source[..at];
            let rest = prefix.split_once("://")?.1;
            if !rest.contains(['/', '\\', '?', '#']) {
                return None;
            }
            prefix
        }
    };
    let url = Url::parse(prefix).ok()?;
    if !matches!(url.scheme(), "http" | "https") || has_user_info(&url) {
        return None;
    }
    let host = url.host_str().filter(|h| !h.is_empty())?.to_string();
    Some((url.scheme().to_string(), host, url.port_or_known_default()?))
}

fn has_user_info(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

/// What an `allowedHosts` entry trusts: a host and, when written, one port.
fn entry_trust(entry: &str, scheme: &str) -> Option<(String, Option<u16>)> {
    for h in TRUSTED {
        for spelling in h.spellings {
            if entry == *spelling {
                return Some((h.canonical.to_string(), None));
            }
            if let Some(port) = entry
                .strip_prefix(spelling)
                .and_then(|r| r.strip_prefix(':'))
                .and_then(|p| p.parse::<u16>().ok())
                .filter(|_| !entry[spelling.len() + 1..].starts_with('+'))
            {
                return Some((h.canonical.to_string(), Some(port)));
            }
        }
    }
    // Anything else: whatever host the client's parser finds in it, any port (an
    // over-approximation: the oracle never trusts less than ork may).
    let url = Url::parse(&format!("{scheme}://{entry}/")).ok()?;
    Some((url.host_str()?.to_string(), None))
}

fn check_url(url: &str, s: &Scenario, case: &mut Case) {
    let parsed = Url::parse(url).ok();
    let endpoint = Endpoint::parse(url);
    if let Ok(e) = &endpoint {
        let Some(u) = &parsed else {
            case.fail(
                "endpoint-is-client-parse",
                format!("Endpoint::parse accepts {url:?}, reqwest::Url refuses it"),
            );
            return;
        };
        case.check(
            matches!(u.scheme(), "http" | "https")
                && e.host() == u.host_str().unwrap_or_default()
                && e.port() == u.port_or_known_default().unwrap_or(0),
            "endpoint-is-client-parse",
            || {
                format!(
                    "{url:?}: Endpoint {}:{}, client {:?}:{:?}",
                    e.host(),
                    e.port(),
                    u.host_str(),
                    u.port_or_known_default()
                )
            },
        );
        let marked = (u.username().contains(MARKER)
            || u.password().is_some_and(|p| p.contains(MARKER)))
            && !u.host_str().unwrap_or_default().contains(MARKER)
            && !u.path().contains(MARKER);
        if marked {
            let shown = format!("{e} {e:?}");
            case.check(
                !shown.contains(MARKER),
                "endpoint-display-hides-user-info",
                || format!("{url:?} displays as {shown:?}"),
            );
        }
    }
    let for_credential = Endpoint::for_credential(url);
    if let (Ok(_), Some(u)) = (&for_credential, &parsed) {
        case.check(!has_user_info(u), "no-credential-with-user-info", || {
            format!(
                "{url:?}: for_credential accepts a URL with user info {:?}",
                u.username()
            )
        });
    }
    if let Ok(a) = endpoint_host(url)
        && let Some(u) = &parsed
    {
        let host = u.host_str().unwrap_or_default();
        let want = match u.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        case.check(a == want, "endpoint-host-is-client-host", || {
            format!("{url:?}: endpoint_host {a:?}, client connects to {want:?}")
        });
    }
    if let Some(raw) = host_of(url) {
        match &parsed {
            Some(u) if !has_user_info(u) && matches!(u.scheme(), "http" | "https") => {
                let host = u.host_str().unwrap_or_default();
                let port = u.port_or_known_default();
                let ok = raw == host
                    || raw
                        .strip_prefix(host)
                        .and_then(|r| r.strip_prefix(':'))
                        .and_then(|p| p.parse::<u16>().ok())
                        .is_some_and(|p| Some(p) == port);
                case.check(ok, "host-of-is-client-host", || {
                    format!(
                        "{url:?}: host_of says {raw:?}, client connects to {host:?} port {port:?}"
                    )
                });
            }
            _ => case.fail(
                "host-of-is-client-host",
                format!("{url:?}: host_of says {raw:?} for a URL the client would not use so"),
            ),
        }
    }
    let Ok(e) = for_credential else {
        return;
    };
    let allowed = credential_allowed(&e, &s.source, &s.allowed);
    let Some(u) = parsed else {
        return;
    };
    let host = u.host_str().unwrap_or_default().to_string();
    let port = u.port_or_known_default();
    let literal = literal_origin(&s.source);
    let (by_literal, by_entry) = trust(&u, &s.source, &s.allowed);
    if allowed {
        case.check(!has_user_info(&u) && (by_literal || by_entry), "credential-only-to-trusted-host", || {
            format!(
                "{url:?}: the credential would go to {host:?} port {port:?}; the literal origin is {literal:?}, allowedHosts {:?}",
                s.allowed
            )
        });
    } else if s.well_formed && (by_literal || by_entry) {
        case.fail(
            "credential-to-trusted-host",
            format!("{url:?}: refused, but {host:?} port {port:?} is trusted (literal {literal:?}, allowedHosts {:?})", s.allowed),
        );
    }
}

/// Whether the client's reading of `u` is the literal origin of `source`, and whether it is a
/// host an `allowedHosts` entry names.
fn trust(u: &Url, source: &str, allowed: &[String]) -> (bool, bool) {
    let host = u.host_str().unwrap_or_default();
    let port = u.port_or_known_default();
    let by_literal = literal_origin(source)
        .is_some_and(|(scheme, h, p)| scheme == u.scheme() && h == host && Some(p) == port);
    let by_entry = allowed.iter().any(|entry| {
        entry_trust(entry, u.scheme())
            .is_some_and(|(h, p)| h == host && p.is_none_or(|p| Some(p) == port))
    });
    (by_literal, by_entry)
}

/// Whether a credential may go to `url` by the oracle: no user info, and the client connects to
/// the literal origin of `source` or to a host of `allowed`.
pub fn trusted(url: &str, source: &str, allowed: &[String]) -> bool {
    let Ok(u) = Url::parse(url) else {
        return false;
    };
    let (by_literal, by_entry) = trust(&u, source, allowed);
    !has_user_info(&u) && (by_literal || by_entry)
}

fn spelled(g: &mut Gen, trusted: bool) -> (String, &'static str) {
    if trusted || g.coin() {
        let h = g.pick(TRUSTED);
        ((*g.pick(h.spellings)).to_string(), h.canonical)
    } else {
        let e = *g.pick(EVIL);
        (e.to_string(), e)
    }
}

fn port(g: &mut Gen) -> String {
    (*g.pick(&[
        "", "", ":9001", ":9002", ":80", ":443", ":8080", ":65535", ":65536", ":0", ":", ":09001",
        ":+1", ": 1",
    ]))
    .to_string()
}

/// A piece of a URL as a CR author might send it.
fn piece(g: &mut Gen) -> String {
    match g.below(9) {
        0 | 1 => {
            let (h, _) = spelled(g, false);
            format!("{h}{}", port(g))
        }
        2 | 3 => (*g.pick(&[
            "\\", "/", "@", "%40", "#", "?", ":", "%2f", "%5c", "\t", "\n", "\r", " ", "%00", "..",
            ".", "。", "．", "｡", "[", "]", "%25", "＠", "／", "＼", "\\\\", "//", "%2e", "\u{0}",
            "\u{ad}", "\u{200b}",
        ]))
        .to_string(),
        4 => format!(
            "{}@",
            g.pick(&[
                "user:Zq9SECRET",
                "Zq9SECRET",
                ":Zq9SECRET",
                "Zq9SECRET:",
                "a%40Zq9SECRET",
                "Zq9SECRET\\",
            ])
        ),
        5 => (*g.pick(&[
            "ｓｖｃ.team",
            "SVC.TEAM",
            "svc.team.",
            "xn--svc.team",
            "svc.tea\u{ad}m",
            "ß.team",
            "svc。team",
            "svc．team",
            "127。0。0。1",
            "１２７.0.0.1",
            "[::ffff:127.0.0.1]",
            "[fe80::1%25eth0]",
            "[::1",
            "::1]",
            "[::1]:9001",
            "0",
            "0x7f000001",
            "127.0.0.1.",
            "[v1.x]",
        ]))
        .to_string(),
        6 => g.hostile_str(),
        _ => format!("/{}", g.ident()),
    }
}

fn cr_value(g: &mut Gen) -> String {
    let n = 1 + g.below(4);
    (0..n).map(|_| piece(g)).collect()
}

fn scheme(g: &mut Gen) -> String {
    (*g.pick(&[
        "http",
        "http",
        "https",
        "HTTP",
        "hTTps",
        "ftp",
        "file",
        "ws",
        "javascript",
        "",
        "http:",
        "h\ttp",
    ]))
    .to_string()
}

fn scenario(g: &mut Gen) -> Scenario {
    let sch = scheme(g);
    let (lit, _) = spelled(g, true);
    let lit = format!(
        "{lit}{}",
        if g.coin() {
            ""
        } else {
            g.pick(&[":9001", ":8080", ":80", ":443"])
        }
    );
    let act = |g: &mut Gen, f: &str| -> String {
        if g.coin() {
            format!("{{{{ .spec.{f} }}}}")
        } else {
            format!("{{{{.spec.{f}}}}}")
        }
    };
    let h = act(g, "h");
    let source = match g.below(14) {
        0 => format!("{sch}://{h}/r"),
        1 => format!("{sch}://{}@{lit}/r", act(g, "u")),
        2 => format!("{sch}://{lit}/{}", act(g, "p")),
        3 => format!("{sch}://{lit}{}", act(g, "p")),
        4 => format!("{sch}://{lit}?{}", act(g, "q")),
        5 => format!("{sch}://{lit}#{}", act(g, "q")),
        6 => format!("{sch}://{lit}\\{}", act(g, "p")),
        7 => format!("{sch}://{lit}/r"),
        8 => format!("{sch}://{{{{ if .spec.x }}}}{lit}{{{{ else }}}}evil.com{{{{ end }}}}/r"),
        9 => format!("{sch}://{h}:9001/r"),
        10 => format!("{{{{ .spec.s }}}}://{lit}/r"),
        11 => format!("{sch}://{lit}:{}/r", act(g, "port")),
        12 => format!("{sch}:{h}"),
        _ => format!("{sch}://user@{lit}/{}", act(g, "p")),
    };
    let mut allowed = Vec::new();
    let mut well_formed = true;
    for _ in 0..g.below(4) {
        if g.one_in(4) {
            well_formed = false;
            allowed.push(if g.coin() {
                g.hostile_str()
            } else {
                (*g.pick(&[
                    "svc.team/x",
                    "x@svc.team",
                    "svc.team:",
                    "svc.team:abc",
                    "*.team",
                    "",
                    "[::1",
                    "http://svc.team",
                    "svc.team:9001:1",
                    "evil.com#svc.team",
                    "svc.team\\",
                    " svc.team",
                ]))
                .to_string()
            });
        } else {
            let hst = g.pick(TRUSTED);
            let sp = *g.pick(hst.spellings);
            let p = *g.pick(&["", "", ":9001", ":9002", ":80", ":443", ":8080"]);
            allowed.push(format!("{sp}{p}"));
        }
    }
    let mut spec = Vec::new();
    for f in ["h", "u", "p", "q", "s", "port"] {
        spec.push((f.to_string(), Node::str(cr_value(g))));
    }
    spec.push(("x".to_string(), Node::Bool(g.coin())));
    if g.coin() {
        // Plain values too: the trusted host, a scheme, a port.
        spec[0].1 = Node::str(format!("{}{}", spelled(g, true).0, port(g)));
        spec[4].1 = Node::str(scheme(g));
        spec[5].1 = Node::str(port(g).trim_start_matches(':').to_string());
    }
    let cr = Node::obj([
        ("metadata", Node::obj([("name", Node::str("x"))])),
        ("spec", Node::Obj(spec)),
    ]);
    Scenario {
        source,
        allowed,
        well_formed,
        cr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_reads_literal_origins_like_the_client() {
        assert_eq!(
            literal_origin("http://svc.team:8080/{{ .spec.p }}"),
            Some(("http".into(), "svc.team".into(), 8080))
        );
        assert_eq!(literal_origin("http://{{ .spec.h }}/r"), None);
        assert_eq!(literal_origin("http://svc.team{{ .spec.p }}"), None);
        assert_eq!(literal_origin("http://u@svc.team/{{ .spec.p }}"), None);
        assert_eq!(
            literal_origin("HTTP://127.1\\{{ .spec.p }}"),
            Some(("http".into(), "127.0.0.1".into(), 80))
        );
        assert_eq!(
            entry_trust("SVC.team:9001", "http"),
            Some(("svc.team".into(), Some(9001)))
        );
        assert_eq!(
            entry_trust("127.1", "http"),
            Some(("127.0.0.1".into(), None))
        );
    }
}
