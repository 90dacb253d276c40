//! `spec.crds.<name>.setup`: manifests `ork run` applies when the entry starts (a development
//! helper), in either of Orkestra's forms: a list of files, or `{apply, wait}` whose waits must
//! pass before the entry starts.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::duration::Duration;

/// `setup`: the files applied in order, what is waited for after each of them, and what is
/// waited for after them all. It reads as the list of its files (`for f in entry.setup.iter()`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Setup {
    files: Vec<PathBuf>,
    /// Waited for after the file of the same index, before the next is applied.
    after: Vec<Vec<SetupWait>>,
    /// Waited for after every file is applied; the entry starts once each has passed.
    pub wait: Vec<SetupWait>,
    /// Written as `{apply, wait}` rather than as a list.
    map_form: bool,
    /// Which files were written as `{path, wait}` rather than as a path.
    structured: Vec<bool>,
}

/// `setup.wait[]` (and `setup.apply[].wait[]`): an object that must exist, or be ready, before
/// the entry starts; `ork run` stops with this wait named when it does not within `timeout`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetupWait {
    /// The object's kind as the API server serves it (`Deployment`, `Secret`, a CR's kind; its
    /// plural is read too).
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// Where a namespaced object is; absent: the entry's one namespace, else `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Wait until the object is ready, not only there: a Deployment rolled out (every replica
    /// updated and available), any other object with condition `Ready` `True`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ready: bool,
    /// How long to wait.
    #[serde(default = "default_wait_timeout")]
    pub timeout: Duration,
}

fn default_wait_timeout() -> Duration {
    Duration::from_secs(30)
}

impl Setup {
    /// A list of files, nothing waited for.
    pub fn files(files: Vec<PathBuf>) -> Setup {
        Setup {
            after: vec![Vec::new(); files.len()],
            structured: vec![false; files.len()],
            files,
            ..Setup::default()
        }
    }

    /// What is waited for after file `index` is applied.
    pub fn waits_after(&self, index: usize) -> &[SetupWait] {
        self.after.get(index).map_or(&[], Vec::as_slice)
    }

    /// Neither a file nor a wait (not written, or written empty).
    pub fn is_unset(&self) -> bool {
        !self.has_work()
    }

    /// Whether `ork run` has anything to do for it: a file to apply or a wait.
    pub fn has_work(&self) -> bool {
        !self.files.is_empty() || !self.wait.is_empty()
    }

    /// The field of file `index`, relative to the entry (`setup[0]`, `setup.apply[0]`,
    /// `setup.apply[0].path`), for messages about it.
    pub fn field_of(&self, index: usize) -> String {
        match (self.map_form, self.structured.get(index).copied()) {
            (false, Some(false) | None) => format!("setup[{index}]"),
            (false, Some(true)) => format!("setup[{index}].path"),
            (true, Some(false) | None) => format!("setup.apply[{index}]"),
            (true, Some(true)) => format!("setup.apply[{index}].path"),
        }
    }

    fn from_items(items: Vec<SetupItem>, wait: Vec<SetupWait>, map_form: bool) -> Setup {
        let mut setup = Setup {
            wait,
            map_form,
            ..Setup::default()
        };
        for item in items {
            match item {
                SetupItem::Path(path) => {
                    setup.files.push(path);
                    setup.after.push(Vec::new());
                    setup.structured.push(false);
                }
                SetupItem::Entry(SetupEntry { path, wait }) => {
                    setup.files.push(path);
                    setup.after.push(wait);
                    setup.structured.push(true);
                }
            }
        }
        setup
    }

    fn items(&self) -> Vec<SetupItem> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, path)| match self.structured.get(i) {
                Some(true) => SetupItem::Entry(SetupEntry {
                    path: path.clone(),
                    wait: self.waits_after(i).to_vec(),
                }),
                _ => SetupItem::Path(path.clone()),
            })
            .collect()
    }
}

impl Deref for Setup {
    type Target = [PathBuf];

    fn deref(&self) -> &[PathBuf] {
        &self.files
    }
}

impl DerefMut for Setup {
    /// The files, to resolve their paths in place.
    fn deref_mut(&mut self) -> &mut [PathBuf] {
        &mut self.files
    }
}

impl<'a> IntoIterator for &'a Setup {
    type Item = &'a PathBuf;
    type IntoIter = std::slice::Iter<'a, PathBuf>;

    fn into_iter(self) -> Self::IntoIter {
        self.files.iter()
    }
}

/// `setup.apply[]` (or an item of the list form): a file, or a file and what to wait for after
/// applying it.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
enum SetupItem {
    /// A manifest file, relative to the Katalog's folder.
    Path(PathBuf),
    /// A manifest file and the objects to wait for once it is applied.
    Entry(SetupEntry),
}

/// `{path, wait}` of `setup.apply[]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetupEntry {
    /// A manifest file, relative to the Katalog's folder.
    path: PathBuf,
    /// Waited for once the file is applied, before the next one is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    wait: Vec<SetupWait>,
}

/// `setup` as a map (Orkestra's `helm` is refused: ork installs no charts).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetupFields {
    /// The files to apply, in order.
    #[serde(default)]
    apply: Vec<SetupItem>,
    /// Waited for after every file is applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    wait: Vec<SetupWait>,
}

/// Manifests applied when the entry starts, relative to the Katalog's folder: a list of files,
/// or `{apply, wait}`. A development helper, which `ork run --no-dev-files` (as the bundle runs
/// it) skips.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum SetupSchema {
    /// The files to apply, in order.
    Files(Vec<SetupItem>),
    /// The files to apply and what to wait for.
    Steps(SetupFields),
}

impl JsonSchema for Setup {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Setup".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        SetupSchema::json_schema(g)
    }
}

impl Serialize for Setup {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.map_form {
            SetupFields {
                apply: self.items(),
                wait: self.wait.clone(),
            }
            .serialize(s)
        } else {
            self.items().serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for Setup {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Setup;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of files, or {apply: [files], wait: [objects]}")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Setup, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<SetupItem>()? {
                    items.push(item);
                }
                Ok(Setup::from_items(items, Vec::new(), false))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Setup, A::Error> {
                let f =
                    SetupFields::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Setup::from_items(f.apply, f.wait, true))
            }
        }
        d.deserialize_any(Visit)
    }
}

impl<'de> Deserialize<'de> for SetupItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = SetupItem;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a file, or {path, wait}")
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<SetupItem, E> {
                Ok(SetupItem::Path(PathBuf::from(s)))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<SetupItem, A::Error> {
                SetupEntry::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(SetupItem::Entry)
            }
        }
        d.deserialize_any(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_forms_read_as_their_files_and_write_back_as_written() {
        let list: Setup = serde_json::from_value(json!(["a.yaml", "b.yaml"])).expect("list");
        assert_eq!(list[..], [PathBuf::from("a.yaml"), PathBuf::from("b.yaml")]);
        assert!(list.wait.is_empty() && list.waits_after(0).is_empty());
        assert_eq!(list.field_of(1), "setup[1]");
        assert_eq!(
            serde_json::to_value(&list).expect("json"),
            json!(["a.yaml", "b.yaml"])
        );

        let map = json!({
            "apply": ["a.yaml", {"path": "b.yaml", "wait": [{"kind": "Secret", "name": "s"}]}],
            "wait": [{"kind": "Deployment", "name": "d", "namespace": "x", "ready": true, "timeout": "1m"}]
        });
        let steps: Setup = serde_json::from_value(map.clone()).expect("map");
        assert_eq!(
            steps[..],
            [PathBuf::from("a.yaml"), PathBuf::from("b.yaml")]
        );
        assert!(steps.waits_after(0).is_empty());
        assert_eq!(steps.waits_after(1)[0].kind, "Secret");
        assert_eq!(steps.waits_after(1)[0].timeout, Duration::from_secs(30));
        assert_eq!(steps.wait[0].timeout, Duration::from_secs(60));
        assert!(steps.wait[0].ready);
        assert_eq!(steps.field_of(0), "setup.apply[0]");
        assert_eq!(steps.field_of(1), "setup.apply[1].path");
        let back = serde_json::to_value(&steps).expect("json");
        assert_eq!(back["apply"][1]["wait"][0]["name"], "s");
        assert_eq!(back["wait"][0]["timeout"], "1m0s");
        let waits_only: Setup =
            serde_json::from_value(json!({"wait": [{"kind": "Secret", "name": "s"}]}))
                .expect("waits alone");
        assert!(waits_only.is_empty() && waits_only.has_work());
    }
}
