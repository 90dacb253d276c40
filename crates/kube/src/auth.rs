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
use ork_katalog::{Auth, SecretRef, Tls};
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
    /// An `auth.secretRef` offline whose Secret was neither given nor read from a cluster.
    #[error(
        "auth.secretRef: Secret {namespace}/{name} (key {key}) cannot be read without a cluster; pass --secret {name}/{key}=FILE, or a kubeconfig to read it from"
    )]
    SecretNotGiven {
        namespace: String,
        name: String,
        key: String,
    },
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

/// Secret values for the commands that run without a cluster (`ork simulate`, `check`, `test`):
/// given with `--secret NAME/KEY=FILE` or read once from the kubeconfig's cluster, by Secret
/// name and key. Its `Debug` names the keys, never a value.
#[derive(Clone, Default)]
pub struct OfflineSecrets {
    values: BTreeMap<(String, String), String>,
}

impl std::fmt::Debug for OfflineSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(self.values.keys().map(|(n, k)| format!("{n}/{k}")))
            .finish()
    }
}

impl OfflineSecrets {
    /// Sets the value of key `key` of the Secret `name`.
    pub fn insert(&mut self, name: &str, key: &str, value: String) {
        self.values
            .insert((name.to_string(), key.to_string()), value);
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether key `key` of the Secret `name` has a value.
    pub fn has(&self, name: &str, key: &str) -> bool {
        self.get(name, key).is_some()
    }

    /// The value of key `key` of the Secret `name`.
    pub fn value(&self, name: &str, key: &str) -> Option<&str> {
        self.get(name, key)
    }

    fn get(&self, name: &str, key: &str) -> Option<&str> {
        self.values
            .get(&(name.to_string(), key.to_string()))
            .map(String::as_str)
    }
}

/// The namespace of a credential Secret: its own, else ork's (as `ork run` reads it).
fn secret_namespace(r: &SecretRef, ork_namespace: &str) -> String {
    r.namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| ork_namespace.to_string())
}

/// The `(namespace, name, key)` of every Secret an offline run of `katalog` needs: the
/// `auth.secretRef` of each enabled remote entry, in its own namespace or else ork's.
pub fn secrets_needed(
    katalog: &ork_katalog::Katalog,
    ork_namespace: &str,
) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = katalog
        .spec
        .crds
        .values()
        .filter(|e| e.enabled)
        .filter_map(|e| {
            let remote = e.operator_box.reconcile.remote.as_ref()?;
            let r = remote.auth.as_ref()?.secret_ref.as_ref()?;
            Some((
                secret_namespace(r, ork_namespace),
                r.name.clone(),
                r.key.clone(),
            ))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Reads the Secrets of [`secrets_needed`] from the cluster once.
///
/// # Errors
/// A Secret that cannot be read (missing, forbidden, the API server unreachable) or that lacks
/// the key; the message names the Secret, never a value.
pub async fn read_secrets(
    client: &Client,
    needed: &[(String, String, String)],
) -> Result<OfflineSecrets, AuthError> {
    let mut out = OfflineSecrets::default();
    for (ns, name, key) in needed {
        let api: Api<Secret> = Api::namespaced(client.clone(), ns);
        let secret = api
            .get(name)
            .await
            .map_err(|e| AuthError::NotReady(format!("Secret {ns}/{name}: {e}")))?;
        let value = secret
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .or_else(|| {
                secret
                    .string_data
                    .as_ref()
                    .and_then(|d| d.get(key))
                    .cloned()
            })
            .filter(|v| !v.is_empty())
            .ok_or_else(|| AuthError::NotReady(format!("Secret {ns}/{name} has no key {key}")))?;
        out.insert(name, key, value);
    }
    Ok(out)
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

    /// A source that needs no cluster (`ork simulate`): `auth.env` works; an `auth.secretRef`
    /// takes its value from `secrets`, fixed for the run.
    ///
    /// # Errors
    /// An `auth.secretRef` whose Secret is not in `secrets`, or an unset `auth.env` variable.
    pub fn offline(
        auth: Option<&Auth>,
        secrets: &OfflineSecrets,
        ork_namespace: &str,
    ) -> Result<CredentialSource, AuthError> {
        match auth {
            None => Ok(CredentialSource::None),
            Some(Auth {
                secret_ref: Some(r),
                header,
                ..
            }) => {
                let value =
                    secrets
                        .get(&r.name, &r.key)
                        .ok_or_else(|| AuthError::SecretNotGiven {
                            namespace: secret_namespace(r, ork_namespace),
                            name: r.name.clone(),
                            key: r.key.clone(),
                        })?;
                Credential::new(header, value)
                    .map(CredentialSource::Fixed)
                    .map_err(|e| AuthError::Unusable(e.to_string()))
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(yaml: &str) -> Auth {
        serde_saphyr::from_str(yaml).expect("auth")
    }

    #[test]
    fn a_given_secret_is_the_offline_credential_and_debug_never_shows_it() {
        let mut secrets = OfflineSecrets::default();
        secrets.insert("token", "value", "s3cret".into());
        let a = auth("{secretRef: {name: token, key: value}}");
        let source = CredentialSource::offline(Some(&a), &secrets, "default").expect("given");
        assert!(source.current().expect("fixed").is_some());
        assert_eq!(format!("{secrets:?}"), "{\"token/value\"}");
        assert!(!format!("{source:?}").contains("s3cret"), "{source:?}");
    }

    #[test]
    fn a_secret_not_given_names_where_it_is_and_how_to_give_it() {
        let a = auth("{secretRef: {name: token, key: value}}");
        let err = CredentialSource::offline(Some(&a), &OfflineSecrets::default(), "ork-system")
            .expect_err("not given");
        assert_eq!(
            err.to_string(),
            "auth.secretRef: Secret ork-system/token (key value) cannot be read without a cluster; pass --secret token/value=FILE, or a kubeconfig to read it from"
        );
    }

    #[test]
    fn the_secrets_needed_are_each_enabled_entrys_in_its_own_namespace_or_orks() {
        let text = "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {name: t}\nspec:\n  crds:\n    a:\n      apiTypes: {group: demo.ork.dev, version: v1, kind: A, plural: as}\n      operatorBox:\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://127.0.0.1:1/r\", auth: {secretRef: {name: t, namespace: apps, key: k}}, managedResources: [{group: apps, plural: deployments}]}\n    b:\n      apiTypes: {group: demo.ork.dev, version: v1, kind: B, plural: bs}\n      operatorBox:\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://127.0.0.1:1/r\", auth: {secretRef: {name: u, key: k}}, managedResources: [{group: apps, plural: deployments}]}\n    c:\n      enabled: false\n      apiTypes: {group: demo.ork.dev, version: v1, kind: C, plural: cs}\n      operatorBox:\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://127.0.0.1:1/r\", auth: {secretRef: {name: disabled, key: k}}, managedResources: [{group: apps, plural: deployments}]}\n";
        let katalog = ork_katalog::load_str(text, std::path::Path::new("k.yaml")).expect("katalog");
        let needed = secrets_needed(&katalog, "ork-system");
        let names: Vec<(&str, &str, &str)> = needed
            .iter()
            .map(|(n, s, k)| (n.as_str(), s.as_str(), k.as_str()))
            .collect();
        assert_eq!(names, [("apps", "t", "k"), ("ork-system", "u", "k")]);
    }
}
