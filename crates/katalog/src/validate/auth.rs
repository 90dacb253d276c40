//! `remote.auth` and `remote.tls`: where the credential and the certificates come from.

use super::findings::Findings;
use crate::model::{Auth, Remote, Tls};

/// Exactly one credential source, a fixed Secret name, an HTTP header name.
pub(super) fn check_auth(f: &mut Findings, rp: &str, auth: &Auth) {
    match (&auth.secret_ref, &auth.env) {
        (Some(_), Some(_)) | (None, None) => f.add(
            format!("{rp}.auth"),
            "auth: exactly one of secretRef or env must be set",
            Some("secretRef: {name, key} reads a Secret; env: NAME reads ork's environment"),
        ),
        (Some(s), None) => {
            if s.name.is_empty() || s.key.is_empty() {
                f.add(
                    format!("{rp}.auth.secretRef"),
                    "secretRef needs name and key",
                    None,
                );
            }
            if s.is_templated() {
                // SPEC §11: a CR author must not choose which Secret ork reads.
                f.add(
                    format!("{rp}.auth.secretRef.name"),
                    "the Secret name cannot be a template: a CR's fields would choose which Secret ork reads and sends, and RBAC would have to grant every Secret of the namespace",
                    Some("name one Secret (`name: service-token`); for a credential per tenant, one entry per tenant with its own Secret"),
                );
            }
        }
        (None, Some(env)) => {
            if env.is_empty() || !env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                f.add(
                    format!("{rp}.auth.env"),
                    format!("\"{env}\" is not an environment variable name"),
                    None,
                );
            }
        }
    }
    if auth.header.trim().is_empty()
        || !auth
            .header
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        f.add(
            format!("{rp}.auth.header"),
            format!("\"{}\" is not an HTTP header name", auth.header),
            None,
        );
    }
}

/// TLS only over an https endpoint, one CA source, a CA bundle that holds a certificate.
pub(super) fn check_tls(f: &mut Findings, rp: &str, remote: &Remote, tls: &Tls) {
    let tp = format!("{rp}.tls");
    if remote.command.is_some() {
        f.add(
            &tp,
            "tls applies to an HTTP endpoint; a command runs locally",
            None,
        );
    }
    if let Some(endpoint) = &remote.endpoint
        && endpoint.is_literal()
        && !endpoint.source().starts_with("https://")
    {
        f.add(
            &tp,
            "tls needs an https:// endpoint",
            Some("the CA and client certificate are only used over https"),
        );
    }
    if tls.ca_bundle.is_some() && tls.ca_secret_ref.is_some() {
        f.add(
            format!("{tp}.caSecretRef"),
            "set either caBundle or caSecretRef, not both",
            None,
        );
    }
    if let Some(pem) = &tls.ca_bundle
        && !pem.contains("-----BEGIN CERTIFICATE-----")
    {
        f.add(
            format!("{tp}.caBundle"),
            "caBundle holds no PEM certificate",
            Some("paste the CA's -----BEGIN CERTIFICATE----- block"),
        );
    }
}
