//! Semantic checks on a typed Katalog: what deserialisation alone cannot see.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::condition::{Condition, Subject};
use crate::model::{CrdEntry, Gate, Katalog, Remote, Sentinel};
use crate::template::Template;

pub const API_VERSION: &str = "orkestra.orkspace.io/v1";

/// One semantic problem at a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
}

#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>, hint: Option<&str>) {
        self.0.push(Finding {
            path: path.into(),
            message: message.into(),
            hint: hint.map(str::to_string),
        });
    }
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
    for (name, entry) in &katalog.spec.crds {
        check_entry(&mut f, katalog, name, entry);
    }
    check_dependency_cycles(&mut f, katalog);
    f.0
}

fn check_entry(f: &mut Findings, katalog: &Katalog, name: &str, entry: &CrdEntry) {
    let p = format!("spec.crds.{name}");
    if !is_dns_label(name) {
        f.add(
            &p,
            format!("entry name \"{name}\" must be a lowercase DNS label"),
            Some("it appears in metric labels and health URLs"),
        );
    }
    let t = &entry.api_types;
    for (field, value) in [
        ("group", &t.group),
        ("version", &t.version),
        ("kind", &t.kind),
        ("plural", &t.plural),
    ] {
        if value.trim().is_empty() {
            f.add(
                format!("{p}.apiTypes.{field}"),
                format!("apiTypes.{field} is required"),
                None,
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
    for (dep, _) in entry.depends_on.entries() {
        if dep == name {
            f.add(
                format!("{p}.dependsOn"),
                "an entry cannot depend on itself",
                None,
            );
        } else if !katalog.spec.crds.contains_key(&dep) {
            f.add(
                format!("{p}.dependsOn"),
                format!("dependsOn names \"{dep}\", which is not an entry of this Katalog"),
                entry_hint(katalog, &dep).as_deref(),
            );
        }
    }

    let ob = &entry.operator_box;
    let declared: BTreeSet<Sentinel> = ob.pre_reconcile.sentinels.iter().copied().collect();
    for (gate_name, gate) in [
        ("enqueueGate", &ob.pre_reconcile.enqueue_gate),
        ("reconcileGate", &ob.pre_reconcile.reconcile_gate),
    ] {
        if let Some(gate) = gate {
            check_gate(
                f,
                &format!("{p}.operatorBox.preReconcile.{gate_name}"),
                gate,
                &declared,
            );
        }
    }
    for (i, rule) in ob.validation.rules.iter().enumerate() {
        check_condition(
            f,
            &format!("{p}.operatorBox.validation.rules[{i}]"),
            rule,
            &declared,
            true,
        );
    }
    let mut aliases = BTreeSet::new();
    for (i, cross) in ob.observe.cross.iter().enumerate() {
        let cp = format!("{p}.operatorBox.observe.cross[{i}]");
        if !katalog.spec.crds.contains_key(&cross.crd) {
            f.add(
                format!("{cp}.crd"),
                format!("\"{}\" is not an entry of this Katalog", cross.crd),
                entry_hint(katalog, &cross.crd).as_deref(),
            );
        }
        if cross.alias.is_empty() || !aliases.insert(cross.alias.clone()) {
            f.add(
                format!("{cp}.as"),
                "`as` must be a unique, non-empty name",
                None,
            );
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
            check_remote(f, &format!("{rp}.remote"), remote);
        }
    }
}

fn check_gate(f: &mut Findings, path: &str, gate: &Gate, declared: &BTreeSet<Sentinel>) {
    if gate.when.is_empty() && gate.or.is_empty() {
        f.add(path, "a gate needs `when` or `or` conditions", None);
    }
    for (list, conds) in [("when", &gate.when), ("or", &gate.or)] {
        for (i, c) in conds.iter().enumerate() {
            check_condition(f, &format!("{path}.{list}[{i}]"), c, declared, false);
        }
    }
}

fn check_condition(
    f: &mut Findings,
    path: &str,
    c: &Condition,
    declared: &BTreeSet<Sentinel>,
    is_rule: bool,
) {
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
        Ok(check) => {
            if let Subject::Sentinel(s) = check.subject
                && !declared.contains(&s)
            {
                f.add(
                    format!("{path}.sentinel"),
                    format!("sentinel \"{}\" is not declared", s.name()),
                    Some(&format!(
                        "add it to operatorBox.preReconcile.sentinels: [{}]",
                        s.name()
                    )),
                );
            }
        }
    }
}

fn check_remote(f: &mut Findings, rp: &str, remote: &Remote) {
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
        (Some(endpoint), None) => check_endpoint(f, rp, endpoint),
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
            Some("only `http` is supported (or `command:` for the exec transport)"),
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
            && let Err(e) = Template::parse(s)
        {
            f.add(
                format!("{rp}.args.{key}"),
                format!("invalid template: {e}"),
                None,
            );
        }
    }
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, m) in remote.managed_resources.iter().enumerate() {
        let mp = format!("{rp}.managedResources[{i}]");
        if m.plural.trim().is_empty() {
            f.add(
                format!("{mp}.plural"),
                "plural is required",
                Some("e.g. deployments"),
            );
        } else if m.plural != m.plural.to_lowercase() {
            f.add(format!("{mp}.plural"), "plural must be lowercase", None);
        }
        if let Some(first) = seen.insert((m.group.clone(), m.plural.clone()), i) {
            f.add(
                &mp,
                format!(
                    "duplicate managed resource {}/{}",
                    if m.group.is_empty() { "core" } else { &m.group },
                    m.plural
                ),
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
    for (which, paths) in [
        ("payload.object.exclude", &remote.payload.object.exclude),
        ("payload.children.exclude", &remote.payload.children.exclude),
    ] {
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
    if let Some(rl) = &remote.rate_limit
        && (rl.qps.is_nan() || rl.qps <= 0.0 || rl.burst == 0)
    {
        f.add(
            format!("{rp}.rateLimit"),
            "rateLimit needs qps > 0 and burst >= 1",
            None,
        );
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

fn check_dependency_cycles(f: &mut Findings, katalog: &Katalog) {
    let deps: BTreeMap<&str, Vec<String>> = katalog
        .spec
        .crds
        .iter()
        .map(|(n, e)| {
            (
                n.as_str(),
                e.depends_on.entries().into_iter().map(|(d, _)| d).collect(),
            )
        })
        .collect();
    for start in deps.keys() {
        let mut stack: Vec<String> = deps[start].clone();
        let mut seen = BTreeSet::new();
        while let Some(n) = stack.pop() {
            if n == *start {
                f.add(
                    format!("spec.crds.{start}.dependsOn"),
                    format!("dependency cycle through \"{start}\""),
                    None,
                );
                break;
            }
            if seen.insert(n.clone())
                && let Some(next) = deps.get(n.as_str())
            {
                stack.extend(next.iter().cloned());
            }
        }
    }
}

fn entry_hint(katalog: &Katalog, name: &str) -> Option<String> {
    let names: Vec<&str> = katalog.spec.crds.keys().map(String::as_str).collect();
    crate::suggest::closest(name, names.iter().copied()).map(|b| format!("did you mean \"{b}\"?"))
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}
