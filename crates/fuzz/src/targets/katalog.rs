//! Katalogs (SPEC §1, §9, §11) through `ork_katalog::load_str` — parse, size and nesting
//! limits, unknown fields, `resolve`, `validate` — and, when one loads, through what the
//! runtime does with it for a CR: labels and annotations, endpoint and args rendered, the
//! credential host check, gates and validation rules compiled and evaluated, cross selectors.
//!
//! Two targets: `katalog` generates the YAML from the model (valid skeletons with hostile
//! values: wrong types, unknown and repeated keys, anchors and aliases, alias bombs, nesting
//! and size at the limits, odd durations, deep templates, Unicode); `katalog-mutate` edits the
//! Katalogs of `examples/` and a feature-rich one line by line and character by character.
//!
//! Properties: no panic, bounded time and memory; every problem names a line inside the file;
//! a Katalog that loads obeys SPEC §1 (apiVersion and kind, `default: false` with `remote`,
//! exactly one of endpoint/command and of secretRef/env, workers, backoff, rate limits and
//! timeouts within bounds); a credential is only sent where the Katalog allows.

use std::collections::BTreeMap;
use std::path::Path;

use ork_katalog::condition::Operator;
use ork_katalog::{Katalog, Problems, Sentinel, load_str};
use ork_remote::{Endpoint, credential_allowed};
use serde_json::Value;

use crate::doc::{Node, to_yaml};
use crate::generate::Gen;
use crate::runner::{Case, Target};
use crate::targets::cr::cr;
use crate::targets::cr::{SPEC_FIELDS, string_map, value};
use crate::targets::template::{source as template_source, source_in};

#[derive(Debug)]
pub struct Generated;

#[derive(Debug)]
pub struct Mutated;

/// Where the Katalog "lives": a folder that does not exist, so relative paths lead nowhere.
const FILE: &str = "/nonexistent-ork-fuzz/katalog.yaml";

const EXAMPLES: &[&str] = &[
    include_str!("../../../../examples/webapp/katalog.yaml"),
    include_str!("../../../../examples/webapp/katalog-exec.yaml"),
    include_str!("rich.yaml"),
];

impl Target for Generated {
    fn name(&self) -> &'static str {
        "katalog"
    }

    fn about(&self) -> &'static str {
        "load_str on Katalog YAML generated from the model with hostile values; the loaded Katalog used on CRs"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        let text = generated_text(g);
        load_and_use(g, &text, case);
    }
}

impl Target for Mutated {
    fn name(&self) -> &'static str {
        "katalog-mutate"
    }

    fn about(&self) -> &'static str {
        "load_str on the example Katalogs edited by line and character; the loaded Katalog used on CRs"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        let text = mutated_text(g);
        load_and_use(g, &text, case);
    }
}

fn load_and_use(g: &mut Gen, text: &str, case: &mut Case) {
    case.note("katalog", text);
    case.begin();
    let loaded = load_str(text, Path::new(FILE));
    // YAML's lines: a lone CR breaks a line too.
    let lines = text
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .lines()
        .count()
        .max(1);
    match &loaded {
        Err(Problems(problems)) => {
            case.check(!problems.is_empty(), "katalog-problems", || {
                "refused with no problem listed".into()
            });
            for p in problems {
                if let Some(line) = p.line {
                    case.check(
                        (1..=lines + 1).contains(&line),
                        "katalog-problem-line",
                        || format!("problem at line {line} of a {lines}-line file: {p}"),
                    );
                }
            }
        }
        Ok(k) => {
            invariants(k, case);
            let cr = case.untimed(|| cr(g));
            let json = cr.to_json();
            if json.len() <= 16 * 1024 {
                case.note("cr", &json);
            } else {
                case.note("cr", &format!("({} bytes)", json.len()));
            }
            use_katalog(g, k, &cr, case);
        }
    }
    if g.one_in(16) {
        let again = load_str(text, Path::new(FILE));
        let same = match (&loaded, &again) {
            (Ok(_), Ok(_)) => true,
            (Err(a), Err(b)) => a.0 == b.0,
            _ => false,
        };
        case.check(same, "katalog-deterministic", || {
            "two loads of the same text differ".into()
        });
    }
}

/// SPEC §1 and the bounds the runtime relies on, for a Katalog that loaded.
fn invariants(k: &Katalog, case: &mut Case) {
    case.check(
        ork_katalog::API_VERSIONS.contains(&k.api_version.as_str())
            && ork_katalog::KINDS.contains(&k.kind.as_str()),
        "katalog-loaded-valid",
        || {
            format!(
                "loaded with apiVersion {:?} kind {:?}",
                k.api_version, k.kind
            )
        },
    );
    case.check(!k.spec.crds.is_empty(), "katalog-loaded-valid", || {
        "loaded with no entry".into()
    });
    let year = ork_katalog::duration::MAX;
    for (name, e) in &k.spec.crds {
        let r = &e.operator_box.reconcile;
        let mut bad = Vec::new();
        let Some(remote) = &r.remote else {
            case.fail(
                "katalog-loaded-valid",
                format!("entry {name} loaded without remote"),
            );
            continue;
        };
        if r.default != Some(false) {
            bad.push("remote without `default: false`".to_string());
        }
        if remote.endpoint.is_some() == remote.command.is_some() {
            bad.push("not exactly one of endpoint and command".into());
        }
        if let Some(a) = &remote.auth
            && a.secret_ref.is_some() == a.env.is_some()
        {
            bad.push("auth without exactly one source".into());
        }
        if !(1..=64).contains(&r.workers) {
            bad.push(format!("workers {}", r.workers));
        }
        let b = &r.queue.retry_backoff;
        if b.initial.is_zero() || b.initial > b.max || !(1.0..=10.0).contains(&b.multiplier) {
            bad.push(format!("retryBackoff {b:?}"));
        }
        if r.queue.failure_threshold == 0 {
            bad.push("failureThreshold 0".into());
        }
        if remote.timeout.is_zero() || remote.max_response_bytes == 0 {
            bad.push("zero timeout or response limit".into());
        }
        if let Some(rl) = &remote.rate_limit
            && !(rl.qps.is_finite()
                && (ork_katalog::MIN_QPS..=ork_katalog::MAX_QPS).contains(&rl.qps)
                && (1..=ork_katalog::MAX_BURST).contains(&rl.burst))
        {
            bad.push(format!("rateLimit {rl:?}"));
        }
        for d in [r.resync, b.initial, b.max, remote.timeout] {
            if d.get() > year {
                bad.push(format!("duration {d} over a year"));
            }
        }
        for m in &bad {
            case.fail("katalog-loaded-valid", format!("entry {name}: {m}"));
        }
    }
}

/// What the runtime does with an entry for one CR.
fn use_katalog(g: &mut Gen, k: &Katalog, cr: &Node, case: &mut Case) {
    let data = cr.to_value();
    let mut context = data.clone();
    if let Value::Object(m) = &mut context {
        m.insert("health".into(), serde_json::json!({"state": "healthy"}));
    }
    let sentinels: BTreeMap<Sentinel, bool> =
        Sentinel::ALL.iter().map(|s| (*s, g.coin())).collect();
    let peers = vec![data.clone(), context.clone()];
    for entry in k.spec.crds.values() {
        let _ = entry.render_metadata(&data);
        let _ = entry.single_namespace();
        let _ = entry.namespace_allowed(&g.hostile_str());
        let _ = entry.depends_on.entries();
        let ctx = entry.render_context(&context).with_sentinels(&sentinels);
        let pre = &entry.operator_box.pre_reconcile;
        let conditions = [&pre.enqueue_gate, &pre.reconcile_gate]
            .into_iter()
            .flatten()
            .flat_map(|gate| gate.when.iter().chain(&gate.or))
            .chain(&entry.operator_box.validation.rules);
        for c in conditions {
            if let Ok(check) = c.compile() {
                let _ = check.holds(&context, &sentinels);
                let _ = check.evaluate(&ctx, Some(&peers));
                let _ = check.describe_failure();
            }
        }
        for cross in &entry.operator_box.observe.cross {
            let s = &cross.selector;
            for t in s.name.iter().chain(&s.namespace).chain(s.labels.values()) {
                let _ = t.render_in(&ctx);
            }
        }
        let Some(remote) = &entry.operator_box.reconcile.remote else {
            continue;
        };
        let _ = remote.render_args(&data);
        for m in &remote.managed_resources {
            let _ = m.describe();
        }
        let (Some(template), Ok(url)) = (&remote.endpoint, remote.render_endpoint(&data)) else {
            continue;
        };
        case.note("rendered endpoint", &format!("{url:?}"));
        let Ok(target) = Endpoint::for_credential(&url) else {
            continue;
        };
        if credential_allowed(&target, template.source(), &remote.allowed_hosts) {
            let trusted =
                crate::targets::url::trusted(&url, template.source(), &remote.allowed_hosts);
            case.check(trusted, "credential-only-to-trusted-host", || {
                format!(
                    "endpoint {:?} rendered {url:?}: the credential would go to {}, allowedHosts {:?}",
                    template.source(),
                    target.authority(),
                    remote.allowed_hosts
                )
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generated Katalogs

fn generated_text(g: &mut Gen) -> String {
    // The shapes at the limits are slow: rarer than the rest (an alias bomb takes tens of
    // milliseconds to refuse and varies little).
    match g.below(800) {
        0..=7 if g.one_in(4) => alias_bomb(g),
        8..=27 => deep_text(g),
        28..=31 if g.full() => big_text(g),
        32 | 33 => many_entries(g),
        _ => {
            // Half the cases valid (hostile only where any value is legal), half broken.
            g.dirty = g.coin();
            let mut tree = katalog_tree(g);
            if !g.dirty {
                tree.dedupe_keys();
            }
            if g.dirty {
                for _ in 0..g.below(4) {
                    mutate_tree(g, &mut tree);
                }
                if g.one_in(6) {
                    anchors(g, &mut tree);
                }
            }
            let mut text = to_yaml(&tree, g);
            if g.bad(5) {
                text = text_edits(g, &text);
            }
            g.dirty = true;
            text
        }
    }
}

/// A Katalog tree from the model: valid unless the case is dirty, every value at risk then.
fn katalog_tree(g: &mut Gen) -> Node {
    let mut names: Vec<String> = Vec::new();
    for _ in 0..1 + g.below(3) {
        let n = entry_name(g);
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let mut top = vec![
        (
            "apiVersion".to_string(),
            Node::str(if g.bad(20) {
                g.hostile_str()
            } else {
                "orkestra.orkspace.io/v1".to_string()
            }),
        ),
        (
            "kind".to_string(),
            Node::str(if g.bad(20) { "Komposer" } else { "Katalog" }),
        ),
        ("metadata".to_string(), metadata(g)),
    ];
    let note_names: Vec<String> = if g.one_in(3) {
        let (node, names) = notes(g);
        top.push(("notes".into(), node));
        names
    } else {
        Vec::new()
    };
    let mut entries = Vec::new();
    for (i, n) in names.iter().enumerate() {
        entries.push((n.clone(), entry(g, &names[..i], &note_names)));
    }
    top.push(("spec".into(), Node::obj([("crds", Node::Obj(entries))])));
    Node::Obj(top)
}

fn entry_name(g: &mut Gen) -> String {
    if g.bad(10) {
        return if g.coin() {
            g.hostile_str()
        } else {
            "Web_App".to_string()
        };
    }
    g.ident()
}

/// `valid`, or in a dirty case now and then a hostile value of any type.
fn maybe_hostile(g: &mut Gen, valid: Node) -> Node {
    if !g.bad(8) {
        return valid;
    }
    match g.below(4) {
        0 => Node::str(g.hostile_str()),
        1 => value(g, 2),
        2 => Node::Num(g.json_number()),
        _ => Node::Null,
    }
}

/// Free text: anything goes.
fn text(g: &mut Gen) -> Node {
    Node::str(g.hostile_str())
}

fn metadata(g: &mut Gen) -> Node {
    let name = if g.bad(6) { g.hostile_str() } else { g.ident() };
    let mut m = vec![("name".to_string(), maybe_hostile(g, Node::str(name)))];
    if g.one_in(4) {
        let ns = if g.bad(3) { g.hostile_str() } else { g.ident() };
        m.push(("namespace".into(), Node::str(ns)));
    }
    for (k, p) in [
        ("description", 3),
        ("version", 4),
        ("author", 4),
        ("license", 5),
    ] {
        if g.one_in(p) {
            m.push((k.into(), text(g)));
        }
    }
    if g.one_in(4) {
        let n = g.below(4);
        m.push(("tags".into(), Node::Arr((0..n).map(|_| text(g)).collect())));
    }
    if g.one_in(5) {
        let v = if g.dirty {
            string_map(g)
        } else {
            Node::obj([("team", Node::str(g.ident()))])
        };
        m.push(("labels".into(), v));
    }
    Node::Obj(m)
}

fn notes(g: &mut Gen) -> (Node, Vec<String>) {
    let n = g.below(4);
    let mut names = Vec::new();
    let fns = (0..n)
        .map(|i| {
            let name = match g.below(8) {
                0 if g.dirty => "default".to_string(),
                1 if g.dirty => g.hostile_str(),
                _ => format!("note{i}"),
            };
            names.push(name.clone());
            let expression = if g.dirty {
                source_in(g, 4)
            } else {
                valid_template(g, &[])
            };
            let mut f = vec![
                ("name".to_string(), Node::str(name)),
                ("expression".to_string(), Node::str(expression)),
            ];
            if g.coin() {
                f.push(("description".into(), text(g)));
            }
            Node::Obj(f)
        })
        .collect();
    (Node::obj([("functions", Node::Arr(fns))]), names)
}

/// Templates every Katalog field accepts, over the CR and the notes.
fn valid_template(g: &mut Gen, notes: &[String]) -> String {
    const T: &[&str] = &[
        "{{ .metadata.name }}",
        "{{ .metadata.namespace }}-{{ .metadata.name }}",
        "{{ .spec.tier | default \"bronze\" }}",
        "{{ if .spec.mode }}{{ .spec.mode }}{{ else }}none{{ end }}",
        "{{ with .spec.image }}{{ . }}{{ end }}",
        "{{ printf \"%s-%v\" .metadata.name .spec.replicas }}",
        "{{ range $i, $e := $.spec.list }}{{ $i }}={{ $e }},{{ end }}",
        "{{ toJson .spec | sha256sum }}",
        "{{ len .metadata.name }}",
        "{{ .spec.port | toString | trimSpace }}",
        "{{ index .metadata.labels \"app\" }}",
        "{{ lower (toString .spec.environment) }}",
        "{{ if and .spec.h (not .spec.u) }}yes{{ end }}",
        "{{ $x := .spec.n }}{{ $x }}",
        "{{ .ork.namespace }}",
        "{{ truncateName .metadata.name }}",
        "{{ repeat 3 \"ab\" }}",
        "{{ toJson $ }}",
        "{{ range $.spec.items }}{{ toJson . }}{{ end }}",
        "{{- .metadata.name -}}",
    ];
    match g.below(6) {
        0 => g.hostile_str().replace("{{", "{ {"),
        1 if !notes.is_empty() => format!("{{{{ {} }}}}", g.pick(notes)),
        _ => (*g.pick(T)).to_string(),
    }
}

/// A template for a Katalog field: valid in a clean case, anything in a dirty one.
fn template_value(g: &mut Gen, notes: &[String]) -> Node {
    if g.dirty && g.coin() {
        Node::str(template_source(g))
    } else {
        Node::str(valid_template(g, notes))
    }
}

/// A duration as the Katalog takes it; in a dirty case, now and then not.
fn duration(g: &mut Gen) -> Node {
    if g.bad(3) {
        return match g.below(3) {
            0 => Node::Num(g.json_number()),
            1 => Node::str(g.hostile_str()),
            _ => Node::str(*g.pick(&[
                "8761h",
                "0",
                "0s",
                "-1s",
                "1ns",
                "9223372036854775807ns",
                "2562048h",
                "1e3s",
                "5 seconds",
                "1d",
                "",
                "18446744073709551615s",
                "8760h0m0.000000001s",
            ])),
        };
    }
    Node::str(*g.pick(&[
        "1s", "5s", "10s", "30s", "2m", "5m", "1h", "500ms", "1.5s", "8760h", "1h30m", "90s",
    ]))
}

fn entry(g: &mut Gen, earlier: &[String], notes: &[String]) -> Node {
    let mut e: Vec<(String, Node)> = Vec::new();
    if g.one_in(8) {
        e.push(("enabled".into(), {
            let v = Node::Bool(g.coin());
            maybe_hostile(g, v)
        }));
    }
    if g.one_in(3) {
        e.push(("description".into(), text(g)));
    }
    let kind = *g.pick(&["WebApp", "Database", "Gadget"]);
    let mut api = vec![
        (
            "group".to_string(),
            maybe_hostile(g, Node::str("demo.ork.dev")),
        ),
        ("version".to_string(), {
            let v = Node::str(*g.pick(&["v1", "v1beta1", "v2alpha1"]));
            maybe_hostile(g, v)
        }),
        ("kind".to_string(), maybe_hostile(g, Node::str(kind))),
        (
            "plural".to_string(),
            maybe_hostile(g, Node::str(format!("{}s", kind.to_lowercase()))),
        ),
    ];
    if g.bad(10) {
        api.remove(g.below(api.len()));
    }
    e.push(("apiTypes".into(), Node::Obj(api)));
    if g.bad(15) {
        e.push((
            "crdFile".into(),
            Node::str(*g.pick(&[
                "./crd.yaml",
                "../../etc/passwd",
                "/etc/passwd",
                "",
                "/dev/null",
            ])),
        ));
    }
    let namespaced = !g.bad(5);
    if g.one_in(5) || !namespaced {
        e.push(("namespaced".into(), {
            let v = Node::Bool(namespaced);
            maybe_hostile(g, v)
        }));
    }
    if g.one_in(4) && namespaced {
        let ns = if g.dirty {
            *g.pick(&["", "team", "ork-system", "Bad_NS"])
        } else {
            *g.pick(&["", "team"])
        };
        e.push(("namespace".into(), Node::str(ns)));
    }
    if g.one_in(6) {
        let v = if g.dirty {
            string_map(g)
        } else {
            Node::obj([("tier", Node::str("gold"))])
        };
        e.push(("labelSelector".into(), v));
    }
    for k in ["labels", "annotations"] {
        if g.one_in(5) {
            let n = g.below(3);
            let mut m = Vec::new();
            for _ in 0..n {
                let key = if g.bad(4) {
                    g.hostile_str()
                } else {
                    format!("demo.ork.dev/{}", g.ident())
                };
                m.push((key, template_value(g, notes)));
            }
            e.push((k.into(), Node::Obj(m)));
        }
    }
    for k in ["allowedNamespaces", "restrictedNamespaces"] {
        if g.one_in(6) && namespaced {
            let n = g.below(3);
            let patterns: &[&str] = if g.dirty {
                &["team", "team-*", "*", "*-prod", "**", "", "a*b"]
            } else {
                &["team", "team-*", "*-prod", "shop"]
            };
            e.push((
                k.into(),
                Node::Arr((0..n).map(|_| Node::str(*g.pick(patterns))).collect()),
            ));
        }
    }
    if g.one_in(8) {
        e.push((
            "endpoints".into(),
            Node::obj([
                ("enabled", Node::Bool(g.coin())),
                ("health", {
                    let v = Node::Bool(g.coin());
                    maybe_hostile(g, v)
                }),
            ]),
        ));
    }
    if g.one_in(3) && (!earlier.is_empty() || g.dirty) {
        let names: Vec<String> = if g.bad(4) {
            vec![g.ident(), g.hostile_str()]
        } else {
            earlier.to_vec()
        };
        let dep = match g.below(4) {
            0 => Node::Arr(names.iter().map(|n| Node::str(n.clone())).collect()),
            1 => Node::Obj(
                names
                    .iter()
                    .map(|n| {
                        let c = if g.bad(4) {
                            "ready"
                        } else {
                            *g.pick(&["healthy", "started"])
                        };
                        (n.clone(), Node::str(c))
                    })
                    .collect(),
            ),
            2 => Node::Obj(
                names
                    .iter()
                    .map(|n| (n.clone(), Node::obj([("condition", Node::str("healthy"))])))
                    .collect(),
            ),
            _ if g.dirty => Node::str(names.first().cloned().unwrap_or_default()),
            _ => Node::Arr(Vec::new()),
        };
        e.push(("dependsOn".into(), dep));
    }
    if g.bad(20) {
        let unsupported = *g.pick(&["onCreate", "hooks", "motifs", "constructor", "mode"]);
        e.push((unsupported.into(), value(g, 1)));
    }
    e.push((
        "operatorBox".into(),
        operator_box(g, earlier, notes, namespaced),
    ));
    Node::Obj(e)
}

fn operator_box(g: &mut Gen, earlier: &[String], notes: &[String], namespaced: bool) -> Node {
    let mut ob = Vec::new();
    let declared: Vec<&str> = if g.coin() {
        Sentinel::ALL
            .iter()
            .filter(|_| g.one_in(3))
            .map(|s| s.name())
            .collect()
    } else {
        Vec::new()
    };
    let mut pre = Vec::new();
    if !declared.is_empty() || g.bad(4) {
        pre.push(("sentinels".to_string(), sentinels(g, &declared)));
    }
    for k in ["enqueueGate", "reconcileGate"] {
        if g.coin() {
            pre.push((k.to_string(), gate(g, &declared, notes)));
        }
    }
    if !pre.is_empty() {
        ob.push(("preReconcile".to_string(), Node::Obj(pre)));
    }
    if g.one_in(4) && (!earlier.is_empty() || g.dirty) {
        let n = 1 + g.below(2);
        let cross = (0..n)
            .map(|i| {
                let crd = if earlier.is_empty() || g.bad(4) {
                    g.ident()
                } else {
                    g.pick(earlier).clone()
                };
                Node::obj([
                    ("crd", Node::str(crd)),
                    (
                        "selector",
                        Node::obj([
                            ("name", template_value(g, notes)),
                            ("namespace", template_value(g, notes)),
                        ]),
                    ),
                    (
                        "as",
                        Node::str(if g.bad(4) {
                            String::new()
                        } else {
                            format!("peer{i}")
                        }),
                    ),
                ])
            })
            .collect();
        ob.push(("observe".into(), Node::obj([("cross", Node::Arr(cross))])));
    }
    if g.one_in(3) {
        let n = g.below(4);
        let rules = (0..n).map(|_| condition(g, true, &[], notes)).collect();
        ob.push((
            "validation".into(),
            Node::obj([("rules", Node::Arr(rules))]),
        ));
    }
    ob.push(("reconcile".into(), reconcile(g, notes, namespaced)));
    if g.one_in(8) && namespaced {
        ob.push((
            "runtime".into(),
            Node::obj([("allowedNamespaces", Node::Arr(vec![Node::str("team")]))]),
        ));
    }
    Node::Obj(ob)
}

fn sentinels(g: &mut Gen, names: &[&str]) -> Node {
    let mut items: Vec<Node> = names.iter().map(|n| Node::str(*n)).collect();
    if g.bad(3) {
        items.push(Node::str(g.hostile_str()));
    }
    Node::Arr(items)
}

fn gate(g: &mut Gen, declared: &[&str], notes: &[String]) -> Node {
    let mut gate = Vec::new();
    for k in ["when", "or"] {
        if g.coin() || (k == "when" && !g.dirty) {
            let n = if g.dirty { g.below(4) } else { 1 + g.below(3) };
            gate.push((
                k.to_string(),
                Node::Arr(
                    (0..n)
                        .map(|_| condition(g, false, declared, notes))
                        .collect(),
                ),
            ));
        }
    }
    if g.one_in(4) && (!declared.is_empty() || g.dirty) {
        let pick: Vec<&str> = declared.iter().copied().filter(|_| g.coin()).collect();
        gate.push(("sentinels".into(), sentinels(g, &pick)));
    }
    if g.one_in(4) {
        let p = if g.dirty {
            *g.pick(&["open", "closed", "Open", "x"])
        } else {
            *g.pick(&["open", "closed"])
        };
        gate.push(("failPolicy".into(), Node::str(p)));
    }
    Node::Obj(gate)
}

fn condition(g: &mut Gen, rule: bool, declared: &[&str], notes: &[String]) -> Node {
    let mut c = Vec::new();
    let field = match g.below(8) {
        0 => template_value(g, notes),
        1 if !declared.is_empty() => Node::str(format!("{{{{ {} }}}}", g.pick(declared))),
        2 if g.dirty => Node::str(g.hostile_str()),
        _ => Node::str(format!("spec.{}", g.pick(SPEC_FIELDS))),
    };
    if g.bad(10) {
        c.push((
            "sentinel".to_string(),
            Node::str(Sentinel::ALL[g.below(15)].name()),
        ));
    } else {
        c.push(("field".to_string(), field));
    }
    let op = if g.bad(10) {
        *g.pick(&["matches", "", "Equals"])
    } else {
        *g.pick(&Operator::NAMES)
    };
    let v = match op {
        "regex" => match g.below(5) {
            0 => Node::str("{{ .spec.re }}"),
            1 if g.dirty => Node::str(*g.pick(&["[", "(?i)x{1000}{1000}", "a{100000}", ""])),
            2 => Node::str(*g.pick(&["(a+)+$", "^[a-z0-9./:-]+$", "\\p{L}+", "^(a|aa)*b$"])),
            _ => Node::str("^x"),
        },
        "between" | "notBetween" => {
            if g.coin() {
                Node::str("1,10")
            } else {
                Node::Arr(vec![Node::int(1), Node::int(10)])
            }
        }
        "in" | "notIn" => {
            if g.coin() {
                Node::str("a,b")
            } else {
                Node::Arr(vec![Node::str("a"), Node::int(1)])
            }
        }
        "typeOf" => Node::str(if g.bad(3) {
            "widget"
        } else {
            *g.pick(&["map", "slice", "string", "number", "bool", "null"])
        }),
        "gt" | "lt" | "gte" | "lte" | "greaterThan" | "lessThan" | "greaterThanOrEqual"
        | "lessThanOrEqual" | "min" | "max" => {
            if g.bad(3) {
                text(g)
            } else {
                Node::Num(g.json_number())
            }
        }
        _ => match g.below(4) {
            0 => template_value(g, notes),
            1 => text(g),
            _ => Node::str(g.ident()),
        },
    };
    let no_value = matches!(
        op,
        "exists"
            | "notExists"
            | "unique"
            | "typeMap"
            | "typeList"
            | "typeString"
            | "typeNumber"
            | "typeBool"
            | "typeNull"
    );
    let shorthand_ok = !op.starts_with("type") || op == "typeOf";
    if g.coin() || op.is_empty() || (!shorthand_ok && !g.dirty) {
        c.push(("operator".into(), Node::str(op)));
        if !no_value || g.bad(3) {
            c.push(("value".into(), v));
        }
    } else if no_value {
        c.push((op.to_string(), Node::Bool(true)));
    } else {
        c.push((op.to_string(), v));
    }
    if g.one_in(5) {
        c.push(("negate".into(), maybe_hostile(g, Node::Bool(true))));
    }
    if g.one_in(3) {
        c.push(("message".into(), text(g)));
    }
    if rule && g.one_in(3) {
        let a = if g.bad(3) {
            "block"
        } else {
            *g.pick(&["deny", "warn"])
        };
        c.push(("action".into(), Node::str(a)));
    }
    Node::Obj(c)
}

fn reconcile(g: &mut Gen, notes: &[String], namespaced: bool) -> Node {
    let mut r = Vec::new();
    if !g.bad(3) {
        r.push(("default".to_string(), Node::Bool(false)));
    } else {
        match g.below(3) {
            0 => {}
            1 => r.push(("default".to_string(), Node::Bool(true))),
            _ => r.push(("default".to_string(), Node::str("false"))),
        }
    }
    if g.coin() {
        let w = if g.bad(3) {
            match g.below(3) {
                0 => Node::int(0),
                1 => Node::int(65),
                _ => Node::Num(g.json_number()),
            }
        } else {
            Node::int(1 + i64::try_from(g.below(64)).unwrap_or(0))
        };
        r.push(("workers".into(), w));
    }
    if g.coin() {
        r.push(("resync".into(), duration(g)));
    }
    if g.coin() {
        let mut q = Vec::new();
        if g.coin() {
            q.push((
                "failureThreshold".to_string(),
                maybe_hostile(g, Node::int(5)),
            ));
        }
        if g.coin() {
            let rb = if g.one_in(3) {
                duration(g)
            } else {
                let mut m = vec![("initial".to_string(), duration(g))];
                if g.coin() || g.dirty {
                    let max = if g.dirty {
                        duration(g)
                    } else {
                        Node::str("8760h")
                    };
                    m.push(("max".to_string(), max));
                }
                if g.coin() {
                    let choices: &[&str] = if g.dirty {
                        &["2", "1", "0.5", "10", "11", "1e308", "-1", "1.5"]
                    } else {
                        &["2", "1", "10", "1.5"]
                    };
                    m.push((
                        "multiplier".into(),
                        Node::Num((*g.pick(choices)).to_string()),
                    ));
                }
                if g.one_in(4) {
                    m.push(("maxAttempts".into(), maybe_hostile(g, Node::int(3))));
                }
                Node::Obj(m)
            };
            q.push(("retryBackoff".to_string(), rb));
        }
        if g.one_in(4) {
            let v = if g.dirty {
                Node::Num(g.json_number())
            } else {
                Node::int(7)
            };
            q.push(("maxAttempts".into(), v));
        }
        r.push(("queue".into(), Node::Obj(q)));
    }
    if g.one_in(6) {
        r.push(("forceConflict".into(), {
            let v = Node::Bool(g.coin());
            maybe_hostile(g, v)
        }));
    }
    if !g.bad(12) {
        r.push(("remote".into(), remote(g, notes, namespaced)));
    }
    Node::Obj(r)
}

fn endpoint_source(g: &mut Gen) -> String {
    match g.below(10) {
        0 => "http://{{ .spec.h }}/r".to_string(),
        1 => "http://{{ .spec.u }}@127.0.0.1:9001/r".to_string(),
        2 => "https://svc.team:8443/{{ .spec.p }}".to_string(),
        3 if g.dirty => template_source(g),
        4 if g.dirty => g.hostile_str(),
        5 => "{{ note0 }}".to_string(),
        6 if g.dirty => {
            (*g.pick(&["ftp://x/", "http://", "http:///x", "http://svc:99999/"])).to_string()
        }
        _ => (*g.pick(&[
            "http://127.0.0.1:8025/reconcile",
            "https://svc.team/reconcile",
            "http://[::1]:8080/r",
            "http://127.1:9001/{{ .metadata.name }}",
            "http://svc.team{{ .spec.p }}",
            "http://{{ .spec.h }}:9001/r",
        ]))
        .to_string(),
    }
}

fn remote(g: &mut Gen, notes: &[String], namespaced: bool) -> Node {
    let mut r = Vec::new();
    let exec = g.one_in(5);
    if g.bad(10) {
        match g.below(2) {
            0 => {}
            _ => {
                r.push(("endpoint".to_string(), Node::str(endpoint_source(g))));
                r.push(("command".to_string(), Node::Arr(vec![Node::str("./r.sh")])));
            }
        }
    } else if exec {
        let cmd = if g.bad(3) {
            if g.coin() {
                Node::Arr(Vec::new())
            } else {
                Node::str("./reconcile.sh")
            }
        } else {
            Node::Arr(vec![Node::str("./reconcile.sh"), text(g)])
        };
        r.push(("command".to_string(), cmd));
        if g.coin() {
            r.push(("env".into(), Node::obj([("LC_ALL", text(g))])));
        }
        if g.one_in(3) {
            r.push((
                "workingDir".into(),
                Node::str(*g.pick(&["..", "/", "sub", ""])),
            ));
        }
    } else {
        let mut src = endpoint_source(g);
        if src.contains("note0") && !notes.iter().any(|n| n == "note0") {
            src = "http://127.0.0.1:8025/reconcile".into();
        }
        r.push(("endpoint".to_string(), Node::str(src)));
    }
    if g.one_in(6) {
        let t = if g.dirty {
            *g.pick(&["http", "grpc", "HTTP"])
        } else {
            "http"
        };
        r.push(("type".into(), Node::str(t)));
    }
    if g.coin() {
        r.push(("timeout".into(), duration(g)));
    }
    if g.coin() {
        let n = g.below(4);
        let args = (0..n)
            .map(|_| {
                let v = if g.coin() {
                    template_value(g, notes)
                } else {
                    value(g, 2)
                };
                (g.ident(), v)
            })
            .collect();
        r.push(("args".into(), Node::Obj(args)));
    }
    let mut declared_kinds: Vec<&str> = Vec::new();
    if !g.bad(8) {
        let n = g.below(4);
        let mut items = Vec::new();
        for _ in 0..n {
            let (node, kind) = managed_resource(g, namespaced);
            if g.dirty || !declared_kinds.contains(&kind) {
                declared_kinds.push(kind);
                items.push(node);
            }
        }
        r.push(("managedResources".into(), Node::Arr(items)));
    }
    if g.one_in(3) && !exec {
        let mut a = Vec::new();
        match if g.dirty { g.below(5) } else { 3 + g.below(2) } {
            0 => {}
            1 => {
                a.push(("env".to_string(), Node::str("TOKEN")));
                a.push((
                    "secretRef".to_string(),
                    Node::obj([("name", Node::str("t")), ("key", Node::str("k"))]),
                ));
            }
            2 => a.push(("env".to_string(), text(g))),
            3 => a.push(("env".to_string(), Node::str("ORK_FUZZ_TOKEN"))),
            _ => a.push((
                "secretRef".to_string(),
                Node::obj([
                    (
                        "name",
                        // A templated name is refused (SPEC §11): only dirty cases try one.
                        if g.dirty && g.coin() {
                            Node::str("{{ .metadata.name }}-token")
                        } else {
                            Node::str("token")
                        },
                    ),
                    ("key", Node::str("token")),
                ]),
            )),
        }
        if g.coin() {
            let h = if g.dirty {
                *g.pick(&["Authorization", "X-Api-Key", "Bad Header", "\u{1b}[2J"])
            } else {
                *g.pick(&["Authorization", "X-Api-Key"])
            };
            a.push(("header".into(), Node::str(h)));
        }
        r.push(("auth".into(), Node::Obj(a)));
    }
    if g.one_in(3) {
        let n = g.below(3);
        let hosts: &[&str] = if g.dirty {
            &[
                "127.0.0.1:9001",
                "svc.team",
                "SVC.team:8443",
                "[::1]",
                "*.team",
                "svc.team/x",
                "",
            ]
        } else {
            &[
                "127.0.0.1:9001",
                "svc.team",
                "SVC.team:8443",
                "[::1]",
                "127.1",
            ]
        };
        r.push((
            "allowedHosts".into(),
            Node::Arr((0..n).map(|_| Node::str(*g.pick(hosts))).collect()),
        ));
    }
    if g.one_in(5) {
        let qps: &[&str] = if g.dirty {
            &[
                "5", "1e-20", "0.001", "1000000", "1000001", "0", "-1", "1e308",
            ]
        } else {
            &["5", "0.001", "1000000", "0.5"]
        };
        r.push((
            "rateLimit".into(),
            Node::obj([
                ("qps", Node::Num((*g.pick(qps)).to_string())),
                ("burst", maybe_hostile(g, Node::int(10))),
            ]),
        ));
    }
    for k in ["prune", "finalize"] {
        if g.one_in(6) {
            r.push((k.into(), {
                let v = Node::Bool(g.coin());
                maybe_hostile(g, v)
            }));
        }
    }
    if g.one_in(6) {
        let v = if g.dirty {
            Node::Num(g.json_number())
        } else {
            Node::int(1 << 20)
        };
        r.push(("maxResponseBytes".into(), v));
    }
    let https = matches!(r.first(), Some((_, Node::Str(e))) if e.starts_with("https://"));
    if g.one_in(8) && !exec && (https || g.dirty) {
        let mut tls = vec![(
            "caBundle".to_string(),
            Node::str("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
        )];
        if g.dirty {
            tls.push(("caSecretRef".into(), Node::obj([("name", Node::str("ca"))])));
        }
        r.push(("tls".into(), Node::Obj(tls)));
    }
    if g.one_in(5) {
        r.push((
            "payload".into(),
            Node::obj([
                (
                    "object",
                    Node::obj([(
                        "exclude",
                        Node::Arr(vec![Node::str("metadata.managedFields")]),
                    )]),
                ),
                (
                    "children",
                    Node::obj([
                        ("enabled", Node::Bool(g.coin())),
                        (
                            "resources",
                            if g.dirty || declared_kinds.contains(&"Deployment") {
                                Node::obj([("deployment", Node::Null)])
                            } else {
                                Node::Obj(Vec::new())
                            },
                        ),
                    ]),
                ),
            ]),
        ));
    }
    Node::Obj(r)
}

fn managed_resource(g: &mut Gen, namespaced: bool) -> (Node, &'static str) {
    let (group, version, plural, kind, cluster) = *g.pick(&[
        ("apps", "v1", "deployments", "Deployment", false),
        ("", "v1", "services", "Service", false),
        ("", "v1", "configmaps", "ConfigMap", false),
        ("batch", "v1", "cronjobs", "CronJob", false),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
            true,
        ),
    ]);
    let mut m = Vec::new();
    match g.below(4) {
        0 => m.push(("kind".to_string(), Node::str(kind))),
        1 => {
            let av = if group.is_empty() {
                version.to_string()
            } else {
                format!("{group}/{version}")
            };
            m.push(("apiVersion".to_string(), Node::str(av)));
            m.push(("kind".to_string(), Node::str(kind)));
        }
        _ => {
            m.push(("group".to_string(), maybe_hostile(g, Node::str(group))));
            m.push(("version".to_string(), Node::str(version)));
            m.push(("plural".to_string(), maybe_hostile(g, Node::str(plural))));
            if g.coin() {
                m.push(("kind".to_string(), Node::str(kind)));
            }
        }
    }
    if g.one_in(5) && (!cluster || g.dirty) {
        let n = g.below(3);
        let choices: &[&str] = if g.dirty {
            &["other", "ork-system", "*", ""]
        } else {
            &["other", "ork-system"]
        };
        m.push((
            "namespaces".into(),
            Node::Arr((0..n).map(|_| Node::str(*g.pick(choices))).collect()),
        ));
    }
    if (cluster && !g.bad(3)) || g.bad(6) {
        m.push(("clusterScoped".into(), maybe_hostile(g, Node::Bool(true))));
    }
    if g.bad(10) || (!namespaced && g.one_in(10)) {
        m.push(("adopt".into(), Node::Bool(true)));
    }
    (Node::Obj(m), kind)
}

/// Structural damage to the tree: wrong types, unknown, misspelt, repeated or missing keys.
fn mutate_tree(g: &mut Gen, tree: &mut Node) {
    let paths = tree.paths();
    let path = g.pick(&paths).clone();
    let Some(node) = tree.at_mut(&path) else {
        return;
    };
    match g.below(8) {
        0 => *node = Node::str(g.hostile_str()),
        1 => *node = value(g, 2),
        2 => *node = Node::Num(g.number_text()),
        3 => {
            if let Node::Obj(entries) = node
                && !entries.is_empty()
            {
                let i = g.below(entries.len());
                let misspelt = g.mutate_str(&entries[i].0);
                entries[i].0 = misspelt;
            }
        }
        4 => {
            if let Node::Obj(entries) = node
                && !entries.is_empty()
            {
                let dup = entries[g.below(entries.len())].clone();
                entries.push(dup);
            }
        }
        5 => {
            if let Node::Obj(entries) = node
                && !entries.is_empty()
            {
                entries.remove(g.below(entries.len()));
            }
        }
        6 => {
            if let Node::Obj(entries) = node {
                let k = *g.pick(&[
                    "onCreate",
                    "hooks",
                    "validation",
                    "timout",
                    "endpoints",
                    "x",
                    "<<",
                    "? x",
                    "spec",
                    "",
                ]);
                entries.push((k.to_string(), value(g, 1)));
            }
        }
        _ => {
            *node = Node::Raw(
                (*g.pick(&[
                    "!!binary aGVsbG8=",
                    "!!int \"3\"",
                    "!custom x",
                    "*nosuch",
                    "&a",
                    "|",
                    ">",
                    "-",
                    "? ",
                    "{",
                    "[",
                    "]",
                    "}",
                    "'",
                    "\"",
                    "!!str",
                    "!!map {}",
                    "!!set {a, b}",
                    "@x",
                    "`x`",
                    "%x",
                    "{a: 1, a: 2}",
                    "[*a]",
                    "!!float .nan",
                    "0o777",
                    "0x_1",
                    "1__0",
                    "!!null ''",
                    "!!timestamp 2001-12-14",
                    "~",
                ]))
                .to_string(),
            )
        }
    }
}

/// Anchors on some nodes and aliases (and merge keys) to them later in the document.
fn anchors(g: &mut Gen, tree: &mut Node) {
    let paths = tree.paths();
    if paths.len() < 3 {
        return;
    }
    let a = 1 + g.below(paths.len() - 1);
    let b = 1 + g.below(paths.len() - 1);
    let (first, second) = (a.min(b), a.max(b));
    let anchored_is_map = matches!(tree.at_mut(&paths[first]), Some(Node::Obj(_)));
    // The alias first (its path is still valid), then the anchor.
    if let Some(node) = tree.at_mut(&paths[second]) {
        match node {
            Node::Obj(entries) if anchored_is_map && g.coin() => {
                entries.push(("<<".into(), Node::Raw("*a1".into())));
            }
            other => *other = Node::Raw("*a1".into()),
        }
    }
    if let Some(node) = tree.at_mut(&paths[first]) {
        let inner = std::mem::replace(node, Node::Null);
        *node = Node::Anchor("a1".into(), Box::new(inner));
    }
}

/// The billion-laughs shape: each level aliases the previous one ten times.
fn alias_bomb(g: &mut Gen) -> String {
    let levels = if g.full() {
        3 + g.below(8)
    } else {
        2 + g.below(2)
    };
    let width = 2 + g.below(9);
    let mut out = format!("lol0: &l0 [{}]\n", vec!["\"lol\""; width].join(", "));
    for i in 1..=levels {
        let refs = vec![format!("*l{}", i - 1); width].join(", ");
        out.push_str(&format!("lol{i}: &l{i} [{refs}]\n"));
    }
    let last = format!("*l{levels}");
    out.push_str(&format!(
        "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {{name: x, tags: {last}}}\nspec:\n  crds:\n    web:\n      operatorBox:\n        reconcile:\n          default: false\n          remote:\n            endpoint: http://127.0.0.1:1/\n            args: {{bomb: {last}}}\n"
    ));
    out
}

/// Nesting at and around the limit (40), by indentation, `- ` items and flow brackets.
fn deep_text(g: &mut Gen) -> String {
    let depth = match g.below(4) {
        0 => 30 + g.below(15),
        1 => 200 + g.below(1000),
        2 => {
            if g.full() {
                100_000
            } else {
                2_000
            }
        }
        _ => g.below(50),
    };
    let head = "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {name: x}\nspec:\n  crds:\n    web:\n      operatorBox:\n        reconcile:\n          default: false\n          remote:\n            endpoint: http://127.0.0.1:1/\n            args:\n";
    let mut out = head.to_string();
    // Indented forms grow quadratically: at most 1,500 levels (about 2 MiB).
    let indented = depth.min(1500);
    match g.below(4) {
        0 => {
            let depth = indented;
            for i in 0..depth {
                out.push_str(&" ".repeat(14 + 2 * i));
                out.push_str("k:\n");
            }
            out.push_str(&" ".repeat(14 + 2 * depth));
            out.push_str("v\n");
        }
        1 => {
            out.push_str("              k: ");
            out.push_str(&"[".repeat(depth));
            out.push_str(&"]".repeat(depth));
            out.push('\n');
        }
        2 => {
            out.push_str("              k: ");
            out.push_str(&"{a: ".repeat(depth));
            out.push('1');
            out.push_str(&"}".repeat(depth));
            out.push('\n');
        }
        _ => {
            out.push_str("              k:\n");
            for i in 0..indented {
                out.push_str(&" ".repeat(14 + 2 * i));
                out.push_str("-\n");
            }
        }
    }
    out
}

/// A Katalog at and just past the 4 MiB limit.
fn big_text(g: &mut Gen) -> String {
    let limit = ork_katalog::MAX_FILE_BYTES as usize;
    let head = "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata:\n  name: x\n  description: \"";
    let tail = "\"\nspec:\n  crds:\n    web:\n      operatorBox:\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://127.0.0.1:1/\"}\n";
    let target = limit - 64 + g.below(128);
    let fill = target.saturating_sub(head.len() + tail.len());
    let unit = *g.pick(&["x", "é", "\\u00e9", "{{ "]);
    let mut out = String::with_capacity(target + 16);
    out.push_str(head);
    out.push_str(&unit.repeat(fill / unit.len()));
    out.push_str(tail);
    out
}

/// Many entries that depend on each other, or a long line of problems.
fn many_entries(g: &mut Gen) -> String {
    let n = if g.full() {
        50 + g.below(3000)
    } else {
        20 + g.below(80)
    };
    let mut out = String::from(
        "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {name: x}\nspec:\n  crds:\n",
    );
    let fanout = 1 + g.below(10);
    let typo = g.coin();
    for i in 0..n {
        out.push_str(&format!("    e{i}:\n      apiTypes: {{group: g{i}.io, version: v1, kind: K{i}, plural: k{i}s}}\n"));
        let deps: Vec<String> = (0..fanout)
            .map(|j| {
                if typo {
                    format!("x{}", (i + j + 1) % n)
                } else {
                    format!("e{}", (i + j + 1) % n)
                }
            })
            .collect();
        out.push_str(&format!("      dependsOn: [{}]\n", deps.join(", ")));
        out.push_str("      operatorBox:\n        reconcile:\n          default: false\n          remote:\n            endpoint: http://127.0.0.1:1/\n            timout: 5s\n");
    }
    out
}

/// Text-level damage: line endings, tabs, a BOM, directives, cuts.
fn text_edits(g: &mut Gen, text: &str) -> String {
    match g.below(9) {
        0 => text.replace('\n', "\r\n"),
        1 => text.replacen("  ", "\t", 1 + g.below(3)),
        2 => format!("\u{feff}{text}"),
        3 => format!("%YAML 1.2\n---\n{text}...\n"),
        4 => {
            let cut = g.below(text.len() + 1);
            let cut = (0..=cut)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            text[..cut].to_string()
        }
        5 => format!("{text}---\n{text}"),
        6 => format!("{text}\n---\n{}", g.hostile_str()),
        7 => {
            let mut s = g.mutate_str(text);
            s.push('\n');
            s
        }
        _ => format!("# {}\n{text}", g.hostile_str().replace('\n', " ")),
    }
}

// ---------------------------------------------------------------------------------------------
// Mutated examples

fn mutated_text(g: &mut Gen) -> String {
    let base = *g.pick(EXAMPLES);
    let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
    for _ in 0..1 + g.below(6) {
        if lines.is_empty() {
            break;
        }
        let i = g.below(lines.len());
        match g.below(12) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 => {
                let j = g.below(lines.len());
                lines.swap(i, j);
            }
            3 => lines[i].insert_str(0, "  "),
            4 => {
                let trimmed = lines[i].strip_prefix("  ").map(str::to_string);
                if let Some(t) = trimmed {
                    lines[i] = t;
                }
            }
            5 => {
                let other = *g.pick(EXAMPLES);
                let other: Vec<&str> = other.lines().collect();
                let l = (*g.pick(&other)).to_string();
                lines.insert(i, l);
            }
            6 | 7 => {
                // A value replaced, quoted or not.
                if let Some(at) = lines[i].find(": ") {
                    let v = match g.below(4) {
                        0 => g.hostile_str().replace('\n', " "),
                        1 => {
                            let mut s = String::new();
                            crate::doc::json_string(&g.hostile_str(), &mut s);
                            s
                        }
                        2 => g.number_text(),
                        _ => (*g.pick(&[
                            "[]",
                            "{}",
                            "null",
                            "~",
                            "*a",
                            "&a x",
                            "!!str 5",
                            "|",
                            "-1s",
                            "99999999h",
                        ]))
                        .to_string(),
                    };
                    lines[i].truncate(at + 2);
                    lines[i].push_str(&v);
                }
            }
            8 => {
                let key = *g.pick(&[
                    "timout",
                    "onCreate",
                    "allowedHosts",
                    "workers",
                    "default",
                    "x",
                ]);
                let indent = lines[i].len() - lines[i].trim_start().len();
                let v = g.hostile_str().replace('\n', " ");
                lines.insert(i, format!("{}{key}: {v}", " ".repeat(indent)));
            }
            9 => {
                let l = g.mutate_str(&lines[i]);
                lines[i] = l;
            }
            10 => {
                if let Some(at) = lines[i].find(": ") {
                    lines[i].insert_str(at + 2, "&a ");
                    let j = g.below(lines.len());
                    if let Some(at2) = lines[j].find(": ") {
                        lines[j].truncate(at2 + 2);
                        lines[j].push_str("*a");
                    }
                }
            }
            _ => lines.truncate(i),
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    if g.one_in(8) {
        text = text_edits(g, &text);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each seed loads where it lives (its relative paths, such as the exec example's program,
    /// found as a user's would be); in the fuzz cases they lead nowhere.
    #[test]
    fn the_seed_katalogs_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let homes = [
            root.join("../../examples/webapp/katalog.yaml"),
            root.join("../../examples/webapp/katalog-exec.yaml"),
            root.join("src/targets/rich.yaml"),
        ];
        for (text, home) in EXAMPLES.iter().zip(&homes) {
            if let Err(p) = load_str(text, home) {
                panic!("{p}");
            }
        }
    }

    #[test]
    fn generated_katalogs_sometimes_load() {
        let mut ok = 0;
        for seed in 0..300 {
            let mut g = Gen::new(seed, crate::Profile::Short, false);
            g.dirty = false;
            let tree = katalog_tree(&mut g);
            let text = to_yaml(&tree, &mut g);
            match load_str(&text, Path::new(FILE)) {
                Ok(_) => ok += 1,
                Err(p) if seed < 30 => eprintln!("{text}\n{p}\n"),
                Err(_) => {}
            }
        }
        assert!(
            ok > 100,
            "only {ok} of 300 generated Katalogs load: the runtime paths go unchecked"
        );
    }
}
