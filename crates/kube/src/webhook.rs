//! The admission webhook's TLS and registration (SPEC §21): a CA ork keeps in a Secret of its
//! namespace (created by the first replica, read by every other and after a restart), a
//! serving certificate each replica mints from it and renews before it expires, and the
//! `ValidatingWebhookConfiguration` / `MutatingWebhookConfiguration` of each entry that asks
//! for admission, with the CA as `caBundle`.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use ork_katalog::Admission;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde_json::{Value, json};

/// The Secret of ork's namespace that holds the webhook CA (`ca.crt`, `ca.key`).
pub const CA_SECRET: &str = "ork-webhook-ca";
/// How long the CA is valid.
const CA_LIFETIME: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// The field manager of the webhook configurations ork registers.
const MANAGER: &str = "ork-webhooks";

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("the webhook CA Secret {namespace}/{CA_SECRET}: {message}")]
    Ca { namespace: String, message: String },
    #[error("minting the webhook's certificate: {0}")]
    Mint(String),
    #[error("registering {name}: {message}")]
    Register { name: String, message: String },
}

/// The webhook CA: its certificate (the `caBundle`) and key.
#[derive(Clone)]
pub struct WebhookCa {
    pub cert_pem: String,
    key_pem: secrecy::SecretString,
}

impl std::fmt::Debug for WebhookCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookCa").finish_non_exhaustive()
    }
}

fn ca_params() -> Result<CertificateParams, rcgen::Error> {
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "ork admission webhook CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let now = time::OffsetDateTime::now_utc();
    ca.not_before = now - time::Duration::hours(1);
    ca.not_after = now + CA_LIFETIME;
    Ok(ca)
}

impl WebhookCa {
    /// A new CA.
    ///
    /// # Errors
    /// Key generation or signing failed.
    pub fn generate() -> Result<WebhookCa, WebhookError> {
        let mint = |e: rcgen::Error| WebhookError::Mint(e.to_string());
        let key = KeyPair::generate().map_err(mint)?;
        let cert = ca_params().map_err(mint)?.self_signed(&key).map_err(mint)?;
        Ok(WebhookCa {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem().into(),
        })
    }

    /// The CA of Secret [`CA_SECRET`] in `namespace`, created there when there is none (by
    /// whichever replica comes first: another's creation is read instead).
    ///
    /// # Errors
    /// The Secret cannot be read or created, or holds no CA.
    pub async fn load_or_create(
        client: &Client,
        namespace: &str,
    ) -> Result<WebhookCa, WebhookError> {
        let fail = |message: String| WebhookError::Ca {
            namespace: namespace.to_string(),
            message,
        };
        let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
        for _ in 0..3 {
            if let Some(secret) = api
                .get_opt(CA_SECRET)
                .await
                .map_err(|e| fail(crate::ports::write::message(&e)))?
            {
                return WebhookCa::from_secret(&secret).ok_or_else(|| {
                    fail("holds no ca.crt and ca.key (delete it and ork makes a new one)".into())
                });
            }
            let ca = WebhookCa::generate()?;
            let secret: Secret = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": CA_SECRET, "namespace": namespace,
                    "labels": {crate::labels::MANAGED_BY: "ork"}},
                "type": "Opaque",
                "stringData": {"ca.crt": ca.cert_pem, "ca.key": secrecy::ExposeSecret::expose_secret(&ca.key_pem)},
            }))
            .map_err(|e| fail(e.to_string()))?;
            match api.create(&PostParams::default(), &secret).await {
                Ok(_) => {
                    tracing::info!(%namespace, secret = CA_SECRET, "created the admission webhook CA");
                    return Ok(ca);
                }
                // Another replica was first: read its CA.
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(fail(crate::ports::write::message(&e))),
            }
        }
        Err(fail("created and deleted again, three times".into()))
    }

    fn from_secret(secret: &Secret) -> Option<WebhookCa> {
        let data = secret.data.as_ref()?;
        let text = |k: &str| {
            data.get(k)
                .and_then(|b| String::from_utf8(b.0.clone()).ok())
        };
        let (cert_pem, key_pem) = (text("ca.crt")?, text("ca.key")?);
        KeyPair::from_pem(&key_pem).ok()?;
        Some(WebhookCa {
            cert_pem,
            key_pem: key_pem.into(),
        })
    }

    /// A serving certificate for `hosts` (DNS names and IP addresses), valid for `lifetime`.
    ///
    /// # Errors
    /// The CA's key cannot be read, or signing failed.
    pub fn serving(
        &self,
        hosts: &[String],
        lifetime: Duration,
    ) -> Result<CertifiedKey, WebhookError> {
        let mint = |e: rcgen::Error| WebhookError::Mint(e.to_string());
        let ca_key =
            KeyPair::from_pem(secrecy::ExposeSecret::expose_secret(&self.key_pem)).map_err(mint)?;
        let issuer = Issuer::new(ca_params().map_err(mint)?, ca_key);
        let key = KeyPair::generate().map_err(mint)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(mint)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "ork admission webhook");
        for host in hosts {
            let san = match host.parse::<std::net::IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName(host.clone().try_into().map_err(mint)?),
            };
            params.subject_alt_names.push(san);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + lifetime;
        let cert = params.signed_by(&key, &issuer).map_err(mint)?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let signing = rustls::crypto::ring::sign::any_supported_type(&der)
            .map_err(|e| WebhookError::Mint(e.to_string()))?;
        Ok(CertifiedKey::new(
            vec![CertificateDer::from(cert.der().to_vec())],
            signing,
        ))
    }
}

/// The serving certificate of this replica, swapped for a fresh one before it expires.
#[derive(Debug)]
pub struct ServingCert {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|c| c.clone())
    }
}

impl ServingCert {
    /// A certificate from `ca` for `hosts`, renewed every two thirds of `lifetime` by a task
    /// that lives as long as the returned value is used.
    ///
    /// # Errors
    /// The first certificate could not be minted.
    pub fn start(
        ca: WebhookCa,
        hosts: Vec<String>,
        lifetime: Duration,
    ) -> Result<Arc<ServingCert>, WebhookError> {
        let first = ca.serving(&hosts, lifetime)?;
        let cert = Arc::new(ServingCert {
            current: RwLock::new(Arc::new(first)),
        });
        let weak = Arc::downgrade(&cert);
        tokio::spawn(async move {
            let every = lifetime.mul_f64(2.0 / 3.0).max(Duration::from_secs(1));
            loop {
                tokio::time::sleep(every).await;
                let Some(cert) = weak.upgrade() else { return };
                match ca.serving(&hosts, lifetime) {
                    Ok(fresh) => {
                        if let Ok(mut c) = cert.current.write() {
                            *c = Arc::new(fresh);
                        }
                        tracing::info!(valid_for = ?lifetime, "renewed the admission webhook's serving certificate");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot renew the admission webhook's serving certificate; retrying")
                    }
                }
            }
        });
        Ok(cert)
    }

    /// A TLS server configuration serving this certificate (HTTP/1.1).
    pub fn server_config(self: &Arc<Self>) -> Arc<rustls::ServerConfig> {
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// One entry's webhooks as they are registered.
#[derive(Debug, Clone)]
pub struct Registration {
    pub entry: String,
    pub cr: ApiResource,
    pub cr_namespaced: bool,
    /// The namespaces its CRs live in (`None`: every namespace).
    pub namespaces: Option<Vec<String>>,
    pub admission: Admission,
}

/// The name of an entry's webhook configurations.
pub fn configuration_name(katalog: &str, entry: &str) -> String {
    let name = format!("ork-{katalog}-{entry}").to_lowercase();
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(253)
        .collect()
}

/// The `ValidatingWebhookConfiguration` and `MutatingWebhookConfiguration` objects of `r`
/// (those it asks for), calling `client_config` (`{url}` or `{service}`) at
/// `/admit/<entry>/<phase>`, with `ca_pem` as the `caBundle`.
pub fn configurations(name: &str, r: &Registration, base: &ClientBase, ca_pem: &str) -> Vec<Value> {
    let a = &r.admission;
    let timeout = (a.timeout.0.as_secs() + 1).clamp(1, 10);
    let ca_bundle = serde_json::to_value(k8s_openapi::ByteString(ca_pem.as_bytes().to_vec()))
        .unwrap_or_default();
    let namespace_selector = match &r.namespaces {
        Some(namespaces) if r.cr_namespaced => json!({"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}]}),
        _ => json!({}),
    };
    let webhook = |phase: &str| {
        let path = format!("/admit/{}/{phase}", r.entry);
        let client_config = match base {
            ClientBase::Url(url) => {
                json!({"url": format!("{}{path}", url.trim_end_matches('/')), "caBundle": ca_bundle})
            }
            ClientBase::Service {
                namespace,
                name,
                port,
            } => json!({"service": {
                "namespace": namespace, "name": name, "port": port, "path": path}, "caBundle": ca_bundle}),
        };
        json!({
            "name": format!("{phase}.{}.{}", r.entry.to_lowercase(), if r.cr.group.is_empty() { "core" } else { &r.cr.group }),
            "clientConfig": client_config,
            "rules": [{
                "apiGroups": [r.cr.group],
                "apiVersions": [r.cr.version],
                "resources": [r.cr.plural],
                "operations": a.operations.iter().map(|o| o.as_str()).collect::<Vec<_>>(),
                "scope": if r.cr_namespaced { "Namespaced" } else { "Cluster" },
            }],
            "failurePolicy": a.failure_policy.as_str(),
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": timeout,
            "matchPolicy": "Equivalent",
            "namespaceSelector": namespace_selector,
        })
    };
    let mut out = Vec::new();
    if a.mutate {
        out.push(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name, "labels": {crate::labels::MANAGED_BY: "ork"}},
            "webhooks": [webhook("mutate")],
        }));
    }
    if a.validate {
        out.push(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name, "labels": {crate::labels::MANAGED_BY: "ork"}},
            "webhooks": [webhook("validate")],
        }));
    }
    out
}

/// Where the API server calls the webhook.
#[derive(Debug, Clone)]
pub enum ClientBase {
    /// `https://host:port` (development: ork on loopback).
    Url(String),
    /// A Service in front of ork's Pods.
    Service {
        namespace: String,
        name: String,
        port: u16,
    },
}

/// Applies the webhook configurations of every registration (server-side apply, so a second
/// replica's identical registration changes nothing).
///
/// # Errors
/// The API server refused one.
pub async fn register(
    client: &Client,
    katalog: &str,
    registrations: &[Registration],
    base: &ClientBase,
    ca_pem: &str,
) -> Result<(), WebhookError> {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    let params = PatchParams::apply(MANAGER).force();
    for r in registrations {
        let name = configuration_name(katalog, &r.entry);
        for object in configurations(&name, r, base, ca_pem) {
            let failed = |e: kube::Error| WebhookError::Register {
                name: format!("{} {name}", object["kind"].as_str().unwrap_or_default()),
                message: crate::ports::write::message(&e),
            };
            if object["kind"] == "MutatingWebhookConfiguration" {
                let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
                api.patch(&name, &params, &Patch::Apply(&object))
                    .await
                    .map_err(failed)?;
            } else {
                let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
                api.patch(&name, &params, &Patch::Apply(&object))
                    .await
                    .map_err(failed)?;
            }
            tracing::info!(kind = %object["kind"].as_str().unwrap_or_default(), %name, "registered the admission webhook");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serving_certificate_is_signed_by_the_ca_it_came_from() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = WebhookCa::generate().expect("a CA");
        let cert = ca
            .serving(
                &["127.0.0.1".into(), "ork.ork-system.svc".into()],
                Duration::from_secs(60),
            )
            .expect("minted");
        let mut roots = rustls::RootCertStore::empty();
        use rustls::pki_types::pem::PemObject;
        roots
            .add(CertificateDer::from_pem_slice(ca.cert_pem.as_bytes()).expect("pem"))
            .expect("a root");
        let verifier = rustls::client::WebPkiServerVerifier::builder(Arc::new(roots))
            .build()
            .expect("a verifier");
        let name = rustls::pki_types::ServerName::try_from("ork.ork-system.svc").expect("name");
        use rustls::client::danger::ServerCertVerifier;
        verifier
            .verify_server_cert(
                &cert.cert[0],
                &[],
                &name,
                &[],
                rustls::pki_types::UnixTime::now(),
            )
            .expect("the CA vouches for it");
    }
}
