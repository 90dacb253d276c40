//! Parsing an answer into a JSON value while noticing repeated keys, which `serde_json` would
//! otherwise resolve silently by keeping the last one.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// At most this many repeated keys are reported for one answer.
const MAX_REPORTED: usize = 20;

/// An answer's JSON and every place a key was repeated (`resources[0].metadata: "name"`).
pub(crate) struct Parsed {
    pub value: Value,
    pub repeated_keys: Vec<String>,
}

/// Parses `body` as one JSON value, recording repeated object keys.
///
/// # Errors
/// Not JSON, or trailing characters after the value.
pub(crate) fn parse(body: &[u8]) -> Result<Parsed, serde_json::Error> {
    let mut ctx = Context::default();
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Node { ctx: &mut ctx }.deserialize(&mut de)?;
    de.end()?;
    Ok(Parsed {
        value,
        repeated_keys: ctx.repeated,
    })
}

enum Segment {
    Key(String),
    Index(usize),
}

#[derive(Default)]
struct Context {
    path: Vec<Segment>,
    repeated: Vec<String>,
}

impl Context {
    fn record(&mut self, key: &str) {
        if self.repeated.len() >= MAX_REPORTED {
            return;
        }
        let mut place = String::new();
        for segment in &self.path {
            match segment {
                Segment::Key(k) if place.is_empty() => place.push_str(k),
                Segment::Key(k) => {
                    place.push('.');
                    place.push_str(k);
                }
                Segment::Index(i) => place.push_str(&format!("[{i}]")),
            }
        }
        if place.is_empty() {
            place.push_str("the top level");
        }
        self.repeated.push(format!("{place}: key {key:?}"));
    }
}

/// One JSON value at the context's current path.
struct Node<'a> {
    ctx: &'a mut Context,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
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

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let ctx = self.ctx;
        let mut items = Vec::new();
        loop {
            ctx.path.push(Segment::Index(items.len()));
            let next = seq.next_element_seed(Node { ctx: &mut *ctx });
            ctx.path.pop();
            match next? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let ctx = self.ctx;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            ctx.path.push(Segment::Key(key.clone()));
            let value = map.next_value_seed(Node { ctx: &mut *ctx });
            ctx.path.pop();
            let value = value?;
            if object.contains_key(&key) {
                ctx.record(&key);
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_found_at_every_depth() {
        let body = br#"{"result":"ok","result":"error","resources":[{"apiVersion":"v1",
            "metadata":{"name":"a","name":"b"}},{"kind":"X","kind":"Y"}]}"#;
        let parsed = parse(body).expect("JSON");
        assert_eq!(
            parsed.repeated_keys,
            [
                "the top level: key \"result\"",
                "resources[0].metadata: key \"name\"",
                "resources[1]: key \"kind\""
            ]
        );
        assert_eq!(parsed.value["resources"][0]["metadata"]["name"], "b");
    }

    #[test]
    fn parsing_gives_the_same_value_as_serde_json() {
        let body =
            br#"{"a":[1,-2,3.5,1e400,true,null,"x\u0000"],"b":{"c":{}},"d":18446744073709551615}"#;
        let ours = parse(body);
        let theirs: Result<Value, _> = serde_json::from_slice(body);
        // serde_json refuses 1e400 (out of range) too: both must agree on errors.
        assert_eq!(ours.is_err(), theirs.is_err());
        let body = br#"{"a":[1,-2,3.5,true,null,"x\u0000"],"b":{"c":{}},"d":18446744073709551615}"#;
        let ours = parse(body).expect("JSON").value;
        let theirs: Value = serde_json::from_slice(body).expect("JSON");
        assert_eq!(ours, theirs);
        assert!(parse(b"{} x").is_err(), "trailing characters");
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let e = parse(deep.as_bytes()).err().expect("nesting is bounded");
        assert!(e.to_string().contains("recursion limit"), "{e}");
    }
}
