//! List pages and watch events as the API server sends them, through the decoder of ork's
//! watches (`ork_kube::wire`, SPEC §11 second round): objects nested around and far beyond the
//! depth ork reads, large strings, fields of every JSON type, `managedFields` of several
//! managers, and (dirty cases) metadata of the wrong shape.
//!
//! Properties: a page whose items all have well-formed metadata always decodes, whatever their
//! fields hold, with every item; an item is marked undecodable exactly when one of its fields
//! nests deeper than `MAX_DEPTH`, and the mark names that field; an unmarked item's fields are
//! exactly what was sent and `managedFields` is gone; a watch event decodes as the same item.

use ork_kube::wire::{MAX_DEPTH, decode_list_page, decode_watch_event};
use serde_json::Value;

use crate::generate::Gen;
use crate::runner::{Case, Target};

#[derive(Debug)]
pub struct Lists;

/// One generated item: its JSON text, and what the oracle expects of it.
struct Item {
    text: String,
    name: String,
    /// The first field (in order sent) nested deeper than `MAX_DEPTH`.
    too_deep: Option<String>,
    /// Field name → its JSON text, for the fields read whole.
    fields: Vec<(String, String)>,
    /// Whether `metadata` is of a shape the API server never sends.
    malformed: bool,
}

impl Target for Lists {
    fn name(&self) -> &'static str {
        "list"
    }

    fn about(&self) -> &'static str {
        "list pages and watch events (deep, large, mistyped objects) through the watches' decoder"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        let n = 1 + g.below(5);
        let items: Vec<Item> = (0..n).map(|i| item(g, i)).collect();
        let page = format!(
            r#"{{"apiVersion":"v1","kind":"List","metadata":{{"resourceVersion":"7"}},"items":[{}]}}"#,
            items
                .iter()
                .map(|i| i.text.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        case.note("page", &crate::runner::cut(&page, 2000));
        let malformed = items.iter().any(|i| i.malformed);
        case.begin();
        let decoded = decode_list_page(&page);
        let event = items.first().map(|first| {
            decode_watch_event(&format!(r#"{{"type":"ADDED","object":{}}}"#, first.text))
        });
        let decoded = match decoded {
            Ok(d) => d,
            Err(e) => {
                case.check(malformed, "page-decodes", || {
                    format!("a page of well-formed objects failed to decode: {e}")
                });
                return;
            }
        };
        case.check(decoded.len() == items.len(), "every-item", || {
            format!("{} items sent, {} decoded", items.len(), decoded.len())
        });
        for (want, (object, why)) in items.iter().zip(&decoded) {
            if want.malformed {
                continue;
            }
            check_item(case, want, object, why.as_deref());
        }
        if let (Some(first), Some(event)) = (items.first().filter(|i| !i.malformed), event) {
            match event {
                Ok(Some((object, why))) => check_item(case, first, &object, why.as_deref()),
                Ok(None) => case.fail("event-decodes", "an ADDED event decoded as no object"),
                Err(e) => case.fail(
                    "event-decodes",
                    format!("a watch event of a well-formed object failed to decode: {e}"),
                ),
            }
        }
    }
}

fn check_item(case: &mut Case, want: &Item, object: &kube::core::DynamicObject, why: Option<&str>) {
    case.check(
        object.metadata.name.as_deref() == Some(want.name.as_str()),
        "named",
        || format!("item {:?} decoded as {:?}", want.name, object.metadata.name),
    );
    case.check(
        object.metadata.managed_fields.is_none(),
        "no-managed-fields",
        || format!("{}: managedFields kept", want.name),
    );
    match (&want.too_deep, why) {
        (None, None) => {}
        (Some(field), Some(why)) => case.check(
            why.contains(&format!(
                "the object's {field} is nested deeper than {MAX_DEPTH} levels"
            )),
            "deep-named",
            || format!("{}: the mark does not name {field}: {why}", want.name),
        ),
        (None, Some(why)) => case.fail(
            "deep-exactly",
            format!(
                "{}: marked although no field is deeper than {MAX_DEPTH}: {why}",
                want.name
            ),
        ),
        (Some(field), None) => case.fail(
            "deep-exactly",
            format!(
                "{}: {field} nests deeper than {MAX_DEPTH} and was not marked",
                want.name
            ),
        ),
    }
    for (field, text) in &want.fields {
        let sent: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                case.fail("oracle", format!("the generated {field} is not JSON: {e}"));
                continue;
            }
        };
        case.check(
            object.data.get(field) == Some(&sent),
            "fields-whole",
            || format!("{}: {field} changed in decoding", want.name),
        );
    }
}

fn item(g: &mut Gen, index: usize) -> Item {
    let name = format!("{}-{index}", g.ident());
    let malformed = g.bad(12);
    let metadata = if malformed {
        match g.below(4) {
            0 => format!(r#"{{"name":"{name}","labels":3}}"#),
            1 => format!(r#"{{"name":{}}}"#, g.below(1000)),
            2 => format!(r#"{{"name":"{name}","managedFields":{{"manager":1}}}}"#),
            _ => "[]".to_string(),
        }
    } else {
        let managers: Vec<String> = (0..g.below(4))
            .map(|_| {
                let m = g.word(&["kubectl", "orkestra-remote", "kube-controller-manager", "x"]);
                format!(
                    r#"{{"manager":"{m}","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{}}}"#,
                    nested_text(g.below(40), "1").0
                )
            })
            .collect();
        format!(
            r#"{{"name":"{name}","namespace":"ns","uid":"u-{index}","resourceVersion":"{}","labels":{{"a":"b"}},"managedFields":[{}]}}"#,
            g.below(100),
            managers.join(",")
        )
    };
    let mut fields = Vec::new();
    let mut too_deep = None;
    let mut parts = vec![format!(r#""metadata":{metadata}"#)];
    if g.coin() {
        parts.insert(
            0,
            r#""apiVersion":"demo.ork.dev/v1","kind":"WebApp""#.to_string(),
        );
    }
    for field in ["spec", "status", "data"] {
        if !g.coin() && field != "spec" {
            continue;
        }
        let (text, depth) = value_text(g);
        if depth > MAX_DEPTH {
            too_deep.get_or_insert_with(|| field.to_string());
        } else {
            fields.push((field.to_string(), text.clone()));
        }
        parts.push(format!(r#""{field}":{text}"#));
    }
    Item {
        text: format!("{{{}}}", parts.join(",")),
        name,
        too_deep,
        fields,
        malformed,
    }
}

/// A field's value as JSON text and its depth (containers nested; 0 for a scalar).
fn value_text(g: &mut Gen) -> (String, usize) {
    let depth = match g.below(10) {
        0 => MAX_DEPTH - 1 + g.below(4),
        1 => MAX_DEPTH + 1 + g.below(60),
        2 if g.full() && g.one_in(4) => 1_000 + g.below(50_000),
        2 => 150,
        _ => g.below(8),
    };
    let (bottom, bottom_depth) = scalar(g);
    let (text, d) = nested_text(depth, &bottom);
    (text, d + bottom_depth)
}

/// `depth` containers (maps and lists, mixed) around `bottom`, built as text without recursion.
fn nested_text(depth: usize, bottom: &str) -> (String, usize) {
    let mut open = String::with_capacity(depth * 6);
    let mut close = String::with_capacity(depth * 2);
    for level in 0..depth {
        if level % 3 == 2 {
            open.push('[');
            close.push(']');
        } else {
            open.push_str(r#"{"k":"#);
            close.push('}');
        }
    }
    let close: String = close.chars().rev().collect();
    (format!("{open}{bottom}{close}"), depth)
}

/// What sits at the bottom: a scalar (depth 0), a string sometimes large or hostile, or an
/// empty container (depth 1).
fn scalar(g: &mut Gen) -> (String, usize) {
    match g.below(8) {
        0 => ("null".into(), 0),
        1 => ("true".into(), 0),
        2 => (
            (*g.pick(&["0", "-1", "3.5", "12345678901234567890", "1e10", "-0.25"])).to_string(),
            0,
        ),
        3 => {
            let n = g.len(64, 4096, 1 << 20);
            (Value::String("x".repeat(n)).to_string(), 0)
        }
        4 => ("{}".into(), 1),
        5 => ("[]".into(), 1),
        _ => (Value::String(g.hostile_str()).to_string(), 0),
    }
}
