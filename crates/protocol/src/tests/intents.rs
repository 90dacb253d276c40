//! Intents through `decide`: versions from the served ones, declared types, warnings.

use serde_json::json;

use super::*;

#[test]
fn a_cronjob_intent_is_batch_v1_wherever_v1_is_served() {
    let answer = json!({"resources": [{"type": "cronjob",
        "fields": {"name": "c", "image": "i", "schedule": "*/5 * * * *"}}]});
    let d = decide_json(answer.clone()).expect("valid");
    let child = &d.resources.expect("children")[0];
    assert_eq!(
        child.object["apiVersion"], "batch/v1",
        "v1beta1 preferred in the policy, v1 served"
    );
    assert_eq!(child.managed.version, "v1");
    let mut only_beta = policy();
    for m in &mut only_beta.managed {
        if m.kind == "CronJob" {
            m.served_versions = vec!["v1beta1".into()];
        }
    }
    let d = decide_with(&only_beta, answer).expect("valid");
    assert_eq!(
        d.resources.expect("children")[0].object["apiVersion"],
        "batch/v1beta1"
    );
}

#[test]
fn an_intent_of_an_undeclared_type_is_refused_with_its_other_problems() {
    let e = refusal(json!({"resources": [{"type": "configmap", "fields": {"name": "c"}}]}));
    assert!(
        e.contains("resources[0]: ConfigMap (core) is not declared"),
        "{e}"
    );
    let l = lint_json(
        json!({"resources": [{"type": "configmap", "fields": {"name": "c", "data": []}}]}),
    );
    assert_eq!(
        l.errors,
        [
            "resources[0]: ConfigMap (core) is not declared in reconcile.remote.managedResources — add it to the Katalog before the service can create it: `- {apiVersion: v1, kind: ConfigMap}` under managedResources",
            "resources[0]: configmap intent: field \"data\" must be a map of strings, got []"
        ]
    );
}

#[test]
fn unknown_intent_fields_are_ignored_and_reported_as_warnings() {
    let answer = json!({"resources": [
        {"type": "deployment", "fields": {"name": "web", "image": "nginx", "resources": {"cpu": "1"}}, "note": "x"}
    ]});
    let d = decide_json(answer.clone()).expect("unknown fields are no error");
    let child = &d.resources.expect("children")[0];
    assert!(
        child.object["spec"]["template"]["spec"]["containers"][0]
            .get("resources")
            .is_none()
    );
    assert_eq!(
        d.warnings,
        [
            "resources[0]: \"note\" next to an intent's type and fields is unknown to ork and ignored",
            "resources[0]: deployment intent field \"resources\" is unknown to ork and ignored (fields: name, image, replicas, port, env, command, args, labels, annotations, forceConflict)"
        ]
    );
    let l = lint_json(answer);
    assert!(l.errors.is_empty(), "{l:?}");
    assert_eq!(l.warnings, d.warnings);
}

#[test]
fn intents_are_checked_like_full_objects() {
    let e = refusal(json!({"resources": [{"type": "service",
        "fields": {"name": "s", "port": 80, "labels": {"bad key": "v"}}}]}));
    assert!(e.contains("metadata.labels: key \"bad key\""), "{e}");
    let e = refusal(json!({"resources": [{"type": "service",
        "fields": {"name": "s", "port": 80, "selector": {"not a key!": "not a value!"}}}]}));
    assert!(e.contains("field \"selector\": key \"not a key!\""), "{e}");
    let e = refusal(json!({"resources": [{"type": "custom", "fields": {
        "apiVersion": "demo.ork.dev/v1", "kind": "WebApp", "name": "hello"}}]}));
    assert!(e.contains("names the CR itself"), "{e}");
    let e = refusal(json!({"resources": [{"type": "custom", "fields": {
        "apiVersion": "demo.ork.dev/v1", "kind": "WebApp", "name": "x", "namespace": "kube-system"}}]}));
    assert!(e.contains("namespace \"kube-system\""), "{e}");
    let mut long_owner = policy();
    long_owner.owner.name = "a".repeat(64);
    let e = decide_with(
        &long_owner,
        json!({"resources": [{"type": "serviceaccount", "fields": {"name": "sa"}}]}),
    )
    .expect_err("the owner label cannot hold the name")
    .to_string();
    assert!(e.contains("label \"orkestra-owner\""), "{e}");
}

#[test]
fn intent_entries_of_the_wrong_shape_say_so() {
    let e = refusal(json!({"resources": [{"type": 3, "fields": {}}]}));
    assert!(e.contains("'type' must be a string"), "{e}");
    let e = refusal(json!({"resources": [{"type": "service", "fields": []}]}));
    assert!(e.contains("'fields' must be an object"), "{e}");
    let e = refusal(json!({"resources": [{"type": "service"}]}));
    assert!(e.contains("an intent needs 'fields' next to 'type'"), "{e}");
    let e = refusal(json!({"resources": [{"type": "daemonset", "fields": {"name": "d"}}]}));
    assert!(e.contains("unknown resource type \"daemonset\""), "{e}");
}

#[test]
fn an_ingress_intent_follows_the_served_ingress_version() {
    let answer = json!({"resources": [{"type": "ingress", "fields": {
        "name": "web", "host": "a.example.com", "serviceName": "web", "servicePort": 8080}}]});
    let d = decide_json(answer.clone()).expect("valid");
    let rule = &d.resources.expect("children")[0].object["spec"]["rules"][0];
    assert_eq!(
        rule["http"]["paths"][0]["backend"],
        json!({"service": {"name": "web", "port": {"number": 8080}}})
    );
    let mut old = policy();
    for m in &mut old.managed {
        if m.kind == "Ingress" {
            m.version = "v1beta1".into();
            m.served_versions = vec!["v1beta1".into()];
        }
    }
    let d = decide_with(&old, answer).expect("valid");
    let ingress = &d.resources.expect("children")[0].object;
    assert_eq!(ingress["apiVersion"], "networking.k8s.io/v1beta1");
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"],
        json!({"serviceName": "web", "servicePort": 8080})
    );
}
