//! What a reconcile does to the children, decided before anything is written: from the
//! validated answer, what the watches know of each child and ork's own records on it (its
//! owner label, the fingerprint of what it last applied), each child's fate. A pure function
//! of its inputs, so the plan can be logged, shown to a user and tested without a cluster; the
//! executor (the children module) only writes what it says.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use kube::ResourceExt;
use kube::core::DynamicObject;
use ork_engine::drift::{already_applied, differences};
use ork_protocol::DesiredChild;
use serde::Serialize;
use serde_json::Value;

pub(crate) use ork_katalog::metacontroller::UpdateMethod;

use crate::cache::Holder;
use crate::index::ChildRef;
use crate::labels::{APPLIED, MANAGED_BY, MANAGED_SINCE};
use crate::ports::Owner;

/// One child the answer asks for, with what is known of it before the plan.
pub(crate) struct Target<'a> {
    pub child: &'a DesiredChild,
    pub at: ChildRef,
    /// ork's object of that name, as the watches last saw it (any CR's).
    pub live: Option<Arc<DynamicObject>>,
    /// Who holds an object of that name that the children's watch does not see (looked up
    /// only where ork would create one and may not adopt).
    pub holder: Option<Holder>,
    /// `adopt: true` on its managed resource.
    pub adopt: bool,
    /// The object ork would apply (stamped with owner label, reference, annotations).
    pub object: Value,
    /// How an existing child is brought to `object` (a Metacontroller child type's
    /// `updateStrategy`; in place for every Katalog entry).
    pub method: UpdateMethod,
}

/// What becomes of one child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "action")]
pub(crate) enum Fate {
    /// Not there yet: applied.
    Create,
    /// There and different: applied. `fields` are those the live object does not hold; empty
    /// when only fields ork no longer sends go (server-side apply removes them).
    Update { fields: Vec<String> },
    /// There and holding everything ork would send, which is what it sent last time.
    Unchanged,
    /// There, and left as it is: its type's update strategy is `OnDelete`.
    Kept,
    /// There and different, and its type's update strategy is `Recreate`: deleted now,
    /// created as the answer says on the next reconcile.
    Recreate { fields: Vec<String> },
    /// ork's child that the answer no longer lists: deleted (`prune`).
    Prune,
    /// Not written, and nothing of the answer is: someone else holds it.
    Refused { reason: String },
}

/// One child's line of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Step {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(flatten)]
    pub fate: Fate,
    /// Where the step's child is in [`Plan::children`]'s targets (`None`: a prune).
    #[serde(skip)]
    pub target: Option<usize>,
    #[serde(skip)]
    pub at: ChildRef,
}

/// The fate of every child of one reconcile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    /// The first refusal: the whole answer is not written.
    pub fn refused(&self) -> Option<&str> {
        self.steps.iter().find_map(|s| match &s.fate {
            Fate::Refused { reason } => Some(reason.as_str()),
            _ => None,
        })
    }

    /// The steps that apply (create or update).
    pub fn applies(&self) -> impl Iterator<Item = &Step> {
        self.steps
            .iter()
            .filter(|s| matches!(s.fate, Fate::Create | Fate::Update { .. }))
    }

    /// The steps that delete.
    pub fn prunes(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| s.fate == Fate::Prune)
    }

    /// The steps that delete a child to create it anew.
    pub fn recreates(&self) -> impl Iterator<Item = &Step> {
        self.steps
            .iter()
            .filter(|s| matches!(s.fate, Fate::Recreate { .. }))
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.kind)?;
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        write!(f, "{}: ", self.name)?;
        match &self.fate {
            Fate::Create => f.write_str("create"),
            Fate::Update { fields } if fields.is_empty() => {
                f.write_str("update (drop fields no longer sent)")
            }
            Fate::Update { fields } => write!(f, "update ({})", fields.join(", ")),
            Fate::Unchanged => f.write_str("unchanged"),
            Fate::Kept => f.write_str("kept (update strategy OnDelete)"),
            Fate::Recreate { fields } => write!(f, "recreate ({})", fields.join(", ")),
            Fate::Prune => f.write_str("prune"),
            Fate::Refused { reason } => write!(f, "refused: {reason}"),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for s in self
            .steps
            .iter()
            .filter(|s| !matches!(s.fate, Fate::Unchanged | Fate::Kept))
        {
            if !first {
                f.write_str("; ")?;
            }
            first = false;
            write!(f, "{s}")?;
        }
        if first {
            f.write_str("no change")?;
        }
        Ok(())
    }
}

/// The plan for `targets` (the answer's children, in its order) of the CR `owner`, whose
/// children as the watches know them are `owned`; with `prune`, those the answer no longer
/// lists go. `kind_of` names a managed type.
pub(crate) fn plan(
    owner: &Owner,
    targets: &[Target<'_>],
    owned: &[(ChildRef, Arc<DynamicObject>)],
    prune: bool,
    kind_of: impl Fn(usize) -> String,
) -> Plan {
    let mut steps: Vec<Step> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| Step {
            kind: t.child.managed.kind.clone(),
            namespace: t.at.namespace.as_deref().map(str::to_string),
            name: t.at.name.to_string(),
            fate: fate(owner, t),
            target: Some(i),
            at: t.at.clone(),
        })
        .collect();
    if prune {
        let desired: HashSet<&ChildRef> = targets.iter().map(|t| &t.at).collect();
        steps.extend(
            owned
                .iter()
                .filter(|(at, _)| !desired.contains(at))
                .map(|(at, _)| Step {
                    kind: kind_of(at.type_index),
                    namespace: at.namespace.as_deref().map(str::to_string),
                    name: at.name.to_string(),
                    fate: Fate::Prune,
                    target: None,
                    at: at.clone(),
                }),
        );
    }
    Plan { steps }
}

fn fate(owner: &Owner, t: &Target<'_>) -> Fate {
    let holder = match &t.live {
        Some(live) => Some(Holder::of(&live.metadata)),
        None => t.holder.clone(),
    };
    if !t.adopt
        && let Some(holder) = &holder
        && let Some(reason) = foreign(holder, owner, t.child)
    {
        return Fate::Refused { reason };
    }
    if t.method == UpdateMethod::OnDelete && holder.is_some() {
        return Fate::Kept;
    }
    let Some(live) = &t.live else {
        return Fate::Create;
    };
    let sent = t
        .object
        .pointer(&format!("/metadata/annotations/{}", escape(APPLIED)))
        .and_then(Value::as_str);
    let same_as_last = live.annotations().get(APPLIED).map(String::as_str) == sent;
    let fields = missing(&t.object, live);
    if same_as_last && fields.is_empty() {
        Fate::Unchanged
    } else if t.method == UpdateMethod::Recreate {
        Fate::Recreate { fields }
    } else {
        Fate::Update { fields }
    }
}

/// The fields of `sent` that `live` does not hold. Its `apiVersion` and `kind` are left out:
/// the store holds the type the child was looked up by, at the version its watch reads, which
/// need not be the one the service wrote (the fields themselves say whether anything differs).
fn missing(sent: &Value, live: &DynamicObject) -> Vec<String> {
    let Value::Object(fields) = sent else {
        return vec![String::new()];
    };
    let mut out = Vec::new();
    for (k, v) in fields {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                let meta = serde_json::to_value(&live.metadata).unwrap_or(Value::Null);
                if !already_applied(v, &meta) {
                    out.extend(differences(v, &meta).into_iter().map(|p| prefixed(k, &p)));
                }
            }
            _ => match live.data.get(k) {
                Some(l) => out.extend(differences(v, l).into_iter().map(|p| prefixed(k, &p))),
                None => out.push(k.clone()),
            },
        }
    }
    // ork's record of what it sent is not a field of the child's (it says whether fields went),
    // and Orkestra's marks only ride on writes made for other reasons.
    out.retain(|p| {
        p.strip_prefix("metadata.annotations.")
            .is_none_or(|k| ![APPLIED, MANAGED_BY, MANAGED_SINCE].contains(&k))
    });
    out
}

fn prefixed(root: &str, path: &str) -> String {
    if path.is_empty() {
        root.to_string()
    } else if path.starts_with('[') {
        format!("{root}{path}")
    } else {
        format!("{root}.{path}")
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Why an existing object is not this CR's to write: it is this CR's when it carries its owner
/// label or a controller reference to it; anything else is someone else's and is not taken
/// over (SPEC §11).
fn foreign(holder: &Holder, owner: &Owner, child: &DesiredChild) -> Option<String> {
    let owner_label = holder.owner_label.as_deref();
    let owned_by_label = owner_label == Some(owner.uid.as_str());
    let owned_by_ref = holder.controller.as_deref() == Some(owner.uid.as_str());
    if owned_by_label || owned_by_ref {
        return None;
    }
    let whose = match owner_label {
        Some(other) => format!("it belongs to another object (owner UID {other})"),
        None => "this CR does not own it".to_string(),
    };
    Some(format!(
        "{} {} already exists and {whose}; ork does not take it over (set `adopt: true` on its managedResources entry to allow that)",
        child.managed.kind, child.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner() -> Owner {
        Owner {
            entry: "webapp".into(),
            reference: ork_protocol::OwnerRef {
                api_version: "demo.ork.dev/v1".into(),
                kind: "WebApp".into(),
                name: "a".into(),
                namespace: Some("ns".into()),
            },
            uid: "uid-a".into(),
            key: crate::mark::MarkKey::ephemeral(),
        }
    }

    fn desired(name: &str, value: &str) -> DesiredChild {
        DesiredChild {
            managed: crate::discovery::ChildType::config_maps().managed,
            name: name.into(),
            namespace: Some("ns".into()),
            object: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "ns"}, "data": {"v": value}}),
            force_conflict: None,
        }
    }

    fn at(name: &str) -> ChildRef {
        ChildRef {
            type_index: 0,
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    /// The object ork would apply for `child`, and what the API server then holds.
    fn stored(child: &DesiredChild, object: &Value, owner_uid: &str) -> Arc<DynamicObject> {
        let mut o = object.clone();
        o["metadata"]["uid"] = json!(format!("uid-{}", child.name));
        o["metadata"]["labels"][crate::labels::OWNER_UID] = json!(owner_uid);
        Arc::new(serde_json::from_value(o).expect("an object"))
    }

    fn target<'a>(child: &'a DesiredChild, live: Option<Arc<DynamicObject>>) -> Target<'a> {
        Target {
            object: crate::ports::write::stamped(child, &owner()),
            at: at(&child.name),
            child,
            live,
            holder: None,
            adopt: false,
            method: UpdateMethod::InPlace,
        }
    }

    fn kind(_: usize) -> String {
        "ConfigMap".into()
    }

    /// A child a release without Orkestra's marks applied is not rewritten by one that sends
    /// them (an upgrade rewrites nothing); a child that changes gets them with its write.
    #[test]
    fn orkestra_marks_alone_never_make_a_child_differ() {
        let (same, edited) = (desired("same", "1"), desired("edited", "2"));
        let o = owner();
        let before = stored(&same, &crate::ports::write::stamped(&same, &o), "uid-a");
        let old_edited = stored(
            &edited,
            &crate::ports::write::stamped(&desired("edited", "1"), &o),
            "uid-a",
        );
        fn with_marks(child: &DesiredChild, live: Arc<DynamicObject>) -> Target<'_> {
            let mut t = target(child, Some(live));
            t.object["metadata"]["annotations"][crate::labels::MANAGED_BY] = json!("web");
            t.object["metadata"]["annotations"][crate::labels::MANAGED_SINCE] =
                json!("2026-12-01T00:00:00Z");
            t
        }
        let targets = [with_marks(&same, before), with_marks(&edited, old_edited)];
        let p = plan(&o, &targets, &[], false, kind);
        let fates: Vec<&Fate> = p.steps.iter().map(|s| &s.fate).collect();
        assert_eq!(
            fates,
            [
                &Fate::Unchanged,
                &Fate::Update {
                    fields: vec!["data.v".into()]
                }
            ]
        );
    }

    #[test]
    fn each_child_gets_its_fate_and_the_plan_says_it_in_words() {
        let (one, two, three) = (
            desired("one", "1"),
            desired("two", "2"),
            desired("three", "3"),
        );
        let o = owner();
        let sent_two = crate::ports::write::stamped(&two, &o);
        let sent_three = crate::ports::write::stamped(&three, &o);
        let mut edited = sent_three.clone();
        edited["data"]["v"] = json!("by hand");
        let gone = stored(&desired("old", "x"), &sent_two, "uid-a");
        let targets = [
            target(&one, None),
            target(&two, Some(stored(&two, &sent_two, "uid-a"))),
            target(&three, Some(stored(&three, &edited, "uid-a"))),
        ];
        let owned = vec![(at("old"), gone)];
        let p = plan(&o, &targets, &owned, true, kind);
        let fates: Vec<&Fate> = p.steps.iter().map(|s| &s.fate).collect();
        assert_eq!(
            fates,
            [
                &Fate::Create,
                &Fate::Unchanged,
                &Fate::Update {
                    fields: vec!["data.v".into()]
                },
                &Fate::Prune
            ]
        );
        assert_eq!(
            p.to_string(),
            "ConfigMap ns/one: create; ConfigMap ns/three: update (data.v); ConfigMap ns/old: prune"
        );
        let shown = serde_json::to_value(&p).expect("serialises");
        assert_eq!(
            shown["steps"][2],
            json!({"kind": "ConfigMap", "namespace": "ns", "name": "three",
                "action": "update", "fields": ["data.v"]})
        );
        // Without prune, ork's other children stay.
        assert_eq!(plan(&o, &targets, &owned, false, kind).prunes().count(), 0);
    }

    #[test]
    fn an_object_someone_else_holds_is_refused_and_then_nothing_is_written() {
        let one = desired("one", "1");
        let mut t = target(&one, None);
        t.holder = Some(Holder {
            owner_label: Some("uid-b".into()),
            controller: None,
        });
        let p = plan(&owner(), &[t], &[], true, kind);
        let reason = p.refused().expect("refused");
        assert!(
            reason.contains("belongs to another object (owner UID uid-b)"),
            "{reason}"
        );
        assert_eq!(
            p.applies().count(),
            0,
            "the executor writes nothing of a refused plan"
        );
        // With `adopt: true` it is taken over.
        let mut t = target(&one, None);
        t.holder = Some(Holder::default());
        t.adopt = true;
        assert_eq!(
            plan(&owner(), &[t], &[], true, kind).steps[0].fate,
            Fate::Create
        );
    }

    fn live(v: Value) -> DynamicObject {
        serde_json::from_value(v).expect("a valid object")
    }

    #[test]
    fn a_listed_child_without_its_type_still_holds_what_was_sent() {
        let sent = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 2}});
        // An item of a list: no apiVersion/kind; server fields added.
        let listed = live(
            json!({"metadata": {"name": "a", "uid": "u", "labels": {"x": "1"}},
            "spec": {"replicas": 2, "strategy": {}}, "status": {}}),
        );
        assert_eq!(missing(&sent, &listed), Vec::<String>::new());
        // Read at another served version: the fields decide.
        let other_version = live(json!({"apiVersion": "apps/v1beta2", "kind": "Deployment",
            "metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 2}}));
        assert_eq!(missing(&sent, &other_version), Vec::<String>::new());
    }

    #[test]
    fn a_changed_field_or_label_is_not_held() {
        let sent = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
        let edited =
            live(json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "w"}}));
        assert_eq!(missing(&sent, &edited), ["data.k"]);
        let relabelled =
            live(json!({"metadata": {"name": "a", "labels": {"x": "2"}}, "data": {"k": "v"}}));
        assert_eq!(missing(&sent, &relabelled), ["metadata.labels.x"]);
        let without = live(json!({"metadata": {"name": "a", "labels": {"x": "1"}}}));
        assert_eq!(missing(&sent, &without), ["data"]);
    }

    #[test]
    fn a_field_the_service_stops_sending_is_an_update_that_names_no_field() {
        let now = desired("one", "1");
        let mut before = now.clone();
        before.object["data"]["extra"] = json!("x");
        let o = owner();
        let live = stored(&before, &crate::ports::write::stamped(&before, &o), "uid-a");
        let p = plan(&o, &[target(&now, Some(live))], &[], true, kind);
        assert_eq!(p.steps[0].fate, Fate::Update { fields: vec![] });
        assert_eq!(
            p.to_string(),
            "ConfigMap ns/one: update (drop fields no longer sent)"
        );
    }
}
