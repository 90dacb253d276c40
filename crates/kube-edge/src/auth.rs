//! Credentials for the service: from ork's environment or a Secret kept fresh by a watch.

use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use ork_katalog::Auth;
use ork_remote::Credential;

/// Where the credential of an entry comes from. Cloning shares the same source.
#[derive(Clone, Debug)]
pub enum CredentialSource {
    None,
    Fixed(Credential),
    /// Updated by a watch on the Secret; `Err` holds why it is unusable (never the value).
    Secret(Arc<RwLock<Result<Credential, String>>>),
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
    ) -> Result<CredentialSource, String> {
        let Some(auth) = auth else {
            return Ok(CredentialSource::None);
        };
        if let Some(var) = &auth.env {
            let value = std::env::var(var).ok().filter(|v| !v.is_empty());
            let value = value
                .ok_or_else(|| format!("auth.env: environment variable {var} is unset or empty"))?;
            return Credential::new(&auth.header, &value)
                .map(CredentialSource::Fixed)
                .map_err(|e| e.to_string());
        }
        let Some(secret_ref) = auth.secret_ref.clone() else {
            return Ok(CredentialSource::None);
        };
        let ns = secret_ref
            .namespace
            .clone()
            .unwrap_or_else(|| ork_namespace.to_string());
        let slot = Arc::new(RwLock::new(Err(format!(
            "Secret {ns}/{} not read yet",
            secret_ref.name
        ))));
        let api: Api<Secret> = Api::namespaced(client.clone(), &ns);
        let config =
            watcher::Config::default().fields(&format!("metadata.name={}", secret_ref.name));
        let header = auth.header.clone();
        let writer = slot.clone();
        tokio::spawn(async move {
            let mut stream = watcher(api, config)
                .default_backoff()
                .touched_objects()
                .boxed();
            while let Some(ev) = stream.next().await {
                let Ok(secret) = ev else { continue };
                let value = secret
                    .data
                    .as_ref()
                    .and_then(|d| d.get(&secret_ref.key))
                    .map(|b| String::from_utf8_lossy(&b.0).into_owned());
                let next = match value {
                    Some(v) if !v.is_empty() => {
                        Credential::new(&header, &v).map_err(|e| e.to_string())
                    }
                    _ => Err(format!(
                        "Secret {ns}/{} has no key {}",
                        secret_ref.name, secret_ref.key
                    )),
                };
                if let Ok(mut w) = writer.write() {
                    *w = next;
                }
            }
        });
        Ok(CredentialSource::Secret(slot))
    }

    /// A source that needs no cluster (`ork simulate`): `auth.env` works; a Secret cannot be
    /// read offline.
    ///
    /// # Errors
    /// `auth.secretRef`, or an unset `auth.env` variable.
    pub fn offline(auth: Option<&Auth>) -> Result<CredentialSource, String> {
        match auth {
            None => Ok(CredentialSource::None),
            Some(a) if a.secret_ref.is_some() => Err(
                "auth.secretRef cannot be read without a cluster; for simulate, put the token in an environment variable and use auth.env".into(),
            ),
            Some(a) => {
                let var = a.env.clone().unwrap_or_default();
                let value = std::env::var(&var).ok().filter(|v| !v.is_empty());
                let value = value.ok_or_else(|| format!("auth.env: environment variable {var} is unset or empty"))?;
                Credential::new(&a.header, &value).map(CredentialSource::Fixed).map_err(|e| e.to_string())
            }
        }
    }

    /// The current credential, if any.
    ///
    /// # Errors
    /// The Secret is missing, lacks the key, or was not read yet.
    pub fn current(&self) -> Result<Option<Credential>, String> {
        match self {
            CredentialSource::None => Ok(None),
            CredentialSource::Fixed(c) => Ok(Some(c.clone())),
            CredentialSource::Secret(slot) => match slot.read() {
                Ok(guard) => guard.clone().map(Some),
                Err(_) => Err("credential store poisoned".into()),
            },
        }
    }
}
