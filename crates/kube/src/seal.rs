//! ork's record of a CR's last successful reconcile (SPEC §17): a fingerprint of what the
//! service saw of the CR and of the children it left, kept in the metrics annotation ork
//! writes anyway, and of the entry's configuration that shapes the service's answer. At a
//! start, a leader change or a shard gained, a CR whose record still matches is not called:
//! nothing changed since. One whose CR and children match but whose entry was reconfigured
//! (endpoint, args, managed types, payload) is called, spread over a while rather than with
//! every other CR of the entry at once (SPEC §19).

use kube::core::DynamicObject;

use crate::fnv::Fnv;
use crate::index::{ChildRef, cr_fingerprint};

/// The seal of `cr` with `children` (each with its fingerprint) under the entry's
/// configuration `config` ([`config_fingerprint`]), as the metrics annotation keeps it: three
/// 64-bit hashes in hex.
pub(crate) fn seal<'a>(
    cr: &DynamicObject,
    own_metadata: &std::collections::BTreeSet<String>,
    children: impl IntoIterator<Item = (&'a ChildRef, u64)>,
    config: u64,
) -> String {
    let mut children: Vec<(&ChildRef, u64)> = children.into_iter().collect();
    children.sort();
    let mut h = Fnv::default();
    for (c, fingerprint) in children {
        h.str(&c.type_index.to_string());
        h.str(c.namespace.as_deref().unwrap_or_default());
        h.str(&c.name);
        h.str(&fingerprint.to_string());
    }
    format!(
        "{:016x}.{:016x}.{config:016x}",
        cr_fingerprint(cr, own_metadata),
        h.finish()
    )
}

/// The fingerprint of what of an entry's `remote` block shapes the service's answer or what
/// ork does with it: where it is asked, its args, the managed types, the payload, pruning and
/// finalizing (not its timeout, limits, credential, TLS, admission or rollout).
pub(crate) fn config_fingerprint(remote: &ork_katalog::Remote) -> u64 {
    let shaping = serde_json::json!({
        "endpoint": remote.endpoint.as_ref().map(|t| t.source()),
        "command": remote.command,
        "args": remote.args,
        "managedResources": remote.managed_resources,
        "payload": remote.payload,
        "prune": remote.prune,
        "finalize": remote.finalize,
    });
    let mut h = Fnv::default();
    h.str(&shaping.to_string());
    h.finish()
}

/// How a CR stands against the seal its last successful reconcile left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Since {
    /// The same CR, children and configuration: nothing to call the service for.
    Unchanged,
    /// The same CR and children, but the entry was reconfigured since.
    Reconfigured,
    /// The CR or its children changed (or there is no seal).
    Changed,
}

/// `recorded` (a seal read off the CR) against `now` (the seal of the CR as it is). A seal an
/// older ork wrote (without the configuration's part) counts as of the same configuration:
/// an upgrade of ork calls nobody.
pub(crate) fn compare(recorded: &str, now: &str) -> Since {
    let mut r = recorded.splitn(3, '.');
    let mut n = now.splitn(3, '.');
    let same_objects = r.next() == n.next() && r.next() == n.next();
    if !same_objects {
        return Since::Changed;
    }
    match (r.next(), n.next()) {
        (None, _) => Since::Unchanged,
        (a, b) if a == b => Since::Unchanged,
        _ => Since::Reconfigured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_tells_a_changed_cr_from_a_reconfigured_entry_and_an_old_seal_counts_as_current() {
        let now = "00000000000000aa.00000000000000bb.00000000000000cc";
        assert_eq!(compare(now, now), Since::Unchanged);
        assert_eq!(
            compare("00000000000000aa.00000000000000bb", now),
            Since::Unchanged,
            "an older ork's seal"
        );
        assert_eq!(
            compare("00000000000000aa.00000000000000bb.00000000000000dd", now),
            Since::Reconfigured
        );
        assert_eq!(
            compare("00000000000000a0.00000000000000bb.00000000000000cc", now),
            Since::Changed
        );
        assert_eq!(compare("", now), Since::Changed);
    }

    #[test]
    fn the_configuration_s_fingerprint_follows_what_shapes_the_answer_only() {
        let remote = |extra: serde_json::Value| -> ork_katalog::Remote {
            let mut v = serde_json::json!({"endpoint": "http://127.0.0.1:1/r", "timeout": "5s"});
            if let (Some(m), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
                m.extend(e);
            }
            serde_json::from_value(v).expect("a remote")
        };
        let base = config_fingerprint(&remote(serde_json::json!({})));
        assert_eq!(
            base,
            config_fingerprint(&remote(serde_json::json!({"timeout": "9s"}))),
            "a timeout does not change the answer"
        );
        assert_ne!(
            base,
            config_fingerprint(&remote(serde_json::json!({"args": {"tier": "gold"}})))
        );
        assert_ne!(
            base,
            config_fingerprint(&remote(
                serde_json::json!({"endpoint": "http://127.0.0.1:2/r"})
            ))
        );
    }
}
