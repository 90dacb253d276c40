//! Text kept compressed against an object of its own kind (SPEC §17). What a replica keeps per
//! CR is mostly JSON that looks like its neighbours': the same keys, labels, owner references
//! and annotation names, with a name, a UID and a few values changed. LZ4 with the text of
//! another such object as its dictionary keeps only the differences: a Widget's ConfigMap of
//! 800 bytes in about 200, with a few microseconds to pack and less to unpack.
//!
//! A [`Packer`] takes its dictionary from what it packs: the first text, and again a text that
//! packs badly against it (the objects changed shape: a status appeared, annotations were
//! added), a bounded number of times. Each [`Packed`] holds the dictionary it was packed with,
//! so an older value still unpacks after the packer moved on, and the dictionary goes with the
//! last value that needs it.

use std::sync::{Arc, Mutex, PoisonError};

/// Texts shorter than this are kept as they are: a dictionary would not pay for itself.
const SHORT: usize = 64;

/// A text packing to more than this part of its size makes it the next dictionary.
const POOR: f64 = 0.4;

/// How often a packer takes a new dictionary: a cache of objects of many shapes packs less well
/// rather than keeping a dictionary per object.
const REFRESHES: u32 = 16;

/// Packs texts against the dictionary it holds; one per cache (one kind of object).
#[derive(Debug, Default)]
pub(crate) struct Packer {
    state: Mutex<Dictionary>,
}

#[derive(Debug, Default)]
struct Dictionary {
    text: Option<Arc<[u8]>>,
    refreshes: u32,
}

/// A packed text.
#[derive(Clone)]
pub(crate) struct Packed {
    /// The dictionary it was packed against (`None`: kept as it is).
    dict: Option<Arc<[u8]>>,
    bytes: Box<[u8]>,
}

impl std::fmt::Debug for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packed")
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Two packed texts are equal when their texts are.
impl PartialEq for Packed {
    fn eq(&self, other: &Packed) -> bool {
        let same_dict = match (&self.dict, &other.dict) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        if same_dict {
            self.bytes == other.bytes
        } else {
            self.unpack() == other.unpack()
        }
    }
}

impl Eq for Packed {}

impl Packer {
    pub fn pack(&self, text: &str) -> Packed {
        let raw = text.as_bytes();
        if raw.len() < SHORT {
            return Packed {
                dict: None,
                bytes: raw.into(),
            };
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let dict = match &state.text {
            Some(d) => d.clone(),
            None => {
                let d: Arc<[u8]> = raw.into();
                state.text = Some(d.clone());
                d
            }
        };
        let bytes = lz4_flex::block::compress_prepend_size_with_dict(raw, &dict);
        if bytes.len() as f64 > raw.len() as f64 * POOR && state.refreshes < REFRESHES {
            // The objects changed shape: pack the next ones against this one (this one stays
            // packed against the old dictionary, which it holds).
            state.text = Some(raw.into());
            state.refreshes += 1;
        }
        Packed {
            dict: Some(dict),
            bytes: bytes.into_boxed_slice(),
        }
    }
}

impl Packed {
    /// The text again (`None` only if the bytes were damaged, which safe code cannot do).
    pub fn unpack(&self) -> Option<String> {
        let raw = match &self.dict {
            None => self.bytes.to_vec(),
            Some(dict) => lz4_flex::block::decompress_size_prepended_with_dict(&self.bytes, dict)
                .inspect_err(|e| tracing::error!(error = %e, "a packed text does not unpack"))
                .ok()?,
        };
        String::from_utf8(raw)
            .inspect_err(|e| tracing::error!(error = %e, "a packed text is not UTF-8"))
            .ok()
    }

    /// Bytes it keeps besides its dictionary.
    #[cfg(test)]
    pub fn size(&self) -> usize {
        self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(i: usize) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"w-{i}-config","namespace":"bench","uid":"6b0d{i:04}-9f1e-4c2a-8d3b-0c1e2f3a{i:04}","resourceVersion":"{}","creationTimestamp":"2026-12-01T21:25:18Z","labels":{{"app.kubernetes.io/managed-by":"ork","ork.dev/owner-uid":"1f2e{i:04}-aaaa-bbbb-cccc-0123456{i:05}"}},"annotations":{{"ork.dev/owner":"widgets/bench/w-{i}"}},"ownerReferences":[{{"apiVersion":"bench.ork.dev/v1","kind":"Widget","name":"w-{i}","uid":"1f2e{i:04}-aaaa-bbbb-cccc-0123456{i:05}","controller":true,"blockOwnerDeletion":true}}]}},"data":{{"size":"{}","color":"blue"}}}}"#,
            1000 + i,
            i % 7
        )
    }

    #[test]
    fn texts_unpack_as_they_were_packed() {
        let p = Packer::default();
        for t in [
            "",
            "short",
            &config_map(1),
            &"x".repeat(5000),
            "ünïcode ✓ text long enough to be packed, well over sixty-four bytes",
        ] {
            assert_eq!(p.pack(t).unpack().as_deref(), Some(t));
        }
    }

    #[test]
    fn objects_of_one_kind_pack_to_a_fraction_of_their_size() {
        let p = Packer::default();
        let texts: Vec<String> = (0..200).map(config_map).collect();
        let packed: Vec<Packed> = texts.iter().map(|t| p.pack(t)).collect();
        let raw: usize = texts.iter().map(String::len).sum();
        let kept: usize = packed.iter().map(Packed::size).sum();
        assert!(kept * 3 < raw, "{kept} bytes kept of {raw}");
        for (t, p) in texts.iter().zip(&packed) {
            assert_eq!(p.unpack().as_deref(), Some(t.as_str()));
        }
    }

    #[test]
    fn values_packed_before_a_new_dictionary_still_unpack() {
        let p = Packer::default();
        let old = p.pack(&config_map(1));
        // Another shape entirely: it becomes the dictionary.
        let other: String = (0..100)
            .map(|i| format!("{{\"k{i}\":[{i},{i}]}}"))
            .collect();
        let _ = p.pack(&other);
        let newer = p.pack(&other.replace("k1", "q1"));
        assert_eq!(old.unpack(), Some(config_map(1)));
        assert_eq!(newer.unpack(), Some(other.replace("k1", "q1")));
        assert!(newer.size() * 5 < other.len());
    }
}
