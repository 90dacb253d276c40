//! Custom resources as a CR author could write them: the usual shape, with hostile values in
//! every field a template or condition might read.

use crate::doc::Node;
use crate::generate::Gen;

/// Field names templates and conditions in these targets read.
pub const SPEC_FIELDS: &[&str] = &[
    "image",
    "replicas",
    "port",
    "environment",
    "h",
    "u",
    "p",
    "q",
    "list",
    "items",
    "n",
    "mode",
    "re",
    "fmt",
    "tier",
    "name",
    "nested",
];

/// A CR: `apiVersion`, `kind`, `metadata` and a `spec` with hostile values.
pub fn cr(g: &mut Gen) -> Node {
    let mut spec = Vec::new();
    for field in SPEC_FIELDS {
        if g.one_in(3) {
            continue;
        }
        spec.push(((*field).to_string(), value(g, 3)));
    }
    for _ in 0..g.below(3) {
        spec.push((g.hostile_str(), value(g, 4)));
    }
    let mut metadata = vec![
        ("name".to_string(), Node::str(name(g))),
        ("namespace".to_string(), Node::str(g.ident())),
    ];
    if g.coin() {
        metadata.push(("labels".into(), string_map(g)));
    }
    if g.one_in(3) {
        metadata.push(("annotations".into(), string_map(g)));
    }
    if g.one_in(3) {
        metadata.push(("generation".into(), Node::Num(g.json_number())));
    }
    if g.one_in(4) {
        metadata.push(("uid".into(), Node::str(g.hostile_str())));
    }
    if g.one_in(8) {
        metadata.push((
            "deletionTimestamp".into(),
            Node::str("2024-01-01T00:00:00Z"),
        ));
    }
    let mut top = vec![
        ("apiVersion".to_string(), Node::str("demo.ork.dev/v1")),
        ("kind".to_string(), Node::str("WebApp")),
        ("metadata".to_string(), Node::Obj(metadata)),
        ("spec".to_string(), Node::Obj(spec)),
    ];
    if g.one_in(3) {
        top.push(("status".into(), value(g, 3)));
    }
    if g.one_in(20) {
        // A CR whose pieces are the wrong shape altogether.
        let at = g.below(top.len());
        top[at].1 = value(g, 2);
    }
    let mut cr = Node::Obj(top);
    fit(&mut cr);
    cr
}

/// The most a CR can hold: etcd's default request limit.
pub const MAX_CR_BYTES: usize = 1536 * 1024;

/// Drops the largest fields of `spec` (then of the CR) until its JSON fits [`MAX_CR_BYTES`]:
/// the API server would never hand ork a larger object.
fn fit(cr: &mut Node) {
    for key in ["spec", ""] {
        loop {
            if cr.to_json().len() <= MAX_CR_BYTES {
                return;
            }
            let node = if key.is_empty() {
                &mut *cr
            } else {
                match cr.get_mut(key) {
                    Some(n) => n,
                    None => break,
                }
            };
            let Node::Obj(entries) = node else { break };
            let Some(largest) = (0..entries.len()).max_by_key(|i| entries[*i].1.to_json().len())
            else {
                break;
            };
            entries.remove(largest);
        }
    }
}

fn name(g: &mut Gen) -> String {
    if g.one_in(4) {
        g.hostile_str()
    } else {
        g.ident()
    }
}

/// A map of strings, sometimes with other values in it.
pub fn string_map(g: &mut Gen) -> Node {
    let n = g.len(3, 50, 2000);
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let key = if g.one_in(4) {
            g.hostile_str()
        } else {
            g.ident()
        };
        let v = if g.one_in(10) {
            value(g, 1)
        } else {
            Node::str(g.hostile_str())
        };
        entries.push((key, v));
    }
    Node::Obj(entries)
}

/// A JSON value, at most `depth` levels of collections deep (rarely much deeper).
pub fn value(g: &mut Gen, depth: usize) -> Node {
    let depth = if g.one_in(200) { 40 } else { depth };
    value_at(g, depth)
}

fn value_at(g: &mut Gen, depth: usize) -> Node {
    if depth == 0 {
        return scalar(g);
    }
    match g.below(10) {
        0..=4 => scalar(g),
        5 | 6 => {
            let n = g.len(4, 200, 5_000);
            Node::Arr(
                (0..n)
                    .map(|_| value_at(g, if n > 50 { 0 } else { depth - 1 }))
                    .collect(),
            )
        }
        7 | 8 => {
            let n = g.len(4, 100, 2_000);
            Node::Obj(
                (0..n)
                    .map(|_| {
                        let key = if g.one_in(3) {
                            g.hostile_str()
                        } else {
                            g.ident()
                        };
                        (key, value_at(g, if n > 50 { 0 } else { depth - 1 }))
                    })
                    .collect(),
            )
        }
        _ => {
            // A narrow, deep chain.
            let mut node = scalar(g);
            for _ in 0..g.below(depth * 4 + 1) {
                node = if g.coin() {
                    Node::Arr(vec![node])
                } else {
                    Node::obj([("a", node)])
                };
            }
            node
        }
    }
}

pub fn scalar(g: &mut Gen) -> Node {
    match g.below(8) {
        0 => Node::Null,
        1 => Node::Bool(g.coin()),
        2 | 3 => Node::Num(g.json_number()),
        _ => Node::str(g.hostile_str()),
    }
}
