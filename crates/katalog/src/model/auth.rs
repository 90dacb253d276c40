//! `remote.auth` and `remote.tls`: the credential ork sends, and the CA and client certificate
//! of an https endpoint.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::template::is_template;

/// `remote.auth`: the credential ork sends with every HTTP call.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Auth {
    /// A key of a Secret holding the credential, read through the API and watched: a new
    /// value is used without a restart.
    #[serde(default)]
    pub secret_ref: Option<SecretRef>,
    /// The name of an environment variable of ork's holding the credential, read when the
    /// entry starts.
    #[serde(default)]
    pub env: Option<String>,
    /// The HTTP header the credential goes in: `Authorization` gets `Bearer <value>`, any
    /// other header the value alone.
    #[serde(default = "default_auth_header")]
    pub header: String,
}

/// `auth.secretRef`: one key of one Secret.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretRef {
    /// The Secret's name, a literal: a template is refused (a CR must not choose the Secret
    /// ork reads), and the generated RBAC names this Secret alone (`resourceNames`).
    pub name: String,
    /// The key of the Secret's data that holds the credential.
    pub key: String,
    /// The Secret's namespace; absent: ork's own.
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
    /// PEM of the CA(s) that sign the service's certificate, trusted besides the system's.
    #[serde(default)]
    pub ca_bundle: Option<String>,
    /// A Secret key holding that PEM instead (default key `ca.crt`).
    #[serde(default)]
    pub ca_secret_ref: Option<CaSecretRef>,
    /// A `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`) with ork's client certificate.
    #[serde(default)]
    pub client_cert_secret_ref: Option<TlsSecretRef>,
}

/// `tls.caSecretRef`: a Secret key holding the CA's PEM, watched.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaSecretRef {
    /// The Secret's name.
    pub name: String,
    /// The key of the Secret's data that holds the PEM.
    #[serde(default = "default_ca_key")]
    pub key: String,
    /// The Secret's namespace; absent: ork's own.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `tls.clientCertSecretRef`: a `kubernetes.io/tls` Secret, watched.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsSecretRef {
    /// The Secret's name; its `tls.crt` and `tls.key` are ork's client certificate and key.
    pub name: String,
    /// The Secret's namespace; absent: ork's own.
    #[serde(default)]
    pub namespace: Option<String>,
}

fn default_ca_key() -> String {
    "ca.crt".into()
}
