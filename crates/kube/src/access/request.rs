//! What the inspector reads off a request before anything else (SPEC §11, §14): the bearer
//! token (the `Authorization` header, the scheme in any case as RFC 9110 has it, else the
//! status page's cookie) and whether a posted form came from the page itself. Pure functions
//! of the header values, so `ork-fuzz` drives them with hostile input (its `inspector` target).

/// The token of an `Authorization` header value of the `Bearer` scheme (in any case): the
/// rest after the scheme and its spaces, trimmed; `None` for another scheme or nothing.
pub fn bearer(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The value of the cookie `name` among `Cookie` header values (`a=1; b=2`), the first that
/// is not empty. Only that exact name: `xname=` or `name2=` are other cookies.
pub fn cookie<'a>(values: impl IntoIterator<Item = &'a str>, name: &str) -> Option<&'a str> {
    values
        .into_iter()
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then_some(v.trim())
        })
        .find(|v| !v.is_empty())
}

/// The headers that say where a posted form came from.
#[derive(Debug, Clone, Copy, Default)]
pub struct FormOrigin<'a> {
    pub origin: Option<&'a str>,
    pub host: Option<&'a str>,
    pub sec_fetch_site: Option<&'a str>,
    pub forwarded_proto: Option<&'a str>,
}

/// A form the page itself posted; `secure` when the page is served over https.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SameOrigin {
    pub secure: bool,
}

impl FormOrigin<'_> {
    /// `Some` when the browser says the form came from this page: `Sec-Fetch-Site:
    /// same-origin`, or (from a browser that does not send it) an `Origin` whose authority is
    /// the request's `Host`. A browser that says `cross-site` (or anything else) is refused
    /// whatever its `Origin` says; no `Origin` (or `null`) is refused.
    pub fn same_origin(&self) -> Option<SameOrigin> {
        let origin = self.origin.filter(|o| *o != "null");
        let secure = origin.is_some_and(|o| o.starts_with("https://"))
            || self
                .forwarded_proto
                .is_some_and(|p| p.eq_ignore_ascii_case("https"));
        let origin_matches = match (origin, self.host) {
            (Some(origin), Some(host)) if !host.is_empty() => origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .is_some_and(|authority| authority.eq_ignore_ascii_case(host)),
            _ => false,
        };
        let allowed = match self.sec_fetch_site {
            Some(site) => site == "same-origin",
            None => origin_matches,
        };
        allowed.then_some(SameOrigin { secure })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_token_in_any_case_and_nothing_else() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("BEARER abc"), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("Bearer   "), None);
    }

    #[test]
    fn only_the_cookie_of_that_exact_name() {
        let v = [
            "a=1; xork_token=no; ork_token2=no",
            "ork_token=; ork_token=yes",
        ];
        assert_eq!(cookie(v, "ork_token"), Some("yes"));
        assert_eq!(cookie(["ork_token"], "ork_token"), None);
    }

    #[test]
    fn a_form_from_another_site_is_not_the_pages() {
        let from = |origin, site| FormOrigin {
            origin,
            host: Some("127.0.0.1:8080"),
            sec_fetch_site: site,
            forwarded_proto: None,
        };
        assert!(
            from(Some("http://127.0.0.1:8080"), None)
                .same_origin()
                .is_some()
        );
        assert!(
            from(Some("http://evil.example"), None)
                .same_origin()
                .is_none()
        );
        assert!(
            from(Some("http://127.0.0.1:8080"), Some("cross-site"))
                .same_origin()
                .is_none()
        );
        assert!(from(None, Some("same-origin")).same_origin().is_some());
        assert!(from(Some("null"), None).same_origin().is_none());
        assert!(from(None, None).same_origin().is_none());
    }
}
