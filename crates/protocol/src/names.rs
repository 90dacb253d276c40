//! Kubernetes naming rules the API server would enforce, checked before anything is written so
//! that a bad name refuses the whole answer instead of failing half-way through the applies.

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` parts joined by dots, at most 253 characters (DNS-1123
/// subdomain: object names, API groups, label key prefixes).
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label_part)
}

/// A DNS-1123 label: lowercase letters, digits and `-`, at most 63 characters (container
/// names).
pub(crate) fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && is_label_part(s)
}

/// A DNS-1035 label: lowercase letters, digits and `-`, starting with a letter, at most 63
/// characters (Service names, API versions).
pub(crate) fn is_dns1035_label(s: &str) -> bool {
    s.len() <= 63 && s.starts_with(|c: char| c.is_ascii_lowercase()) && is_label_part(s)
}

fn is_label_part(part: &str) -> bool {
    !part.is_empty()
        && part
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !part.starts_with('-')
        && !part.ends_with('-')
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`: the name part of label keys and label values.
fn is_qualified_part(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.starts_with(alnum)
        && s.ends_with(alnum)
        && s.chars()
            .all(|c| alnum(c) || c == '-' || c == '_' || c == '.')
}

/// A label or annotation key: `[prefix/]name`, the prefix a DNS subdomain, the name at most 63
/// characters of the qualified-name alphabet.
pub(crate) fn check_qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && (prefix.is_empty() || !is_dns_subdomain(prefix))
    {
        return Err(format!(
            "key {key:?}: the prefix before '/' must be a DNS subdomain such as example.com"
        ));
    }
    if name.len() > 63 || !is_qualified_part(name) {
        return Err(format!(
            "key {key:?}: the name must be 1-63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
        ));
    }
    Ok(())
}

/// A label value: empty, or at most 63 characters of the qualified-name alphabet.
pub(crate) fn check_label_value(key: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || (value.len() <= 63 && is_qualified_part(value)) {
        Ok(())
    } else {
        Err(format!(
            "label {key:?}: value {value:?} must be at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
        ))
    }
}

/// Splits an `apiVersion` into group and version: `v1` is the core group, `apps/v1` a named
/// group. Empty parts, extra slashes and malformed versions are refused.
pub(crate) fn parse_api_version(api_version: &str) -> Result<(String, String), String> {
    let bad = |why: &str| Err(format!("apiVersion {api_version:?} is malformed: {why}"));
    let (group, version) = match api_version.split_once('/') {
        None => ("", api_version),
        Some((group, version)) => {
            if group.is_empty() {
                return bad("the core group is written without a slash, e.g. \"v1\"");
            }
            if version.contains('/') {
                return bad("expected group/version");
            }
            if !is_dns_subdomain(group) {
                return bad("the group must be a DNS subdomain such as apps or example.com");
            }
            (group, version)
        }
    };
    if version.is_empty() {
        return bad("the version is missing, e.g. \"apps/v1\"");
    }
    if !is_dns1035_label(version) {
        return bad("the version must be a lowercase name such as v1 or v1beta1");
    }
    Ok((group.to_string(), version.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_must_name_a_group_and_a_version() {
        assert_eq!(
            parse_api_version("v1"),
            Ok((String::new(), "v1".to_string()))
        );
        assert_eq!(
            parse_api_version("apps/v1"),
            Ok(("apps".to_string(), "v1".to_string()))
        );
        for bad in [
            "demo.ork.dev/",
            "apps/",
            "/v1",
            "a/b/c",
            "Apps/v1",
            "apps/V1",
            "apps/1",
            " v1",
        ] {
            assert!(parse_api_version(bad).is_err(), "{bad:?} accepted");
        }
        assert!(
            parse_api_version("/v1")
                .expect_err("core with slash")
                .contains("without a slash")
        );
    }

    #[test]
    fn label_keys_and_values_follow_kubernetes_rules() {
        for good in ["app", "app.kubernetes.io/name", "a_b.c-d", "A1"] {
            assert_eq!(check_qualified_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "/x",
            "-a",
            "a-",
            "x/",
            "Example.com/x",
            "a b",
            &"a".repeat(64),
        ] {
            assert!(check_qualified_name(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(check_label_value("k", ""), Ok(()));
        assert_eq!(check_label_value("k", "v1.2_x-y"), Ok(()));
        assert!(check_label_value("k", "a b").is_err());
        assert!(check_label_value("k", &"a".repeat(64)).is_err());
    }

    #[test]
    fn names_are_dns_subdomains_and_service_names_dns_labels() {
        assert!(is_dns_subdomain("web.v2-a"));
        assert!(!is_dns_subdomain("Web"));
        assert!(!is_dns_subdomain("a..b"));
        assert!(!is_dns_subdomain(&"a".repeat(254)));
        assert!(is_dns1035_label("web-1"));
        assert!(!is_dns1035_label("1web"));
        assert!(!is_dns1035_label("web.a"));
    }
}
