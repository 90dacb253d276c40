//! The entry's inputs (SPEC §20): the objects of `observe.inputs` as their watches last saw
//! them, what each CR read of them, and which CRs a change of one concerns.
//!
//! [`InputStore`] is part of the entry's state: its watches feed it ([`InputEvent`]), a job
//! gathers a CR's inputs from it ([`InputStore::gather`]), which also records what the CR
//! read, by name or by labels, so that a later change of exactly those objects (an edit, a
//! deletion, a creation under a name the CR waits for, a label added or removed) reconciles
//! that CR and no other. No I/O: `ork run` feeds it from its watches, `ork simulate` from the
//! objects it is given.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use ork_katalog::{Input, MatchExpression};
use serde_json::{Map, Value};

use crate::cache::cache_key;

/// The largest input sent, as JSON, in bytes (a list of many objects can be large).
pub(crate) const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;
/// The most that all of a request's inputs may add up to, in bytes.
pub(crate) const MAX_INPUTS_BYTES: usize = 8 * 1024 * 1024;
/// A Secret value shorter than this is not searched for in the service's text (a value of `1`
/// would hide every digit of a message); longer ones are replaced wherever the service echoes
/// them.
const MIN_ECHO_REDACTED: usize = 4;

/// Why a CR's inputs could not be gathered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// A template of the input did not render for the CR.
    #[error("input {input}: {message}")]
    Render { input: String, message: String },
    /// The CR's template rendered something that is not an object name.
    #[error("input {input}: {name:?} is not the name of an object (the CR's template rendered it)")]
    BadName { input: String, name: String },
    /// A namespaced input for a cluster-scoped CR, with no namespace in the Katalog.
    #[error(
        "input {input}: a {kind} lives in a namespace and this CR in none; the Katalog's input names the namespace"
    )]
    NoNamespace { input: String, kind: String },
    /// Over [`MAX_INPUT_BYTES`] or, all together, [`MAX_INPUTS_BYTES`].
    #[error("input {input}: {bytes} bytes of objects, over the {limit}-byte limit")]
    TooLarge {
        input: String,
        bytes: usize,
        limit: usize,
    },
}

/// A non-optional input whose object is not there: the CR waits for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub input: String,
    /// `Secret ns/name`.
    pub what: String,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "input {}: {} not found", self.input, self.what)
    }
}

/// A CR's inputs as gathered for one request.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// `prepared.inputs`: name → object, `null` or list.
    pub values: BTreeMap<String, Value>,
    /// Non-optional inputs that are absent (sent as `null` only to a finalize call).
    pub missing: Vec<Missing>,
    /// The Secret values sent, which the service's text must not carry back into a
    /// condition, an event or the flight recorder.
    pub secrets: Vec<String>,
}

/// What happened to an input type's objects, from one of its watches.
#[derive(Debug)]
pub enum InputEvent {
    /// An object created or changed.
    Applied(Value),
    /// An object deleted.
    Deleted(Value),
    /// A watch listed what it sees anew (the first list, or a relist after it broke): these
    /// are all the objects of its namespace (`None`: of every namespace) and, for a watch of
    /// one name, of that name.
    Reset {
        namespace: Option<String>,
        name: Option<String>,
        objects: Vec<Value>,
    },
}

/// The objects of one input type (shared by the inputs of that type).
#[derive(Debug)]
struct TypeStore {
    api_version: String,
    kind: String,
    namespaced: bool,
    /// Whether any input of this type is a Secret input with `values`: only then is a
    /// Secret's `data` kept here.
    keep_values: bool,
    /// `namespace/name` (or `name`) → the object, without `managedFields`.
    objects: HashMap<String, Arc<Value>>,
}

/// What one CR read of one input.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Read {
    /// One object, by its cache key (`ns/name`); read even when it was absent.
    Name { type_index: usize, key: String },
    /// The objects of a namespace (`None`: of a cluster-scoped type) with these labels.
    Labels {
        type_index: usize,
        namespace: Option<String>,
        equals: BTreeMap<String, String>,
        expressions: Vec<MatchExpression>,
    },
}

impl Read {
    fn selects(&self, object: &Value) -> bool {
        let Read::Labels {
            namespace,
            equals,
            expressions,
            ..
        } = self
        else {
            return false;
        };
        let meta = object.get("metadata");
        let ns = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str);
        let labels = meta.and_then(|m| m.get("labels"));
        let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        ns == namespace.as_deref()
            && equals.iter().all(|(k, v)| label(k) == Some(v.as_str()))
            && expressions.iter().all(|e| e.holds(label))
    }
}

/// An object before and after a change (the same, for one a relist found gone).
type Change = (Option<Arc<Value>>, Option<Arc<Value>>);

/// The inputs of one entry: their objects and who read them.
#[derive(Debug, Default)]
pub struct InputStore {
    specs: Vec<Input>,
    /// Per spec, the index of its type.
    type_of: Vec<usize>,
    types: Vec<TypeStore>,
    /// CR key → what its last gather read.
    reads: HashMap<String, Vec<Read>>,
    /// `(type, object key)` → the CRs that read that object by name.
    by_name: HashMap<(usize, String), BTreeSet<String>>,
}

/// One input type's identity and what its watches keep, as `ork run` starts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputType {
    pub api_version: String,
    pub kind: String,
    /// Secret `data` kept (some input of the type says `values: true`).
    pub keep_values: bool,
    /// Where the type's inputs read: each namespace the Katalog names (`None`: the CRs' own),
    /// with the names read there when every input reading there names one literal object
    /// (so a watch can be narrowed to them, and RBAC to `resourceNames`).
    pub scopes: Vec<(Option<String>, Option<BTreeSet<String>>)>,
}

impl InputStore {
    /// A store for `specs` (an entry's `observe.inputs`); each type is taken to be namespaced
    /// unless Kubernetes' built-in kinds say otherwise, until [`InputStore::set_namespaced`].
    pub fn new(specs: &[Input]) -> InputStore {
        let mut store = InputStore {
            specs: specs.to_vec(),
            ..InputStore::default()
        };
        for spec in specs {
            let found = store
                .types
                .iter()
                .position(|t| t.api_version == spec.api_version && t.kind == spec.kind);
            let index = found.unwrap_or_else(|| {
                let namespaced = ork_katalog::kinds::by_kind(&spec.kind, Some(spec.group()))
                    .is_none_or(|b| b.namespaced);
                store.types.push(TypeStore {
                    api_version: spec.api_version.clone(),
                    kind: spec.kind.clone(),
                    namespaced,
                    keep_values: false,
                    objects: HashMap::new(),
                });
                store.types.len() - 1
            });
            store.types[index].keep_values |= spec.values && spec.is_secret();
            store.type_of.push(index);
        }
        store
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The input types, in the order [`InputStore::event`] numbers them.
    pub fn types(&self) -> Vec<InputType> {
        self.types
            .iter()
            .enumerate()
            .map(|(index, t)| {
                let specs: Vec<&Input> = self
                    .specs
                    .iter()
                    .zip(&self.type_of)
                    .filter(|(_, i)| **i == index)
                    .map(|(s, _)| s)
                    .collect();
                let mut scopes: Vec<(Option<String>, Option<BTreeSet<String>>)> = Vec::new();
                for spec in &specs {
                    let literal = spec
                        .match_name
                        .as_ref()
                        .filter(|t| t.is_literal())
                        .map(|t| t.source().to_string());
                    let at = match scopes.iter().position(|(ns, _)| *ns == spec.namespace) {
                        Some(at) => at,
                        None => {
                            scopes.push((spec.namespace.clone(), Some(BTreeSet::new())));
                            scopes.len() - 1
                        }
                    };
                    let names = &mut scopes[at].1;
                    match (literal, names.as_mut()) {
                        (Some(name), Some(names)) => {
                            names.insert(name);
                        }
                        _ => *names = None,
                    }
                }
                InputType {
                    api_version: t.api_version.clone(),
                    kind: t.kind.clone(),
                    keep_values: t.keep_values,
                    scopes,
                }
            })
            .collect()
    }

    /// Discovery says whether type `type_index` is namespaced.
    pub fn set_namespaced(&mut self, type_index: usize, namespaced: bool) {
        if let Some(t) = self.types.get_mut(type_index) {
            t.namespaced = namespaced;
        }
    }

    /// The inputs of the CR `key` (`cr` as JSON), recorded as what it read.
    ///
    /// # Errors
    /// A template that does not render, a rendered name that is no name, a namespaced input
    /// of a cluster-scoped CR without a namespace, or inputs over the size limits.
    pub fn gather(&mut self, key: &str, cr: &Value) -> Result<Gathered, InputError> {
        self.forget(key);
        let mut reads = Vec::new();
        let result = self.read_all(cr, &mut reads);
        for read in &reads {
            if let Read::Name { type_index, key: k } = read {
                self.by_name
                    .entry((*type_index, k.clone()))
                    .or_default()
                    .insert(key.to_string());
            }
        }
        if !reads.is_empty() {
            self.reads.insert(key.to_string(), reads);
        }
        result
    }

    fn read_all(&self, cr: &Value, reads: &mut Vec<Read>) -> Result<Gathered, InputError> {
        let mut out = Gathered::default();
        let mut total = 0;
        let cr_namespace = cr
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty());
        for (spec, &type_index) in self.specs.iter().zip(&self.type_of) {
            let t = &self.types[type_index];
            let render = |template: &ork_katalog::Template| {
                template.render(cr).map_err(|e| InputError::Render {
                    input: spec.name.clone(),
                    message: e.to_string(),
                })
            };
            let namespace = if t.namespaced {
                match spec.namespace.as_deref().or(cr_namespace) {
                    Some(ns) => Some(ns.to_string()),
                    None => {
                        return Err(InputError::NoNamespace {
                            input: spec.name.clone(),
                            kind: spec.kind.clone(),
                        });
                    }
                }
            } else {
                None
            };
            let value = match &spec.match_name {
                Some(template) => {
                    let name = render(template)?;
                    let name = name.trim();
                    if name.is_empty() {
                        // The CR names none: as absent, and nothing to watch for.
                        if !spec.optional {
                            out.missing.push(Missing {
                                input: spec.name.clone(),
                                what: format!("{} (the CR names none)", spec.kind),
                            });
                        }
                        Value::Null
                    } else {
                        if !is_object_name(name) {
                            return Err(InputError::BadName {
                                input: spec.name.clone(),
                                name: name.to_string(),
                            });
                        }
                        let key = cache_key(namespace.as_deref(), name);
                        let found = t.objects.get(&key);
                        if found.is_none() && !spec.optional {
                            out.missing.push(Missing {
                                input: spec.name.clone(),
                                what: format!("{} {key}", spec.kind),
                            });
                        }
                        reads.push(Read::Name { type_index, key });
                        found.map_or(Value::Null, |o| self.sent(spec, o, &mut out.secrets))
                    }
                }
                None => {
                    let equals = spec
                        .match_labels
                        .iter()
                        .map(|(k, t)| Ok((k.clone(), render(t)?)))
                        .collect::<Result<BTreeMap<_, _>, InputError>>()?;
                    let read = Read::Labels {
                        type_index,
                        namespace,
                        equals,
                        expressions: spec.match_expressions.clone(),
                    };
                    let mut selected: Vec<(&String, &Arc<Value>)> =
                        t.objects.iter().filter(|(_, o)| read.selects(o)).collect();
                    selected.sort_by(|a, b| a.0.cmp(b.0));
                    let list = selected
                        .into_iter()
                        .map(|(_, o)| self.sent(spec, o, &mut out.secrets))
                        .collect();
                    reads.push(read);
                    Value::Array(list)
                }
            };
            let bytes = serde_json::to_vec(&value).map_or(0, |b| b.len());
            total += bytes;
            if bytes > MAX_INPUT_BYTES || total > MAX_INPUTS_BYTES {
                return Err(InputError::TooLarge {
                    input: spec.name.clone(),
                    bytes,
                    limit: if bytes > MAX_INPUT_BYTES {
                        MAX_INPUT_BYTES
                    } else {
                        MAX_INPUTS_BYTES
                    },
                });
            }
            out.values.insert(spec.name.clone(), value);
        }
        Ok(out)
    }

    /// `object` as `spec` sends it: a Secret's `data` only with `values`, and then each value
    /// noted in `secrets`.
    fn sent(&self, spec: &Input, object: &Value, secrets: &mut Vec<String>) -> Value {
        let mut v = object.clone();
        if spec.is_secret() {
            if spec.values {
                note_secret_values(&v, secrets);
            } else {
                crate::redact::drop_secret_values(&mut v);
            }
        }
        v
    }

    /// The CR `key` is gone: it reads nothing any more.
    pub fn forget(&mut self, key: &str) {
        let Some(reads) = self.reads.remove(key) else {
            return;
        };
        for read in reads {
            if let Read::Name { type_index, key: k } = read {
                let slot = (type_index, k);
                if let Some(readers) = self.by_name.get_mut(&slot) {
                    readers.remove(key);
                    if readers.is_empty() {
                        self.by_name.remove(&slot);
                    }
                }
            }
        }
    }

    /// An event of type `type_index`'s objects: the CRs whose inputs it changed (whose last
    /// gather read the object by name, or selected it by labels before or after).
    pub fn event(&mut self, type_index: usize, event: InputEvent) -> BTreeSet<String> {
        let Some(t) = self.types.get_mut(type_index) else {
            return BTreeSet::new();
        };
        let mut changed: Vec<Change> = Vec::new();
        match event {
            InputEvent::Applied(o) => {
                let o = Arc::new(stored(o, t));
                let key = object_key(&o);
                let before = t.objects.insert(key, o.clone());
                if before.as_ref().is_none_or(|b| version(b) != version(&o)) {
                    changed.push((before, Some(o)));
                }
            }
            InputEvent::Deleted(o) => {
                let before = t.objects.remove(&object_key(&o));
                changed.push((before.clone(), before.or_else(|| Some(Arc::new(o)))));
            }
            InputEvent::Reset {
                namespace,
                name,
                objects,
            } => {
                let text = |o: &Value, k: &str| {
                    o.pointer(&format!("/metadata/{k}"))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                };
                let in_scope = |o: &Value| {
                    (namespace.is_none() || text(o, "namespace") == namespace)
                        && (name.is_none() || text(o, "name") == name)
                };
                let mut old: HashMap<String, Arc<Value>> = HashMap::new();
                t.objects.retain(|k, o| {
                    if in_scope(o) {
                        old.insert(k.clone(), o.clone());
                        false
                    } else {
                        true
                    }
                });
                for o in objects {
                    let o = Arc::new(stored(o, t));
                    let key = object_key(&o);
                    let before = old.remove(&key);
                    if before.as_ref().is_none_or(|b| version(b) != version(&o)) {
                        changed.push((before, Some(o.clone())));
                    }
                    t.objects.insert(key, o);
                }
                changed.extend(
                    old.into_values()
                        .map(|gone| (Some(gone.clone()), Some(gone))),
                );
            }
        }
        let mut out = BTreeSet::new();
        for (before, after) in changed {
            let Some(any) = after.as_ref().or(before.as_ref()) else {
                continue;
            };
            if let Some(readers) = self.by_name.get(&(type_index, object_key(any))) {
                out.extend(readers.iter().cloned());
            }
            for (cr, reads) in &self.reads {
                let selects = |o: &Option<Arc<Value>>| {
                    o.as_ref().is_some_and(|o| {
                        reads.iter().any(|r| {
                            matches!(r, Read::Labels { type_index: i, .. } if *i == type_index)
                                && r.selects(o)
                        })
                    })
                };
                if selects(&before) || selects(&after) {
                    out.insert(cr.clone());
                }
            }
        }
        out
    }
}

/// An object as the store keeps it: without `managedFields`, a Secret without its values
/// unless an input of the type sends them.
fn stored(mut o: Value, t: &TypeStore) -> Value {
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Value::Object(m) = &mut o {
        m.entry("apiVersion")
            .or_insert_with(|| Value::String(t.api_version.clone()));
        m.entry("kind")
            .or_insert_with(|| Value::String(t.kind.clone()));
    }
    if t.api_version == "v1" && t.kind == "Secret" && !t.keep_values {
        crate::redact::drop_secret_values(&mut o);
    }
    o
}

fn object_key(o: &Value) -> String {
    let text = |k: &str| {
        o.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    cache_key(text("namespace"), text("name").unwrap_or_default())
}

fn version(o: &Value) -> Option<&str> {
    o.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
}

/// A name the API server could hold: a DNS-1123 subdomain (lowercase letters, digits, `-` and
/// `.`), at most 253 characters; never a path (`..`, `/`).
fn is_object_name(name: &str) -> bool {
    name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// Every value of a Secret's `data` (base64 and decoded) and `stringData`, long enough to be
/// searched for.
fn note_secret_values(secret: &Value, out: &mut Vec<String>) {
    let mut note = |s: String| {
        if s.len() >= MIN_ECHO_REDACTED && !out.contains(&s) {
            out.push(s);
        }
    };
    let entries = |k: &str| {
        secret
            .get(k)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(Map::new)
    };
    for v in entries("data").values().filter_map(Value::as_str) {
        note(v.to_string());
        if let Ok(bytes) =
            serde_json::from_value::<k8s_openapi::ByteString>(Value::String(v.to_string()))
            && let Ok(text) = String::from_utf8(bytes.0)
        {
            note(text.trim_end_matches('\n').to_string());
            note(text);
        }
    }
    for v in entries("stringData").values().filter_map(Value::as_str) {
        note(v.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(yaml: &str) -> Input {
        serde_saphyr::from_str(yaml).expect("an input")
    }

    fn secret(ns: &str, name: &str, rv: &str, value: &str) -> Value {
        let encoded = serde_json::to_value(k8s_openapi::ByteString(value.as_bytes().to_vec()))
            .expect("base64");
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": rv,
                "managedFields": [{"manager": "x"}]},
            "data": {"password": encoded}})
    }

    fn cr(ns: &str, name: &str, db: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": ns}, "spec": {"db": db}})
    }

    #[test]
    fn a_named_secret_is_sent_with_its_values_only_when_asked_and_its_edit_concerns_its_readers() {
        let specs = [
            input(
                "{name: db, apiVersion: v1, kind: Secret, matchName: '{{ .spec.db }}', values: true}",
            ),
            input("{name: plain, apiVersion: v1, kind: Secret, matchName: '{{ .spec.db }}'}"),
        ];
        let mut store = InputStore::new(&specs);
        store.event(
            0,
            InputEvent::Reset {
                namespace: None,
                name: None,
                objects: vec![
                    secret("a", "one", "1", "hunter22"),
                    secret("a", "two", "1", "x"),
                ],
            },
        );
        let got = store.gather("a/x", &cr("a", "x", "one")).expect("gathered");
        assert!(got.missing.is_empty());
        assert!(got.values["db"]["data"]["password"].is_string());
        assert!(got.values["db"]["metadata"].get("managedFields").is_none());
        assert!(
            got.values["plain"].get("data").is_none(),
            "no values unasked"
        );
        assert!(got.secrets.contains(&"hunter22".to_string()));
        store.gather("a/y", &cr("a", "y", "two")).expect("gathered");
        // The same version again (a relist) is no change; a new one concerns its reader only.
        assert!(
            store
                .event(0, InputEvent::Applied(secret("a", "one", "1", "hunter22")))
                .is_empty()
        );
        let edited = store.event(0, InputEvent::Applied(secret("a", "one", "2", "new-pass")));
        assert_eq!(edited, BTreeSet::from(["a/x".to_string()]));
        let deleted = store.event(0, InputEvent::Deleted(secret("a", "two", "1", "x")));
        assert_eq!(deleted, BTreeSet::from(["a/y".to_string()]));
        let again = store.gather("a/y", &cr("a", "y", "two")).expect("gathered");
        assert_eq!(again.missing.len(), 2, "{:?}", again.missing);
        assert_eq!(
            again.missing[0].to_string(),
            "input db: Secret a/two not found"
        );
        // Created under the name the CR waits for: it is reconciled.
        let created = store.event(0, InputEvent::Applied(secret("a", "two", "5", "back")));
        assert_eq!(created, BTreeSet::from(["a/y".to_string()]));
        store.forget("a/y");
        assert!(
            store
                .event(0, InputEvent::Applied(secret("a", "two", "6", "b")))
                .is_empty()
        );
    }

    #[test]
    fn a_cr_cannot_name_another_namespace_or_a_path() {
        let specs = [input(
            "{name: db, apiVersion: v1, kind: Secret, matchName: '{{ .spec.db }}'}",
        )];
        let mut store = InputStore::new(&specs);
        store.event(
            0,
            InputEvent::Applied(secret("b", "theirs", "1", "their-secret")),
        );
        for name in ["b/theirs", "../b/theirs", "Theirs"] {
            let err = store
                .gather("a/x", &cr("a", "x", name))
                .expect_err("not a name");
            assert!(matches!(err, InputError::BadName { .. }), "{err}");
        }
        // `theirs` in the CR's own namespace does not exist: the one of namespace b is not it.
        let got = store
            .gather("a/x", &cr("a", "x", "theirs"))
            .expect("gathered");
        assert_eq!(got.values["db"], Value::Null);
        assert_eq!(got.missing[0].what, "Secret a/theirs");
        // A cluster-scoped CR has no namespace of its own to read from.
        let err = store
            .gather(
                "x",
                &json!({"metadata": {"name": "x"}, "spec": {"db": "theirs"}}),
            )
            .expect_err("no namespace");
        assert!(matches!(err, InputError::NoNamespace { .. }), "{err}");
    }

    #[test]
    fn a_label_selected_list_follows_adds_removals_and_label_changes() {
        let specs = [input(
            "{name: peers, apiVersion: v1, kind: ConfigMap, matchLabels: {team: '{{ .spec.db }}'}, matchExpressions: [{key: skip, operator: DoesNotExist}], optional: true}",
        )];
        let mut store = InputStore::new(&specs);
        let cm = |name: &str, rv: &str, labels: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "a", "resourceVersion": rv, "labels": labels}})
        };
        store.event(
            0,
            InputEvent::Reset {
                namespace: Some("a".into()),
                name: None,
                objects: vec![cm("one", "1", json!({"team": "red"}))],
            },
        );
        let names = |g: &Gathered| -> Vec<String> {
            g.values["peers"]
                .as_array()
                .expect("a list")
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        };
        let got = store.gather("a/r", &cr("a", "r", "red")).expect("gathered");
        assert_eq!(names(&got), ["one"]);
        store
            .gather("a/b", &cr("a", "b", "blue"))
            .expect("gathered");
        let red = BTreeSet::from(["a/r".to_string()]);
        assert_eq!(
            store.event(
                0,
                InputEvent::Applied(cm("two", "2", json!({"team": "red"})))
            ),
            red
        );
        // Losing the label, or gaining `skip`, takes it out of the list: its reader hears.
        assert_eq!(
            store.event(
                0,
                InputEvent::Applied(cm("two", "3", json!({"team": "red", "skip": "y"})))
            ),
            red
        );
        assert_eq!(
            store.event(0, InputEvent::Applied(cm("one", "4", json!({})))),
            red
        );
        assert_eq!(
            names(&store.gather("a/r", &cr("a", "r", "red")).expect("g")),
            Vec::<String>::new()
        );
        // A relist that finds an object gone tells its readers too.
        store.event(
            0,
            InputEvent::Applied(cm("three", "5", json!({"team": "blue"}))),
        );
        store
            .gather("a/b", &cr("a", "b", "blue"))
            .expect("gathered");
        let gone = store.event(
            0,
            InputEvent::Reset {
                namespace: Some("a".into()),
                name: None,
                objects: vec![cm("one", "4", json!({}))],
            },
        );
        assert!(gone.contains("a/b"), "{gone:?}");
    }
}
