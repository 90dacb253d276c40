//! Endpoint URLs parsed once, by the parser the HTTP client uses (WHATWG rules, `reqwest::Url`),
//! so the host the credential check approves is the host the request connects to (SPEC §11).
//!
//! A hand-written "cut at `/`, take what follows `@`" reading disagrees with the client on
//! inputs such as `http://127.0.0.1:9002\@127.0.0.1:9001/r`: WHATWG treats `\` as `/` in http(s)
//! URLs, so the client connects to port 9002 while the naive reading sees 9001. Every question
//! about a URL here is answered from the parsed [`Url`] instead.

use std::fmt;

use reqwest::Url;

/// Why a URL cannot be used as an endpoint. Messages never repeat the URL, which may carry
/// user info.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// The parser's reason (a fixed phrase such as "invalid port number").
    #[error("not a valid URL: {0}")]
    Parse(String),
    #[error("scheme {0:?} is not http or https")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error("the URL carries user info (user:password@); refused when a credential is sent")]
    UserInfo,
}

/// An http(s) URL with a host, as the HTTP client will read it.
///
/// `Display` and `Debug` show it without user info, query and fragment, so it is safe in error
/// messages.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    url: Url,
}

impl Endpoint {
    /// Parses `url` exactly as the HTTP client does and checks that it is http(s) with a host.
    /// User info is accepted here (the client turns it into basic auth); see
    /// [`Endpoint::for_credential`].
    ///
    /// # Errors
    /// A URL that does not parse, another scheme, or no host.
    pub fn parse(url: &str) -> Result<Endpoint, UrlError> {
        let url = Url::parse(url).map_err(|e| UrlError::Parse(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UrlError::Scheme(url.scheme().to_string()));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(UrlError::NoHost);
        }
        Ok(Endpoint { url })
    }

    /// [`Endpoint::parse`], and also refuses user info: a URL that a credential goes to must not
    /// name a second one, nor hide its host behind `user@`.
    ///
    /// # Errors
    /// As [`Endpoint::parse`], plus [`UrlError::UserInfo`].
    pub fn for_credential(url: &str) -> Result<Endpoint, UrlError> {
        let endpoint = Endpoint::parse(url)?;
        if endpoint.has_user_info() {
            return Err(UrlError::UserInfo);
        }
        Ok(endpoint)
    }

    /// The endpoint of a template's source when its scheme, host and port are literal, `None`
    /// when any of them is templated or the source does not parse. A templated path or query is
    /// fine: `http://svc.team:8080/{{ .spec.path }}` has the literal origin `http://svc.team:8080`.
    pub fn template_literal(source: &str) -> Option<Endpoint> {
        let endpoint = Endpoint::for_credential(source).ok()?;
        let host = endpoint.host();
        (!host.contains(['{', '}'])).then_some(endpoint)
    }

    /// The host the client connects to: lower-case, IDNA-encoded, IPv4 normalised, IPv6 in
    /// brackets.
    pub fn host(&self) -> &str {
        self.url.host_str().unwrap_or_default()
    }

    /// The port the client connects to (the scheme's default when none is written).
    pub fn port(&self) -> u16 {
        self.url
            .port_or_known_default()
            .unwrap_or(if self.url.scheme() == "https" {
                443
            } else {
                80
            })
    }

    /// `host[:port]` with the port kept when it is not the scheme's default, e.g.
    /// `127.0.0.1:9001`, `svc.team` for `http://svc.team:80/`.
    pub fn authority(&self) -> String {
        match self.url.port() {
            Some(port) => format!("{}:{port}", self.host()),
            None => self.host().to_string(),
        }
    }

    /// Whether the URL has a user name or password.
    pub fn has_user_info(&self) -> bool {
        !self.url.username().is_empty() || self.url.password().is_some()
    }

    /// Same scheme, host and port.
    pub fn same_origin(&self, other: &Endpoint) -> bool {
        self.url.scheme() == other.url.scheme()
            && self.host() == other.host()
            && self.port() == other.port()
    }

    /// Whether an `allowedHosts` entry names this endpoint: `host` allows every port of that
    /// host, `host:port` that one port. The entry is normalised by the same parser (so
    /// `SVC.team` equals `svc.team`); an entry with anything besides host and port never
    /// matches.
    pub fn matches_allowed(&self, entry: &str) -> bool {
        let Ok(allowed) = Url::parse(&format!("{}://{entry}/", self.url.scheme())) else {
            return false;
        };
        let bare = allowed.path() == "/"
            && allowed.query().is_none()
            && allowed.fragment().is_none()
            && allowed.username().is_empty()
            && allowed.password().is_none();
        let port_ok =
            !entry_has_port(entry) || allowed.port_or_known_default() == Some(self.port());
        bare && allowed.host_str() == Some(self.host()) && port_ok
    }

    /// The parsed URL, as handed to the HTTP client.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// User name and password as the client sends them in basic auth (percent-decoded), and as
    /// written; for redaction.
    pub(crate) fn user_info_parts(&self) -> Vec<String> {
        let mut parts = Vec::new();
        let user = self.url.username();
        let password = self.url.password();
        for raw in [Some(user), password].into_iter().flatten() {
            parts.push(raw.to_string());
            parts.push(percent_decode(raw));
        }
        if self.has_user_info() {
            let plain = format!(
                "{}:{}",
                percent_decode(user),
                password.map(percent_decode).unwrap_or_default()
            );
            parts.push(base64(plain.as_bytes()));
        }
        parts.retain(|p| !p.is_empty());
        parts
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}{}",
            self.url.scheme(),
            self.authority(),
            self.url.path()
        )
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Endpoint({self})")
    }
}

/// `host[:port]` of an http(s) URL as the HTTP client reads it, default port left out; user info
/// refused (this is the question asked before a credential is sent).
///
/// # Errors
/// As [`Endpoint::for_credential`].
pub fn endpoint_host(url: &str) -> Result<String, UrlError> {
    Endpoint::for_credential(url).map(|e| e.authority())
}

/// Whether a credential may go to `url` (SPEC §5): it carries no user info, and its origin is
/// the literal origin of the endpoint template `template_source` or its host is in
/// `allowed_hosts` (see [`Endpoint::matches_allowed`]).
pub fn credential_allowed(url: &Endpoint, template_source: &str, allowed_hosts: &[String]) -> bool {
    if url.has_user_info() {
        return false;
    }
    Endpoint::template_literal(template_source).is_some_and(|literal| literal.same_origin(url))
        || allowed_hosts.iter().any(|a| url.matches_allowed(a))
}

/// The `host[:port]` of an http(s) URL as written in `url`, but only when the HTTP client's
/// parser reads the very same host and port from it; `None` for anything else: a URL that does
/// not parse, another scheme, user info, or a spelling the parser rewrites (`\`, upper case,
/// `127.1`, tabs, …). Kept for callers that compare hosts as strings; prefer [`Endpoint`].
pub fn host_of(url: &str) -> Option<&str> {
    let endpoint = Endpoint::for_credential(url).ok()?;
    let scheme_end = url.find("://")?;
    if !url[..scheme_end].eq_ignore_ascii_case(endpoint.url.scheme()) {
        return None;
    }
    let rest = &url[scheme_end + 3..];
    let raw = rest
        .split(['/', '\\', '?', '#'])
        .next()
        .filter(|a| !a.is_empty())?;
    let (raw_host, raw_port) = if raw.starts_with('[') {
        let close = raw.find(']')?;
        match &raw[close + 1..] {
            "" => (&raw[..=close], None),
            rest => (&raw[..=close], Some(rest.strip_prefix(':')?)),
        }
    } else {
        match raw.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (raw, None),
        }
    };
    let port_ok = match raw_port {
        None => true,
        Some(p) => {
            p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().ok() == Some(endpoint.port())
        }
    };
    (raw_host == endpoint.host() && port_ok).then_some(raw)
}

fn entry_has_port(entry: &str) -> bool {
    match entry.rsplit_once(':') {
        Some((host, _)) => !entry.starts_with('[') || host.ends_with(']'),
        None => false,
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or_default() * 16 + hex(l).unwrap_or_default();
                out.push(u8::try_from(v).unwrap_or_default());
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard base64 with padding, as basic auth encodes `user:password`.
fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backslash_before_user_info_sends_nothing_to_the_host_after_the_at_sign() {
        // Template `http://{{ .spec.h }}/r`, CR value `127.0.0.1:9002\@127.0.0.1:9001`.
        let url = r"http://127.0.0.1:9002\@127.0.0.1:9001/r";
        assert_eq!(endpoint_host(url).as_deref(), Ok("127.0.0.1:9002"));
        assert_eq!(host_of(url), Some("127.0.0.1:9002"));
        let e = Endpoint::parse(url).expect("parses");
        let allowed = ["127.0.0.1:9001".to_string()];
        assert!(!credential_allowed(&e, "http://{{ .spec.h }}/r", &allowed));
    }

    #[test]
    fn a_templated_user_info_part_cannot_move_the_host() {
        // Template `http://{{ .spec.u }}@127.0.0.1:9001/r`, CR value `127.0.0.1:9002\`.
        let template = "http://{{ .spec.u }}@127.0.0.1:9001/r";
        let url = format!("http://{}@127.0.0.1:9001/r", r"127.0.0.1:9002\");
        assert_eq!(endpoint_host(&url).as_deref(), Ok("127.0.0.1:9002"));
        let e = Endpoint::parse(&url).expect("parses");
        assert!(!credential_allowed(
            &e,
            template,
            &["127.0.0.1:9001".into()]
        ));
        // Genuine user info is refused when a credential goes along, whatever the host.
        let e = Endpoint::parse("http://who@127.0.0.1:9001/r").expect("parses");
        assert!(!credential_allowed(
            &e,
            template,
            &["127.0.0.1:9001".into()]
        ));
        assert_eq!(
            endpoint_host("http://who@127.0.0.1:9001/r"),
            Err(UrlError::UserInfo)
        );
        assert_eq!(host_of("https://u:p@svc.ns/x"), None);
    }

    #[test]
    fn ordinary_endpoints_keep_their_host_and_explicit_port() {
        assert_eq!(
            host_of("http://127.0.0.1:8025/reconcile"),
            Some("127.0.0.1:8025")
        );
        assert_eq!(host_of("https://svc.ns/x?y#z"), Some("svc.ns"));
        assert_eq!(host_of("http://[::1]:8080/x"), Some("[::1]:8080"));
        assert_eq!(
            endpoint_host("HTTP://SVC.Team:8080/x").as_deref(),
            Ok("svc.team:8080")
        );
        assert_eq!(endpoint_host("http://svc:80/x").as_deref(), Ok("svc"));
        assert_eq!(endpoint_host("https://svc:80/x").as_deref(), Ok("svc:80"));
        let e = Endpoint::parse("http://127.1:9001/r").expect("parses");
        assert_eq!((e.host(), e.port()), ("127.0.0.1", 9001));
        // Spellings the parser rewrites never pass the string comparison.
        assert_eq!(host_of("http://127.1:9001/r"), None);
        assert_eq!(host_of("http://SVC/r"), None);
        assert_eq!(host_of("http://sv\tc:1/r"), None);
    }

    #[test]
    fn non_http_schemes_and_garbage_are_errors() {
        assert!(matches!(
            endpoint_host("file:///etc/passwd"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            endpoint_host("svc:8080"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            endpoint_host("http://127.0.0.1:99999/"),
            Err(UrlError::Parse(_))
        ));
        assert!(matches!(
            endpoint_host("/relative"),
            Err(UrlError::Parse(_))
        ));
        assert_eq!(host_of("not a url"), None);
    }

    #[test]
    fn literal_origins_and_allowed_hosts() {
        let template = "http://svc.team:8080/{{ .spec.path }}";
        let ok = Endpoint::parse("http://svc.team:8080/x").expect("parses");
        let other_port = Endpoint::parse("http://svc.team:9090/x").expect("parses");
        let other_scheme = Endpoint::parse("https://svc.team:8080/x").expect("parses");
        assert!(credential_allowed(&ok, template, &[]));
        assert!(!credential_allowed(&other_port, template, &[]));
        assert!(!credential_allowed(&other_scheme, template, &[]));
        assert!(Endpoint::template_literal("http://{{.spec.h}}/r").is_none());
        assert!(Endpoint::template_literal("http://{{ .spec.h }}/r").is_none());
        assert!(Endpoint::template_literal("http://svc:{{ .spec.p }}/r").is_none());

        let templated = "http://{{ .spec.host }}/reconcile";
        let a = Endpoint::parse("http://svc-a.team:8080/reconcile").expect("parses");
        assert!(credential_allowed(&a, templated, &["svc-a.team".into()]));
        assert!(credential_allowed(
            &a,
            templated,
            &["SVC-A.team:8080".into()]
        ));
        assert!(!credential_allowed(
            &a,
            templated,
            &["svc-a.team:8081".into()]
        ));
        assert!(!credential_allowed(&a, templated, &["svc-a.team/x".into()]));
        assert!(!credential_allowed(&a, templated, &["x@svc-a.team".into()]));
        let v6 = Endpoint::parse("http://[::1]:9001/").expect("parses");
        assert!(v6.matches_allowed("[::1]"));
        assert!(v6.matches_allowed("[::1]:9001"));
        assert!(!v6.matches_allowed("[::1]:9002"));
    }

    #[test]
    fn display_leaves_out_user_info_query_and_fragment() {
        let e = Endpoint::parse("https://u:p%40ss@svc.ns:8443/a/b?token=t#f").expect("parses");
        assert_eq!(e.to_string(), "https://svc.ns:8443/a/b");
        assert!(!format!("{e:?}").contains("p%40ss"));
        let parts = e.user_info_parts();
        assert!(parts.contains(&"p@ss".to_string()));
        assert!(parts.contains(&base64(b"u:p@ss")));
    }

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(
            base64(b"Aladdin:open sesame"),
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }
}
