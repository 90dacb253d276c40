use super::*;
use kube::core::DynamicObject;
use serde_json::json;

use crate::labels::PREFIX;

fn no_gate(_: &Value) -> Value {
    Value::Null
}

fn cr(key: &str, fingerprint: u64) -> Seen<CrView> {
    Seen::Object {
        listing: false,
        object: CrView {
            key: key.into(),
            uid: format!("uid-{key}"),
            fingerprint,
            json: None,
            requested_at: None,
        },
    }
}

fn child(name: &str, owner: &str, fingerprint: u64) -> ChildView {
    ChildView {
        child: ChildRef {
            type_index: 0,
            namespace: Some("ns".into()),
            name: name.into(),
        },
        uid: format!("uid-{name}"),
        owner_uid: Some(format!("uid-{owner}")),
        owner_key: Some(owner.into()),
        sweepable: false,
        marked: false,
        fingerprint,
    }
}

fn applied(name: &str, fingerprint: u64) -> Applied {
    Applied {
        child: child(name, "ns/a", fingerprint).child,
        fingerprint,
        uid: format!("uid-{name}"),
    }
}

fn seen(view: ChildView) -> Seen<ChildView> {
    Seen::Object {
        listing: false,
        object: view,
    }
}

fn enqueue(key: &str, reason: Reason) -> Vec<Effect> {
    vec![Effect::Enqueue(key.into(), reason)]
}

#[test]
fn a_new_requested_at_asks_for_a_reconcile_now_and_the_same_one_does_not_again() {
    let asked = |at: Option<&str>| {
        let mut seen = cr("ns/a", 1);
        if let Seen::Object { object, .. } = &mut seen {
            object.requested_at = at.map(str::to_string);
        }
        seen
    };
    let mut ix = Index::new(vec![], None);
    assert_eq!(
        ix.cr_event(asked(Some("t0")), &no_gate),
        enqueue("ns/a", Reason::Create)
    );
    assert!(ix.cr_event(asked(Some("t0")), &no_gate).is_empty());
    assert_eq!(
        ix.cr_event(asked(Some("t1")), &no_gate),
        enqueue("ns/a", Reason::Manual),
        "a new value, the spec unchanged"
    );
    assert!(
        ix.cr_event(asked(None), &no_gate).is_empty(),
        "removing it asks for nothing"
    );
}

#[test]
fn a_create_triggers_once_and_own_status_writes_do_not() {
    // The CR as the watch shows it after each write: ork's status patch and ork's own
    // annotations, then someone's edit of the spec.
    let stored = |status: Value, annotations: Value, spec: Value| {
        let o: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
            "metadata": {"name": "a", "namespace": "ns", "uid": "uid-ns/a",
                "annotations": annotations},
            "spec": spec, "status": status}))
        .expect("a CR");
        let mut seen = cr("ns/a", 0);
        if let Seen::Object { object, .. } = &mut seen {
            object.fingerprint = cr_fingerprint(&o, &Default::default());
        }
        seen
    };
    let mut ix = Index::new(vec![], None);
    let created = stored(json!({}), json!({}), json!({"image": "nginx"}));
    assert_eq!(
        ix.cr_event(created, &no_gate),
        enqueue("ns/a", Reason::Create)
    );
    let status_written = stored(
        json!({"phase": "Ready", "conditions": [{"type": "Ready", "status": "True"}]}),
        json!({}),
        json!({"image": "nginx"}),
    );
    assert!(
        ix.cr_event(status_written, &no_gate).is_empty(),
        "ork's status write"
    );
    let annotated = stored(
        json!({"phase": "Ready"}),
        json!({format!("{PREFIX}health"): "{\"ok\":true}"}),
        json!({"image": "nginx"}),
    );
    assert!(
        ix.cr_event(annotated, &no_gate).is_empty(),
        "ork's annotation write"
    );
    let edited = stored(
        json!({"phase": "Ready"}),
        json!({}),
        json!({"image": "nginx:2"}),
    );
    assert_eq!(
        ix.cr_event(edited, &no_gate),
        enqueue("ns/a", Reason::Update)
    );
}

#[test]
fn children_are_found_by_owner_and_a_relist_drops_the_deleted_ones() {
    let mut ix = Index::new(vec![], None);
    ix.cr_event(cr("ns/a", 1), &no_gate);
    ix.child_event(0, None, seen(child("one", "ns/a", 1)));
    ix.child_event(0, None, seen(child("two", "ns/a", 1)));
    assert_eq!(ix.children_of("uid-ns/a", Some("ns")).len(), 2);

    // The watch restarts; "two" was deleted during the gap.
    ix.child_event(0, None, Seen::Init);
    ix.child_event(
        0,
        None,
        Seen::Object {
            listing: true,
            object: child("one", "ns/a", 1),
        },
    );
    let effects = ix.child_event(0, None, Seen::InitDone);
    assert_eq!(
        effects,
        enqueue("ns/a", Reason::Child),
        "its owner recreates it"
    );
    let names: Vec<String> = ix
        .children_of("uid-ns/a", Some("ns"))
        .into_iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(names, ["one"]);
}

#[test]
fn a_relist_of_one_namespace_keeps_the_children_of_another() {
    let mut ix = Index::new(vec![], None);
    ix.cr_event(cr("ns/a", 1), &no_gate);
    let mut other = child("far", "ns/a", 1);
    other.child.namespace = Some("other".into());
    other.marked = true;
    ix.child_event(0, Some("other"), seen(other));
    ix.child_event(0, Some("ns"), seen(child("near", "ns/a", 1)));
    ix.child_event(0, Some("ns"), Seen::Init);
    assert!(
        ix.child_event(0, Some("ns"), Seen::InitDone).len() == 1,
        "near is gone"
    );
    let names: Vec<String> = ix
        .children_of("uid-ns/a", Some("ns"))
        .into_iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(
        names,
        ["far"],
        "the other namespace's watch still holds far"
    );
}

#[test]
fn an_unmarked_object_in_another_namespace_is_not_a_child_whatever_it_claims() {
    let mut ix = Index::new(vec![], None);
    ix.cr_event(cr("ns/a", 1), &no_gate);
    // A tenant's object elsewhere naming the CR's UID (label, owner reference): no mark.
    let mut forged = child("forged", "ns/a", 1);
    forged.child.namespace = Some("tenant".into());
    ix.child_event(0, Some("tenant"), seen(forged));
    assert!(ix.children_of("uid-ns/a", Some("ns")).is_empty());
}

#[test]
fn a_hand_edit_of_a_child_triggers_its_owner_but_ork_s_apply_does_not() {
    let mut ix = Index::new(vec![], None);
    ix.cr_event(cr("ns/a", 1), &no_gate);
    ix.child_event(0, None, seen(child("one", "ns/a", 1)));
    assert_eq!(
        ix.child_event(0, None, seen(child("one", "ns/a", 2))),
        enqueue("ns/a", Reason::Child)
    );

    // ork applies while the owner is in flight; the watch event arrives before the apply
    // returns. Judged at finish: ork's own.
    ix.begin("ns/a");
    assert!(
        ix.child_event(0, None, seen(child("one", "ns/a", 3)))
            .is_empty()
    );
    let own = OwnWrites {
        applied: vec![applied("one", 3)],
        deleted: vec![],
    };
    assert!(ix.finish("ns/a", own).is_empty());
    // Later the same fingerprint again (resync of the watch): still ork's own.
    assert!(
        ix.child_event(0, None, seen(child("one", "ns/a", 3)))
            .is_empty()
    );
}

#[test]
fn a_hand_edit_during_the_owner_s_reconcile_is_judged_at_finish() {
    let mut ix = Index::new(vec![], None);
    ix.cr_event(cr("ns/a", 1), &no_gate);
    ix.child_event(0, None, seen(child("one", "ns/a", 1)));
    ix.begin("ns/a");
    ix.child_event(0, None, seen(child("one", "ns/a", 5)));
    // ork applied fingerprint 4, someone else made it 5.
    let own = OwnWrites {
        applied: vec![applied("one", 4)],
        deleted: vec![],
    };
    assert_eq!(ix.finish("ns/a", own), enqueue("ns/a", Reason::Child));
}

#[test]
fn ork_s_own_prune_is_not_drift_but_a_foreign_delete_is() {
    let mut ix = Index::new(vec![], None);
    ix.cr_event(cr("ns/a", 1), &no_gate);
    ix.child_event(0, None, seen(child("one", "ns/a", 1)));
    ix.child_event(0, None, seen(child("two", "ns/a", 1)));
    // ork prunes "one"; its deletion event comes after the reconcile finished.
    ix.begin("ns/a");
    let own = OwnWrites {
        applied: vec![],
        deleted: vec![(child("one", "ns/a", 1).child, "uid-one".into())],
    };
    assert!(ix.finish("ns/a", own).is_empty());
    assert!(
        ix.child_event(0, None, Seen::Deleted(child("one", "ns/a", 1)))
            .is_empty()
    );
    // Someone deletes "two".
    assert_eq!(
        ix.child_event(0, None, Seen::Deleted(child("two", "ns/a", 1))),
        enqueue("ns/a", Reason::Child)
    );
}

#[test]
fn what_a_relist_triggers_waits_for_its_end() {
    // The store swaps the listed copies in at InitDone: a reconcile queued before that
    // would read the old copy (found by the chaos suite's API server restart).
    let mut ix = Index::new(vec![], None);
    ix.cr_event(cr("ns/a", 1), &no_gate);
    ix.cr_event(Seen::Init, &no_gate);
    let edited = Seen::Object {
        listing: true,
        object: CrView {
            key: "ns/a".into(),
            uid: "uid-ns/a".into(),
            fingerprint: 2,
            json: None,
            requested_at: None,
        },
    };
    assert!(ix.cr_event(edited, &no_gate).is_empty(), "held back");
    assert_eq!(
        ix.cr_event(Seen::InitDone, &no_gate),
        enqueue("ns/a", Reason::Update)
    );
}

#[test]
fn a_deleted_cr_is_forgotten_also_when_a_relist_misses_it() {
    let mut ix = Index::new(vec![], None);
    ix.cr_event(cr("ns/a", 1), &no_gate);
    ix.cr_event(cr("ns/b", 1), &no_gate);
    ix.cr_event(Seen::Init, &no_gate);
    ix.cr_event(
        Seen::Object {
            listing: true,
            object: CrView {
                key: "ns/a".into(),
                uid: "uid-ns/a".into(),
                fingerprint: 1,
                json: None,
                requested_at: None,
            },
        },
        &no_gate,
    );
    assert_eq!(
        ix.cr_event(Seen::InitDone, &no_gate),
        vec![Effect::Forget("ns/b".into())]
    );
    assert!(ix.has_cr("ns/a") && !ix.has_cr("ns/b"));
}

/// A child in another namespace than its CR's: no owner reference, ork deletes it.
fn far(name: &str, owner: &str) -> ChildView {
    let mut view = child(name, owner, 1);
    view.child.namespace = Some("elsewhere".into());
    view.sweepable = true;
    view
}

fn listed(ix: &mut Index, keys: &[&str]) -> Vec<Effect> {
    ix.cr_event(Seen::Init, &no_gate);
    for key in keys {
        let Seen::Object { object, .. } = cr(key, 1) else {
            unreachable!()
        };
        ix.cr_event(
            Seen::Object {
                listing: true,
                object,
            },
            &no_gate,
        );
    }
    ix.cr_event(Seen::InitDone, &no_gate)
}

fn deleted(key: &str) -> Seen<CrView> {
    let Seen::Object { object, .. } = cr(key, 1) else {
        unreachable!()
    };
    Seen::Deleted(object)
}

#[test]
fn a_far_child_outliving_its_cr_is_swept_under_the_cr_s_key_once() {
    let mut ix = Index::new(vec![], None);
    listed(&mut ix, &["ns/a"]);
    ix.child_event(0, None, seen(far("x", "ns/a")));
    ix.child_event(0, None, seen(child("near", "ns/a", 1)));
    assert_eq!(
        ix.cr_event(deleted("ns/a"), &no_gate),
        vec![
            Effect::Forget("ns/a".into()),
            Effect::Enqueue("ns/a".into(), Reason::Sweep)
        ]
    );
    let strays = ix.take_strays("ns/a");
    assert_eq!(
        strays,
        vec![Stray {
            child: far("x", "ns/a").child,
            uid: "uid-x".into(),
            owner_uid: "uid-ns/a".into(),
        }],
        "the same-namespace child is the garbage collector's"
    );
    assert!(ix.take_strays("ns/a").is_empty(), "taken once");
    ix.swept(vec![(strays[0].child.clone(), strays[0].uid.clone())]);
    assert!(
        ix.child_event(0, None, Seen::Deleted(far("x", "ns/a")))
            .is_empty()
    );
}

#[test]
fn a_sweep_whose_children_went_some_other_way_is_dropped_with_its_queue_place() {
    // A standby replica: the leader finalized the CR; here its DELETED event came first.
    let mut ix = Index::new(vec![], None);
    listed(&mut ix, &["ns/a"]);
    ix.child_event(0, None, seen(far("x", "ns/a")));
    ix.child_event(0, None, seen(far("y", "ns/a")));
    ix.cr_event(deleted("ns/a"), &no_gate);
    assert!(
        ix.child_event(0, None, Seen::Deleted(far("x", "ns/a")))
            .is_empty(),
        "one child is left to sweep"
    );
    assert_eq!(
        ix.child_event(0, None, Seen::Deleted(far("y", "ns/a"))),
        vec![Effect::Forget("ns/a".into())]
    );
    assert!(ix.take_strays("ns/a").is_empty());
}

#[test]
fn a_sweep_due_under_a_name_survives_the_forget_of_a_later_cr_of_that_name() {
    let mut ix = Index::new(vec![], None);
    listed(&mut ix, &["ns/a"]);
    ix.child_event(0, None, seen(far("x", "ns/a")));
    ix.cr_event(deleted("ns/a"), &no_gate);
    // A new CR under the same name comes and goes before the sweep ran.
    let Seen::Object { mut object, .. } = cr("ns/a", 1) else {
        unreachable!()
    };
    object.uid = "uid-2".into();
    ix.cr_event(
        Seen::Object {
            listing: false,
            object: object.clone(),
        },
        &no_gate,
    );
    assert_eq!(
        ix.cr_event(Seen::Deleted(object), &no_gate),
        vec![
            Effect::Forget("ns/a".into()),
            Effect::Enqueue("ns/a".into(), Reason::Sweep)
        ]
    );
    assert_eq!(ix.take_strays("ns/a")[0].owner_uid, "uid-ns/a");
    assert!(ix.due_sweeps_where(|_| true).is_empty());
}

#[test]
fn children_listed_before_the_crs_are_judged_when_their_list_ends() {
    let mut ix = Index::new(vec![], None);
    ix.child_event(0, None, Seen::Init);
    ix.child_event(
        0,
        None,
        Seen::Object {
            listing: true,
            object: far("x", "ns/gone"),
        },
    );
    listed(&mut ix, &[]);
    assert_eq!(
        ix.child_event(0, None, Seen::InitDone),
        enqueue("ns/gone", Reason::Sweep)
    );
}

#[test]
fn a_child_taken_over_by_another_cr_is_not_swept_for_its_old_one() {
    let mut ix = Index::new(vec![], None);
    listed(&mut ix, &["ns/a", "ns/b"]);
    ix.child_event(0, None, seen(far("x", "ns/a")));
    ix.cr_event(deleted("ns/a"), &no_gate);
    // `adopt: true` on b's entry: b's apply moved the owner label before the sweep ran.
    assert_eq!(
        ix.child_event(0, None, seen(far("x", "ns/b"))),
        vec![Effect::Forget("ns/a".into())]
    );
    assert!(ix.take_strays("ns/a").is_empty());
    assert!(ix.due_sweeps_where(|_| true).is_empty());
}

#[test]
fn children_the_garbage_collector_takes_or_another_entry_owns_are_not_swept() {
    let mut ix = Index::new(vec![], None);
    listed(&mut ix, &["ns/a"]);
    ix.child_event(0, None, seen(child("near", "ns/a", 1)));
    let mut foreign = far("y", "ns/a");
    foreign.owner_key = None;
    ix.child_event(0, None, seen(foreign));
    assert_eq!(
        ix.cr_event(deleted("ns/a"), &no_gate),
        vec![Effect::Forget("ns/a".into())]
    );
    assert!(ix.take_strays("ns/a").is_empty());
}

#[test]
fn a_child_applied_as_its_cr_went_is_swept_when_it_shows_up() {
    // kubernetes#77988: the delete raced ork's finalizer; the apply's event comes last.
    let mut ix = Index::new(vec![], None);
    listed(&mut ix, &["ns/a"]);
    assert_eq!(
        ix.cr_event(deleted("ns/a"), &no_gate),
        vec![Effect::Forget("ns/a".into())]
    );
    assert_eq!(
        ix.child_event(0, None, seen(far("x", "ns/a"))),
        enqueue("ns/a", Reason::Sweep)
    );
    assert_eq!(ix.take_strays("ns/a").len(), 1);
}

#[test]
fn at_start_children_of_crs_that_went_meanwhile_are_swept_once_the_crs_are_listed() {
    let mut ix = Index::new(vec![], None);
    // The children's list comes first: nothing is judged before the CRs are listed.
    assert!(
        ix.child_event(0, None, seen(far("x", "ns/gone")))
            .is_empty()
    );
    ix.child_event(0, None, seen(far("y", "ns/a")));
    assert_eq!(
        listed(&mut ix, &["ns/a"]),
        vec![
            Effect::Enqueue("ns/a".into(), Reason::Create),
            Effect::Enqueue("ns/gone".into(), Reason::Sweep)
        ]
    );
    assert_eq!(ix.take_strays("ns/gone").len(), 1);
    assert!(ix.take_strays("ns/a").is_empty());
}

#[test]
fn a_cr_recreated_while_the_watch_was_away_is_new_and_the_old_one_s_children_are_swept() {
    let mut ix = Index::new(vec![], None);
    listed(&mut ix, &["ns/a"]);
    ix.child_event(0, None, seen(far("x", "ns/a")));
    ix.cr_event(Seen::Init, &no_gate);
    let mut again = CrView {
        key: "ns/a".into(),
        uid: "uid-ns/a-2".into(),
        fingerprint: 1,
        json: None,
        requested_at: None,
    };
    ix.cr_event(
        Seen::Object {
            listing: true,
            object: again.clone(),
        },
        &no_gate,
    );
    assert_eq!(
        ix.cr_event(Seen::InitDone, &no_gate),
        vec![
            Effect::Enqueue("ns/a".into(), Reason::Sweep),
            Effect::Enqueue("ns/a".into(), Reason::Create),
            // Once more from the list's look for orphans: the queue merges them.
            Effect::Enqueue("ns/a".into(), Reason::Sweep)
        ],
        "the same spec, yet a new CR"
    );
    assert_eq!(ix.take_strays("ns/a")[0].owner_uid, "uid-ns/a");
    again.fingerprint = 2;
    assert_eq!(
        ix.cr_event(
            Seen::Object {
                listing: false,
                object: again
            },
            &no_gate
        ),
        enqueue("ns/a", Reason::Update)
    );
}

#[test]
fn a_cr_found_alive_outside_the_view_keeps_its_children_until_the_next_list() {
    let mut ix = Index::new(vec![], None);
    listed(&mut ix, &["ns/a"]);
    ix.child_event(0, None, seen(far("x", "ns/a")));
    // The CR's label no longer matches the entry's selector: the watch says deleted.
    ix.cr_event(deleted("ns/a"), &no_gate);
    assert_eq!(ix.take_strays("ns/a").len(), 1);
    ix.keep("uid-ns/a");
    let mut edited = far("x", "ns/a");
    edited.fingerprint = 2;
    assert!(ix.child_event(0, None, seen(edited)).is_empty());
    assert_eq!(
        listed(&mut ix, &[]),
        enqueue("ns/a", Reason::Sweep),
        "looked at again after a list of the CRs"
    );
}

#[test]
fn a_closed_enqueue_gate_drops_the_event_and_sentinels_reach_the_reconcile() {
    let gate: ork_katalog::Gate =
        serde_json::from_value(json!({"when": [{"field": "spec.enabled", "equals": true}]}))
            .expect("gate");
    let gate = CompiledGate::compile(&gate).expect("compiles");
    let mut ix = Index::new(vec![Sentinel::SpecChanged], Some(gate));
    let view = |fp: u64, enabled: bool| Seen::Object {
        listing: false,
        object: CrView {
            key: "ns/a".into(),
            uid: "uid-ns/a".into(),
            fingerprint: fp,
            json: Some(json!({"spec": {"enabled": enabled}})),
            requested_at: None,
        },
    };
    let ctx = |cr: &Value| cr.clone();
    assert!(ix.cr_event(view(1, false), &ctx).is_empty());
    assert_eq!(
        ix.cr_event(view(2, true), &ctx),
        enqueue("ns/a", Reason::Update)
    );
    assert!(ix.take_sentinels("ns/a")[&Sentinel::SpecChanged]);
}

#[test]
fn the_applied_fingerprint_keeps_its_value_across_versions() {
    // Kept in every child's applied annotation: a new ork must compute the same.
    let v = json!({"a": 1, "b": [1, "x"], "s": {"t": null, "u": true}});
    assert_eq!(fingerprint(&v), 0xa7db_1a76_d6ac_3dee);
}

#[test]
fn a_cr_s_fingerprint_follows_what_its_owner_changes_only() {
    let own: BTreeSet<String> = ["team.io/last-seen".to_string()].into();
    let cr = |v: Value| -> DynamicObject { serde_json::from_value(v).expect("cr") };
    let base = json!({
        "apiVersion": "x.io/v1", "kind": "W",
        "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "a"},
                     "annotations": {"note": "n"}, "resourceVersion": "1"},
        "spec": {"size": 1},
    });
    let fp = cr_fingerprint(&cr(base.clone()), &own);
    let mut ork_wrote = base.clone();
    ork_wrote["status"] = json!({"phase": "Ready"});
    ork_wrote["metadata"]["resourceVersion"] = json!("2");
    ork_wrote["metadata"]["annotations"][format!("{PREFIX}health")] = json!("ok");
    ork_wrote["metadata"]["annotations"]["team.io/last-seen"] = json!("now");
    assert_eq!(cr_fingerprint(&cr(ork_wrote), &own), fp);
    for (path, value) in [
        ("/spec/size", json!(2)),
        ("/metadata/labels/app", json!("b")),
        ("/metadata/annotations/note", json!("m")),
        ("/metadata/deletionTimestamp", json!("2026-01-01T00:00:00Z")),
    ] {
        let mut edited = base.clone();
        let (parent, key) = path.rsplit_once('/').expect("path");
        edited.pointer_mut(parent).expect("parent")[key] = value;
        assert_ne!(cr_fingerprint(&cr(edited), &own), fp, "{path}");
    }
}

#[test]
fn a_child_s_fingerprint_sees_its_owner_references() {
    let child = |controller: bool| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "ownerReferences": [{"apiVersion": "x.io/v1",
                "kind": "W", "name": "a", "uid": "u1", "controller": controller}]},
            "data": {"k": "v"}, "status": {"ignored": true},
        }))
        .expect("child")
    };
    assert_ne!(
        child_fingerprint(&child(true)),
        child_fingerprint(&child(false))
    );
    let mut other = child(true);
    other.data["status"] = json!({"ignored": false});
    assert_eq!(child_fingerprint(&other), child_fingerprint(&child(true)));
}

#[test]
fn fingerprints_are_stable_and_order_free() {
    let a = json!({"a": 1, "b": [1, "x"]});
    let b: Value = serde_json::from_str(r#"{"b": [1, "x"], "a": 1}"#).expect("json");
    assert_eq!(fingerprint(&a), fingerprint(&b));
    assert_ne!(
        fingerprint(&a),
        fingerprint(&json!({"a": 2, "b": [1, "x"]}))
    );
    assert_ne!(
        fingerprint(&json!(["ab", "c"])),
        fingerprint(&json!(["a", "bc"]))
    );
}

#[test]
fn children_of_one_namespace_share_its_text_and_unused_texts_go() {
    let a = ChildRef::new(0, Some("shared-ns"), "a");
    let b = ChildRef::new(1, Some("shared-ns"), "b");
    let (Some(na), Some(nb)) = (&a.namespace, &b.namespace) else {
        panic!("both have a namespace");
    };
    assert!(Arc::ptr_eq(na, nb), "one text for the namespace");
    assert_eq!(&**na, "shared-ns");
    // Namespaces that come and go: the set is pruned of texts nobody points at.
    let weak = Arc::downgrade(&shared_namespace("gone-ns-0"));
    for i in 1..1_000 {
        drop(shared_namespace(&format!("gone-ns-{i}")));
    }
    assert!(
        weak.upgrade().is_none(),
        "a namespace no child is in is let go"
    );
    let again = ChildRef::new(0, Some("shared-ns"), "c");
    assert!(Arc::ptr_eq(
        na,
        again.namespace.as_ref().expect("a namespace")
    ));
}

/// A protocol that sees its own writes (Metacontroller): the echo of each write of a reconcile
/// syncs the owner once more (`written`), whether it comes during the reconcile or after; a
/// second identical echo does not, nor does anything for a Katalog entry.
#[test]
fn the_echo_of_own_writes_syncs_the_owner_once_where_the_protocol_observes_them() {
    for observes in [false, true] {
        let mut ix = Index::new(vec![], None);
        if observes {
            ix.observe_own_writes();
        }
        let written = |key: &str| {
            if observes {
                enqueue(key, Reason::Written)
            } else {
                vec![]
            }
        };
        ix.cr_event(cr("ns/a", 1), &no_gate);
        // A created child, its echo after the reconcile ended.
        ix.begin("ns/a");
        let own = OwnWrites {
            applied: vec![applied("one", 1)],
            deleted: vec![],
        };
        assert!(ix.finish("ns/a", own).is_empty(), "no echo yet");
        assert_eq!(
            ix.child_event(0, None, seen(child("one", "ns/a", 1))),
            written("ns/a")
        );
        assert!(
            ix.child_event(0, None, seen(child("one", "ns/a", 1)))
                .is_empty(),
            "the same object again (a relist) is no write"
        );
        // An update whose echo came while the reconcile ran: judged at its end.
        ix.begin("ns/a");
        assert!(
            ix.child_event(0, None, seen(child("one", "ns/a", 2)))
                .is_empty()
        );
        let own = OwnWrites {
            applied: vec![applied("one", 2)],
            deleted: vec![],
        };
        assert_eq!(ix.finish("ns/a", own), written("ns/a"));
        // A delete, its echo after.
        ix.begin("ns/a");
        let own = OwnWrites {
            applied: vec![],
            deleted: vec![(applied("one", 2).child, "uid-one".into())],
        };
        assert!(ix.finish("ns/a", own).is_empty());
        assert_eq!(
            ix.child_event(0, None, Seen::Deleted(child("one", "ns/a", 2))),
            written("ns/a")
        );
        // Someone else's edit is drift as ever.
        ix.child_event(0, None, seen(child("two", "ns/a", 1)));
        assert_eq!(
            ix.child_event(0, None, seen(child("two", "ns/a", 9))),
            enqueue("ns/a", Reason::Child)
        );
    }
}
