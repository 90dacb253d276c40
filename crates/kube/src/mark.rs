//! Ownership marks (SPEC §11): evidence of ownership a tenant cannot forge, for the children no
//! owner reference covers (in another namespace than their CR, cluster-scoped, or of a
//! cluster-scoped CR). Labels, annotations and field managers can be written by anyone who may
//! write the object; an HMAC over the owner and the child's identity, with a key that lives in
//! ork's own namespace, can only be written by ork.
//!
//! The key is the Secret [`KEY_SECRET`] (key `key`, 32 random bytes) in ork's namespace: read at
//! start, created by the first replica that finds none. Replicas and restarts share it, so a
//! mark outlives the process that wrote it.

use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, PostParams};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// The Secret holding the mark key, in ork's namespace.
pub const KEY_SECRET: &str = "orkestra-konductor-owner-key";

/// What a mark binds together: the owner (UID and ork's owner annotation) and the child.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marked<'a> {
    pub owner_uid: &'a str,
    /// ork's owner annotation, `<entry>/<namespace>/<name>`.
    pub owner: &'a str,
    pub group: &'a str,
    pub kind: &'a str,
    /// Empty when cluster-scoped.
    pub namespace: &'a str,
    pub name: &'a str,
}

impl Marked<'_> {
    fn message(&self) -> String {
        // NUL cannot occur in any of these (Kubernetes names, UIDs, ork's annotation).
        format!(
            "ork-owner-mark/v1\0{}\0{}\0{}\0{}\0{}\0{}",
            self.owner_uid, self.owner, self.group, self.kind, self.namespace, self.name
        )
    }
}

/// The key marks are made and checked with. Never printed. `None`: no key could be made (the
/// system has no random source): such a key verifies no mark at all, so nothing counts as a
/// child by a mark (fail closed), never a key anyone could guess.
#[derive(Clone)]
pub(crate) struct MarkKey(Option<Arc<hmac::Key>>);

impl std::fmt::Debug for MarkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MarkKey(..)")
    }
}

impl MarkKey {
    pub fn from_bytes(bytes: &[u8]) -> MarkKey {
        MarkKey(Some(Arc::new(hmac::Key::new(hmac::HMAC_SHA256, bytes))))
    }

    /// A key of this process only (`ork simulate`, and entries that write no mark); one that
    /// verifies nothing when the system has no random source.
    pub fn ephemeral() -> MarkKey {
        match random_bytes() {
            Ok(bytes) => MarkKey::from_bytes(&bytes),
            Err(e) => {
                tracing::error!("{e}: marks made now verify nowhere, and no mark is trusted");
                MarkKey(None)
            }
        }
    }

    /// The mark of `what`, as lowercase hex (empty, which verifies nowhere, without a key).
    pub fn mark(&self, what: &Marked<'_>) -> String {
        let Some(key) = &self.0 else {
            return String::new();
        };
        let tag = hmac::sign(key, what.message().as_bytes());
        tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether `mark` is this key's mark of `what` (constant time); never without a key.
    pub fn verifies(&self, mark: &str, what: &Marked<'_>) -> bool {
        let (Some(key), Some(tag)) = (&self.0, unhex(mark)) else {
            return false;
        };
        hmac::verify(key, what.message().as_bytes(), &tag).is_ok()
    }
}

/// 32 bytes from the system's random source; without one no key can be made, and no fixed
/// stand-in (all zeros) may take its place: anyone could forge marks with it.
fn random_bytes() -> Result<[u8; 32], String> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system's random source failed: no mark key can be made".to_string())?;
    Ok(bytes)
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() != 64 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The mark key's Secret as a key.
fn key_of(namespace: &str, s: Secret) -> Result<MarkKey, String> {
    let bytes = s
        .data
        .and_then(|d| d.get("key").map(|b| b.0.clone()))
        .filter(|b| b.len() >= 32)
        .ok_or_else(|| format!("Secret {namespace}/{KEY_SECRET} holds no 32-byte `key`"))?;
    Ok(MarkKey::from_bytes(&bytes))
}

fn explain(namespace: &str, e: &kube::Error) -> String {
    format!("Secret {namespace}/{KEY_SECRET}: {e}")
}

/// Reads the mark key from ork's namespace; `None` when no replica has made one yet (nothing
/// carries a mark then).
///
/// # Errors
/// The Secret cannot be read, or holds no usable key.
pub(crate) async fn load(client: &Client, namespace: &str) -> Result<Option<MarkKey>, String> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    match api.get_opt(KEY_SECRET).await {
        Ok(found) => found.map(|s| key_of(namespace, s)).transpose(),
        Err(e) => Err(explain(namespace, &e)),
    }
}

/// Reads the mark key from ork's namespace, creating it when there is none (the first replica
/// to get there wins; the others read what it wrote).
///
/// # Errors
/// The Secret cannot be read or created, or holds no usable key.
pub(crate) async fn load_or_create(client: &Client, namespace: &str) -> Result<MarkKey, String> {
    if let Some(key) = load(client, namespace).await? {
        return Ok(key);
    }
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let read = |s: Secret| key_of(namespace, s);
    let explain = |e: kube::Error| explain(namespace, &e);
    let secret = Secret {
        metadata: kube::core::ObjectMeta {
            name: Some(KEY_SECRET.into()),
            namespace: Some(namespace.into()),
            labels: Some(
                [(crate::labels::MANAGED.to_string(), "false".to_string())]
                    .into_iter()
                    .collect(),
            ),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(
            [("key".to_string(), ByteString(random_bytes()?.to_vec()))]
                .into_iter()
                .collect(),
        ),
        ..Default::default()
    };
    match api.create(&PostParams::default(), &secret).await {
        Ok(s) => read(s),
        Err(kube::Error::Api(s)) if s.code == 409 => {
            read(api.get(KEY_SECRET).await.map_err(explain)?)
        }
        Err(e) => Err(explain(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn what<'a>(namespace: &'a str, name: &'a str) -> Marked<'a> {
        Marked {
            owner_uid: "uid-1",
            owner: "webapp/team-a/web",
            group: "",
            kind: "ConfigMap",
            namespace,
            name,
        }
    }

    #[test]
    fn a_mark_verifies_for_what_it_marks_and_nothing_else() {
        let key = MarkKey::ephemeral();
        let mark = key.mark(&what("team-b", "cfg"));
        assert_eq!(mark.len(), 64);
        assert!(key.verifies(&mark, &what("team-b", "cfg")));
        for other in [what("team-c", "cfg"), what("team-b", "other")] {
            assert!(!key.verifies(&mark, &other), "{other:?}");
        }
        let mut forged = what("team-b", "cfg");
        forged.owner_uid = "uid-2";
        assert!(!key.verifies(&mark, &forged));
        assert!(
            !MarkKey::ephemeral().verifies(&mark, &what("team-b", "cfg")),
            "another key"
        );
        for bad in ["", "zz", &mark[..63], &format!("{mark}0")] {
            assert!(!key.verifies(bad, &what("team-b", "cfg")), "{bad:?}");
        }
        let same = MarkKey::from_bytes(b"0123456789abcdef0123456789abcdef");
        assert_eq!(
            same.mark(&what("team-b", "cfg")),
            MarkKey::from_bytes(b"0123456789abcdef0123456789abcdef").mark(&what("team-b", "cfg")),
            "a shared key gives every replica the same mark"
        );
    }

    /// Informational finding of issue 47: without a random source the key was all zeros, so
    /// anyone could forge marks; now a missing key verifies no mark, not even its own.
    #[test]
    fn without_a_key_no_mark_verifies() {
        let none = MarkKey(None);
        let zeros = MarkKey::from_bytes(&[0u8; 32]).mark(&what("team-b", "cfg"));
        assert!(!none.verifies(&zeros, &what("team-b", "cfg")));
        let own = none.mark(&what("team-b", "cfg"));
        assert!(!none.verifies(&own, &what("team-b", "cfg")));
    }
}
