//! Service answers (SPEC §2.2, §2.3, §11) through `ork_protocol::decide` and `lint`: valid
//! skeletons — full objects and intents of the declared types — with hostile values (odd
//! intent fields, labels that are not maps, counts at the caps, deep JSON, repeated keys, bad
//! apiVersions, `requeueAfter` at its bounds), some of them corrupted as bytes.
//!
//! Properties: no panic; `decide` accepts exactly when `lint` finds no error, and its error is
//! lint's first; inputs that must be refused are (not JSON, repeated keys, counts over the
//! caps, labels that are not maps); and everything accepted obeys the rules: each child of a
//! declared type at a served version, in a namespace it may use, not the CR itself, no two
//! alike, labels and annotations maps of valid strings, server-owned fields dropped; counts,
//! sizes and durations within the limits; every text cleaned.

use std::collections::BTreeSet;
use std::time::Duration;

use ork_protocol::{
    Decision, INTENT_TYPES, Limits, ManagedType, Outcome, OwnerRef, Policy, decide, lint,
};
use serde_json::Value;

use crate::doc::Node;
use crate::generate::Gen;
use crate::runner::{Case, Target};
use crate::targets::cr::{string_map, value};
use crate::targets::text::is_bidi_control;

#[derive(Debug)]
pub struct Answers;

/// The default `maxResponseBytes`: larger answers never reach `decide`.
const MAX_BODY: usize = 8 << 20;

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// A WebApp `team/hello` managing Deployments, Services and ConfigMaps; ork in `ork-system`.
pub fn small_policy() -> Policy {
    Policy::new(
        OwnerRef {
            api_version: "demo.ork.dev/v1".into(),
            kind: "WebApp".into(),
            name: "hello".into(),
            namespace: Some("team".into()),
        },
        vec![
            ManagedType::namespaced("apps", "Deployment", "deployments", "v1", &["v1"]),
            ManagedType::namespaced("", "Service", "services", "v1", &["v1"]),
            ManagedType::namespaced("", "ConfigMap", "configmaps", "v1", &["v1"]),
        ],
        "ork-system",
    )
}

/// Every type a policy may declare.
fn catalog() -> Vec<ManagedType> {
    let mut cluster_role = ManagedType::namespaced(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        "v1",
        &["v1"],
    );
    cluster_role.namespaced = false;
    let mut namespace = ManagedType::namespaced("", "Namespace", "namespaces", "v1", &["v1"]);
    namespace.namespaced = false;
    vec![
        ManagedType::namespaced("apps", "Deployment", "deployments", "v1", &["v1"]),
        ManagedType::namespaced("", "Service", "services", "v1", &["v1"]),
        ManagedType::namespaced("", "ConfigMap", "configmaps", "v1", &["v1"]),
        ManagedType::namespaced("", "Secret", "secrets", "v1", &["v1"]),
        ManagedType::namespaced("", "ServiceAccount", "serviceaccounts", "v1", &["v1"]),
        ManagedType::namespaced("apps", "StatefulSet", "statefulsets", "v1", &["v1"]),
        ManagedType::namespaced("batch", "Job", "jobs", "v1", &["v1"]),
        ManagedType::namespaced(
            "batch",
            "CronJob",
            "cronjobs",
            "v1beta1",
            &["v1beta1", "v1"],
        ),
        ManagedType::namespaced("networking.k8s.io", "Ingress", "ingresses", "v1", &["v1"]),
        cluster_role,
        namespace,
        ManagedType::namespaced(
            "demo.ork.dev",
            "WebApp",
            "webapps",
            "v1",
            &["v1", "v1beta1"],
        ),
        ManagedType::namespaced("db.ork.dev", "Database", "databases", "v1alpha1", &[]),
    ]
}

const NAMESPACES: &[&str] = &["team", "other", "ork-system", "default", "kube-system"];

/// A policy: the CR namespaced or cluster-scoped (in ork's namespace at times), a random set
/// of declared types with extra namespaces, default or tiny limits.
fn policy(g: &mut Gen) -> Policy {
    let name = match g.below(8) {
        0 => "a".repeat(63 + g.below(3)),
        1 => format!("{}.{}", g.ident(), g.ident()),
        2 => "a".repeat(253),
        _ => "hello".to_string(),
    };
    let namespace = match g.below(6) {
        0 => None,
        1 => Some("ork-system".to_string()),
        _ => Some("team".to_string()),
    };
    let api_version = (*g.pick(&["demo.ork.dev/v1", "demo.ork.dev/v1beta1", "v1"])).to_string();
    let mut managed_types: Vec<ManagedType> =
        catalog().into_iter().filter(|_| !g.one_in(4)).collect();
    for m in &mut managed_types {
        if g.one_in(4) {
            m.namespaces = NAMESPACES
                .iter()
                .filter(|_| g.one_in(3))
                .map(|s| (*s).to_string())
                .collect();
        }
        if !m.namespaced {
            m.cluster_scoped = g.coin();
        }
        if g.one_in(10) {
            m.served_versions.clear();
        }
    }
    let ork_namespace = (*g.pick(&["ork-system", "ork-system", "", "team"])).to_string();
    let limits = if g.one_in(4) {
        Limits {
            children: g.below(5),
            conditions: g.below(4),
            events: g.below(4),
            status_bytes: g.below(300),
        }
    } else {
        Limits::default()
    };
    let mut p = Policy::new(
        OwnerRef {
            api_version,
            kind: "WebApp".into(),
            name,
            namespace,
        },
        managed_types,
        ork_namespace,
    );
    p.limits = limits;
    p
}

impl Target for Answers {
    fn name(&self) -> &'static str {
        "answer"
    }

    fn about(&self) -> &'static str {
        "decide and lint on generated answers; invariants of accepted answers (SPEC §2.3, §11)"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        g.max_huge = 64 * 1024;
        let policy = policy(g);
        let mut answer = answer(g, &policy);
        for _ in 0..g.below(3) {
            mutate(g, &mut answer);
        }
        let mut body = answer.to_json().into_bytes();
        if body.len() > MAX_BODY {
            // The transport refuses it before decide sees it.
            case.begin();
            return;
        }
        let corrupted = g.one_in(12);
        if corrupted {
            corrupt(g, &mut body);
        }
        case.note("policy", &format!("{policy:?}"));
        case.note("body", &String::from_utf8_lossy(&body));

        case.begin();
        let decision = decide(&body, &policy);
        let report = lint(&body, &policy);
        match &decision {
            Ok(d) => {
                case.check(report.errors.is_empty(), "decide-lint-agree", || {
                    format!("decide accepts, lint has errors: {:?}", report.errors)
                });
                case.check(report.warnings == d.warnings, "decide-lint-agree", || {
                    format!(
                        "decide warns {:?}, lint warns {:?}",
                        d.warnings, report.warnings
                    )
                });
                must_refuse(&body, &answer, &policy, case);
                accepted(d, &answer, &policy, case);
            }
            Err(e) => {
                let first = report.errors.first();
                case.check(first == Some(&e.to_string()), "decide-lint-agree", || {
                    format!("decide refuses with {e:?}, lint's first error is {first:?}")
                });
            }
        }
        for text in report.errors.iter().chain(&report.warnings) {
            check_text(case, "lint", text, 1100);
        }
        case.check(report.errors.len() <= 201, "lint-bounded", || {
            format!("lint lists {} errors", report.errors.len())
        });
        case.check(report.warnings.len() <= 51, "lint-bounded", || {
            format!("lint lists {} warnings", report.warnings.len())
        });
    }
}

/// Text that reaches status, events or a terminal: clean and short.
fn check_text(case: &mut Case, what: &str, text: &str, max: usize) {
    let n = text.chars().count();
    case.check(n <= max, "answer-text-bounded", || {
        format!(
            "{what} text of {n} characters (limit {max}): {}",
            crate::runner::cut(text, 200)
        )
    });
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() || is_bidi_control(*c) || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        case.fail(
            "answer-text-clean",
            format!("{what} text keeps {c:?}: {}", crate::runner::cut(text, 200)),
        );
    }
}

/// An accepted answer must not be one that has to be refused.
fn must_refuse(body: &[u8], answer: &Node, policy: &Policy, case: &mut Case) {
    let parsed: Result<Value, _> = serde_json::from_slice(body);
    let Ok(value) = parsed else {
        case.fail(
            "must-refuse",
            "decide accepted a body serde_json cannot read",
        );
        return;
    };
    case.check(value.is_object(), "must-refuse", || {
        "decide accepted an answer that is not an object".into()
    });
    if let Some(path) = repeated_key(answer) {
        // The body is the tree as written unless corrupted; re-check on the parsed body.
        if body == answer.to_json().as_bytes() {
            case.fail(
                "must-refuse",
                format!("decide accepted an answer repeating a key at {path}"),
            );
        }
    }
    let count = |k: &str| value.get(k).and_then(Value::as_array).map_or(0, Vec::len);
    for (field, cap) in [
        ("resources", policy.limits.children),
        ("conditions", policy.limits.conditions),
        ("events", policy.limits.events),
    ] {
        let n = count(field);
        case.check(n <= cap, "must-refuse", || {
            format!("decide accepted {n} {field}, over the cap of {cap}")
        });
    }
    for (i, entry) in value
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if entry.get("apiVersion").is_none() {
            continue;
        }
        for field in ["labels", "annotations"] {
            let v = entry.get("metadata").and_then(|m| m.get(field));
            let ok = match v {
                None | Some(Value::Null) => true,
                Some(Value::Object(m)) => m.values().all(Value::is_string),
                Some(_) => false,
            };
            case.check(ok, "must-refuse", || {
                format!("decide accepted resources[{i}] with metadata.{field} {v:?}")
            });
        }
    }
}

/// The first place a key repeats in an object of the tree.
fn repeated_key(node: &Node) -> Option<String> {
    match node {
        Node::Obj(entries) => {
            let mut seen = BTreeSet::new();
            for (k, v) in entries {
                if !seen.insert(k) {
                    return Some(format!("{k:?}"));
                }
                if let Some(p) = repeated_key(v) {
                    return Some(format!("{k}.{p}"));
                }
            }
            None
        }
        Node::Arr(items) => items.iter().find_map(repeated_key),
        Node::Anchor(_, inner) => repeated_key(inner),
        _ => None,
    }
}

/// The invariants of an accepted answer.
fn accepted(d: &Decision, answer: &Node, policy: &Policy, case: &mut Case) {
    match &d.outcome {
        Outcome::Ok { requeue_after } => {
            if let Some(after) = requeue_after {
                case.check(
                    (Duration::from_secs(1)..=YEAR).contains(after),
                    "accepted-requeue-bounds",
                    || format!("ok with requeueAfter {after:?}"),
                );
            }
        }
        Outcome::Requeue { after } => case.check(
            (Duration::from_secs(1)..=YEAR).contains(after),
            "accepted-requeue-bounds",
            || format!("requeue after {after:?}"),
        ),
        Outcome::Error { message } => check_text(case, "error message", message, 1000),
    }
    if let Some(status) = &d.status {
        let size = serde_json::to_vec(status).map_or(usize::MAX, |v| v.len());
        case.check(size <= policy.limits.status_bytes, "accepted-caps", || {
            format!(
                "status of {size} bytes accepted, cap {}",
                policy.limits.status_bytes
            )
        });
    }
    case.check(
        d.conditions.len() <= policy.limits.conditions,
        "accepted-caps",
        || format!("{} conditions accepted", d.conditions.len()),
    );
    case.check(
        d.events.len() <= policy.limits.events,
        "accepted-caps",
        || format!("{} events accepted", d.events.len()),
    );
    let mut types = BTreeSet::new();
    for c in &d.conditions {
        case.check(
            !c.type_.is_empty()
                && c.type_ != "Ready"
                && matches!(c.status.as_str(), "True" | "False" | "Unknown"),
            "accepted-condition",
            || format!("condition accepted: {c:?}"),
        );
        case.check(types.insert(c.type_.clone()), "accepted-condition", || {
            format!("condition type {:?} accepted twice", c.type_)
        });
        check_text(case, "condition type", &c.type_, 316);
        check_text(case, "condition reason", &c.reason, 128);
        check_text(case, "condition message", &c.message, 1000);
    }
    for e in &d.events {
        case.check(
            matches!(e.type_.as_str(), "Normal" | "Warning") && !e.reason.is_empty(),
            "accepted-event",
            || format!("event accepted: {e:?}"),
        );
        check_text(case, "event reason", &e.reason, 128);
        check_text(case, "event message", &e.message, 1000);
    }
    for w in &d.warnings {
        check_text(case, "warning", w, 1000);
    }
    let Some(children) = &d.resources else {
        return;
    };
    case.check(
        children.len() <= policy.limits.children,
        "accepted-caps",
        || {
            format!(
                "{} children accepted, cap {}",
                children.len(),
                policy.limits.children
            )
        },
    );
    let intents = intent_positions(answer);
    let mut seen = BTreeSet::new();
    for (i, child) in children.iter().enumerate() {
        check_child(child, policy, case);
        if intents.contains(&i) {
            nested_labels(&child.object, "", case);
        }
        let id = (
            child.managed.group.clone(),
            child.managed.kind.clone(),
            child.namespace.clone(),
            child.name.clone(),
        );
        case.check(seen.insert(id), "accepted-no-duplicates", || {
            format!(
                "{} {:?}/{} accepted twice",
                child.managed.kind, child.namespace, child.name
            )
        });
    }
}

/// Positions of `resources` entries written as intents (no `apiVersion`).
fn intent_positions(answer: &Node) -> BTreeSet<usize> {
    let Node::Obj(entries) = answer else {
        return BTreeSet::new();
    };
    let Some((_, Node::Arr(items))) = entries.iter().rev().find(|(k, _)| k == "resources") else {
        return BTreeSet::new();
    };
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| match item {
            Node::Obj(fields) => !fields.iter().any(|(k, _)| k == "apiVersion"),
            _ => false,
        })
        .map(|(i, _)| i)
        .collect()
}

/// One accepted child against SPEC §2.3 and §11.
fn check_child(child: &ork_protocol::DesiredChild, policy: &Policy, case: &mut Case) {
    let what = format!(
        "{} {:?}/{}",
        child.managed.kind, child.namespace, child.name
    );
    let Some(declared) = policy
        .managed
        .iter()
        .find(|m| m.group == child.managed.group && m.kind == child.managed.kind)
    else {
        case.fail("accepted-declared", format!("{what}: type not declared"));
        return;
    };
    case.check(
        declared.serves(&child.managed.version),
        "accepted-served-version",
        || format!("{what}: version {} is not served", child.managed.version),
    );
    let api_version = if child.managed.group.is_empty() {
        child.managed.version.clone()
    } else {
        format!("{}/{}", child.managed.group, child.managed.version)
    };
    let object = &child.object;
    case.check(
        object.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str())
            && object.get("kind").and_then(Value::as_str) == Some(child.managed.kind.as_str()),
        "accepted-object-matches",
        || {
            format!(
                "{what}: object says {:?} {:?}",
                object.get("apiVersion"),
                object.get("kind")
            )
        },
    );
    let meta = object.get("metadata");
    case.check(
        meta.and_then(|m| m.get("name")).and_then(Value::as_str) == Some(child.name.as_str()),
        "accepted-object-matches",
        || {
            format!(
                "{what}: metadata.name is {:?}",
                meta.and_then(|m| m.get("name"))
            )
        },
    );
    let name_ok = if child.managed.group.is_empty() && child.managed.kind == "Service" {
        dns1035(&child.name)
    } else {
        dns_subdomain(&child.name)
    };
    case.check(name_ok, "accepted-name-valid", || {
        format!("{what}: invalid name")
    });
    let owner = &policy.owner;
    if declared.namespaced {
        match &child.namespace {
            None => case.fail(
                "accepted-namespace",
                format!("{what}: namespaced child without a namespace"),
            ),
            Some(ns) => {
                let listed = declared.namespaces.contains(ns);
                let in_meta = meta
                    .and_then(|m| m.get("namespace"))
                    .and_then(Value::as_str);
                case.check(in_meta == Some(ns.as_str()), "accepted-namespace", || {
                    format!("{what}: metadata.namespace is {in_meta:?}")
                });
                if !policy.ork_namespace.is_empty() && *ns == policy.ork_namespace {
                    case.check(listed, "accepted-namespace", || {
                        format!("{what}: in ork's namespace without declaring it")
                    });
                }
                match &owner.namespace {
                    None => case.check(listed, "accepted-namespace", || {
                        format!("{what}: child of a cluster-scoped CR in an undeclared namespace")
                    }),
                    Some(own) => case.check(ns == own || listed, "accepted-namespace", || {
                        format!("{what}: outside the CR's namespace {own:?} without declaring it")
                    }),
                }
            }
        }
    } else {
        case.check(
            child.namespace.is_none()
                && meta.and_then(|m| m.get("namespace")).is_none()
                && declared.cluster_scoped,
            "accepted-cluster-scoped",
            || {
                format!(
                    "{what}: cluster-scoped child (declared clusterScoped: {})",
                    declared.cluster_scoped
                )
            },
        );
    }
    let owner_group = owner.api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let same_place = match (&owner.namespace, &child.namespace) {
        (None, _) => true,
        (Some(o), Some(c)) => o == c,
        (Some(_), None) => true,
    };
    case.check(
        !(child.managed.group == owner_group
            && child.managed.kind == owner.kind
            && child.name == owner.name
            && same_place),
        "accepted-not-the-cr",
        || format!("{what}: the CR itself"),
    );
    if let Some(Value::Object(meta)) = meta {
        for field in ["ownerReferences", "managedFields", "resourceVersion", "uid"] {
            case.check(
                !meta.contains_key(field),
                "accepted-server-fields-dropped",
                || format!("{what}: metadata.{field} kept"),
            );
        }
        label_map(
            meta.get("labels"),
            true,
            &format!("{what}: metadata.labels"),
            case,
        );
        label_map(
            meta.get("annotations"),
            false,
            &format!("{what}: metadata.annotations"),
            case,
        );
    } else {
        case.fail(
            "accepted-object-matches",
            format!("{what}: metadata is {meta:?}"),
        );
    }
}

/// Label maps inside an object ork built from an intent (selectors, pod templates).
fn nested_labels(v: &Value, path: &str, case: &mut Case) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let here = format!("{path}.{k}");
                let is_labels = matches!(k.as_str(), "labels" | "matchLabels")
                    || (k == "selector"
                        && path.ends_with(".spec")
                        && child.get("matchLabels").is_none());
                if is_labels && child.is_object() && !path.is_empty() {
                    label_map(Some(child), true, &format!("intent-built {here}"), case);
                }
                nested_labels(child, &here, case);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| nested_labels(i, path, case)),
        _ => {}
    }
}

/// `labels` (`values` checked) or `annotations`: absent, or a map of strings with valid keys.
fn label_map(v: Option<&Value>, values: bool, what: &str, case: &mut Case) {
    let map = match v {
        None => return,
        Some(Value::Object(m)) => m,
        Some(other) => {
            case.fail("accepted-labels-map", format!("{what} is {other}"));
            return;
        }
    };
    for (k, v) in map {
        let Value::String(s) = v else {
            case.fail("accepted-labels-map", format!("{what}.{k:?} is {v}"));
            continue;
        };
        case.check(qualified_name(k), "accepted-labels-map", || {
            format!("{what}: invalid key {k:?}")
        });
        if values {
            case.check(label_value(s), "accepted-labels-map", || {
                format!("{what}: invalid value {k:?}={}", crate::runner::cut(s, 100))
            });
        }
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, any length (Kubernetes bounds subdomains as a whole).
fn dns_label_part(p: &str) -> bool {
    !p.is_empty()
        && p.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !p.starts_with('-')
        && !p.ends_with('-')
}

fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(dns_label_part)
}

fn dns1035(s: &str) -> bool {
    s.len() <= 63 && dns_label_part(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

fn qualified_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn qualified_name(k: &str) -> bool {
    match k.split_once('/') {
        Some((prefix, name)) => dns_subdomain(prefix) && qualified_part(name),
        None => qualified_part(k),
    }
}

fn label_value(v: &str) -> bool {
    v.is_empty() || qualified_part(v)
}

// ---------------------------------------------------------------------------------------------
// Generation

/// An answer: the fields of SPEC §2.2 in random order, each valid, odd or of the wrong type.
fn answer(g: &mut Gen, policy: &Policy) -> Node {
    let mut fields: Vec<(String, Node)> = Vec::new();
    if !g.one_in(4) {
        let v = match g.below(10) {
            0 => Node::str(g.hostile_str()),
            1 => Node::Num(g.json_number()),
            2 => Node::Null,
            _ => Node::str(*g.pick(&["ok", "ok", "requeue", "error", "", "OK", "Requeue", "done"])),
        };
        fields.push(("result".into(), v));
    }
    if g.one_in(3) {
        let v = match g.below(8) {
            0 => Node::Num(g.json_number()),
            1 => Node::Null,
            _ => Node::str(requeue_text(g)),
        };
        fields.push(("requeueAfter".into(), v));
    }
    if g.one_in(5) {
        let v = if g.one_in(5) {
            value(g, 1)
        } else {
            Node::str(g.hostile_str())
        };
        fields.push(("error".into(), v));
    }
    if g.one_in(2) {
        fields.push(("status".into(), status(g, policy)));
    }
    if !g.one_in(4) {
        fields.push(("resources".into(), resources(g, policy)));
    }
    if g.one_in(3) {
        fields.push(("conditions".into(), conditions(g, policy)));
    }
    if g.one_in(3) {
        fields.push(("events".into(), events(g, policy)));
    }
    if g.one_in(6) {
        let v = match g.below(4) {
            0 => Node::str("true"),
            1 => Node::int(1),
            _ => Node::Bool(g.coin()),
        };
        fields.push(("finalized".into(), v));
    }
    for _ in 0..g.below(2) {
        fields.push((g.hostile_str(), value(g, 2)));
    }
    if g.one_in(15) && !fields.is_empty() {
        let i = g.below(fields.len());
        let dup = fields[i].clone();
        fields.push(dup);
    }
    shuffle(g, &mut fields);
    match g.below(40) {
        0 => Node::Arr(vec![Node::Obj(fields)]),
        1 => value(g, 2),
        _ => Node::Obj(fields),
    }
}

fn shuffle<T>(g: &mut Gen, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = g.below(i + 1);
        items.swap(i, j);
    }
}

fn requeue_text(g: &mut Gen) -> String {
    (*g.pick(&[
        "1s",
        "999ms",
        "1000ms",
        "0",
        "0s",
        "-1s",
        "30s",
        "8760h",
        "8760h1ns",
        "8761h",
        "18446744073709551615s",
        "9223372036854775807ns",
        "1.5s",
        "5 seconds",
        "",
        "1d",
        "1e3s",
        "0.999999999s",
        "2562047h47m16.854775807s",
    ]))
    .to_string()
}

/// A count near a cap: under, at, just over, or far over (rarely when the cap is large: those
/// answers are slow to build and check).
fn near(g: &mut Gen, cap: usize, typical: usize) -> usize {
    if cap > 100 && !g.one_in(20) {
        return g.below(typical + 1);
    }
    match g.below(12) {
        0 => cap.saturating_sub(1),
        1 => cap,
        2 => cap + 1,
        3 if g.full() => cap * 3 + g.below(100),
        _ => g.below(typical + 1),
    }
}

fn status(g: &mut Gen, policy: &Policy) -> Node {
    match g.below(10) {
        0 => Node::Null,
        1 => Node::Arr(vec![Node::int(1)]),
        2 => Node::str("Ready"),
        3 => {
            // Close to the size cap.
            let cap = policy.limits.status_bytes;
            let len = match g.below(3) {
                0 => cap.saturating_sub(12),
                1 => cap.saturating_sub(11),
                _ => cap + g.below(10),
            };
            let len = if g.full() { len } else { len.min(4096) };
            Node::obj([("x", Node::str("a".repeat(len)))])
        }
        _ => {
            let mut m = vec![("phase".to_string(), Node::str(g.hostile_str()))];
            for _ in 0..g.below(4) {
                m.push((g.ident(), value(g, 3)));
            }
            if g.one_in(8) {
                m.push(("conditions".into(), value(g, 2)));
            }
            Node::Obj(m)
        }
    }
}

fn conditions(g: &mut Gen, policy: &Policy) -> Node {
    if g.one_in(15) {
        return value(g, 2);
    }
    let n = near(g, policy.limits.conditions, 4);
    let n = if g.full() { n } else { n.min(150) };
    Node::Arr(
        (0..n)
            .map(|i| {
                let mut c = vec![
                    (
                        "type".to_string(),
                        Node::str(match g.below(8) {
                            0 => "Ready".to_string(),
                            1 => g.hostile_str(),
                            2 => String::new(),
                            3 => "Same".to_string(),
                            _ => format!("Cond{i}"),
                        }),
                    ),
                    (
                        "status".to_string(),
                        Node::str(*g.pick(&["True", "False", "Unknown", "true", "", "Yes"])),
                    ),
                ];
                if g.coin() {
                    c.push(("reason".into(), Node::str(g.hostile_str())));
                }
                if g.coin() {
                    c.push(("message".into(), Node::str(g.hostile_str())));
                }
                if g.one_in(10) {
                    let at = g.below(c.len());
                    c[at].1 = value(g, 1);
                }
                if g.one_in(20) {
                    c.remove(g.below(c.len()));
                }
                Node::Obj(c)
            })
            .collect(),
    )
}

fn events(g: &mut Gen, policy: &Policy) -> Node {
    if g.one_in(15) {
        return value(g, 2);
    }
    let n = near(g, policy.limits.events, 3);
    Node::Arr(
        (0..n)
            .map(|_| {
                let mut e = Vec::new();
                if !g.one_in(5) {
                    e.push((
                        "type".to_string(),
                        Node::str(*g.pick(&["Normal", "Warning", "Error", "", "normal"])),
                    ));
                }
                if !g.one_in(6) {
                    e.push(("reason".to_string(), Node::str(g.hostile_str())));
                }
                if g.coin() {
                    e.push(("message".to_string(), Node::str(g.hostile_str())));
                }
                if g.one_in(10) && !e.is_empty() {
                    let at = g.below(e.len());
                    e[at].1 = value(g, 1);
                }
                Node::Obj(e)
            })
            .collect(),
    )
}

fn resources(g: &mut Gen, policy: &Policy) -> Node {
    match g.below(20) {
        0 => return Node::Null,
        1 => return value(g, 2),
        _ => {}
    }
    let n = near(g, policy.limits.children, 4);
    let n = if g.full() { n } else { n.min(60) };
    let mut items: Vec<Node> = (0..n).map(|_| resource(g, policy)).collect();
    if g.one_in(8) && !items.is_empty() {
        let dup = items[g.below(items.len())].clone();
        items.push(dup);
    }
    Node::Arr(items)
}

fn resource(g: &mut Gen, policy: &Policy) -> Node {
    match g.below(20) {
        0 => value(g, 2),
        1..=8 => intent(g, policy),
        _ => full_object(g, policy),
    }
}

fn child_name(g: &mut Gen, policy: &Policy) -> String {
    match g.below(12) {
        0 => policy.owner.name.clone(),
        1 => g.hostile_str(),
        2 => g.dns_name(),
        3 => "Upper".to_string(),
        _ => g.ident(),
    }
}

fn namespace(g: &mut Gen, policy: &Policy) -> Option<Node> {
    match g.below(12) {
        0..=4 => None,
        5 => Some(Node::Null),
        6 => Some(Node::str("")),
        7 => Some(Node::str(policy.ork_namespace.clone())),
        8 => Some(Node::str(g.hostile_str())),
        9 => Some(Node::Num(g.json_number())),
        _ => Some(Node::str(*g.pick(NAMESPACES))),
    }
}

/// A full object: mostly of a declared type at a served version.
fn full_object(g: &mut Gen, policy: &Policy) -> Node {
    let catalog = catalog();
    let t = if !policy.managed.is_empty() && !g.one_in(5) {
        g.pick(&policy.managed).clone()
    } else {
        g.pick(&catalog).clone()
    };
    let version = match g.below(10) {
        0 => "v2".to_string(),
        1 => "v1beta1".to_string(),
        2 if !t.served_versions.is_empty() => g.pick(&t.served_versions).clone(),
        _ => t.version.clone(),
    };
    let api_version = match g.below(16) {
        0 => format!("{}/", t.group),
        1 => format!("/{version}"),
        2 => g.hostile_str(),
        3 => format!("{}/{version}", t.group.to_uppercase()),
        4 => format!("{}/{version}/x", t.group),
        5 => String::new(),
        _ if t.group.is_empty() => version,
        _ => format!("{}/{version}", t.group),
    };
    let kind = match g.below(12) {
        0 => t.kind.to_lowercase(),
        1 => g.hostile_str(),
        2 => "WebApp".to_string(),
        _ => t.kind.clone(),
    };
    let mut meta: Vec<(String, Node)> = Vec::new();
    if !g.one_in(12) {
        let name = if g.one_in(15) {
            value(g, 1)
        } else {
            Node::str(child_name(g, policy))
        };
        meta.push(("name".into(), name));
    }
    if let Some(ns) = namespace(g, policy) {
        meta.push(("namespace".into(), ns));
    }
    if g.coin() {
        meta.push(("labels".into(), labels(g)));
    }
    if g.one_in(3) {
        meta.push(("annotations".into(), annotations(g)));
    }
    for field in [
        "ownerReferences",
        "managedFields",
        "resourceVersion",
        "uid",
        "generation",
    ] {
        if g.one_in(8) {
            meta.push((field.into(), value(g, 1)));
        }
    }
    let mut obj = vec![
        ("apiVersion".to_string(), Node::str(api_version)),
        ("kind".to_string(), Node::str(kind)),
    ];
    obj.push((
        "metadata".into(),
        match g.below(25) {
            0 => Node::Null,
            1 => Node::str("x"),
            _ => Node::Obj(meta),
        },
    ));
    if g.coin() {
        obj.push(("spec".into(), value(g, 3)));
    }
    if g.one_in(4) {
        obj.push(("data".into(), string_map(g)));
    }
    if g.one_in(6) {
        obj.push(("status".into(), value(g, 2)));
    }
    if g.one_in(6) {
        let v = if g.one_in(3) {
            Node::str("true")
        } else {
            Node::Bool(g.coin())
        };
        obj.push(("forceConflict".into(), v));
    }
    if g.one_in(10) && obj.len() > 1 {
        let at = 1 + g.below(obj.len() - 1);
        obj.remove(at);
    }
    Node::Obj(obj)
}

fn labels(g: &mut Gen) -> Node {
    match g.below(10) {
        0 => Node::Arr(vec![Node::str("a=b")]),
        1 => Node::str("app=web"),
        2 => Node::Null,
        3 => Node::Num(g.json_number()),
        4 => string_map(g),
        _ => {
            let mut m = Vec::new();
            for _ in 0..1 + g.below(4) {
                let key = match g.below(8) {
                    0 => format!("{}/{}", g.dns_name(), g.ident()),
                    1 => "app.kubernetes.io/name".to_string(),
                    2 => g.hostile_str(),
                    3 => "a".repeat(64),
                    _ => g.ident(),
                };
                let v = match g.below(10) {
                    0 => Node::Num(g.json_number()),
                    1 => Node::Bool(true),
                    2 => Node::Null,
                    3 => Node::str("a".repeat(64)),
                    4 => Node::str(g.hostile_str()),
                    _ => Node::str(g.ident()),
                };
                m.push((key, v));
            }
            Node::Obj(m)
        }
    }
}

fn annotations(g: &mut Gen) -> Node {
    if g.one_in(10) && g.full() {
        // At Kubernetes' 256 KiB limit for all annotations.
        let len = 256 * 1024 - 1 + g.below(3) - 1;
        return Node::obj([("k", Node::str("a".repeat(len.saturating_sub(1))))]);
    }
    labels(g)
}

/// An intent `{type, fields}`: a known type with its fields, valid or odd.
fn intent(g: &mut Gen, policy: &Policy) -> Node {
    let type_name = match g.below(15) {
        0 => g.hostile_str(),
        1 => "Deployment".to_string(),
        _ => (*g.pick(&INTENT_TYPES)).to_string(),
    };
    let mut fields: Vec<(String, Node)> = Vec::new();
    let name = match g.below(10) {
        0 => Node::Num(g.json_number()),
        1 => Node::Null,
        _ => Node::str(child_name(g, policy)),
    };
    if !g.one_in(10) {
        fields.push(("name".into(), name));
    }
    let image = || Node::str("nginx:1.27");
    let count = |g: &mut Gen| match g.below(8) {
        0 => Node::str(g.number_text()),
        1 => Node::str("3"),
        2 => Node::Num("2147483647".into()),
        3 => Node::Num("2147483648".into()),
        4 => Node::Num("-1".into()),
        _ => Node::Num(g.json_number()),
    };
    let port = |g: &mut Gen| match g.below(6) {
        0 => Node::int(0),
        1 => Node::int(65535),
        2 => Node::int(65536),
        3 => Node::str("8080"),
        4 => Node::Num(g.json_number()),
        _ => Node::int(8080),
    };
    match type_name.as_str() {
        "deployment" | "statefulset" | "job" | "cronjob" => {
            if !g.one_in(8) {
                fields.push(("image".into(), image()));
            }
            if g.coin() {
                fields.push(("replicas".into(), count(g)));
            }
            if g.coin() {
                fields.push(("port".into(), port(g)));
            }
            if g.coin() {
                let env = match g.below(5) {
                    0 => Node::Arr(vec![Node::obj([("name", Node::str("A"))])]),
                    1 => value(g, 1),
                    _ => {
                        let mut m = Vec::new();
                        for _ in 0..g.below(4) {
                            let k = if g.one_in(3) {
                                g.hostile_str()
                            } else {
                                "ENV_X".to_string()
                            };
                            let v = if g.one_in(4) {
                                Node::Num(g.json_number())
                            } else {
                                Node::str(g.hostile_str())
                            };
                            m.push((k, v));
                        }
                        Node::Obj(m)
                    }
                };
                fields.push(("env".into(), env));
            }
            if g.one_in(3) {
                let cmd = match g.below(4) {
                    0 => Node::str("sh -c 'x'"),
                    1 => Node::Num("1".into()),
                    2 => Node::Arr(vec![Node::str("a"), Node::int(1), Node::Null]),
                    _ => Node::Arr(vec![Node::str("sh"), Node::str(g.hostile_str())]),
                };
                fields.push(((*g.pick(&["command", "args"])).to_string(), cmd));
            }
            if type_name == "cronjob" && !g.one_in(6) {
                let s = if g.coin() {
                    "*/5 * * * *".to_string()
                } else {
                    g.hostile_str()
                };
                fields.push(("schedule".into(), Node::str(s)));
                if g.coin() {
                    fields.push((
                        "concurrencyPolicy".into(),
                        Node::str(*g.pick(&["Allow", "Forbid", "Replace", "allow", "x"])),
                    ));
                }
                if g.coin() {
                    fields.push((
                        "suspend".into(),
                        if g.coin() {
                            Node::Bool(true)
                        } else {
                            Node::str("true")
                        },
                    ));
                }
            }
            if type_name == "job" && g.coin() {
                fields.push(("backoffLimit".into(), count(g)));
            }
            if type_name == "statefulset" && g.coin() {
                fields.push(("serviceName".into(), Node::str(child_name(g, policy))));
            }
        }
        "service" => {
            if !g.one_in(8) {
                fields.push(("port".into(), port(g)));
            }
            if g.coin() {
                fields.push(("targetPort".into(), port(g)));
            }
            if g.coin() {
                fields.push((
                    "type".into(),
                    Node::str(*g.pick(&[
                        "ClusterIP",
                        "NodePort",
                        "LoadBalancer",
                        "ExternalName",
                        "",
                    ])),
                ));
            }
            if g.coin() {
                fields.push(("selector".into(), labels(g)));
            }
        }
        "configmap" | "secret" => {
            if g.coin() {
                let data = if type_name == "secret" && g.coin() {
                    Node::obj([(
                        "k",
                        Node::str(*g.pick(&["aGVsbG8=", "not base64!", "", "aGVsbG8"])),
                    )])
                } else {
                    string_map(g)
                };
                fields.push(("data".into(), data));
            }
            if type_name == "secret" && g.coin() {
                fields.push(("stringData".into(), string_map(g)));
            }
            if type_name == "secret" && g.one_in(3) {
                fields.push(("secretType".into(), Node::str(g.hostile_str())));
            }
        }
        "ingress" => {
            if !g.one_in(6) {
                fields.push(("serviceName".into(), Node::str(child_name(g, policy))));
            }
            if g.coin() {
                fields.push(("servicePort".into(), port(g)));
            }
            if g.coin() {
                fields.push(("host".into(), Node::str(g.hostile_str())));
            }
            if g.coin() {
                fields.push((
                    "path".into(),
                    Node::str(*g.pick(&["/", "/x", "", "x", "/a b"])),
                ));
            }
            if g.coin() {
                fields.push((
                    "pathType".into(),
                    Node::str(*g.pick(&["Prefix", "Exact", "ImplementationSpecific", "prefix"])),
                ));
            }
            if g.one_in(3) {
                fields.push(("ingressClass".into(), Node::str(g.ident())));
            }
        }
        "custom" => {
            let t = g.pick(&catalog()).clone();
            let av = if t.group.is_empty() {
                t.version.clone()
            } else {
                format!("{}/{}", t.group, t.version)
            };
            let av = match g.below(8) {
                0 => "demo.ork.dev/v2".to_string(),
                1 => g.hostile_str(),
                2 => format!("{}/", t.group),
                _ => av,
            };
            if !g.one_in(8) {
                fields.push(("apiVersion".into(), Node::str(av)));
            }
            if !g.one_in(8) {
                let kind = if g.one_in(6) {
                    g.hostile_str()
                } else {
                    t.kind.clone()
                };
                fields.push(("kind".into(), Node::str(kind)));
            }
            if let Some(ns) = namespace(g, policy) {
                fields.push(("namespace".into(), ns));
            }
            if g.coin() {
                fields.push(("spec".into(), value(g, 3)));
            }
            if g.one_in(3) {
                fields.push(("data".into(), value(g, 2)));
            }
        }
        _ => {
            for _ in 0..g.below(4) {
                fields.push((g.ident(), value(g, 2)));
            }
        }
    }
    if g.coin() {
        fields.push(("labels".into(), labels(g)));
    }
    if g.one_in(3) {
        fields.push(("annotations".into(), annotations(g)));
    }
    if g.one_in(6) {
        fields.push((
            "forceConflict".into(),
            if g.one_in(4) {
                Node::str("yes")
            } else {
                Node::Bool(g.coin())
            },
        ));
    }
    if g.one_in(5) {
        fields.push((g.hostile_str(), value(g, 1)));
    }
    let mut entry = vec![("type".to_string(), Node::str(type_name))];
    entry.push((
        "fields".to_string(),
        match g.below(25) {
            0 => Node::Null,
            1 => Node::Arr(Vec::new()),
            _ => Node::Obj(fields),
        },
    ));
    if g.one_in(8) {
        entry.push(("forceConflict".into(), Node::Bool(g.coin())));
    }
    if g.one_in(12) {
        entry.push((g.ident(), value(g, 1)));
    }
    if g.one_in(20) {
        entry.remove(g.below(entry.len()));
    }
    Node::Obj(entry)
}

/// One structural change: a node replaced by a hostile value, wrapped deep, a key repeated.
fn mutate(g: &mut Gen, node: &mut Node) {
    let paths = node.paths();
    let path = g.pick(&paths).clone();
    let Some(target) = node.at_mut(&path) else {
        return;
    };
    match g.below(6) {
        0 => *target = value(g, 2),
        1 => *target = Node::str(g.hostile_str()),
        2 => {
            let depth = match g.below(3) {
                0 => 126 + g.below(5),
                1 => 1000,
                _ => g.below(20),
            };
            let mut n = std::mem::replace(target, Node::Null);
            for _ in 0..depth {
                n = Node::Arr(vec![n]);
            }
            *target = n;
        }
        3 => {
            if let Node::Obj(entries) = target
                && !entries.is_empty()
            {
                let dup = entries[g.below(entries.len())].clone();
                entries.push(dup);
            }
        }
        4 => {
            if let Node::Obj(entries) = target
                && !entries.is_empty()
            {
                entries.remove(g.below(entries.len()));
            }
        }
        _ => *target = Node::Num(g.json_number()),
    }
}

/// Byte-level damage: cut short, stray bytes, invalid UTF-8, a BOM, trailing text.
fn corrupt(g: &mut Gen, body: &mut Vec<u8>) {
    match g.below(6) {
        0 => {
            let at = g.below(body.len() + 1);
            body.truncate(at);
        }
        1 => {
            let at = g.below(body.len() + 1);
            body.insert(at, *g.pick(&[0xff, 0xc0, 0x80, 0x00, b'"', b'\\', b'}']));
        }
        2 => {
            let mut with = vec![0xef, 0xbb, 0xbf];
            with.append(body);
            *body = with;
        }
        3 => {
            let tails: [&[u8]; 4] = [b" x", b"{}", b"\n\n", b"\0"];
            let tail = tails[g.below(tails.len())];
            body.extend_from_slice(tail);
        }
        4 => {
            let at = g.below(body.len() + 1);
            let bytes = g.hostile_str().into_bytes();
            body.splice(at..at, bytes);
        }
        _ => {
            if let Some(b) = body.iter_mut().find(|b| **b == b':') {
                *b = b'=';
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validators_follow_kubernetes() {
        assert!(qualified_name("app.kubernetes.io/name"));
        assert!(!qualified_name("Example.com/x"));
        assert!(!qualified_name(&"a".repeat(64)));
        assert!(label_value(""));
        assert!(!label_value("a b"));
        assert!(dns_subdomain("a.b-c"));
        assert!(!dns_subdomain("a..b"));
        assert!(dns1035("web-1") && !dns1035("1web") && !dns1035(&"a".repeat(64)));
        assert!(
            dns_subdomain(&"d".repeat(64)),
            "Kubernetes bounds only the whole name"
        );
    }

    #[test]
    fn generated_answers_are_often_accepted() {
        let mut accepted = 0;
        for seed in 0..400 {
            let mut g = Gen::new(seed, crate::Profile::Short, false);
            let p = policy(&mut g);
            let a = answer(&mut g, &p);
            if decide(a.to_json().as_bytes(), &p).is_ok() {
                accepted += 1;
            }
        }
        assert!(
            accepted > 20,
            "only {accepted} of 400 accepted: the invariants go unchecked"
        );
    }
}
