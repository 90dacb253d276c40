use serde_json::json;

use super::*;
use crate::policy::{ManagedType, OwnerRef};

fn owner() -> OwnerRef {
    OwnerRef {
        api_version: "demo.ork.dev/v1".into(),
        kind: "WebApp".into(),
        name: "hello".into(),
        namespace: Some("team-a".into()),
    }
}

fn declared() -> Vec<ManagedType> {
    let t = |group: &str, kind: &str, served: &[&str]| ManagedType {
        group: group.into(),
        version: served[0].into(),
        served_versions: served.iter().map(|s| s.to_string()).collect(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
        namespaced: true,
        namespaces: Vec::new(),
        cluster_scoped: false,
        bind_roles: Vec::new(),
        service_account_tokens: false,
        role_aggregation: false,
    };
    vec![
        t("apps", "Deployment", &["v1"]),
        t("apps", "StatefulSet", &["v1"]),
        t("batch", "Job", &["v1"]),
        t("batch", "CronJob", &["v1beta1", "v1"]),
        t("", "Service", &["v1"]),
        t("", "ConfigMap", &["v1"]),
        t("", "Secret", &["v1"]),
        t("", "ServiceAccount", &["v1"]),
        t("networking.k8s.io", "Ingress", &["v1"]),
    ]
}

fn build(type_name: &str, fields: Value) -> Value {
    let fields = fields.as_object().cloned().expect("object");
    Intent::parse(type_name, &fields)
        .unwrap_or_else(|e| panic!("{type_name}: {e}"))
        .build(&owner(), &declared())
        .unwrap_or_else(|e| panic!("{type_name}: {e}"))
}

fn problems(type_name: &str, fields: Value) -> Vec<String> {
    let fields = fields.as_object().cloned().expect("object");
    Intent::parse(type_name, &fields)
        .expect_err("refused")
        .problems
}

/// The labels Orkestra stamps on every object it builds for the CR `hello`.
fn stamped() -> Value {
    json!({"orkestra.orkspace.io/managed": "true", "orkestra-owner": "hello"})
}

#[test]
fn a_deployment_intent_selects_and_labels_pods_by_the_cr_name_as_orkestra_does() {
    let d = build(
        "deployment",
        json!({"name": "web", "image": "nginx", "replicas": 2, "port": 80,
               "env": {"B": "2", "A": 1}, "command": ["run"], "labels": {"tier": "front"},
               "annotations": {"note": "x"}}),
    );
    assert_eq!(
        d,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "team-a",
                "labels": {"orkestra.orkspace.io/managed": "true", "orkestra-owner": "hello", "tier": "front"},
                "annotations": {"note": "x"}
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"orkestra-owner": "hello"}},
                "template": {
                    "metadata": {"labels": stamped()},
                    "spec": {"containers": [{
                        "name": "web",
                        "image": "nginx",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "command": ["run"]
                    }]}
                }
            }
        })
    );
}

#[test]
fn a_service_intent_selects_the_crs_pods() {
    let s = build(
        "service",
        json!({"name": "web", "port": 80, "targetPort": 8080, "selector": {"tier": "front", "orkestra-owner": "x"}}),
    );
    assert_eq!(
        s["spec"],
        json!({
            "type": "ClusterIP",
            "selector": {"orkestra-owner": "hello", "tier": "front"},
            "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]
        })
    );
    assert_eq!(s["metadata"]["labels"], stamped());
    let plain = build(
        "service",
        json!({"name": "web", "port": 80, "type": "NodePort"}),
    );
    assert_eq!(
        plain["spec"]["selector"],
        json!({"orkestra-owner": "hello"})
    );
    assert_eq!(plain["spec"]["ports"][0]["targetPort"], 80);
    assert_eq!(plain["spec"]["type"], "NodePort");
}

#[test]
fn a_service_intent_selector_with_a_bad_key_or_value_refuses_the_intent() {
    assert_eq!(
        problems(
            "service",
            json!({"name": "web", "port": 80, "selector": {"not a key!": "v", "tier": "not a value!"}})
        ),
        [
            "field \"selector\": key \"not a key!\": the name must be 1-63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
            "field \"selector\": label \"tier\": value \"not a value!\" must be at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
        ]
    );
    let s = build(
        "service",
        json!({"name": "web", "port": 80, "selector": {"example.com/tier": "", "a": "b"}}),
    );
    assert_eq!(
        s["spec"]["selector"],
        json!({"a": "b", "example.com/tier": "", "orkestra-owner": "hello"}),
        "valid keys and empty values pass"
    );
}

#[test]
fn statefulset_job_and_cronjob_intents_label_their_pods_with_the_cr_name() {
    let s = build(
        "statefulset",
        json!({"name": "db", "image": "postgres", "port": 5432}),
    );
    assert_eq!(s["apiVersion"], "apps/v1");
    assert_eq!(
        s["spec"]["selector"],
        json!({"matchLabels": {"orkestra-owner": "hello"}})
    );
    assert_eq!(s["spec"]["template"]["metadata"]["labels"], stamped());
    assert_eq!(
        s["spec"]["serviceName"], "",
        "as Orkestra sends it when not given"
    );
    assert_eq!(s["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    assert_eq!(s["spec"]["podManagementPolicy"], "Parallel");
    assert_eq!(s["spec"]["replicas"], 1);

    let j = build(
        "job",
        json!({"name": "once", "image": "busybox", "args": ["-c", "true"]}),
    );
    assert_eq!(j["apiVersion"], "batch/v1");
    assert_eq!(j["spec"]["backoffLimit"], 3, "Orkestra's default");
    assert_eq!(j["spec"]["template"]["metadata"]["labels"], stamped());
    assert_eq!(j["spec"]["template"]["spec"]["restartPolicy"], "OnFailure");
    assert_eq!(
        j["spec"]["template"]["spec"]["containers"][0],
        json!({"name": "once", "image": "busybox", "args": ["-c", "true"]})
    );
    assert!(
        j["spec"].get("selector").is_none(),
        "Kubernetes generates a job's selector"
    );

    let c = build(
        "cronjob",
        json!({"name": "tick", "image": "busybox", "schedule": "*/5 * * * *", "concurrencyPolicy": "forbid"}),
    );
    assert_eq!(c["apiVersion"], "batch/v1", "v1 is served next to v1beta1");
    assert_eq!(c["spec"]["schedule"], "*/5 * * * *");
    assert_eq!(c["spec"]["suspend"], false);
    assert_eq!(c["spec"]["concurrencyPolicy"], "Forbid");
    assert_eq!(c["spec"]["jobTemplate"]["metadata"]["labels"], stamped());
    let pod = &c["spec"]["jobTemplate"]["spec"]["template"];
    assert_eq!(pod["metadata"]["labels"], stamped());
    assert_eq!(pod["spec"]["restartPolicy"], "OnFailure");
}

#[test]
fn every_intent_type_builds_from_its_minimal_fields() {
    let minimal = [
        ("deployment", json!({"name": "a", "image": "i"})),
        ("service", json!({"name": "a", "port": 80})),
        ("configmap", json!({"name": "a", "data": {"k": "v"}})),
        ("secret", json!({"name": "a", "stringData": {"k": "v"}})),
        ("serviceaccount", json!({"name": "a"})),
        ("ingress", json!({"name": "a", "serviceName": "a"})),
        ("statefulset", json!({"name": "a", "image": "i"})),
        ("job", json!({"name": "a", "image": "i"})),
        (
            "cronjob",
            json!({"name": "a", "image": "i", "schedule": "* * * * *"}),
        ),
        (
            "custom",
            json!({"name": "a", "apiVersion": "x.io/v1", "kind": "X", "spec": {"a": 1}}),
        ),
    ];
    assert_eq!(minimal.each_ref().map(|(t, _)| *t), INTENT_TYPES);
    for (t, f) in minimal {
        let obj = build(t, f);
        assert_eq!(obj["metadata"]["name"], "a", "{t}");
        assert_eq!(obj["metadata"]["namespace"], "team-a", "{t}");
        assert_eq!(obj["metadata"]["labels"], stamped(), "{t}");
    }
}

#[test]
fn small_intents_build_what_orkestra_builds() {
    assert_eq!(
        build(
            "configmap",
            json!({"name": "c", "data": {"k": "v", "n": 1}})
        )["data"],
        json!({"k": "v", "n": "1"})
    );
    let s = build(
        "secret",
        json!({"name": "s", "data": {"k": "dg=="}, "secretType": "kubernetes.io/tls"}),
    );
    assert_eq!(s["type"], "kubernetes.io/tls");
    assert_eq!(s["data"], json!({"k": "dg=="}));
    assert_eq!(
        build("secret", json!({"name": "s", "stringData": {"k": "v"}}))["type"],
        "Opaque"
    );
    let i = build(
        "ingress",
        json!({"name": "web", "host": "a.example.com", "serviceName": "web", "servicePort": 8080,
               "pathType": "Exact", "ingressClass": "nginx"}),
    );
    assert_eq!(
        i["spec"],
        json!({
            "ingressClassName": "nginx",
            "rules": [{"host": "a.example.com", "http": {"paths": [{
                "path": "/", "pathType": "Exact",
                "backend": {"service": {"name": "web", "port": {"number": 8080}}}
            }]}}]
        })
    );
    let c = build(
        "custom",
        json!({"apiVersion": "x.io/v1", "kind": "X", "name": "a", "namespace": "other", "data": {"k": [1]}}),
    );
    assert_eq!(c["apiVersion"], "x.io/v1");
    assert_eq!(c["metadata"]["namespace"], "other");
    assert_eq!(c["data"], json!({"k": [1]}));
}

#[test]
fn a_cluster_scoped_cr_puts_intents_in_the_default_namespace() {
    let mut cluster_owner = owner();
    cluster_owner.namespace = None;
    let fields = json!({"name": "a"}).as_object().cloned().expect("object");
    let sa = Intent::parse("serviceaccount", &fields)
        .expect("valid")
        .build(&cluster_owner, &declared())
        .expect("declared");
    assert_eq!(sa["metadata"]["namespace"], "default");
}

#[test]
fn an_undeclared_intent_type_cannot_be_built() {
    let fields = json!({"name": "a", "image": "i"})
        .as_object()
        .cloned()
        .expect("object");
    let e = Intent::parse("deployment", &fields)
        .expect("valid")
        .build(&owner(), &[])
        .expect_err("not declared");
    assert!(e.starts_with("Deployment (apps) is not declared"), "{e}");
}

#[test]
fn bad_intents_say_everything_that_is_wrong() {
    assert_eq!(
        problems(
            "deployment",
            json!({"replicas": -1, "port": 70000, "env": {"1A": "x"}, "command": 5})
        ),
        [
            "field \"name\" is required",
            "field \"image\" is required",
            "field \"command\" must be a list of strings, got 5",
            "field \"port\" must be between 1 and 65535, got 70000",
            "field \"env\": \"1A\" is not a valid environment variable name",
            "field \"replicas\" must be between 0 and 2147483647, got -1",
        ]
    );
    assert_eq!(
        problems(
            "service",
            json!({"name": "s", "port": 0, "labels": {"a": {}}, "forceConflict": "yes"})
        ),
        [
            "field \"labels.a\" must be a string, got {}",
            "field \"forceConflict\" must be true or false, got \"yes\"",
            "field \"port\" is required",
        ]
    );
    assert_eq!(
        problems("secret", json!({"name": "s", "data": {"k": "not base64!"}})),
        ["field \"data.k\" must be base64 (use stringData for plain text)"]
    );
    assert_eq!(
        problems("job", json!({"name": "web.v2", "image": "i"})),
        [
            "name \"web.v2\" is also its container's name, which must be lowercase letters, digits and '-', at most 63 characters"
        ]
    );
    assert_eq!(
        problems("custom", json!({"name": "a", "kind": "X"})),
        ["field \"apiVersion\" is required"]
    );
    let e = problems("daemonset", json!({"name": "a"}));
    assert!(
        e[0].starts_with("unknown resource type \"daemonset\""),
        "{e:?}"
    );
    assert_eq!(
        problems(
            "deployment",
            json!({"name": "a", "image": "i", "replicas": "two"})
        ),
        ["field \"replicas\" must be an integer, got \"two\""]
    );
}

#[test]
fn unknown_fields_and_unknown_values_become_warnings_with_orkestras_defaults() {
    let fields = json!({"name": "s", "port": 80, "type": "nodeport", "colour": "red"})
        .as_object()
        .cloned()
        .expect("object");
    let intent = Intent::parse("service", &fields).expect("still valid");
    assert_eq!(
        intent.warnings,
        [
            "service intent field \"colour\" is unknown to ork and ignored (fields: name, port, targetPort, type, selector, labels, annotations, forceConflict)",
            "service intent field \"type\": \"nodeport\" is not one of ClusterIP, NodePort, LoadBalancer; ClusterIP is used",
        ]
    );
    assert!(matches!(
        intent.spec,
        IntentSpec::Service {
            service_type: "ClusterIP",
            ..
        }
    ));
    let fields =
        json!({"name": "c", "image": "i", "schedule": "@daily", "concurrencyPolicy": "REPLACE"})
            .as_object()
            .cloned()
            .expect("object");
    let intent = Intent::parse("cronjob", &fields).expect("valid");
    assert!(
        intent.warnings.is_empty(),
        "case does not matter, as in Orkestra"
    );
    assert_eq!(intent.group_kind(), ("batch", "CronJob"));
}

#[test]
fn numbers_and_numeric_strings_are_accepted_where_ork_always_accepted_them() {
    let d = build(
        "deployment",
        json!({"name": "a", "image": 5, "replicas": "3", "port": "8080", "replicas_": null}),
    );
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "5");
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"],
        8080
    );
    assert_eq!(
        build(
            "deployment",
            json!({"name": "a", "image": "i", "replicas": 0})
        )["spec"]["replicas"],
        1
    );
}
