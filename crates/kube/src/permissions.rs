//! Least privilege from the Katalog (SPEC §6, §11): the rules `ork generate rbac` writes and
//! that `ork run` checks at startup with SelfSubjectAccessReview, naming every one it lacks.
//! An entry that watches one namespace gets its rules in that namespace only.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use ork_katalog::{CrdEntry, Katalog, ManagedResource, RBAC_GROUP, kinds};

/// One RBAC policy rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    pub api_group: String,
    /// `plural` or `plural/subresource`.
    pub resources: Vec<String>,
    pub verbs: Vec<&'static str>,
    /// Empty: any name.
    pub resource_names: Vec<String>,
    /// Where the permission is needed: `None` cluster-wide, else that namespace (checked there).
    pub namespace: Option<String>,
}

/// A managed resource or input whose plural is not known without the API server: RBAC cannot
/// name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// Its path in the Katalog (`spec.crds.web.operatorBox.observe.inputs[0]`).
    pub path: String,
    /// `group/Kind`.
    pub what: String,
}

const CR_VERBS: [&str; 5] = ["get", "list", "watch", "update", "patch"];
const CHILD_VERBS: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];
/// Reading: a credential's Secret, an input's objects.
const SECRET_VERBS: [&str; 3] = ["get", "list", "watch"];
/// Installing a CRD from `crdFile` by server-side apply: a create by apply is authorised with
/// the object's name, so `create` scoped by `resourceNames` is enough (a POST would not be).
const CRD_VERBS: [&str; 6] = ["get", "list", "watch", "create", "update", "patch"];

/// The verbs on a child type: never `escalate`, `bind` or `impersonate` (SPEC §11). Without
/// `escalate` the API server lets a service's Role grant only what ork holds itself; the roles
/// its bindings may name get `bind` by name, from `bindRoles` (see [`rules`]).
fn child_verbs() -> Vec<&'static str> {
    CHILD_VERBS.to_vec()
}

/// The namespaces an entry lives in, as `ork run` watches them: `namespace:`, or
/// `allowedNamespaces` of exact names ([`CrdEntry::watched_namespaces`]); `[None]` when it
/// watches every namespace. Its namespaced children are watched (and written) there.
fn entry_homes(entry: &CrdEntry) -> Vec<Option<String>> {
    match entry.watched_namespaces() {
        Some(namespaces) => namespaces.into_iter().map(Some).collect(),
        None => vec![None],
    }
}

/// The plural of a managed resource, from the Katalog or the built-in kinds; `None` when only
/// discovery can tell.
fn plural_of(m: &ManagedResource) -> Option<String> {
    if !m.needs_discovery() {
        return Some(m.plural.clone());
    }
    let kind = m.kind.as_deref()?;
    kinds::by_kind(kind, Some(&m.group)).map(|b| b.plural.to_string())
}

/// Managed resources [`rules`] leaves out because their plural is only known through discovery.
pub fn unresolved(katalog: &Katalog) -> Vec<Unresolved> {
    let mut out = Vec::new();
    for (name, entry) in katalog.spec.crds.iter().filter(|(_, e)| e.enabled) {
        for (index, input) in entry.operator_box.observe.inputs.iter().enumerate() {
            if input.plural().is_none() {
                out.push(Unresolved {
                    path: format!("spec.crds.{name}.operatorBox.observe.inputs[{index}]"),
                    what: input.describe_type(),
                });
            }
        }
        let Some(remote) = &entry.operator_box.reconcile.remote else {
            continue;
        };
        for (index, m) in remote.managed_resources.iter().enumerate() {
            if plural_of(m).is_none() {
                out.push(Unresolved {
                    path: format!(
                        "spec.crds.{name}.operatorBox.reconcile.remote.managedResources[{index}]"
                    ),
                    what: m.describe(),
                });
            }
        }
    }
    out
}

fn rule(
    group: &str,
    resources: Vec<String>,
    verbs: &[&'static str],
    namespace: Option<String>,
) -> Rule {
    Rule {
        api_group: group.to_string(),
        resources,
        verbs: verbs.to_vec(),
        resource_names: Vec::new(),
        namespace,
    }
}

/// What `ork run --metacontroller` needs besides its controllers' types: to watch
/// Metacontroller's controller objects and to install their CRDs when absent.
pub fn metacontroller_rules() -> Vec<Rule> {
    vec![
        rule(
            "metacontroller.k8s.io",
            vec!["compositecontrollers".into(), "decoratorcontrollers".into()],
            &["get", "list", "watch"],
            None,
        ),
        // Only Metacontroller's own CRDs, by name (finding L5: `patch` on every CRD let ork
        // rewrite any type's schema); installed by server-side apply, which a name authorises.
        Rule {
            resource_names: crate::metacontroller::CRD_NAMES
                .iter()
                .map(|n| n.to_string())
                .collect(),
            ..rule(
                "apiextensions.k8s.io",
                vec!["customresourcedefinitions".into()],
                &["get", "create", "patch"],
                None,
            )
        },
    ]
}

/// Every rule ork needs for `katalog`; `leases` adds leader election and sharding (their
/// Leases, listed by the shard protocol) in `ork_namespace`.
/// Deterministic: the same Katalog always gives the same rules in the same order.
///
/// - CRs (and their `status`/`finalizers`), children and events: cluster-wide for an entry that
///   watches every namespace; in each of its namespaces (and each managed resource's
///   `namespaces`) for an entry that lives in some (`namespace:`, or `allowedNamespaces` of
///   exact names), as `ork run` then watches only there. Cluster-scoped children (built-in kinds, entries of the
///   Katalog, `clusterScoped: true`) are always cluster-wide.
/// - Auth and TLS Secrets in their namespace, by name.
/// - A `crdFile`'s CRD by name, to install or update it.
/// - Managed resources whose plural needs discovery are left out: see [`unresolved`].
pub fn rules(katalog: &Katalog, ork_namespace: &str, leases: bool) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    // (namespace, group, plural); `None` is cluster-wide.
    let mut children: BTreeSet<(Option<String>, String, String)> = BTreeSet::new();
    let mut events: BTreeSet<Option<String>> = BTreeSet::new();
    // (namespace, roles|clusterroles) → the names bindings may bind (`bindRoles`).
    let mut binds: BTreeMap<(Option<String>, &'static str), BTreeSet<String>> = BTreeMap::new();
    // namespace → Secret names (always literal: a templated name is refused at load).
    let mut secrets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut crds: BTreeSet<String> = BTreeSet::new();
    // (namespace, group, plural) an input reads → the names it reads (`None`: any name).
    let mut reads: BTreeMap<(Option<String>, String, String), Option<BTreeSet<String>>> =
        BTreeMap::new();
    let mut marks = false;
    // The webhook configurations of entries with admission (SPEC §21), by name.
    let mut webhooks: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    // Child types that are cluster-scoped entries of this Katalog.
    let cluster_entries: BTreeSet<(&str, &str)> = katalog
        .spec
        .crds
        .values()
        .filter(|e| !e.namespaced)
        .map(|e| (e.api_types.group.as_str(), e.api_types.plural.as_str()))
        .collect();
    for (entry_name, entry) in katalog.spec.crds.iter().filter(|(_, e)| e.enabled) {
        let t = &entry.api_types;
        if let Some(a) = entry
            .operator_box
            .reconcile
            .remote
            .as_ref()
            .and_then(|r| r.admission.as_ref())
        {
            let of = match katalog.metadata.name.as_str() {
                "" => entry_name.as_str(),
                name => name,
            };
            let name = crate::webhook::configuration_name(of, entry_name);
            for (wanted, kind) in [
                (a.validate, "validatingwebhookconfigurations"),
                (a.mutate, "mutatingwebhookconfigurations"),
            ] {
                if wanted {
                    webhooks.entry(kind).or_default().insert(name.clone());
                }
            }
        }
        // Children follow the entry's namespace; a cluster-scoped CR itself is cluster-wide.
        let homes = entry_homes(entry);
        let cr_homes = if entry.namespaced {
            homes.clone()
        } else {
            vec![None]
        };
        for at in cr_homes {
            out.push(rule(
                &t.group,
                vec![t.plural.clone()],
                &CR_VERBS,
                at.clone(),
            ));
            out.push(rule(
                &t.group,
                vec![
                    format!("{}/status", t.plural),
                    format!("{}/finalizers", t.plural),
                ],
                &["get", "update", "patch"],
                at.clone(),
            ));
            events.insert(at);
        }
        if entry.crd_file.is_some() {
            crds.insert(format!("{}.{}", t.plural, t.group));
        }
        for input in &entry.operator_box.observe.inputs {
            let Some(plural) = input.plural() else {
                continue;
            };
            let scopes: Vec<Option<String>> = match &input.namespace {
                _ if input.cluster_scoped() => vec![None],
                Some(ns) => vec![Some(ns.clone())],
                None => homes.clone(),
            };
            let name = input
                .match_name
                .as_ref()
                .filter(|t| t.is_literal())
                .map(|t| t.source().to_string());
            for scope in scopes {
                let names = reads
                    .entry((scope, input.group().to_string(), plural.clone()))
                    .or_insert_with(|| Some(BTreeSet::new()));
                match (&name, names.as_mut()) {
                    (Some(n), Some(names)) => {
                        names.insert(n.clone());
                    }
                    _ => *names = None,
                }
            }
        }
        let Some(remote) = &entry.operator_box.reconcile.remote else {
            continue;
        };
        for m in &remote.managed_resources {
            let Some(plural) = plural_of(m) else {
                continue;
            };
            let cluster_scoped =
                m.cluster_scoped || cluster_entries.contains(&(m.group.as_str(), plural.as_str()));
            let scopes: Vec<Option<String>> = if cluster_scoped || homes.contains(&None) {
                vec![None]
            } else {
                let mut scopes = homes.clone();
                for extra in &m.namespaces {
                    if !scopes.contains(&Some(extra.clone())) {
                        scopes.push(Some(extra.clone()));
                    }
                }
                scopes
            };
            for role in &m.bind_roles {
                let resource = if role.kind == "Role" {
                    "roles"
                } else {
                    "clusterroles"
                };
                for scope in &scopes {
                    binds
                        .entry((scope.clone(), resource))
                        .or_default()
                        .insert(role.name.clone());
                }
            }
            // Beyond an owner reference's reach: the child carries ork's mark, whose key lives
            // in a Secret of ork's namespace (SPEC §11).
            if cluster_scoped || !m.namespaces.is_empty() || !entry.namespaced {
                marks = true;
            }
            for scope in scopes {
                children.insert((scope, m.group.clone(), plural.clone()));
            }
        }
        let home = |ns: &Option<String>| ns.clone().unwrap_or_else(|| ork_namespace.to_string());
        if let Some(s) = remote.auth.as_ref().and_then(|a| a.secret_ref.as_ref()) {
            secrets
                .entry(home(&s.namespace))
                .or_default()
                .insert(s.name.clone());
        }
        if let Some(tls) = &remote.tls {
            for (name, ns) in tls
                .ca_secret_ref
                .iter()
                .map(|r| (&r.name, &r.namespace))
                .chain(
                    tls.client_cert_secret_ref
                        .iter()
                        .map(|r| (&r.name, &r.namespace)),
                )
            {
                secrets.entry(home(ns)).or_default().insert(name.clone());
            }
        }
    }
    let cluster_wide: BTreeSet<(String, String)> = children
        .iter()
        .filter(|(ns, _, _)| ns.is_none())
        .map(|(_, g, p)| (g.clone(), p.clone()))
        .collect();
    // Cluster-wide first (as before), then per namespace; a namespaced copy of a cluster-wide
    // rule adds nothing.
    let mut children: Vec<_> = children
        .into_iter()
        .filter(|(ns, g, p)| ns.is_none() || !cluster_wide.contains(&(g.clone(), p.clone())))
        .collect();
    children
        .sort_by(|a, b| (a.0.is_some(), &a.0, &a.1, &a.2).cmp(&(b.0.is_some(), &b.0, &b.1, &b.2)));
    let mut child_rules: BTreeSet<(Option<String>, String, String)> = BTreeSet::new();
    for (ns, group, plural) in children {
        child_rules.insert((ns.clone(), group.clone(), plural.clone()));
        out.push(rule(&group, vec![plural], &child_verbs(), ns));
    }
    // The inputs' reads: by name where every input of the type there names a literal object
    // (a watch narrowed to one name is authorised by it); a cluster-wide read covers the
    // namespaced ones of the same type; what ork also writes as a child, it may read already.
    let wide: BTreeSet<(String, String)> = reads
        .iter()
        .filter(|((ns, _, _), names)| ns.is_none() && names.is_none())
        .map(|((_, g, p), _)| (g.clone(), p.clone()))
        .collect();
    for ((ns, group, plural), names) in reads {
        let t = (group, plural);
        let child = |at: Option<String>| child_rules.contains(&(at, t.0.clone(), t.1.clone()));
        if child(None) || child(ns.clone()) || (ns.is_some() && wide.contains(&t)) {
            continue;
        }
        out.push(Rule {
            resource_names: names.map(|n| n.into_iter().collect()).unwrap_or_default(),
            ..rule(&t.0, vec![t.1.clone()], &SECRET_VERBS, ns)
        });
    }
    let mut binds: Vec<_> = binds.into_iter().collect();
    binds.sort_by(|a, b| (a.0.0.is_some(), &a.0).cmp(&(b.0.0.is_some(), &b.0)));
    for ((ns, resource), names) in binds {
        out.push(Rule {
            resource_names: names.into_iter().collect(),
            ..rule(RBAC_GROUP, vec![resource.to_string()], &["bind"], ns)
        });
    }
    let events: Vec<Option<String>> = if events.contains(&None) {
        vec![None]
    } else {
        events.into_iter().collect()
    };
    for ns in events {
        for group in ["", "events.k8s.io"] {
            out.push(rule(
                group,
                vec!["events".into()],
                &["create", "patch"],
                ns.clone(),
            ));
        }
    }
    if !crds.is_empty() {
        out.push(Rule {
            resource_names: crds.into_iter().collect(),
            ..rule(
                "apiextensions.k8s.io",
                vec!["customresourcedefinitions".into()],
                &CRD_VERBS,
                None,
            )
        });
    }
    for (resource, names) in webhooks {
        out.push(Rule {
            resource_names: names.into_iter().collect(),
            ..rule(
                "admissionregistration.k8s.io",
                vec![resource.to_string()],
                &["get", "create", "update", "patch"],
                None,
            )
        });
    }
    let admission = katalog.spec.crds.values().any(|e| {
        e.enabled
            && e.operator_box
                .reconcile
                .remote
                .as_ref()
                .is_some_and(|r| r.admission.is_some())
    });
    if admission {
        secrets
            .entry(ork_namespace.to_string())
            .or_default()
            .insert(crate::webhook::CA_SECRET.to_string());
    }
    if marks || admission {
        if marks {
            secrets
                .entry(ork_namespace.to_string())
                .or_default()
                .insert(crate::mark::KEY_SECRET.to_string());
        }
        // Creating cannot be narrowed to a name (the name is in the body, not the URL).
        out.push(rule(
            "",
            vec!["secrets".into()],
            &["create"],
            Some(ork_namespace.into()),
        ));
    }
    for (ns, names) in secrets {
        out.push(Rule {
            resource_names: names.into_iter().collect(),
            ..rule("", vec!["secrets".into()], &SECRET_VERBS, Some(ns))
        });
    }
    // `/katalog` asks the API server who its caller is and what they may read (SPEC §14).
    out.push(rule(
        "authentication.k8s.io",
        vec!["tokenreviews".into()],
        &["create"],
        None,
    ));
    out.push(rule(
        "authorization.k8s.io",
        vec!["subjectaccessreviews".into()],
        &["create"],
        None,
    ));
    if leases {
        out.push(rule(
            "coordination.k8s.io",
            vec!["leases".into()],
            &["get", "list", "create", "update"],
            Some(ork_namespace.into()),
        ));
    }
    out
}
/// Asks the API server, for every verb of every rule, whether this client may; returns each
/// missing permission as `verb group/resource[/sub] [name] [in namespace]`.
///
/// # Errors
/// The reviews themselves failed (not a denial).
pub async fn missing(client: &Client, rules: &[Rule]) -> Result<Vec<String>, kube::Error> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let mut missing = Vec::new();
    for rule in rules {
        for resource in &rule.resources {
            let (plural, sub) = match resource.split_once('/') {
                Some((p, s)) => (p.to_string(), Some(s.to_string())),
                None => (resource.clone(), None),
            };
            let names: Vec<Option<String>> = if rule.resource_names.is_empty() {
                vec![None]
            } else {
                rule.resource_names.iter().cloned().map(Some).collect()
            };
            for verb in &rule.verbs {
                for name in &names {
                    let review = SelfSubjectAccessReview {
                        spec: SelfSubjectAccessReviewSpec {
                            resource_attributes: Some(ResourceAttributes {
                                group: Some(rule.api_group.clone()),
                                resource: Some(plural.clone()),
                                subresource: sub.clone(),
                                verb: Some((*verb).to_string()),
                                name: name.clone(),
                                namespace: rule.namespace.clone(),
                                ..Default::default()
                            }),
                            ..Default::default()
                        },
                        ..Default::default()
                    };
                    let answer = api.create(&PostParams::default(), &review).await?;
                    if !answer.status.is_some_and(|s| s.allowed) {
                        let group = if rule.api_group.is_empty() {
                            "core"
                        } else {
                            &rule.api_group
                        };
                        let mut line = format!("{verb} {group}/{resource}");
                        if let Some(n) = name {
                            line.push_str(&format!(" named {n}"));
                        }
                        if let Some(ns) = &rule.namespace {
                            line.push_str(&format!(" in namespace {ns}"));
                        }
                        missing.push(line);
                    }
                }
            }
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> Katalog {
        ork_katalog::load_str(yaml, std::path::Path::new("k.yaml")).expect("valid")
    }

    /// A Katalog of one entry `web` with `entry` and `remote` lines added (6 and 12 spaces).
    fn katalog(entry: &str, remote: &str) -> Katalog {
        load(&format!(
            r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: t}}
spec:
  crds:
    web:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
{entry}      operatorBox:
        reconcile:
          default: false
          remote:
            endpoint: "http://127.0.0.1:1/r"
            managedResources:
              - {{group: apps, version: v1, plural: deployments}}
{remote}"#
        ))
    }

    fn find<'a>(rules: &'a [Rule], group: &str, res: &str) -> Vec<&'a Rule> {
        rules
            .iter()
            .filter(|r| r.api_group == group && r.resources[0] == res)
            .collect()
    }

    #[test]
    fn bind_roles_get_bind_by_name_where_the_bindings_go_and_nothing_is_blanket() {
        let remote = "              - {group: rbac.authorization.k8s.io, version: v1, plural: rolebindings, bindRoles: [{kind: ClusterRole, name: view}, {kind: Role, name: tenant-admin}]}
              - {group: rbac.authorization.k8s.io, version: v1, plural: clusterrolebindings, bindRoles: [{kind: ClusterRole, name: reader}]}
              - {group: rbac.authorization.k8s.io, version: v1, plural: roles}
";
        let rules = rules(
            &katalog("      namespace: team\n", remote),
            "ork-system",
            false,
        );
        let binds: Vec<_> = rules.iter().filter(|r| r.verbs.contains(&"bind")).collect();
        let at = |res: &str, ns: Option<&str>| {
            binds
                .iter()
                .find(|r| r.resources == [res] && r.namespace.as_deref() == ns)
                .map(|r| r.resource_names.clone())
        };
        assert_eq!(at("clusterroles", None), Some(vec!["reader".to_string()]));
        assert_eq!(
            at("clusterroles", Some("team")),
            Some(vec!["view".to_string()])
        );
        assert_eq!(
            at("roles", Some("team")),
            Some(vec!["tenant-admin".to_string()])
        );
        assert_eq!(binds.len(), 3, "{binds:?}");
        assert!(
            binds
                .iter()
                .all(|r| r.verbs == ["bind"] && !r.resource_names.is_empty()),
            "bind only, and only by name"
        );
        for r in &rules {
            for verb in ["escalate", "impersonate"] {
                assert!(!r.verbs.contains(&verb), "{r:?}");
            }
        }
    }

    #[test]
    fn bind_roles_are_for_bindings_and_name_real_roles() {
        let bad = [
            (
                "{group: rbac.authorization.k8s.io, version: v1, plural: roles, bindRoles: [{kind: ClusterRole, name: view}]}",
                "bindRoles is for rolebindings",
            ),
            (
                "{group: rbac.authorization.k8s.io, version: v1, plural: clusterrolebindings, bindRoles: [{kind: Role, name: x}]}",
                "binds ClusterRoles only",
            ),
            (
                "{group: rbac.authorization.k8s.io, version: v1, plural: rolebindings, bindRoles: [{kind: Group, name: x}]}",
                "kind must be ClusterRole or Role",
            ),
            (
                "{group: rbac.authorization.k8s.io, version: v1, plural: rolebindings, bindRoles: [{kind: Role, name: \"{{ .spec.role }}\"}]}",
                "no template",
            ),
        ];
        for (line, want) in bad {
            let text = format!(
                "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {{name: t}}\nspec:\n  crds:\n    web:\n      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}\n      operatorBox:\n        reconcile:\n          default: false\n          remote:\n            endpoint: \"http://127.0.0.1:1/r\"\n            managedResources:\n              - {line}\n"
            );
            let problems =
                ork_katalog::load_str(&text, std::path::Path::new("k.yaml")).expect_err(want);
            assert!(problems.to_string().contains(want), "{want}: {problems}");
        }
    }

    #[test]
    fn rules_cover_crs_children_events_secrets_and_leases_and_nothing_wider() {
        let yaml = include_str!("../../../examples/webapp/katalog.yaml").replace(
            "            timeout: 10s\n",
            "            timeout: 10s\n            auth: {secretRef: {name: token, key: t}}\n",
        );
        let k = load(&yaml);
        let rules = rules(&k, "ork-system", true);
        let find = |group: &str, res: &str| find(&rules, group, res).first().copied();
        assert_eq!(
            find("demo.ork.dev", "webapps").map(|r| r.verbs.clone()),
            Some(CR_VERBS.to_vec())
        );
        assert_eq!(
            find("demo.ork.dev", "webapps/status").map(|r| r.resources.clone()),
            Some(vec![
                "webapps/status".to_string(),
                "webapps/finalizers".to_string()
            ])
        );
        assert_eq!(find("apps", "deployments").map(|r| r.verbs.len()), Some(7));
        let secret = find("", "secrets").expect("the auth Secret");
        assert_eq!(secret.resource_names, vec!["token".to_string()]);
        assert_eq!(
            secret.namespace.as_deref(),
            Some("ork-system"),
            "read where it lives, not in every namespace"
        );
        assert_eq!(
            find("coordination.k8s.io", "leases").and_then(|r| r.namespace.clone()),
            Some("ork-system".to_string())
        );
        assert!(
            rules
                .iter()
                .all(|r| !r.verbs.contains(&"*") && !r.resources.iter().any(|x| x == "*"))
        );
        assert!(
            !super::rules(&k, "ork-system", false)
                .iter()
                .any(|r| r.resources[0] == "leases")
        );
    }

    #[test]
    fn an_entry_watching_one_namespace_gets_its_rules_only_there() {
        let k = katalog(
            "      namespace: team\n",
            "              - {group: \"\", version: v1, plural: configmaps, namespaces: [shared]}\n              - {group: rbac.authorization.k8s.io, version: v1, kind: ClusterRole}\n",
        );
        let rules = rules(&k, "ork-system", true);
        let at = |group: &str, res: &str| -> Vec<Option<String>> {
            find(&rules, group, res)
                .iter()
                .map(|r| r.namespace.clone())
                .collect()
        };
        let team = || Some("team".to_string());
        assert_eq!(at("demo.ork.dev", "webapps"), vec![team()]);
        assert_eq!(at("demo.ork.dev", "webapps/status"), vec![team()]);
        assert_eq!(at("apps", "deployments"), vec![team()]);
        assert_eq!(
            at("", "configmaps"),
            vec![Some("shared".to_string()), team()],
            "and in the other namespaces a managed resource names"
        );
        assert_eq!(
            at("rbac.authorization.k8s.io", "clusterroles"),
            vec![None],
            "a cluster-scoped child is cluster-wide"
        );
        assert_eq!(at("", "events"), vec![team()]);
        assert_eq!(at("events.k8s.io", "events"), vec![team()]);
        let cluster_roles = find(&rules, "rbac.authorization.k8s.io", "clusterroles");
        assert_eq!(
            cluster_roles[0].verbs,
            CHILD_VERBS.to_vec(),
            "no escalate, no bind: a service's roles grant only what ork holds"
        );
        assert_eq!(
            find(&rules, "apps", "deployments")[0].verbs,
            CHILD_VERBS.to_vec()
        );
    }

    #[test]
    fn exact_allowed_namespaces_narrow_like_namespace_and_wildcards_do_not() {
        let at = |entry: &str| -> Vec<Option<String>> {
            let rules = rules(&katalog(entry, ""), "ork-system", false);
            [
                ("demo.ork.dev", "webapps"),
                ("apps", "deployments"),
                ("", "events"),
            ]
            .iter()
            .flat_map(|(group, res)| find(&rules, group, res))
            .map(|r| r.namespace.clone())
            .collect()
        };
        let team = Some("team".to_string());
        assert_eq!(
            at("      allowedNamespaces: [team]\n"),
            vec![team.clone(), team.clone(), team.clone()]
        );
        // Two exact namespaces: each watched there, granted there (finding L5: they were
        // granted cluster-wide, kube-system and ork's namespace included).
        let ops = Some("ops".to_string());
        assert_eq!(
            at("      allowedNamespaces: [team, ops]\n"),
            vec![
                team.clone(),
                ops.clone(),
                ops.clone(),
                team.clone(),
                ops.clone(),
                team.clone()
            ]
        );
        assert_eq!(
            at("      allowedNamespaces: [team, \"ops-*\"]\n"),
            vec![None, None, None]
        );
        assert_eq!(
            at("      allowedNamespaces: [\"team-*\"]\n"),
            vec![None, None, None]
        );
    }

    #[test]
    fn a_child_type_that_is_a_cluster_scoped_entry_is_granted_cluster_wide() {
        let mut k = katalog(
            "      namespace: team\n",
            "              - {group: demo.ork.dev, kind: Tenant}\n",
        );
        let mut tenant = k.spec.crds["web"].clone();
        tenant.api_types = ork_katalog::ApiTypes {
            group: "demo.ork.dev".into(),
            version: "v1".into(),
            kind: "Tenant".into(),
            plural: "tenants".into(),
        };
        tenant.namespaced = false;
        tenant.namespace = None;
        tenant.enabled = false;
        k.spec.crds.insert("tenant".into(), tenant);
        if let Some(remote) = k
            .spec
            .crds
            .get_mut("web")
            .and_then(|e| e.operator_box.reconcile.remote.as_mut())
        {
            remote.managed_resources[1].plural = "tenants".into();
        }
        let rules = rules(&k, "ork-system", false);
        let tenants = find(&rules, "demo.ork.dev", "tenants");
        assert_eq!(tenants.len(), 1);
        assert_eq!(tenants[0].namespace, None);
        assert_eq!(tenants[0].verbs, CHILD_VERBS.to_vec());
    }

    #[test]
    fn a_namespaced_rule_is_dropped_when_another_entry_needs_it_cluster_wide() {
        let one = katalog("      namespace: team\n", "");
        let mut k = katalog("", "");
        let mut team = one.spec.crds["web"].clone();
        team.api_types.plural = "others".into();
        k.spec.crds.insert("team".into(), team);
        let rules = rules(&k, "ork-system", false);
        let deployments: Vec<_> = find(&rules, "apps", "deployments");
        assert_eq!(deployments.len(), 1);
        assert_eq!(deployments[0].namespace, None);
        assert_eq!(find(&rules, "", "events").len(), 1);
        assert_eq!(
            find(&rules, "demo.ork.dev", "others")[0]
                .namespace
                .as_deref(),
            Some("team")
        );
    }

    #[test]
    fn a_crd_file_grants_that_crd_by_name() {
        let dir = std::env::temp_dir().join(format!("ork-perm-crd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(
            dir.join("crd.yaml"),
            include_str!("../../../examples/webapp/crd.yaml"),
        )
        .expect("write");
        let text = r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
spec:
  crds:
    web:
      crdFile: crd.yaml
      operatorBox:
        reconcile:
          default: false
          remote: {endpoint: "http://127.0.0.1:1/r"}
"#;
        let k = ork_katalog::load_str(text, &dir.join("k.yaml")).expect("valid");
        let rules = rules(&k, "ork-system", false);
        let crd = find(&rules, "apiextensions.k8s.io", "customresourcedefinitions");
        assert_eq!(crd.len(), 1);
        assert_eq!(
            crd[0].resource_names,
            vec!["webapps.demo.ork.dev".to_string()]
        );
        assert_eq!(crd[0].namespace, None);
        assert!(!crd[0].verbs.contains(&"delete"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn metacontroller_mode_may_install_only_metacontrollers_crds() {
        let rules = metacontroller_rules();
        let crd = find(&rules, "apiextensions.k8s.io", "customresourcedefinitions");
        assert_eq!(crd.len(), 1);
        assert_eq!(
            crd[0].resource_names,
            [
                "compositecontrollers.metacontroller.k8s.io",
                "decoratorcontrollers.metacontroller.k8s.io"
            ]
        );
        // Every document of the CRDs ork installs is one of those names.
        let installed: Vec<String> = crate::metacontroller::CRDS
            .split("\n---\n")
            .filter_map(|d| {
                d.lines()
                    .find_map(|l| l.trim().strip_prefix("name: "))
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(installed, crd[0].resource_names);
    }

    #[test]
    fn a_child_type_known_only_by_discovery_is_named_not_guessed() {
        let k = katalog(
            "",
            "              - {apiVersion: db.example.com/v1, kind: Database}\n",
        );
        assert_eq!(
            unresolved(&k),
            vec![Unresolved {
                path: "spec.crds.web.operatorBox.reconcile.remote.managedResources[1]".into(),
                what: "db.example.com/Database".into()
            }]
        );
        let rules = rules(&k, "ork-system", false);
        assert!(rules.iter().all(|r| r.api_group != "db.example.com"));
        assert!(unresolved(&katalog("", "")).is_empty());
    }

    #[test]
    fn inputs_are_read_by_name_where_the_name_is_literal_and_where_they_live() {
        let k = load(
            r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {name: t}
spec:
  crds:
    web:
      namespace: team
      apiTypes: {group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}
      operatorBox:
        observe:
          inputs:
            - {name: registry, apiVersion: v1, kind: Secret, matchName: pull-token, namespace: shared, values: true}
            - {name: db, apiVersion: v1, kind: Secret, matchName: "{{ .spec.db }}", values: true}
            - {name: settings, apiVersion: v1, kind: ConfigMap, matchLabels: {team: "{{ .metadata.name }}"}}
            - {name: home, apiVersion: v1, kind: Namespace, matchName: team}
            - {name: plan, apiVersion: plans.example.com/v1, kind: Plan, matchName: "{{ .spec.plan }}"}
        reconcile:
          default: false
          remote:
            endpoint: "http://127.0.0.1:1/r"
"#,
        );
        let rules = rules(&k, "ork-system", false);
        let reads = |res: &str| -> Vec<(Option<String>, Vec<String>, Vec<&str>)> {
            find(&rules, "", res)
                .iter()
                .map(|r| {
                    (
                        r.namespace.clone(),
                        r.resource_names.clone(),
                        r.verbs.clone(),
                    )
                })
                .collect()
        };
        let read = vec!["get", "list", "watch"];
        assert_eq!(
            reads("secrets"),
            vec![
                (
                    Some("shared".into()),
                    vec!["pull-token".into()],
                    read.clone()
                ),
                (Some("team".into()), vec![], read.clone()),
            ],
            "a literal name is read by name, a templated one in the CRs' namespace"
        );
        assert_eq!(
            reads("configmaps"),
            vec![(Some("team".into()), vec![], read.clone())]
        );
        assert_eq!(
            reads("namespaces"),
            vec![(None, vec!["team".into()], read.clone())],
            "a cluster-scoped type is read cluster-wide, by name"
        );
        assert_eq!(
            unresolved(&k),
            vec![Unresolved {
                path: "spec.crds.web.operatorBox.observe.inputs[4]".into(),
                what: "plans.example.com/Plan".into()
            }],
            "a CRD's plural is asked for, not guessed"
        );
    }

    #[test]
    fn admission_gets_its_webhook_configurations_and_the_ca_secret_by_name() {
        let k = katalog(
            "",
            "            admission: {validate: true, mutate: true}\n",
        );
        let rules = rules(&k, "ork-system", false);
        for resource in [
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
        ] {
            let found = find(&rules, "admissionregistration.k8s.io", resource);
            assert_eq!(found.len(), 1, "{resource}");
            assert_eq!(found[0].resource_names, vec!["ork-t-web".to_string()]);
            assert_eq!(found[0].namespace, None);
        }
        let secrets = find(&rules, "", "secrets");
        assert!(
            secrets
                .iter()
                .any(|r| r.resource_names == ["ork-webhook-ca"]
                    && r.namespace.as_deref() == Some("ork-system")
                    && r.verbs.contains(&"get")),
            "{secrets:?}"
        );
        assert!(
            secrets
                .iter()
                .any(|r| r.verbs == ["create"] && r.namespace.as_deref() == Some("ork-system")),
            "the first replica creates the CA: {secrets:?}"
        );
        let none = super::rules(&katalog("", ""), "ork-system", false);
        assert!(
            find(
                &none,
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations"
            )
            .is_empty()
        );
    }
}
