//! `remote.auth` and `remote.tls`: the credential ork sends, and the CA and client certificate
//! of an https endpoint.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::template::is_template;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Auth {
    #[serde(default)]
    pub secret_ref: Option<SecretRef>,
    #[serde(default)]
    pub env: Option<String>,
    #[serde(default = "default_auth_header")]
    pub header: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretRef {
    /// The Secret's name; may be a template over the CR (`{{ .metadata.name }}-token`).
    pub name: String,
    pub key: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

impl SecretRef {
    /// True when `name` is a template, which the Katalog refuses (SPEC §11): a CR's fields
    /// must not choose the Secret ork reads.
    pub fn is_templated(&self) -> bool {
        is_template(&self.name)
    }
}

fn default_auth_header() -> String {
    "Authorization".to_string()
}

/// `remote.tls`. Verification is always on; these add trust and identity, never remove checks.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tls {
    /// PEM of the CA(s) that sign the service's certificate.
    #[serde(default)]
    pub ca_bundle: Option<String>,
    /// A Secret key holding that PEM instead (default key `ca.crt`).
    #[serde(default)]
    pub ca_secret_ref: Option<CaSecretRef>,
    /// A `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`) with ork's client certificate.
    #[serde(default)]
    pub client_cert_secret_ref: Option<TlsSecretRef>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaSecretRef {
    pub name: String,
    #[serde(default = "default_ca_key")]
    pub key: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsSecretRef {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

fn default_ca_key() -> String {
    "ca.crt".into()
}
