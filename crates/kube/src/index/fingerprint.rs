//! Fingerprints of what a watch event carries: what counts as a change of a CR or a child.

use std::collections::BTreeSet;

use kube::core::DynamicObject;
use serde_json::Value;

use crate::fnv::Fnv;
use crate::labels::PREFIX;

/// What of a CR counts as a change to reconcile: its spec and data, labels and annotations that
/// are not ork's own (its prefix, and the keys in `own` the entry writes), and the deletion mark.
/// Not status, resourceVersion, managedFields or finalizers: ork's own writes touch only those.
/// Hashed as it is read, without building a copy: it runs for every watch event.
pub(crate) fn cr_fingerprint(obj: &DynamicObject, own: &BTreeSet<String>) -> u64 {
    let meta = &obj.metadata;
    let theirs = |(k, _): &(&String, &String)| !k.starts_with(PREFIX) && !own.contains(*k);
    let mut h = Fnv::default();
    h.pairs(meta.labels.iter().flatten().filter(theirs));
    h.pairs(meta.annotations.iter().flatten().filter(theirs));
    h.deletion(meta);
    h.without_status(&obj.data);
    h.finish()
}

/// What of a child counts as a change someone made: everything but server bookkeeping and
/// status.
pub(crate) fn child_fingerprint(obj: &DynamicObject) -> u64 {
    let meta = &obj.metadata;
    let mut h = Fnv::default();
    h.pairs(meta.labels.iter().flatten());
    h.pairs(meta.annotations.iter().flatten());
    h.bytes(b"[");
    for r in meta.owner_references.iter().flatten() {
        for part in [&r.api_version, &r.kind, &r.name, &r.uid] {
            h.str(part);
        }
        for flag in [r.controller, r.block_owner_deletion] {
            h.bytes(match flag {
                None => b"n",
                Some(true) => b"t",
                Some(false) => b"f",
            });
        }
    }
    h.bytes(b"]");
    h.deletion(meta);
    h.without_status(&obj.data);
    h.finish()
}

/// A stable 64-bit hash (FNV-1a) of a JSON value's canonical text: the same content gives the
/// same fingerprint in every run and on every machine (it is kept in the applied annotation).
pub(crate) fn fingerprint(v: &Value) -> u64 {
    let mut h = Fnv::default();
    h.value(v);
    h.finish()
}

/// The canonical byte streams of what the index compares, fed to [`Fnv`].
impl Fnv {
    /// A map's entries in the order given (a `BTreeMap`'s: canonical).
    fn pairs<'a>(&mut self, pairs: impl Iterator<Item = (&'a String, &'a String)>) {
        self.bytes(b"{");
        for (k, v) in pairs {
            self.str(k);
            self.str(v);
        }
        self.bytes(b"}");
    }

    fn deletion(&mut self, meta: &kube::core::ObjectMeta) {
        match &meta.deletion_timestamp {
            Some(t) => self.str(&t.0.to_string()),
            None => self.bytes(b"n"),
        }
    }

    /// The object's body but its `status`.
    fn without_status(&mut self, data: &Value) {
        match data {
            Value::Object(m) => {
                self.bytes(b"{");
                for (k, x) in m.iter().filter(|(k, _)| k.as_str() != "status") {
                    self.str(k);
                    self.value(x);
                }
                self.bytes(b"}");
            }
            other => self.value(other),
        }
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.bytes(b"n"),
            Value::Bool(b) => self.bytes(if *b { b"t" } else { b"f" }),
            Value::Number(n) => {
                self.bytes(b"#");
                self.bytes(n.to_string().as_bytes());
            }
            Value::String(s) => {
                self.bytes(b"\"");
                self.str(s);
            }
            Value::Array(a) => {
                self.bytes(b"[");
                for x in a {
                    self.value(x);
                }
                self.bytes(b"]");
            }
            Value::Object(m) => {
                // serde_json's map is ordered by key, so the order is canonical.
                self.bytes(b"{");
                for (k, x) in m {
                    self.str(k);
                    self.value(x);
                }
                self.bytes(b"}");
            }
        }
    }
}
