//! `auth.secretRef` Secrets for the commands that run without a cluster (`ork simulate`,
//! `check`, `test`; SPEC §16): `--secret NAME/KEY=FILE`, or when none is given and a kubeconfig
//! exists, the Katalog's Secrets read once from its cluster. Values are never printed.

use std::path::PathBuf;

use anyhow::{Context, Result};
use ork_katalog::Katalog;
use ork_kube::auth::{read_secrets, secrets_needed};
use ork_kube::client::Protocol;
use ork_kube::simulate::OfflineSecrets;

/// One `--secret NAME/KEY=FILE`: the key `key` of the Secret `name` holds what `file` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretArg {
    pub name: String,
    pub key: String,
    pub file: PathBuf,
}

/// Parses `NAME/KEY=FILE` (clap's value parser of `--secret`).
///
/// # Errors
/// A value not of that shape, in words that show the shape.
pub fn parse(arg: &str) -> Result<SecretArg, String> {
    let shape = || format!("{arg:?}: expected NAME/KEY=FILE, e.g. webapp-token/token=./token.txt");
    let (secret, file) = arg.split_once('=').ok_or_else(shape)?;
    let (name, key) = secret.split_once('/').ok_or_else(shape)?;
    if name.is_empty() || key.is_empty() || file.is_empty() || key.contains('/') {
        return Err(shape());
    }
    Ok(SecretArg {
        name: name.to_string(),
        key: key.to_string(),
        file: PathBuf::from(file),
    })
}

/// The Secret values of an offline run: those of `given`; then those the Katalog's own `setup`
/// files hold (a `kind: Secret` of that name, as Orkestra seeds them); else, for what is still
/// missing when none was given and a kubeconfig exists, the Katalog's Secrets read once from
/// the kubeconfig's cluster.
///
/// # Errors
/// A `--secret` file that cannot be read, or a Secret the cluster does not give.
pub async fn offline_secrets(katalog: &Katalog, given: &[SecretArg]) -> Result<OfflineSecrets> {
    let mut out = OfflineSecrets::default();
    for s in given {
        let text = std::fs::read_to_string(&s.file).with_context(|| {
            format!(
                "--secret {}/{}: reading {}",
                s.name,
                s.key,
                s.file.display()
            )
        })?;
        out.insert(&s.name, &s.key, without_final_newline(text));
    }
    let ork_namespace = std::env::var("ORK_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    let needed = secrets_needed(katalog, &ork_namespace);
    from_setup_files(katalog, &needed, &mut out);
    let needed: Vec<_> = needed
        .into_iter()
        .filter(|(_, name, key)| !out.has(name, key))
        .collect();
    if !given.is_empty() || needed.is_empty() || !kubeconfig_exists() {
        return Ok(out);
    }
    let connect = async {
        let config = kube::Config::infer().await?;
        anyhow::Ok(ork_kube::client::client(config, Protocol::Negotiated)?)
    };
    let client = connect.await.context(
        "connecting to the kubeconfig's cluster to read auth.secretRef (or pass --secret NAME/KEY=FILE)",
    )?;
    let read = read_secrets(&client, &needed).await.context(
        "reading auth.secretRef from the kubeconfig's cluster (or pass --secret NAME/KEY=FILE)",
    )?;
    for (_, name, key) in &needed {
        if let Some(value) = read.value(name, key) {
            out.insert(name, key, value.to_string());
        }
    }
    Ok(out)
}

/// Fills what `needed` names from the Secrets in the entries' `setup` files (each document
/// of kind `Secret` whose name is the one needed and whose namespace, if it says one, is too),
/// unless `out` has it already. A file that cannot be read is left to the other sources.
fn from_setup_files(
    katalog: &Katalog,
    needed: &[(String, String, String)],
    out: &mut OfflineSecrets,
) {
    use k8s_openapi::api::core::v1::Secret;
    let files = katalog.spec.crds.values().flat_map(|e| e.setup.iter());
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for doc in text.split("\n---") {
            let Ok(value) = serde_saphyr::from_str::<serde_json::Value>(doc) else {
                continue;
            };
            if value["kind"] != "Secret" {
                continue;
            }
            let Ok(secret) = serde_json::from_value::<Secret>(value) else {
                continue;
            };
            let name = secret.metadata.name.as_deref().unwrap_or_default();
            let namespace = secret.metadata.namespace.as_deref();
            for (ns, want, key) in needed {
                if want != name || namespace.is_some_and(|n| n != ns) || out.has(want, key) {
                    continue;
                }
                let value = secret
                    .string_data
                    .as_ref()
                    .and_then(|d| d.get(key).cloned())
                    .or_else(|| {
                        secret
                            .data
                            .as_ref()
                            .and_then(|d| d.get(key))
                            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                    })
                    .filter(|v| !v.is_empty());
                if let Some(v) = value {
                    out.insert(want, key, v);
                }
            }
        }
    }
}

/// A file written by `echo token > file` ends with a newline that is not part of the value.
fn without_final_newline(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    text
}

/// `$KUBECONFIG` set, or `~/.kube/config` there.
pub(crate) fn kubeconfig_exists() -> bool {
    if std::env::var_os("KUBECONFIG").is_some_and(|k| !k.is_empty()) {
        return true;
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .is_some_and(|home| home.join(".kube/config").exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_argument_names_the_secret_the_key_and_the_file() {
        assert_eq!(
            parse("webapp-token/token=./t=x.txt"),
            Ok(SecretArg {
                name: "webapp-token".into(),
                key: "token".into(),
                file: PathBuf::from("./t=x.txt"),
            })
        );
        for bad in [
            "webapp-token=./t",
            "/token=./t",
            "a/=./t",
            "a/b=",
            "a/b/c=./t",
            "a/b",
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(err.contains("expected NAME/KEY=FILE"), "{err}");
        }
    }

    #[test]
    fn a_final_newline_of_the_file_is_not_part_of_the_value() {
        assert_eq!(without_final_newline("tok\n".into()), "tok");
        assert_eq!(without_final_newline("tok\r\n".into()), "tok");
        assert_eq!(without_final_newline("tok\n\n".into()), "tok\n");
        assert_eq!(without_final_newline("tok".into()), "tok");
    }
}
