//! Intent resources: `{type, fields}` read into a typed [`Intent`], then built into the object
//! Orkestra builds for it, in the CR's namespace (SPEC §2.2, §9).

mod build;
mod fields;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::names::{check_label_value, check_qualified_name, is_dns_label};
use fields::{Reader, intent_type};
pub(crate) use fields::{TYPES, intent_schema, short};

/// The intent types, as named on the wire.
pub const INTENT_TYPES: [&str; 10] = [
    "deployment",
    "service",
    "configmap",
    "secret",
    "serviceaccount",
    "ingress",
    "statefulset",
    "job",
    "cronjob",
    "custom",
];

/// An intent, checked and typed: what every type has, plus the type's own part.
#[derive(Clone, Debug, PartialEq)]
pub struct Intent {
    pub name: String,
    /// Labels for the object's metadata (not for pod templates, as in Orkestra).
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// The intent's own `forceConflict` field.
    pub force_conflict: Option<bool>,
    pub spec: IntentSpec,
    /// Fields ork ignored or values it replaced, as Orkestra does; worth telling the service.
    pub warnings: Vec<String>,
}

/// The type-specific part of an intent.
#[derive(Clone, Debug, PartialEq)]
pub enum IntentSpec {
    Deployment {
        container: Container,
        replicas: i64,
    },
    StatefulSet {
        container: Container,
        replicas: i64,
        /// Empty when not given, as Orkestra sends it (`serviceName` is immutable).
        service_name: String,
    },
    Job {
        container: Container,
        backoff_limit: i64,
    },
    CronJob {
        container: Container,
        schedule: String,
        /// `Allow`, `Forbid` or `Replace`.
        concurrency_policy: Option<&'static str>,
        suspend: bool,
    },
    Service {
        port: i64,
        target_port: i64,
        /// `ClusterIP`, `NodePort` or `LoadBalancer`.
        service_type: &'static str,
        /// Extra selector labels; `orkestra-owner: <CR name>` is always added.
        selector: BTreeMap<String, String>,
    },
    ConfigMap {
        data: Option<BTreeMap<String, String>>,
    },
    Secret {
        /// Base64 values, checked.
        data: Option<BTreeMap<String, String>>,
        string_data: Option<BTreeMap<String, String>>,
        secret_type: String,
    },
    ServiceAccount,
    Ingress {
        host: Option<String>,
        service_name: String,
        service_port: i64,
        path: String,
        /// `Prefix`, `Exact` or `ImplementationSpecific`.
        path_type: &'static str,
        ingress_class: Option<String>,
    },
    Custom {
        api_version: String,
        kind: String,
        /// `None`: the CR's namespace.
        namespace: Option<String>,
        spec: Option<Map<String, Value>>,
        data: Option<Map<String, Value>>,
    },
}

/// The one container of a workload intent, named after the intent.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Container {
    pub image: String,
    pub port: Option<i64>,
    /// Sorted by name, so the same answer always builds the same object.
    pub env: BTreeMap<String, String>,
    pub command: Option<Vec<String>>,
    pub args: Option<Vec<String>>,
}

/// Why an intent cannot be built: every problem found, and the warnings gathered on the way.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", problems.join("; "))]
pub struct IntentError {
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

impl Intent {
    /// Reads an intent of type `type_name` from its `fields`.
    ///
    /// # Errors
    /// An unknown type, mistyped fields, missing required fields, out-of-range numbers, invalid
    /// base64 in a secret's `data`, invalid environment variable names. Fields the type does
    /// not know are not errors: they are ignored and named in the warnings.
    pub fn parse(type_name: &str, fields: &Map<String, Value>) -> Result<Intent, IntentError> {
        let Some(ty) = intent_type(type_name) else {
            return Err(IntentError {
                problems: vec![format!(
                    "unknown resource type \"{type_name}\" — use the full apiVersion/kind form or one of: {}",
                    INTENT_TYPES.join(", ")
                )],
                warnings: Vec::new(),
            });
        };
        let mut r = Reader::new(fields, ty);
        let mut warnings: Vec<String> = r
            .unknown_fields()
            .into_iter()
            .map(|k| {
                format!(
                    "{type_name} intent field \"{k}\" is unknown to ork and ignored (fields: {})",
                    r.known_names()
                )
            })
            .collect();
        let name = r.text("name").unwrap_or_default();
        let labels = r.text_map("labels").unwrap_or_default();
        let annotations = r.text_map("annotations").unwrap_or_default();
        let force_conflict = r.flag("forceConflict");
        let spec = read_spec(type_name, &mut r, &mut warnings);
        let workload = matches!(
            spec,
            IntentSpec::Deployment { .. }
                | IntentSpec::StatefulSet { .. }
                | IntentSpec::Job { .. }
                | IntentSpec::CronJob { .. }
        );
        if workload && !name.is_empty() && !is_dns_label(&name) {
            r.problems.push(format!(
                "name {name:?} is also its container's name, which must be lowercase letters, digits and '-', at most 63 characters"
            ));
        }
        if r.problems.is_empty() {
            Ok(Intent {
                name,
                labels,
                annotations,
                force_conflict,
                spec,
                warnings,
            })
        } else {
            Err(IntentError {
                problems: r.problems,
                warnings,
            })
        }
    }

    /// The API group and kind of the object this intent builds.
    pub fn group_kind(&self) -> (&str, &str) {
        match &self.spec {
            IntentSpec::Custom {
                api_version, kind, ..
            } => (
                api_version.rsplit_once('/').map_or("", |(group, _)| group),
                kind,
            ),
            other => {
                let type_name = other.type_name();
                TYPES
                    .iter()
                    .find(|t| t.name == type_name)
                    .map_or(("", ""), |t| (t.group, t.kind))
            }
        }
    }
}

/// The API group and kind an intent type builds; `None` for `custom` and unknown types.
pub(crate) fn type_builds(type_name: &str) -> Option<(&'static str, &'static str)> {
    intent_type(type_name)
        .filter(|t| !t.kind.is_empty())
        .map(|t| (t.group, t.kind))
}

impl IntentSpec {
    /// The intent type's name on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            IntentSpec::Deployment { .. } => "deployment",
            IntentSpec::StatefulSet { .. } => "statefulset",
            IntentSpec::Job { .. } => "job",
            IntentSpec::CronJob { .. } => "cronjob",
            IntentSpec::Service { .. } => "service",
            IntentSpec::ConfigMap { .. } => "configmap",
            IntentSpec::Secret { .. } => "secret",
            IntentSpec::ServiceAccount => "serviceaccount",
            IntentSpec::Ingress { .. } => "ingress",
            IntentSpec::Custom { .. } => "custom",
        }
    }
}

const PORTS: std::ops::RangeInclusive<i64> = 1..=65535;
const COUNT: std::ops::RangeInclusive<i64> = 0..=i32::MAX as i64;

/// The type-specific part; problems are recorded in `r`.
fn read_spec(type_name: &str, r: &mut Reader<'_>, warnings: &mut Vec<String>) -> IntentSpec {
    match type_name {
        "deployment" => IntentSpec::Deployment {
            container: container(r),
            replicas: replicas(r),
        },
        "statefulset" => IntentSpec::StatefulSet {
            container: container(r),
            replicas: replicas(r),
            service_name: r.text("serviceName").unwrap_or_default(),
        },
        "job" => IntentSpec::Job {
            container: container(r),
            // Go's zero value: an absent or 0 backoffLimit is Orkestra's 3.
            backoff_limit: r
                .integer("backoffLimit")
                .filter(|b| *b != 0)
                .map_or(3, |b| in_range(r, "backoffLimit", b, &COUNT)),
        },
        "cronjob" => IntentSpec::CronJob {
            container: container(r),
            schedule: r.text("schedule").unwrap_or_default(),
            concurrency_policy: r
                .text("concurrencyPolicy")
                .filter(|v| !v.is_empty())
                .map(|p| {
                    one_of(
                        warnings,
                        ("cronjob", "concurrencyPolicy"),
                        &p,
                        &["Allow", "Forbid", "Replace"],
                        true,
                    )
                }),
            suspend: r.flag("suspend").unwrap_or(false),
        },
        "service" => {
            let port = r.integer_in("port", PORTS).unwrap_or_default();
            IntentSpec::Service {
                port,
                target_port: r.integer_in("targetPort", PORTS).unwrap_or(port),
                service_type: r
                    .text("type")
                    .filter(|v| !v.is_empty())
                    .map_or("ClusterIP", |t| {
                        one_of(
                            warnings,
                            ("service", "type"),
                            &t,
                            &["ClusterIP", "NodePort", "LoadBalancer"],
                            false,
                        )
                    }),
                selector: selector(r),
            }
        }
        "configmap" => IntentSpec::ConfigMap {
            data: r.text_map("data"),
        },
        "secret" => {
            let data = r.text_map("data");
            for (k, v) in data.iter().flatten() {
                if !is_base64(v) {
                    r.problems.push(format!(
                        "field \"data.{k}\" must be base64 (use stringData for plain text)"
                    ));
                }
            }
            IntentSpec::Secret {
                data,
                string_data: r.text_map("stringData"),
                secret_type: r
                    .text("secretType")
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| "Opaque".into()),
            }
        }
        "serviceaccount" => IntentSpec::ServiceAccount,
        "ingress" => IntentSpec::Ingress {
            host: r.text("host").filter(|h| !h.is_empty()),
            service_name: r.text("serviceName").unwrap_or_default(),
            service_port: r.integer_in("servicePort", PORTS).unwrap_or(80),
            path: r
                .text("path")
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "/".into()),
            path_type: r
                .text("pathType")
                .filter(|v| !v.is_empty())
                .map_or("Prefix", |t| {
                    one_of(
                        warnings,
                        ("ingress", "pathType"),
                        &t,
                        &["Prefix", "Exact", "ImplementationSpecific"],
                        false,
                    )
                }),
            ingress_class: r.text("ingressClass").filter(|c| !c.is_empty()),
        },
        _ => IntentSpec::Custom {
            api_version: r.text("apiVersion").unwrap_or_default(),
            kind: r.text("kind").unwrap_or_default(),
            namespace: r.text("namespace").filter(|n| !n.is_empty()),
            spec: r.object("spec"),
            data: r.object("data"),
        },
    }
}

/// A `service` intent's extra selector labels, checked as `labels` are: the API server
/// refuses a Service whose selector has a bad key or value, after the other children applied.
fn selector(r: &mut Reader<'_>) -> BTreeMap<String, String> {
    let selector = r.text_map("selector").unwrap_or_default();
    for (key, value) in &selector {
        if let Err(e) = check_qualified_name(key).and_then(|()| check_label_value(key, value)) {
            r.problems.push(format!("field \"selector\": {e}"));
        }
    }
    selector
}

/// `replicas`: 0 or absent is 1, as in Orkestra.
fn replicas(r: &mut Reader<'_>) -> i64 {
    match r.integer("replicas") {
        None | Some(0) => 1,
        Some(n) => in_range(r, "replicas", n, &COUNT),
    }
}

fn in_range(r: &mut Reader<'_>, name: &str, n: i64, range: &std::ops::RangeInclusive<i64>) -> i64 {
    if !range.contains(&n) {
        r.problems.push(format!(
            "field \"{name}\" must be between {} and {}, got {n}",
            range.start(),
            range.end()
        ));
    }
    n
}

/// The container fields the type declares (statefulsets take no `command`/`args`, jobs no
/// `port`/`env`, as in Orkestra).
fn container(r: &mut Reader<'_>) -> Container {
    let mut c = Container {
        image: r.text("image").unwrap_or_default(),
        ..Container::default()
    };
    if r.declares("command") {
        c.command = r.text_list("command");
    }
    if r.declares("args") {
        c.args = r.text_list("args");
    }
    if r.declares("port") {
        c.port = r.integer_in("port", PORTS);
    }
    if r.declares("env") {
        c.env = r.text_map("env").unwrap_or_default();
        let bad: Vec<String> = c.env.keys().filter(|k| !is_env_name(k)).cloned().collect();
        for name in bad {
            r.problems.push(format!(
                "field \"env\": {name:?} is not a valid environment variable name"
            ));
        }
    }
    c
}

/// `value` if it is one of `allowed` (ignoring case where Orkestra does); otherwise the first
/// allowed value, with a warning — Orkestra silently substitutes the same default.
fn one_of(
    warnings: &mut Vec<String>,
    (type_name, field): (&str, &str),
    value: &str,
    allowed: &[&'static str],
    ignore_case: bool,
) -> &'static str {
    let same = |a: &&&str| {
        if ignore_case {
            a.eq_ignore_ascii_case(value)
        } else {
            **a == value
        }
    };
    if let Some(v) = allowed.iter().find(same) {
        return v;
    }
    let default = allowed.first().copied().unwrap_or_default();
    warnings.push(format!(
        "{type_name} intent field \"{field}\": {value:?} is not one of {}; {default} is used",
        allowed.join(", ")
    ));
    default
}

/// `[-._a-zA-Z][-._a-zA-Z0-9]*`, the API server's rule for environment variable names.
fn is_env_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || matches!(c, '-' | '.' | '_'))
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

/// Standard base64 with padding, as Go decodes `[]byte` (line breaks ignored).
fn is_base64(s: &str) -> bool {
    let bytes: Vec<u8> = s.bytes().filter(|b| !matches!(b, b'\r' | b'\n')).collect();
    if !bytes.len().is_multiple_of(4) {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|b| **b == b'=').count();
    padding <= 2
        && bytes[..bytes.len() - padding]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
}

#[cfg(test)]
mod tests;
