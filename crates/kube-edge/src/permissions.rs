//! Least privilege from the Katalog (SPEC §6): the rules `ork generate rbac` writes and that
//! `ork run` checks at startup with SelfSubjectAccessReview, naming every one it lacks.

use std::collections::BTreeSet;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use ork_katalog::Katalog;

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

const CR_VERBS: [&str; 5] = ["get", "list", "watch", "update", "patch"];
const CHILD_VERBS: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// Every rule ork needs for `katalog`; `leases` adds leader election in `ork_namespace`.
/// Deterministic: the same Katalog always gives the same rules in the same order.
pub fn rules(katalog: &Katalog, ork_namespace: &str, leases: bool) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    let mut children: BTreeSet<(String, String)> = BTreeSet::new();
    let mut secrets: BTreeSet<String> = BTreeSet::new();
    for entry in katalog.spec.crds.values().filter(|e| e.enabled) {
        let t = &entry.api_types;
        out.push(Rule {
            api_group: t.group.clone(),
            resources: vec![t.plural.clone()],
            verbs: CR_VERBS.to_vec(),
            resource_names: Vec::new(),
            namespace: None,
        });
        out.push(Rule {
            api_group: t.group.clone(),
            resources: vec![
                format!("{}/status", t.plural),
                format!("{}/finalizers", t.plural),
            ],
            verbs: vec!["get", "update", "patch"],
            resource_names: Vec::new(),
            namespace: None,
        });
        if let Some(remote) = &entry.operator_box.reconcile.remote {
            for m in &remote.managed_resources {
                children.insert((m.group.clone(), m.plural.clone()));
            }
            if let Some(secret) = remote.auth.as_ref().and_then(|a| a.secret_ref.as_ref()) {
                secrets.insert(secret.name.clone());
            }
            if let Some(tls) = &remote.tls {
                secrets.extend(tls.ca_secret_ref.iter().map(|r| r.name.clone()));
                secrets.extend(tls.client_cert_secret_ref.iter().map(|r| r.name.clone()));
            }
        }
    }
    for (group, plural) in children {
        out.push(Rule {
            api_group: group,
            resources: vec![plural],
            verbs: CHILD_VERBS.to_vec(),
            resource_names: Vec::new(),
            namespace: None,
        });
    }
    for group in ["", "events.k8s.io"] {
        out.push(Rule {
            api_group: group.into(),
            resources: vec!["events".into()],
            verbs: vec!["create", "patch"],
            resource_names: Vec::new(),
            namespace: None,
        });
    }
    if !secrets.is_empty() {
        out.push(Rule {
            api_group: String::new(),
            resources: vec!["secrets".into()],
            verbs: vec!["get", "list", "watch"],
            resource_names: secrets.into_iter().collect(),
            namespace: None,
        });
    }
    if leases {
        out.push(Rule {
            api_group: "coordination.k8s.io".into(),
            resources: vec!["leases".into()],
            verbs: vec!["get", "create", "update"],
            resource_names: Vec::new(),
            namespace: Some(ork_namespace.into()),
        });
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

    #[test]
    fn rules_cover_crs_children_events_secrets_and_leases_and_nothing_wider() {
        let yaml = include_str!("../../../examples/webapp/katalog.yaml").replace(
            "            timeout: 10s\n",
            "            timeout: 10s\n            auth: {secretRef: {name: token, key: t}}\n",
        );
        let k = ork_katalog::load_str(&yaml, std::path::Path::new("k.yaml")).expect("valid");
        let rules = rules(&k, "ork-system", true);
        let find = |group: &str, res: &str| {
            rules
                .iter()
                .find(|r| r.api_group == group && r.resources[0] == res)
        };
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
        assert_eq!(
            find("", "secrets").map(|r| r.resource_names.clone()),
            Some(vec!["token".to_string()])
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
}
