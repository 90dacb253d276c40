//! The invariant check every scenario ends with, against what the workload did (the model).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use kube::core::DynamicObject;
use kube::{Client, ResourceExt};
use serde_json::Value;

pub const MANAGED: &str = "orkestra.orkspace.io/managed";
pub const OWNER_UID: &str = "orkestra.orkspace.io/owner-uid";
pub const FINALIZER: &str = "orkestra.orkspace.io/remote-finalizer";

/// What the workload left: the CRs that should exist (name → spec revision) and the ones it
/// deleted.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub live: BTreeMap<String, u64>,
    pub deleted: BTreeSet<String>,
    /// Deleted CRs that still existed after the delete call (held by ork's finalizer): ork
    /// promised them a finalize call.
    pub held: BTreeSet<String>,
}

impl Model {
    pub fn payload(name: &str, rev: u64) -> String {
        format!("{name}@{rev}")
    }
}

/// Where the scenario's objects live and what the children must say.
#[derive(Debug, Clone)]
pub struct Scope {
    pub ns: String,
    pub cross_ns: Option<String>,
    /// The replicas one of whose stamps every child must carry at the end (`data.writer`): one
    /// in R1–R4; any of the fleet in R7 and R8, where the lease decides who writes and the
    /// scenario checks that.
    pub writers: Vec<String>,
    /// CRs whose name starts with this have children without a stamp (R7's CRs left alone
    /// during the upgrade: the service answers them alike whoever calls).
    pub unstamped: Option<String>,
}

impl Scope {
    /// The stamp the child of CR `name` must carry, given the one it has (None: no stamp).
    fn stamp_for(&self, name: &str, has: Option<&String>) -> Option<String> {
        if self
            .unstamped
            .as_deref()
            .is_some_and(|p| name.starts_with(p))
        {
            return None;
        }
        match has {
            Some(w) if self.writers.contains(w) => Some(w.clone()),
            _ => Some(self.writers.join(" or ")),
        }
    }
}

/// The invariant names, in report order.
pub const INVARIANTS: [&str; 7] = [
    "not_ready",
    "wrong_children",
    "lost_edits",
    "rejected_objects",
    "orphans",
    "stuck_finalizers",
    "panics",
];

/// Counts per invariant (all zero when the scenario passed) and a few examples of each.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub counts: BTreeMap<String, u64>,
    pub examples: BTreeMap<String, Vec<String>>,
}

impl Findings {
    pub fn new() -> Findings {
        let mut f = Findings::default();
        for k in INVARIANTS {
            f.counts.insert(k.to_string(), 0);
        }
        f
    }

    pub fn add(&mut self, what: &str, example: impl FnOnce() -> String) {
        *self.counts.entry(what.to_string()).or_insert(0) += 1;
        let ex = self.examples.entry(what.to_string()).or_default();
        if ex.len() < 5 {
            ex.push(example());
        }
    }

    /// Sets a count that is measured elsewhere (e.g. panics, calls while idle).
    pub fn set(&mut self, what: &str, n: u64, examples: Vec<String>) {
        self.counts.insert(what.to_string(), n);
        if !examples.is_empty() {
            self.examples
                .insert(what.to_string(), examples.into_iter().take(5).collect());
        }
    }

    pub fn get(&self, what: &str) -> u64 {
        self.counts.get(what).copied().unwrap_or(0)
    }

    /// Converged: nothing is left to do (rejected objects and panics do not go away by waiting).
    pub fn converged(&self) -> bool {
        [
            "not_ready",
            "wrong_children",
            "lost_edits",
            "orphans",
            "stuck_finalizers",
        ]
        .iter()
        .all(|k| self.get(k) == 0)
    }

    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

fn ready_true(cr: &DynamicObject) -> bool {
    let status = &cr.data["status"];
    let generation = cr.metadata.generation.unwrap_or(0);
    let ready = status["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    });
    ready && status["observedGeneration"].as_i64() == Some(generation)
}

fn data_of(cm: &ConfigMap) -> BTreeMap<String, String> {
    cm.data.clone().unwrap_or_default().into_iter().collect()
}

/// One pass over the cluster: lists the CRs, every ConfigMap and Secret of the scope's
/// namespaces, and compares them with the model field by field.
///
/// # Errors
/// When a list fails (the API server is down).
pub async fn check(
    client: &Client,
    crs: &Api<DynamicObject>,
    scope: &Scope,
    model: &Model,
) -> Result<Findings> {
    let mut f = Findings::new();
    let lp = ListParams::default();
    let all_crs = crs.list(&lp).await?.items;
    let by_name: BTreeMap<String, &DynamicObject> =
        all_crs.iter().map(|c| (c.name_any(), c)).collect();
    let uids: BTreeMap<String, String> = all_crs
        .iter()
        .filter_map(|c| Some((c.uid()?, c.name_any())))
        .collect();
    let mut namespaces = vec![scope.ns.clone()];
    namespaces.extend(scope.cross_ns.clone());
    let mut cms: Vec<ConfigMap> = Vec::new();
    for ns in &namespaces {
        cms.extend(
            Api::<ConfigMap>::namespaced(client.clone(), ns)
                .list(&lp)
                .await?
                .items,
        );
        for s in Api::<Secret>::namespaced(client.clone(), ns)
            .list(&lp)
            .await?
            .items
        {
            if s.name_any().ends_with("-rejected") || s.labels().contains_key(MANAGED) {
                f.add("rejected_objects", || {
                    format!("Secret {ns}/{}", s.name_any())
                });
            }
        }
    }
    // Children ork manages, by owner UID.
    let mut children: BTreeMap<String, Vec<&ConfigMap>> = BTreeMap::new();
    for cm in &cms {
        let key = format!("{}/{}", cm.namespace().unwrap_or_default(), cm.name_any());
        if data_of(cm).contains_key("poison") {
            f.add("rejected_objects", || {
                format!("ConfigMap {key} carries a rejected answer's data")
            });
        }
        if cm.name_any().ends_with("-rejected") {
            f.add("rejected_objects", || format!("ConfigMap {key}"));
        }
        if !cm.labels().contains_key(MANAGED) {
            continue;
        }
        match cm.labels().get(OWNER_UID) {
            Some(uid) if uids.contains_key(uid) => {
                children.entry(uid.clone()).or_default().push(cm)
            }
            Some(uid) => f.add("orphans", || {
                format!("ConfigMap {key}: owner uid {uid} does not exist")
            }),
            None => f.add("orphans", || {
                format!("ConfigMap {key}: managed without an owner label")
            }),
        }
    }
    for cr in &all_crs {
        let name = cr.name_any();
        if cr.data["status"]["poisoned"] == true {
            f.add("rejected_objects", || {
                format!("CR {name}: status from a rejected answer")
            });
        }
        if !model.live.contains_key(&name) {
            if cr.metadata.deletion_timestamp.is_some()
                && cr.finalizers().iter().any(|x| x == FINALIZER)
            {
                f.add("stuck_finalizers", || {
                    format!("CR {name} deleted but held by {FINALIZER}")
                });
            } else {
                f.add("stuck_finalizers", || {
                    format!(
                        "CR {name} deleted but still there (finalizers {:?})",
                        cr.finalizers()
                    )
                });
            }
        }
    }
    for (name, rev) in &model.live {
        let Some(cr) = by_name.get(name) else {
            f.add("not_ready", || format!("CR {name} is missing"));
            continue;
        };
        if !ready_true(cr) {
            f.add("not_ready", || {
                format!(
                    "CR {name}: generation {:?}, status {}",
                    cr.metadata.generation,
                    short(&cr.data["status"])
                )
            });
        }
        let uid = cr.uid().unwrap_or_default();
        let mine = children.get(&uid).cloned().unwrap_or_default();
        let mut want = vec![(scope.ns.clone(), format!("{name}-cfg"))];
        if let Some(x) = &scope.cross_ns {
            want.push((x.clone(), format!("{name}-x")));
        }
        for cm in &mine {
            let at = (cm.namespace().unwrap_or_default(), cm.name_any());
            if !want.contains(&at) {
                f.add("wrong_children", || {
                    format!("CR {name}: extra child {}/{}", at.0, at.1)
                });
            }
        }
        for (ns, child) in &want {
            let Some(cm) = mine
                .iter()
                .find(|c| c.namespace().as_deref() == Some(ns) && &c.name_any() == child)
            else {
                f.add("wrong_children", || {
                    format!("CR {name}: child {ns}/{child} missing")
                });
                continue;
            };
            let data = data_of(cm);
            let same_ns = ns == &scope.ns;
            let mut expected: BTreeMap<String, String> = BTreeMap::new();
            expected.insert("rev".into(), rev.to_string());
            if same_ns {
                expected.insert("payload".into(), Model::payload(name, *rev));
                if let Some(w) = scope.stamp_for(name, data.get("writer")) {
                    expected.insert("writer".into(), w);
                }
            } else {
                expected.insert("owner".into(), format!("{}/{name}", scope.ns));
            }
            if data.get("rev") != expected.get("rev")
                || data.get("payload") != expected.get("payload")
            {
                f.add("lost_edits", || {
                    format!("CR {name} at rev {rev}: child {ns}/{child} has {data:?}")
                });
                continue;
            }
            let mut problems = Vec::new();
            if data != expected {
                problems.push(format!("data {data:?} != {expected:?}"));
            }
            let labels = cm.labels();
            if labels.get("chaos.ork.dev/app") != Some(name) {
                problems.push("label chaos.ork.dev/app".to_string());
            }
            if labels.get(MANAGED).map(String::as_str) != Some("true") {
                problems.push(format!("label {MANAGED}"));
            }
            let owners = cm.owner_references();
            if same_ns {
                let ok = owners.len() == 1
                    && owners[0].uid == uid
                    && owners[0].kind == "ChaosApp"
                    && owners[0].name == *name
                    && owners[0].controller == Some(true);
                if !ok {
                    problems.push(format!("ownerReferences {owners:?}"));
                }
            } else if !owners.is_empty() {
                problems.push(format!("ownerReferences across namespaces {owners:?}"));
            }
            if !problems.is_empty() {
                f.add("wrong_children", || {
                    format!("CR {name}: {ns}/{child}: {}", problems.join("; "))
                });
            }
        }
        if cr.data["status"]["seenRev"].as_u64() != Some(*rev) && ready_true(cr) {
            f.add("lost_edits", || {
                format!(
                    "CR {name} at rev {rev}: status.seenRev {}",
                    cr.data["status"]["seenRev"]
                )
            });
        }
    }
    Ok(f)
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 300 {
        format!("{}…", s.chars().take(300).collect::<String>())
    } else {
        s
    }
}
