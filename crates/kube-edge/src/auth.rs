//! What ork presents to the service: a credential (from ork's environment or a Secret) and TLS
//! material (inline or from Secrets). Secrets are watched, so a rotation takes effect without a
//! restart; their values never reach a log line or an error message.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::watcher;
use kube::{Api, Client};
use ork_katalog::{Auth, Tls};
use ork_remote::{Credential, HttpTransport, TlsSettings};

/// Why a credential or TLS material cannot be used now. Never carries a secret value.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthError {
    #[error("auth.env: environment variable {0} is unset or empty")]
    EnvUnset(String),
    /// The material exists but cannot be used (a header name, PEM that does not load).
    #[error("{0}")]
    Unusable(String),
    /// A Secret missing, or without the key.
    #[error("{0}")]
    NotReady(String),
    /// A Secret whose watch has not delivered its first list yet.
    #[error("{0} not read yet")]
    Pending(String),
    #[error("{0} cannot be read without a cluster; {1}")]
    Offline(&'static str, &'static str),
    #[error("{0} state poisoned")]
    Poisoned(&'static str),
}

/// A Secret's data, or `None` while it is missing.
type SecretData = Option<BTreeMap<String, ByteString>>;

/// Watches the Secret `namespace/name`; `on_change` gets its data on every change (and `None`
/// when it is deleted).
fn watch_secret(
    client: &Client,
    namespace: &str,
    name: &str,
    mut on_change: impl FnMut(SecretData) + Send + 'static,
) {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    tokio::spawn(async move {
        let mut stream = watcher(api, config).boxed();
        let mut listed = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Apply(s) | watcher::Event::InitApply(s)) => {
                    listed = true;
                    on_change(Some(s.data.unwrap_or_default()))
                }
                Ok(watcher::Event::Delete(_)) => on_change(None),
                // The first list had no such Secret: it is missing, not pending.
                Ok(watcher::Event::InitDone) if !listed => {
                    listed = true;
                    on_change(None);
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "watch of a Secret failed; retrying");
                    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                }
            }
        }
    });
}

/// Where the credential of an entry comes from. Cloning shares the same source.
#[derive(Clone, Debug)]
pub enum CredentialSource {
    None,
    Fixed(Credential),
    /// Updated by a watch on the Secret; `Err` holds why it is unusable (never the value).
    Secret(Arc<RwLock<Result<Credential, AuthError>>>),
}

impl CredentialSource {
    /// Sets up the source; a secretRef starts a background watch of that one Secret.
    ///
    /// # Errors
    /// An `env` variable that is unset or empty.
    pub fn start(
        client: &Client,
        auth: Option<&Auth>,
        ork_namespace: &str,
    ) -> Result<CredentialSource, AuthError> {
        let Some(auth) = auth else {
            return Ok(CredentialSource::None);
        };
        if let Some(var) = &auth.env {
            let value = std::env::var(var).ok().filter(|v| !v.is_empty());
            let value = value.ok_or_else(|| AuthError::EnvUnset(var.clone()))?;
            return Credential::new(&auth.header, &value)
                .map(CredentialSource::Fixed)
                .map_err(|e| AuthError::Unusable(e.to_string()));
        }
        let Some(secret_ref) = auth.secret_ref.clone() else {
            return Ok(CredentialSource::None);
        };
        let ns = secret_ref
            .namespace
            .clone()
            .unwrap_or_else(|| ork_namespace.to_string());
        let slot = Arc::new(RwLock::new(Err(AuthError::Pending(format!(
            "Secret {ns}/{}",
            secret_ref.name
        )))));
        let header = auth.header.clone();
        let writer = slot.clone();
        let (name, key, secret_ns) = (secret_ref.name.clone(), secret_ref.key.clone(), ns.clone());
        watch_secret(client, &secret_ns, &secret_ref.name, move |data| {
            let value = data
                .as_ref()
                .and_then(|d| d.get(&key))
                .map(|b| String::from_utf8_lossy(&b.0).into_owned());
            let next = match value {
                Some(v) if !v.is_empty() => {
                    Credential::new(&header, &v).map_err(|e| AuthError::Unusable(e.to_string()))
                }
                _ => Err(AuthError::NotReady(format!(
                    "Secret {ns}/{name} has no key {key}"
                ))),
            };
            if let Ok(mut w) = writer.write() {
                *w = next;
            }
        });
        Ok(CredentialSource::Secret(slot))
    }

    /// A source that needs no cluster (`ork simulate`): `auth.env` works; a Secret cannot be
    /// read offline.
    ///
    /// # Errors
    /// `auth.secretRef`, or an unset `auth.env` variable.
    pub fn offline(auth: Option<&Auth>) -> Result<CredentialSource, AuthError> {
        match auth {
            None => Ok(CredentialSource::None),
            Some(a) if a.secret_ref.is_some() => Err(AuthError::Offline(
                "auth.secretRef",
                "for simulate, put the token in an environment variable and use auth.env",
            )),
            Some(a) => {
                let var = a.env.clone().unwrap_or_default();
                let value = std::env::var(&var).ok().filter(|v| !v.is_empty());
                let value = value.ok_or_else(|| AuthError::EnvUnset(var.clone()))?;
                Credential::new(&a.header, &value)
                    .map(CredentialSource::Fixed)
                    .map_err(|e| AuthError::Unusable(e.to_string()))
            }
        }
    }

    /// The current credential, if any.
    ///
    /// # Errors
    /// The Secret is missing, lacks the key, or was not read yet.
    pub fn current(&self) -> Result<Option<Credential>, AuthError> {
        match self {
            CredentialSource::None => Ok(None),
            CredentialSource::Fixed(c) => Ok(Some(c.clone())),
            CredentialSource::Secret(slot) => match slot.read() {
                Ok(guard) => guard.clone().map(Some),
                Err(_) => Err(AuthError::Poisoned("credential")),
            },
        }
    }
}

/// The HTTP client of an entry: shared, or built for its `remote.tls` and rebuilt whenever a
/// TLS Secret changes. Cloning shares the same source.
#[derive(Clone, Debug)]
pub enum TransportSource {
    Fixed(HttpTransport),
    Watched(Arc<RwLock<Result<HttpTransport, AuthError>>>),
}

/// The TLS material read so far; a client is built once everything needed is there.
#[derive(Debug, Default)]
struct TlsParts {
    ca: Option<Vec<u8>>,
    client: Option<(Vec<u8>, Vec<u8>)>,
    missing: BTreeMap<&'static str, String>,
}

impl TransportSource {
    /// The entry's client: `shared` without `tls`, else one with its CA and client certificate.
    ///
    /// # Errors
    /// Inline TLS material that does not load.
    pub fn start(
        client: &Client,
        shared: &HttpTransport,
        tls: Option<&Tls>,
        ork_namespace: &str,
    ) -> Result<TransportSource, AuthError> {
        let Some(tls) = tls else {
            return Ok(TransportSource::Fixed(shared.clone()));
        };
        if tls.ca_secret_ref.is_none() && tls.client_cert_secret_ref.is_none() {
            return TransportSource::offline(shared, Some(tls));
        }
        let slot = Arc::new(RwLock::new(Err(AuthError::Pending(
            "TLS Secrets".to_string(),
        ))));
        let parts = Arc::new(Mutex::new(TlsParts {
            ca: tls.ca_bundle.clone().map(String::into_bytes),
            ..TlsParts::default()
        }));
        let rebuild = {
            let (slot, parts) = (slot.clone(), parts.clone());
            move || {
                let Ok(p) = parts.lock() else { return };
                let next = match p.missing.values().next() {
                    Some(why) if why.ends_with("(not read yet)") => Err(AuthError::Pending(
                        why.trim_end_matches(" (not read yet)").into(),
                    )),
                    Some(why) => Err(AuthError::NotReady(why.clone())),
                    None => HttpTransport::with_tls(&TlsSettings {
                        ca_pem: p.ca.clone(),
                        client_cert_pem: p.client.clone(),
                    })
                    .map_err(|e| AuthError::Unusable(e.to_string())),
                };
                if let Ok(mut w) = slot.write() {
                    *w = next;
                }
            }
        };
        if let Some(r) = &tls.ca_secret_ref {
            let ns = r
                .namespace
                .clone()
                .unwrap_or_else(|| ork_namespace.to_string());
            let what = format!("Secret {ns}/{} has no key {}", r.name, r.key);
            parts
                .lock()
                .map_err(|_| AuthError::Poisoned("TLS"))?
                .missing
                .insert("ca", format!("{what} (not read yet)"));
            let (parts, rebuild, key) = (parts.clone(), rebuild.clone(), r.key.clone());
            watch_secret(client, &ns, &r.name, move |data| {
                if let Ok(mut p) = parts.lock() {
                    match data.as_ref().and_then(|d| d.get(&key)) {
                        Some(pem) => {
                            p.ca = Some(pem.0.clone());
                            p.missing.remove("ca");
                        }
                        None => {
                            p.missing.insert("ca", what.clone());
                        }
                    }
                }
                rebuild();
            });
        }
        if let Some(r) = &tls.client_cert_secret_ref {
            let ns = r
                .namespace
                .clone()
                .unwrap_or_else(|| ork_namespace.to_string());
            let what = format!("Secret {ns}/{} needs tls.crt and tls.key", r.name);
            parts
                .lock()
                .map_err(|_| AuthError::Poisoned("TLS"))?
                .missing
                .insert("client", format!("{what} (not read yet)"));
            let (parts, rebuild) = (parts.clone(), rebuild.clone());
            watch_secret(client, &ns, &r.name, move |data| {
                if let Ok(mut p) = parts.lock() {
                    let pair = data.as_ref().and_then(|d| {
                        Some((d.get("tls.crt")?.0.clone(), d.get("tls.key")?.0.clone()))
                    });
                    match pair {
                        Some(pair) => {
                            p.client = Some(pair);
                            p.missing.remove("client");
                        }
                        None => {
                            p.missing.insert("client", what.clone());
                        }
                    }
                }
                rebuild();
            });
        }
        Ok(TransportSource::Watched(slot))
    }

    /// Without a cluster (`ork simulate`): inline TLS material only.
    ///
    /// # Errors
    /// A TLS Secret, which cannot be read offline, or inline material that does not load.
    pub fn offline(
        shared: &HttpTransport,
        tls: Option<&Tls>,
    ) -> Result<TransportSource, AuthError> {
        let Some(tls) = tls else {
            return Ok(TransportSource::Fixed(shared.clone()));
        };
        if tls.ca_secret_ref.is_some() || tls.client_cert_secret_ref.is_some() {
            return Err(AuthError::Offline(
                "TLS Secrets",
                "use tls.caBundle to simulate",
            ));
        }
        HttpTransport::with_tls(&TlsSettings {
            ca_pem: tls.ca_bundle.clone().map(String::into_bytes),
            client_cert_pem: None,
        })
        .map(TransportSource::Fixed)
        .map_err(|e| AuthError::Unusable(e.to_string()))
    }

    /// The client to call with now.
    ///
    /// # Errors
    /// A TLS Secret that is missing or incomplete.
    pub fn current(&self) -> Result<HttpTransport, AuthError> {
        match self {
            TransportSource::Fixed(t) => Ok(t.clone()),
            TransportSource::Watched(slot) => {
                slot.read().map_err(|_| AuthError::Poisoned("TLS"))?.clone()
            }
        }
    }
}
