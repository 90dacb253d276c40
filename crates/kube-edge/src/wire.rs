//! Objects as ork reads them off the wire (watch events, list pages, apply answers, its own
//! cache): a [`DynamicObject`] decoded in one pass and without `managedFields`.
//!
//! kube's own `Deserialize` of `DynamicObject` flattens the type and the body, which makes serde
//! buffer the whole object once before decoding it again, and it builds a JSON tree for every
//! `managedFields` entry, often the bigger half of an object, which ork drops at once. Here the
//! top level is walked once, and of `managedFields` only the managers' names are looked at:
//! whether ork's field manager is among them.

use std::borrow::Cow;

use kube::Resource;
use kube::core::{ApiResource, DynamicObject, DynamicResourceScope, ObjectMeta, TypeMeta};
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::labels::FIELD_MANAGER;

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
                    let value = map.next_value::<Value>()?;
                    data.insert(key, value);
                }
            }
        }
        let metadata = metadata.ok_or_else(|| serde::de::Error::missing_field("metadata"))?;
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
