//! Semantic checks on a typed Katalog: what deserialisation alone cannot see, and the notices
//! `ork validate` shows without failing.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::condition::{Check, Condition, Subject};
use crate::model::{CrdEntry, Gate, Katalog, Remote};
use crate::sentinel::Sentinel;
use crate::template::{BUILTIN_FUNCTIONS, Template, is_template, unsupported_reason};

pub const API_VERSION: &str = "orkestra.orkspace.io/v1";

/// Bounds of `remote.rateLimit.qps` (calls per second).
pub const MIN_QPS: f64 = 0.001;
pub const MAX_QPS: f64 = 1_000_000.0;
/// Largest `remote.rateLimit.burst`.
pub const MAX_BURST: u32 = 1_000_000;

/// One semantic problem (or notice) at a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
}

/// "Did you mean" hints whose candidates grow with the Katalog (entry and note names), at most
/// this many per Katalog: each costs an edit distance to every candidate, so a Katalog full of
/// unknown names would otherwise take time quadratic in its size.
const GROWING_HINTS: usize = 32;

#[derive(Default)]
struct Findings {
    found: Vec<Finding>,
    /// How many hints against entry or note names were worked out.
    hints: usize,
}

impl Findings {
    /// Whether one more hint against a growing list of names may be worked out.
    fn may_hint(&mut self) -> bool {
        self.hints += 1;
        self.hints <= GROWING_HINTS
    }

    fn add(&mut self, path: impl Into<String>, message: impl Into<String>, hint: Option<&str>) {
        self.found.push(Finding {
            path: path.into(),
            message: message.into(),
            hint: hint.map(str::to_string),
        });
    }
}

/// Which functions a template at some place may call.
struct Scope<'a> {
    notes: &'a BTreeSet<String>,
    declared: &'a BTreeSet<Sentinel>,
    /// Sentinels are known only in preReconcile gates.
    sentinels: bool,
}

/// Every semantic problem in `katalog`.
pub fn validate(katalog: &Katalog) -> Vec<Finding> {
    let mut f = Findings::default();
    if katalog.api_version != API_VERSION {
        f.add(
            "apiVersion",
            format!("unsupported apiVersion \"{}\"", katalog.api_version),
            Some(&format!("use `apiVersion: {API_VERSION}`")),
        );
    }
    if katalog.kind != "Katalog" {
        f.add(
            "kind",
            format!("kind \"{}\" is not a Katalog", katalog.kind),
            Some("use `kind: Katalog` (Komposer and Motif files are not supported)"),
        );
    }
    if katalog.spec.crds.is_empty() {
        f.add("spec.crds", "the Katalog declares no entries", None);
    }
    let notes = check_notes(&mut f, katalog);
    for (name, entry) in &katalog.spec.crds {
        check_entry(&mut f, katalog, &notes, name, entry);
    }
    check_dependency_cycles(&mut f, katalog);
    f.found
}

/// The host of a literal `http://` URL (no template in scheme or authority).
fn plain_http_host(source: &str) -> Option<&str> {
    if host_is_templated(source) {
        return None;
    }
    let rest = source.strip_prefix("http://")?;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.split(':').next().unwrap_or(authority),
    })
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether the scheme or authority of a URL template holds an action.
fn host_is_templated(source: &str) -> bool {
    let authority_end = source
        .find("://")
        .map(|i| i + 3)
        .and_then(|start| source[start..].find('/').map(|j| start + j))
        .unwrap_or(source.len());
    source[..authority_end].contains("{{")
}

/// What `ork validate` reports without failing.
pub fn notices(katalog: &Katalog) -> Vec<Finding> {
    let mut f = Findings::default();
    for (name, entry) in &katalog.spec.crds {
        let Some(remote) = &entry.operator_box.reconcile.remote else {
            continue;
        };
        let rp = format!("spec.crds.{name}.operatorBox.reconcile.remote");
        if let Some(endpoint) = &remote.endpoint
            && remote.allowed_hosts.is_empty()
            && host_is_templated(endpoint.source())
        {
            f.add(
                format!("{rp}.endpoint"),
                "the endpoint's host is a template and allowedHosts is empty: only a URL whose host is the one the Katalog renders without a CR is called",
                Some("list the hosts a CR may choose in `allowedHosts`"),
            );
        }
        if let Some(endpoint) = &remote.endpoint
            && remote.auth.is_some()
            && let Some(host) = plain_http_host(endpoint.source())
            && !is_loopback_host(host)
        {
            f.add(
                format!("{rp}.endpoint"),
                format!(
                    "the credential goes over plain http:// to {host}: anyone on the way can read it"
                ),
                Some("use https:// (with `tls.caBundle` for a private CA)"),
            );
        }
        if remote.managed_resources.is_empty() && remote.command.is_none() {
            f.add(
                format!("{rp}.managedResources"),
                "no managedResources: the service may not return any child",
                None,
            );
        }
        for (i, m) in remote.managed_resources.iter().enumerate() {
            if m.needs_discovery() {
                f.add(
                    format!("{rp}.managedResources[{i}]"),
                    format!(
                        "the plural of {} is found through discovery when ork starts",
                        m.describe()
                    ),
                    Some("add `plural:` to fix it in the Katalog"),
                );
            }
            if m.is_role() {
                f.add(
                    format!("{rp}.managedResources[{i}]"),
                    format!(
                        "managing {} lets the service grant anyone what ork itself holds (ork has no `escalate`: nothing beyond that)",
                        m.describe()
                    ),
                    Some("keep ork's own RBAC narrow; review what the service may write"),
                );
            }
            if m.is_binding() && m.bind_roles.is_empty() {
                f.add(
                    format!("{rp}.managedResources[{i}]"),
                    format!(
                        "{} without bindRoles: every binding the service returns is refused",
                        m.describe()
                    ),
                    Some("list the roles its bindings may name: `bindRoles: [{kind: ClusterRole, name: view}]` (ork gets `bind` on exactly those)"),
                );
            }
        }
    }
    f.found
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Checks `notes.functions`; returns the note names for the template checks.
fn check_notes(f: &mut Findings, k: &Katalog) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut calls: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, note) in k.notes.functions.iter().enumerate() {
        let p = format!("notes.functions[{i}]");
        if !is_identifier(&note.name) {
            f.add(
                format!("{p}.name"),
                format!("note name \"{}\" is not an identifier", note.name),
                Some("use letters, digits and _ (e.g. reconcilerEndpoint)"),
            );
            continue;
        }
        if Sentinel::from_name(&note.name).is_some() {
            f.add(
                format!("{p}.name"),
                format!("note \"{}\" has the name of a sentinel", note.name),
                Some("rename the note"),
            );
        } else if BUILTIN_FUNCTIONS.contains(&note.name.as_str()) && !note.shadow {
            f.add(
                format!("{p}.name"),
                format!("note \"{}\" has the name of a built-in function", note.name),
                Some("rename it, or add `shadow: true` to replace the built-in"),
            );
        }
        if !names.insert(note.name.clone()) {
            f.add(
                format!("{p}.name"),
                format!("note \"{}\" is declared twice", note.name),
                None,
            );
        }
        if let Ok(t) = Template::parse(&note.expression) {
            calls.insert(note.name.clone(), t.functions());
        }
    }
    let declared = BTreeSet::new();
    let scope = Scope {
        notes: &names,
        declared: &declared,
        sentinels: true,
    };
    for (i, note) in k.notes.functions.iter().enumerate() {
        if let Ok(t) = Template::parse(&note.expression) {
            check_functions(
                f,
                &format!("notes.functions[{i}].expression"),
                &t,
                &scope,
                true,
            );
        }
    }
    for (i, note) in k.notes.functions.iter().enumerate() {
        if let Some(through) = cycle_from(&note.name, &calls) {
            f.add(
                format!("notes.functions[{i}].expression"),
                format!("note \"{}\" calls itself{through}", note.name),
                Some("notes may call each other, but not in a circle"),
            );
        }
    }
    names
}

/// `Some(" through a, b")` when `start` reaches itself through note calls.
fn cycle_from(start: &str, calls: &BTreeMap<String, Vec<String>>) -> Option<String> {
    let mut stack: Vec<(String, Vec<String>)> = vec![(start.to_string(), Vec::new())];
    let mut seen = BTreeSet::new();
    while let Some((name, path)) = stack.pop() {
        for next in calls.get(&name).into_iter().flatten() {
            if next == start {
                return Some(if path.is_empty() {
                    String::new()
                } else {
                    format!(" through {}", path.join(", "))
                });
            }
            if calls.contains_key(next) && seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

/// Every function a template calls must exist where it is used.
fn check_functions(f: &mut Findings, path: &str, t: &Template, scope: &Scope, in_note: bool) {
    for name in t.functions() {
        if scope.notes.contains(&name) || BUILTIN_FUNCTIONS.contains(&name.as_str()) {
            continue;
        }
        if let Some(s) = Sentinel::from_name(&name) {
            if in_note {
                continue;
            }
            if !scope.sentinels {
                f.add(
                    path,
                    format!("sentinel \"{name}\" is only known in preReconcile gates"),
                    Some("sentinels describe the event that enqueued the object; use them in enqueueGate or reconcileGate"),
                );
            } else if !scope.declared.contains(&s) {
                f.add(
                    path,
                    format!("sentinel \"{name}\" is not declared"),
                    Some(&format!(
                        "add it to operatorBox.preReconcile.sentinels: [{name}]"
                    )),
                );
            }
            continue;
        }
        if let Some(why) = unsupported_reason(&name) {
            f.add(
                path,
                format!("\"{name}\" is an Orkestra note ork does not provide"),
                Some(why),
            );
            continue;
        }
        let mut known: Vec<&str> = BUILTIN_FUNCTIONS.to_vec();
        if f.may_hint() {
            known.extend(scope.notes.iter().map(String::as_str));
        }
        if scope.sentinels {
            known.extend(scope.declared.iter().map(|s| s.name()));
        }
        let hint = match crate::suggest::closest(&name, known.iter().copied()) {
            Some(best) => format!("did you mean \"{best}\"?"),
            None => "define it under notes.functions, or use a built-in function".into(),
        };
        f.add(
            path,
            format!("invalid template: function \"{name}\" not defined"),
            Some(&hint),
        );
    }
}

fn check_template_str(f: &mut Findings, path: &str, s: &str, scope: &Scope) {
    match Template::parse(s) {
        Ok(t) => check_functions(f, path, &t, scope, false),
        Err(e) => f.add(path, format!("invalid template: {e}"), None),
    }
}

fn check_namespace_patterns(f: &mut Findings, path: &str, patterns: &[String]) {
    for (i, p) in patterns.iter().enumerate() {
        let inner = p.trim_start_matches('*').trim_end_matches('*');
        let stars_inside = p != "*" && inner.contains('*');
        let stars_both_ends = p.len() > 1 && p.starts_with('*') && p.ends_with('*');
        let ok = !p.is_empty()
            && !stars_inside
            && !stars_both_ends
            && inner
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !ok {
            f.add(
                format!("{path}[{i}]"),
                format!("\"{p}\" is not a namespace or a prefix*/`*`suffix pattern"),
                Some("e.g. apps, team-* or *-sandbox"),
            );
        }
    }
}

fn is_label_key(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    name_ok && prefix_ok
}

fn check_entry(
    f: &mut Findings,
    katalog: &Katalog,
    notes: &BTreeSet<String>,
    name: &str,
    entry: &CrdEntry,
) {
    let p = format!("spec.crds.{name}");
    if !is_dns_label(name) {
        f.add(
            &p,
            format!("entry name \"{name}\" must be a lowercase DNS label"),
            Some("it appears in metric labels and health URLs"),
        );
    }
    if let Some(mode) = &entry.mode
        && mode != "dynamic"
    {
        f.add(
            format!("{p}.mode"),
            format!("mode \"{mode}\" is not supported by ork"),
            Some("typed mode needs Go types compiled into Orkestra; ork watches custom resources dynamically: remove `mode`"),
        );
    }
    let t = &entry.api_types;
    for (field, value) in [
        ("group", &t.group),
        ("version", &t.version),
        ("kind", &t.kind),
        ("plural", &t.plural),
    ] {
        if value.trim().is_empty() && entry.crd_file.is_none() {
            f.add(
                format!("{p}.apiTypes.{field}"),
                format!("apiTypes.{field} is required"),
                Some("or point `crdFile:` at the CRD manifest to read apiTypes from it"),
            );
        }
    }
    if !t.plural.is_empty() && t.plural != t.plural.to_lowercase() {
        f.add(
            format!("{p}.apiTypes.plural"),
            "plural must be lowercase",
            Some(&format!("did you mean \"{}\"?", t.plural.to_lowercase())),
        );
    }
    if !entry.namespaced && entry.namespace.as_deref().is_some_and(|n| !n.is_empty()) {
        f.add(
            format!("{p}.namespace"),
            "a cluster-scoped entry cannot watch one namespace",
            Some("remove `namespace` or set `namespaced: true`"),
        );
    }
    check_namespace_patterns(
        f,
        &format!("{p}.allowedNamespaces"),
        &entry.allowed_namespaces,
    );
    check_namespace_patterns(
        f,
        &format!("{p}.restrictedNamespaces"),
        &entry.restricted_namespaces,
    );
    let rt = &entry.operator_box.runtime;
    check_namespace_patterns(
        f,
        &format!("{p}.operatorBox.runtime.allowedNamespaces"),
        &rt.allowed_namespaces,
    );
    check_namespace_patterns(
        f,
        &format!("{p}.operatorBox.runtime.restrictedNamespaces"),
        &rt.restricted_namespaces,
    );
    let guarded = !entry.effective_allowed_namespaces().is_empty()
        || !entry.effective_restricted_namespaces().is_empty();
    if !entry.namespaced && guarded {
        f.add(
            format!("{p}.allowedNamespaces"),
            "namespace guards do not apply to a cluster-scoped entry",
            None,
        );
    }
    for (dep, _) in entry.depends_on.entries() {
        if dep == name {
            f.add(
                format!("{p}.dependsOn"),
                "an entry cannot depend on itself",
                None,
            );
        } else if !katalog.spec.crds.contains_key(&dep) {
            let hint = entry_hint(f, katalog, &dep);
            f.add(
                format!("{p}.dependsOn"),
                format!("dependsOn names \"{dep}\", which is not an entry of this Katalog"),
                hint.as_deref(),
            );
        }
    }

    let ob = &entry.operator_box;
    let declared: BTreeSet<Sentinel> = ob.pre_reconcile.sentinels.iter().copied().collect();
    let plain = Scope {
        notes,
        declared: &declared,
        sentinels: false,
    };
    let gates = Scope {
        notes,
        declared: &declared,
        sentinels: true,
    };
    for (kind, map) in [
        ("labels", &entry.labels),
        ("annotations", &entry.annotations),
    ] {
        for (key, t) in map {
            let kp = format!("{p}.{kind}.{key}");
            if !is_label_key(key) {
                f.add(
                    &kp,
                    format!("\"{key}\" is not a valid {} key", &kind[..kind.len() - 1]),
                    Some("a name of at most 63 characters, optionally prefixed by a DNS subdomain and /"),
                );
            }
            check_functions(f, &kp, t, &plain, false);
        }
    }
    for (gate_name, gate) in [
        ("enqueueGate", &ob.pre_reconcile.enqueue_gate),
        ("reconcileGate", &ob.pre_reconcile.reconcile_gate),
    ] {
        if let Some(gate) = gate {
            check_gate(
                f,
                &format!("{p}.operatorBox.preReconcile.{gate_name}"),
                gate,
                &gates,
            );
        }
    }
    for (i, rule) in ob.validation.rules.iter().enumerate() {
        check_condition(
            f,
            &format!("{p}.operatorBox.validation.rules[{i}]"),
            rule,
            &plain,
            true,
        );
    }
    let mut aliases = BTreeSet::new();
    for (i, cross) in ob.observe.cross.iter().enumerate() {
        let cp = format!("{p}.operatorBox.observe.cross[{i}]");
        if !katalog.spec.crds.contains_key(&cross.crd) {
            let hint = entry_hint(f, katalog, &cross.crd);
            f.add(
                format!("{cp}.crd"),
                format!("\"{}\" is not an entry of this Katalog", cross.crd),
                hint.as_deref(),
            );
        }
        if cross.alias.is_empty() || !aliases.insert(cross.alias.clone()) {
            f.add(
                format!("{cp}.as"),
                "`as` must be a unique, non-empty name",
                None,
            );
        }
        let s = &cross.selector;
        for (field, t) in s
            .name
            .iter()
            .map(|t| ("name".to_string(), t))
            .chain(s.namespace.iter().map(|t| ("namespace".to_string(), t)))
            .chain(s.labels.iter().map(|(k, t)| (format!("labels.{k}"), t)))
        {
            check_functions(f, &format!("{cp}.selector.{field}"), t, &plain, false);
        }
    }

    let rp = format!("{p}.operatorBox.reconcile");
    let r = &ob.reconcile;
    if r.workers == 0 || r.workers > 64 {
        f.add(
            format!("{rp}.workers"),
            "workers must be between 1 and 64",
            None,
        );
    }
    let b = &r.queue.retry_backoff;
    if b.initial.is_zero() || b.initial > b.max {
        f.add(
            format!("{rp}.queue.retryBackoff"),
            format!(
                "retryBackoff needs 0 < initial ({}) <= max ({})",
                b.initial, b.max
            ),
            None,
        );
    }
    if !(b.multiplier >= 1.0 && b.multiplier <= 10.0) {
        f.add(
            format!("{rp}.queue.retryBackoff.multiplier"),
            "multiplier must be between 1 and 10",
            None,
        );
    }
    for (path, attempts) in [
        ("queue.maxAttempts", r.queue.max_attempts),
        ("queue.retryBackoff.maxAttempts", b.max_attempts),
    ] {
        if attempts == Some(0) {
            f.add(
                format!("{rp}.{path}"),
                "maxAttempts must be at least 1 (the first call counts)",
                Some("remove it for unlimited retries"),
            );
        }
    }
    if r.queue.failure_threshold == 0 {
        f.add(
            format!("{rp}.queue.failureThreshold"),
            "failureThreshold must be at least 1",
            None,
        );
    }
    match &r.remote {
        None => f.add(
            &rp,
            "ork runs remote reconcilers: this entry has no `remote` block",
            Some("add `remote: {endpoint: ..., managedResources: [...]}` and `default: false`"),
        ),
        Some(remote) => {
            if r.default != Some(false) {
                f.add(
                    match r.default {
                        Some(true) => format!("{rp}.default"),
                        _ => format!("{rp}.remote"),
                    },
                    "`default: false` is required next to `remote`",
                    Some("without it Orkestra starts its built-in reconciler and ignores `remote`; add `default: false` under `reconcile`"),
                );
            }
            check_remote(f, &format!("{rp}.remote"), remote, &plain);
        }
    }
}

fn check_gate(f: &mut Findings, path: &str, gate: &Gate, scope: &Scope) {
    if gate.when.is_empty() && gate.or.is_empty() && gate.sentinels.is_empty() {
        f.add(path, "a gate needs `when`, `or` or `sentinels`", None);
    }
    for (i, s) in gate.sentinels.iter().enumerate() {
        if !scope.declared.contains(s) {
            f.add(
                format!("{path}.sentinels[{i}]"),
                format!("sentinel \"{}\" is not declared", s.name()),
                Some(&format!(
                    "add it to operatorBox.preReconcile.sentinels: [{}]",
                    s.name()
                )),
            );
        }
    }
    for (list, conds) in [("when", &gate.when), ("or", &gate.or)] {
        for (i, c) in conds.iter().enumerate() {
            check_condition(f, &format!("{path}.{list}[{i}]"), c, scope, false);
        }
    }
}

fn check_condition(f: &mut Findings, path: &str, c: &Condition, scope: &Scope, is_rule: bool) {
    if c.action.is_some() && !is_rule {
        f.add(
            format!("{path}.action"),
            "`action` applies to validation rules only",
            Some("a gate condition passes or gates; remove `action`"),
        );
    }
    match c.compile() {
        Err(errors) => {
            for e in errors {
                f.add(format!("{path}.{}", e.field), e.message, e.hint.as_deref());
            }
        }
        Ok(check) => check_compiled(f, path, &check, scope),
    }
}

fn check_compiled(f: &mut Findings, path: &str, check: &Check, scope: &Scope) {
    match &check.subject {
        Subject::Sentinel(s) if !scope.sentinels => f.add(
            format!("{path}.sentinel"),
            format!(
                "sentinel \"{}\" is only known in preReconcile gates",
                s.name()
            ),
            None,
        ),
        Subject::Sentinel(s) if !scope.declared.contains(s) => f.add(
            format!("{path}.sentinel"),
            format!("sentinel \"{}\" is not declared", s.name()),
            Some(&format!(
                "add it to operatorBox.preReconcile.sentinels: [{}]",
                s.name()
            )),
        ),
        Subject::Template(t) => check_functions(f, &format!("{path}.field"), t, scope, false),
        _ => {}
    }
    if let Value::String(s) = &check.value
        && is_template(s)
    {
        check_template_str(f, path, s, scope);
    }
}

fn check_remote(f: &mut Findings, rp: &str, remote: &Remote, scope: &Scope) {
    match (&remote.endpoint, &remote.command) {
        (None, None) => f.add(
            format!("{rp}.endpoint"),
            "reconcile.remote.endpoint is required",
            Some("the URL ork POSTs each reconcile request to, e.g. http://127.0.0.1:8080/reconcile (or `command: [./reconcile.sh]` for the exec transport)"),
        ),
        (Some(_), Some(_)) => f.add(
            format!("{rp}.command"),
            "set either `endpoint` (HTTP) or `command` (exec), not both",
            None,
        ),
        (Some(endpoint), None) => {
            check_functions(f, &format!("{rp}.endpoint"), endpoint, scope, false);
            check_endpoint(f, rp, endpoint);
        }
        (None, Some(cmd)) => {
            if cmd.first().is_none_or(|p| p.trim().is_empty()) {
                f.add(format!("{rp}.command"), "command needs a program", Some("e.g. command: [./reconcile.sh]"));
            }
            if remote.auth.is_some() {
                f.add(
                    format!("{rp}.auth"),
                    "auth applies to an HTTP endpoint; a command runs locally",
                    Some("pass what the command needs through `env:`"),
                );
            }
        }
    }
    if remote.command.is_none() {
        if remote.working_dir.is_some() {
            f.add(
                format!("{rp}.workingDir"),
                "workingDir applies to `command:` only",
                None,
            );
        }
        if !remote.env.is_empty() {
            f.add(format!("{rp}.env"), "env applies to `command:` only", None);
        }
    }
    if let Some(t) = &remote.transport
        && t != "http"
    {
        f.add(
            format!("{rp}.type"),
            format!("unsupported transport \"{t}\""),
            Some(if t == "grpc" {
                "grpc is reserved in Orkestra too; use `http` (or `command:` for the exec transport)"
            } else {
                "only `http` is supported (or `command:` for the exec transport)"
            }),
        );
    }
    if remote.timeout.is_zero() {
        f.add(
            format!("{rp}.timeout"),
            "timeout must be greater than zero",
            None,
        );
    }
    if remote.max_response_bytes == 0 {
        f.add(
            format!("{rp}.maxResponseBytes"),
            "maxResponseBytes must be positive",
            None,
        );
    }
    for (key, value) in &remote.args {
        if let Value::String(s) = value
            && is_template(s)
        {
            check_template_str(f, &format!("{rp}.args.{key}"), s, scope);
        }
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, m) in remote.managed_resources.iter().enumerate() {
        let mp = format!("{rp}.managedResources[{i}]");
        if !m.plural.is_empty() && m.plural != m.plural.to_lowercase() {
            f.add(format!("{mp}.plural"), "plural must be lowercase", None);
        }
        if let Some(first) = seen.insert(m.describe(), i) {
            f.add(
                &mp,
                format!("duplicate managed resource {}", m.describe()),
                Some(&format!(
                    "already declared as managedResources[{first}]; remove one"
                )),
            );
        }
        if m.cluster_scoped && !m.namespaces.is_empty() {
            f.add(
                format!("{mp}.namespaces"),
                "a cluster-scoped resource has no namespaces",
                None,
            );
        }
        if let Some(n) = &m.name
            && (n.is_empty() || is_template(n))
        {
            f.add(
                format!("{mp}.name"),
                "name must be a literal object name",
                None,
            );
        }
    }
    if let Some(auth) = &remote.auth {
        match (&auth.secret_ref, &auth.env) {
            (Some(_), Some(_)) | (None, None) => f.add(
                format!("{rp}.auth"),
                "auth: exactly one of secretRef or env must be set",
                Some("secretRef: {name, key} reads a Secret; env: NAME reads ork's environment"),
            ),
            (Some(s), None) => {
                if s.name.is_empty() || s.key.is_empty() {
                    f.add(
                        format!("{rp}.auth.secretRef"),
                        "secretRef needs name and key",
                        None,
                    );
                }
                if s.is_templated() {
                    // SPEC §11: a CR author must not choose which Secret ork reads.
                    f.add(
                        format!("{rp}.auth.secretRef.name"),
                        "the Secret name cannot be a template: a CR's fields would choose which Secret ork reads and sends, and RBAC would have to grant every Secret of the namespace",
                        Some("name one Secret (`name: service-token`); for a credential per tenant, one entry per tenant with its own Secret"),
                    );
                }
            }
            (None, Some(env)) => {
                if env.is_empty() || !env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    f.add(
                        format!("{rp}.auth.env"),
                        format!("\"{env}\" is not an environment variable name"),
                        None,
                    );
                }
            }
        }
        if auth.header.trim().is_empty()
            || !auth
                .header
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            f.add(
                format!("{rp}.auth.header"),
                format!("\"{}\" is not an HTTP header name", auth.header),
                None,
            );
        }
    }
    let children = &remote.payload.children;
    let mut dot_paths: Vec<(String, &Vec<String>)> = vec![
        (
            "payload.object.exclude".into(),
            &remote.payload.object.exclude,
        ),
        ("payload.children.exclude".into(), &children.exclude),
    ];
    for (key, per) in &children.resources {
        if let Some(list) = per.as_ref().and_then(|r| r.exclude.as_ref()) {
            dot_paths.push((format!("payload.children.resources.{key}.exclude"), list));
        }
    }
    for (which, paths) in dot_paths {
        for (i, dot) in paths.iter().enumerate() {
            if dot.is_empty() || dot.split('.').any(str::is_empty) {
                f.add(
                    format!("{rp}.{which}[{i}]"),
                    format!("\"{dot}\" is not a dot path"),
                    Some("e.g. metadata.managedFields"),
                );
            }
        }
    }
    let all_kinds_known = remote.managed_resources.iter().all(|m| m.kind.is_some());
    let type_names: Vec<String> = remote
        .managed_resources
        .iter()
        .filter_map(|m| m.kind.as_ref().map(|k| k.to_lowercase()))
        .collect();
    for key in children.resources.keys() {
        let known =
            type_names.contains(key) || remote.managed_resources.iter().any(|m| &m.plural == key);
        if !known && all_kinds_known {
            f.add(
                format!("{rp}.payload.children.resources.{key}"),
                format!("\"{key}\" is not a managed resource"),
                Some(&if type_names.is_empty() {
                    "declare it under managedResources".to_string()
                } else {
                    format!(
                        "use the lowercase kind of a managed resource: {}",
                        type_names.join(", ")
                    )
                }),
            );
        }
    }
    if let Some(tls) = &remote.tls {
        let tp = format!("{rp}.tls");
        if remote.command.is_some() {
            f.add(
                &tp,
                "tls applies to an HTTP endpoint; a command runs locally",
                None,
            );
        }
        if let Some(endpoint) = &remote.endpoint
            && endpoint.is_literal()
            && !endpoint.source().starts_with("https://")
        {
            f.add(
                &tp,
                "tls needs an https:// endpoint",
                Some("the CA and client certificate are only used over https"),
            );
        }
        if tls.ca_bundle.is_some() && tls.ca_secret_ref.is_some() {
            f.add(
                format!("{tp}.caSecretRef"),
                "set either caBundle or caSecretRef, not both",
                None,
            );
        }
        if let Some(pem) = &tls.ca_bundle
            && !pem.contains("-----BEGIN CERTIFICATE-----")
        {
            f.add(
                format!("{tp}.caBundle"),
                "caBundle holds no PEM certificate",
                Some("paste the CA's -----BEGIN CERTIFICATE----- block"),
            );
        }
    }
    if let Some(rl) = &remote.rate_limit {
        if !(rl.qps.is_finite() && (MIN_QPS..=MAX_QPS).contains(&rl.qps)) {
            f.add(
                format!("{rp}.rateLimit.qps"),
                format!(
                    "qps must be between {MIN_QPS} and {MAX_QPS}, got {}",
                    rl.qps
                ),
                Some("calls per second, e.g. qps: 5 (0.1 is one call every 10s)"),
            );
        }
        if rl.burst == 0 || rl.burst > MAX_BURST {
            f.add(
                format!("{rp}.rateLimit.burst"),
                format!("burst must be between 1 and {MAX_BURST}, got {}", rl.burst),
                None,
            );
        }
    }
}

fn check_endpoint(f: &mut Findings, rp: &str, endpoint: &Template) {
    let path = format!("{rp}.endpoint");
    if !endpoint.is_literal() {
        return;
    }
    let url = endpoint.source();
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        f.add(
            path,
            format!("endpoint \"{url}\" is not an http(s) URL"),
            Some("e.g. http://127.0.0.1:8080/reconcile"),
        );
        return;
    };
    if rest.split(['/', '?']).next().is_none_or(str::is_empty) {
        f.add(path, format!("endpoint \"{url}\" has no host"), None);
    }
}

/// Every entry on a dependency cycle (itself included), in name order: one pass over the
/// graph, however many entries and dependencies.
fn check_dependency_cycles(f: &mut Findings, katalog: &Katalog) {
    let names: Vec<&str> = katalog.spec.crds.keys().map(String::as_str).collect();
    let index: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> = katalog
        .spec
        .crds
        .values()
        .map(|e| {
            e.depends_on
                .entries()
                .into_iter()
                .filter_map(|(d, _)| index.get(d.as_str()).copied())
                .collect()
        })
        .collect();
    for (name, cyclic) in names.iter().zip(on_a_cycle(&edges)) {
        if cyclic {
            f.add(
                format!("spec.crds.{name}.dependsOn"),
                format!("dependency cycle through \"{name}\""),
                None,
            );
        }
    }
}

/// For each node of a graph (its edges by node index), whether it lies on a cycle: Tarjan's
/// strongly connected components, without recursion.
fn on_a_cycle(edges: &[Vec<usize>]) -> Vec<bool> {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let mut order = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut cyclic = vec![false; n];
    let mut next = 0;
    for root in 0..n {
        if order[root] != UNSEEN {
            continue;
        }
        // (node, how many of its edges were followed)
        let mut work = vec![(root, 0)];
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, followed)) = work.last() {
            if let Some(&w) = edges[v].get(followed) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if order[w] == UNSEEN {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 || edges[v].contains(&v) {
                    for w in component {
                        cyclic[w] = true;
                    }
                }
            }
        }
    }
    cyclic
}

/// "Did you mean" for a name that is not an entry (while [`Findings::may_hint`] allows).
fn entry_hint(f: &mut Findings, katalog: &Katalog, name: &str) -> Option<String> {
    if !f.may_hint() {
        return None;
    }
    crate::suggest::closest(name, katalog.spec.crds.keys().map(String::as_str))
        .map(|b| format!("did you mean \"{b}\"?"))
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_on_a_cycle_are_found_and_nodes_leading_to_one_are_not() {
        // 0 → 1 → 2 → 0 is a cycle; 3 leads into it; 4 depends on itself; 5 → 6 is a line.
        let edges = vec![vec![1], vec![2], vec![0], vec![0], vec![4], vec![6], vec![]];
        assert_eq!(
            on_a_cycle(&edges),
            [true, true, true, false, true, false, false]
        );
    }

    #[test]
    fn a_long_chain_and_a_long_ring_take_one_pass() {
        let n = 100_000;
        let chain: Vec<Vec<usize>> = (0..n)
            .map(|i| vec![i + 1].into_iter().filter(|j| *j < n).collect())
            .collect();
        assert!(on_a_cycle(&chain).iter().all(|c| !c));
        let ring: Vec<Vec<usize>> = (0..n).map(|i| vec![(i + 1) % n]).collect();
        assert!(on_a_cycle(&ring).iter().all(|c| *c));
    }
}
