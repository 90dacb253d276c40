//! Objects as ork reads them off the wire (watch events, list pages, apply answers, its own
//! cache): a [`DynamicObject`] decoded in one pass and without `managedFields`.
//!
//! kube's own `Deserialize` of `DynamicObject` flattens the type and the body, which makes serde
//! buffer the whole object once before decoding it again, and it builds a JSON tree for every
//! `managedFields` entry, often the bigger half of an object, which ork drops at once. Here the
//! top level is walked once, and of `managedFields` only the managers' names are looked at:
//! whether ork's field manager is among them.
//!
//! Decoding is per object (SPEC §11): a field nested deeper than [`MAX_DEPTH`] is skipped
//! without recursion (the JSON decoder's own limit, 128 levels for the whole document, would fail
//! the whole list page and with it every other object of the entry). The object is still read,
//! without that subtree, and marked with [`UNDECODABLE`] so nothing acts on its partial content:
//! a reconcile of such a CR fails and says why, and the watches skip such children.

use std::borrow::Cow;

use kube::Resource;
use kube::core::{ApiResource, DynamicObject, DynamicResourceScope, ObjectMeta, TypeMeta};
use serde::de::value::MapAccessDeserializer;
use serde::de::{
    DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::labels::FIELD_MANAGER;

/// How deep a field's value may nest (below the object's top level) to be read. A list page
/// adds 3 levels and a watch event 2 above it, well inside the JSON decoder's 128.
pub const MAX_DEPTH: usize = 100;

/// The annotation, in ork's memory only (never written), that marks an object ork could not
/// read whole; its value says why. See [`undecodable`].
pub(crate) const UNDECODABLE: &str = "internal.ork.dev/undecodable";

/// Why an object could not be read whole, when it could not.
pub(crate) fn undecodable(meta: &ObjectMeta) -> Option<&str> {
    meta.annotations
        .as_ref()?
        .get(UNDECODABLE)
        .map(String::as_str)
}

/// One object of a list page as the watches read it: the object (without `managedFields`, with
/// every too-deep field skipped) and why it could not be read whole, if it could not.
pub type DecodedItem = (DynamicObject, Option<String>);

/// Decodes a list page (`{"items": [...]}`, as the API server answers a LIST) exactly as ork's
/// watches do, item by item; for the fuzz suite and tests.
///
/// # Errors
/// The page is not JSON, or an item is not an object with a `metadata` map (the API server
/// never sends either).
pub fn decode_list_page(text: &str) -> serde_json::Result<Vec<DecodedItem>> {
    let list: kube::core::ObjectList<Lean> = serde_json::from_str(text)?;
    Ok(list.items.into_iter().map(Lean::decoded).collect())
}

/// Decodes one watch event line (`{"type": "ADDED", "object": {...}}`) as ork's watches do.
///
/// # Errors
/// As [`decode_list_page`].
pub fn decode_watch_event(text: &str) -> serde_json::Result<Option<DecodedItem>> {
    let event: kube::core::WatchEvent<Lean> = serde_json::from_str(text)?;
    Ok(match event {
        kube::core::WatchEvent::Added(l)
        | kube::core::WatchEvent::Modified(l)
        | kube::core::WatchEvent::Deleted(l) => Some(l.decoded()),
        _ => None,
    })
}

/// An object as read, and whether ork's field manager wrote any of its fields.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub(crate) struct Lean {
    pub object: DynamicObject,
    #[serde(skip)]
    pub written_by_ork: bool,
}

impl Lean {
    /// Reads an object from its JSON text.
    ///
    /// # Errors
    /// The text is not a JSON object with a `metadata` map.
    pub fn from_str(text: &str) -> serde_json::Result<DynamicObject> {
        serde_json::from_str::<Lean>(text).map(|l| l.object)
    }

    /// An object known only by its metadata: what a watch reports deleted when a relist no
    /// longer has it.
    pub fn tombstone(metadata: kube::api::ObjectMeta) -> Lean {
        Lean {
            object: DynamicObject {
                types: None,
                metadata,
                data: serde_json::Value::Null,
            },
            written_by_ork: false,
        }
    }

    /// The object and why it could not be read whole, if it could not.
    fn decoded(self) -> DecodedItem {
        let why = undecodable(&self.object.metadata).map(str::to_string);
        (self.object, why)
    }
}

impl Resource for Lean {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::kind(dt)
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::group(dt)
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::version(dt)
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::api_version(dt)
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.object.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.object.metadata
    }
}

impl<'de> Deserialize<'de> for Lean {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Lean, D::Error> {
        d.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Lean;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lean, A::Error> {
        let (mut api_version, mut kind, mut metadata) = (None, None, None);
        let mut written_by_ork = false;
        let mut data = Map::new();
        let mut skipped: Option<String> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => api_version = Some(map.next_value::<String>()?),
                "kind" => kind = Some(map.next_value::<String>()?),
                "metadata" => {
                    metadata = Some(map.next_value_seed(MetaSeed {
                        written_by_ork: &mut written_by_ork,
                    })?);
                }
                _ => {
                    let mut too_deep = false;
                    let value = map.next_value_seed(Bounded {
                        depth: MAX_DEPTH,
                        too_deep: &mut too_deep,
                    })?;
                    if too_deep && skipped.is_none() {
                        skipped = Some(key.clone());
                    }
                    data.insert(key, value);
                }
            }
        }
        let mut metadata: ObjectMeta =
            metadata.ok_or_else(|| serde::de::Error::missing_field("metadata"))?;
        if let Some(path) = skipped {
            metadata.annotations.get_or_insert_default().insert(
                UNDECODABLE.into(),
                format!("the object's {path} is nested deeper than {MAX_DEPTH} levels; ork cannot read it"),
            );
        }
        let types = match (api_version, kind) {
            (Some(api_version), Some(kind)) => Some(TypeMeta { api_version, kind }),
            _ => None,
        };
        Ok(Lean {
            object: DynamicObject {
                types,
                metadata,
                data: Value::Object(data),
            },
            written_by_ork,
        })
    }
}

/// A JSON value read up to `depth` more levels; a deeper container is skipped unread (no
/// recursion: the decoder's own skipping is iterative) and `too_deep` set.
struct Bounded<'a> {
    depth: usize,
    too_deep: &'a mut bool,
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        if self.depth == 0 {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            *self.too_deep = true;
            return Ok(Value::Array(out));
        }
        while let Some(v) = seq.next_element_seed(Bounded {
            depth: self.depth - 1,
            too_deep: self.too_deep,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        if self.depth == 0 {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            *self.too_deep = true;
            return Ok(Value::Object(out));
        }
        while let Some(key) = map.next_key::<String>()? {
            let v = map.next_value_seed(Bounded {
                depth: self.depth - 1,
                too_deep: self.too_deep,
            })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// `metadata` read as `ObjectMeta` with its `managedFields` entry skipped.
struct MetaSeed<'a> {
    written_by_ork: &'a mut bool,
}

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = ObjectMeta;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ObjectMeta, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed<'_> {
    type Value = ObjectMeta;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ObjectMeta, A::Error> {
        let mut skipping = Skipping {
            inner: map,
            written_by_ork: false,
        };
        let meta = ObjectMeta::deserialize(MapAccessDeserializer::new(&mut skipping))?;
        *self.written_by_ork = skipping.written_by_ork;
        Ok(meta)
    }
}

/// The entries of `metadata` without `managedFields`, whose managers are only looked at.
struct Skipping<A> {
    inner: A,
    written_by_ork: bool,
}

/// A `managedFields` entry, of which only the manager counts (the rest is skipped unread).
#[derive(Deserialize)]
struct Manager {
    manager: Option<String>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Skipping<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.inner.next_key::<String>()? else {
                return Ok(None);
            };
            if key == "managedFields" {
                let managers = self.inner.next_value::<Option<Vec<Manager>>>()?;
                self.written_by_ork |= managers
                    .iter()
                    .flatten()
                    .any(|m| m.manager.as_deref() == Some(FIELD_MANAGER));
                continue;
            }
            return seed
                .deserialize(IntoDeserializer::<A::Error>::into_deserializer(key))
                .map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "a",
                "namespace": "ns",
                "labels": {"x": "y"},
                "managedFields": [
                    {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:data": {"f:k": {}}}},
                    {"manager": FIELD_MANAGER, "operation": "Apply", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:x": {}}}}},
                ],
                "resourceVersion": "7",
            },
            "data": {"k": "v", "n": [1, 2, {"deep": null}]},
            "status": {"ok": true},
        })
    }

    #[test]
    fn reads_what_kube_reads_without_the_managed_fields() {
        let text = object().to_string();
        let lean: Lean = serde_json::from_str(&text).expect("object");
        let mut kube: DynamicObject = serde_json::from_str(&text).expect("object");
        kube.metadata.managed_fields = None;
        assert_eq!(lean.object, kube);
        assert!(lean.written_by_ork);
        assert_eq!(
            serde_json::to_value(&lean).expect("serialises"),
            serde_json::to_value(&kube).expect("serialises")
        );
    }

    #[test]
    fn knows_when_ork_wrote_nothing() {
        let mut v = object();
        v["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
        let lean: Lean = serde_json::from_value(v).expect("object");
        assert!(!lean.written_by_ork);
        let mut v = object();
        v["metadata"]
            .as_object_mut()
            .expect("map")
            .remove("managedFields");
        let lean: Lean = serde_json::from_value(v).expect("object");
        assert!(!lean.written_by_ork);
    }

    /// `{"a": {"a": … 1 …}}`, `levels` maps deep.
    fn nested(levels: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
    }

    #[test]
    fn a_field_nested_too_deep_is_skipped_and_named_and_the_list_goes_on() {
        let deep = format!(
            r#"{{"metadata": {{"name": "deep"}}, "spec": {}, "status": {{"ok": true}}}}"#,
            nested(150)
        );
        let fine = object().to_string();
        // A list page, as kube reads it: the deep item does not fail its neighbours.
        let page = format!(r#"{{"items": [{fine}, {deep}, {fine}]}}"#);
        #[derive(Deserialize)]
        struct Page {
            items: Vec<Lean>,
        }
        let page: Page = serde_json::from_str(&page).expect("the page decodes");
        assert_eq!(page.items.len(), 3);
        assert_eq!(undecodable(&page.items[0].object.metadata), None);
        let why = undecodable(&page.items[1].object.metadata).expect("marked");
        assert!(
            why.contains("spec is nested deeper than 100 levels"),
            "{why}"
        );
        assert_eq!(page.items[1].object.data["status"]["ok"], true);
        // Exactly at the limit, the whole object is read.
        let edge = format!(
            r#"{{"metadata": {{"name": "edge"}}, "spec": {}}}"#,
            nested(MAX_DEPTH)
        );
        let lean: Lean = serde_json::from_str(&edge).expect("object");
        assert_eq!(undecodable(&lean.object.metadata), None);
        assert_eq!(lean.object.data["spec"].to_string(), nested(MAX_DEPTH));
        // Very deep (the API server takes a thousand levels and more) is no harder.
        let deeper = format!(
            r#"{{"metadata": {{"name": "x"}}, "spec": [{}]}}"#,
            nested(100_000)
        );
        let lean: Lean = serde_json::from_str(&deeper).expect("object");
        assert!(undecodable(&lean.object.metadata).is_some());
    }

    #[test]
    fn an_item_of_a_list_has_no_type_and_bad_input_is_an_error() {
        let mut v = object();
        let m = v.as_object_mut().expect("map");
        m.remove("apiVersion");
        m.remove("kind");
        let lean: Lean = serde_json::from_value(v).expect("object");
        assert_eq!(lean.object.types, None);
        for bad in [json!([]), json!({"kind": "X"}), json!({"metadata": 3})] {
            assert!(serde_json::from_value::<Lean>(bad).is_err());
        }
    }
}
