//! Full-form children: declared types and served versions, namespaces, the CR itself,
//! metadata, names, duplicates, `forceConflict`.

use serde_json::json;

use super::*;

#[test]
fn full_and_intent_children_are_accepted() {
    let d = decide_json(json!({
        "result": "ok",
        "status": {"phase": "Ready"},
        "resources": [
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "hello", "uid": "x", "ownerReferences": [], "resourceVersion": "1"},
             "spec": {}, "status": {"replicas": 3}},
            {"type": "service", "fields": {"name": "hello", "port": 80}}
        ]
    }))
    .expect("valid");
    let children = d.resources.expect("resources");
    assert_eq!(children.len(), 2);
    assert_eq!(children[0].namespace.as_deref(), Some("team"));
    assert_eq!(children[0].object["metadata"]["namespace"], "team");
    let meta = &children[0].object["metadata"];
    assert!(meta.get("uid").is_none() && meta.get("ownerReferences").is_none());
    assert!(meta.get("resourceVersion").is_none());
    assert!(children[0].object.get("status").is_none());
    assert_eq!(children[1].managed.kind, "Service");
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn undeclared_type_rejects_whole_response() {
    let e = decide_json(json!({"resources": [
        {"type": "service", "fields": {"name": "fine", "port": 80}},
        {"type": "configmap", "fields": {"name": "ok", "data": {}}},
    ]}))
    .expect_err("ConfigMap not declared");
    assert!(matches!(e, ResponseError::Resource { index: 1, .. }));
    assert!(
        e.to_string().contains("ConfigMap (core) is not declared"),
        "{e}"
    );
}

#[test]
fn an_undeclared_child_in_orks_own_namespace_is_refused_even_when_the_cr_lives_there() {
    let mut p = policy();
    p.ork_namespace = "team".into();
    for resources in [
        json!([{"type": "service", "fields": {"name": "s", "port": 80}}]),
        json!([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}]),
        json!([{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "team"}}]),
    ] {
        let e = decide_with(&p, json!({ "resources": resources }))
            .expect_err("ork's namespace")
            .to_string();
        assert!(
            e.contains("Service s is in ork's own namespace \"team\"")
                && e.contains("`namespaces: [team]`"),
            "{e}"
        );
    }
}

#[test]
fn orks_own_namespace_is_allowed_when_the_managed_resource_declares_it() {
    let mut p = policy();
    p.ork_namespace = "team".into();
    for m in &mut p.managed {
        if m.kind == "Service" {
            m.namespaces = vec!["team".into()];
        }
    }
    let d = decide_with(
        &p,
        json!({"resources": [{"type": "service", "fields": {"name": "s", "port": 80}}]}),
    )
    .expect("declared");
    assert_eq!(
        d.resources.expect("children")[0].namespace.as_deref(),
        Some("team")
    );
}

#[test]
fn a_child_in_orks_namespace_is_refused_when_the_cr_lives_elsewhere() {
    let mut p = policy();
    for m in &mut p.managed {
        if m.kind == "Service" {
            m.namespaces = vec!["other".into()];
        }
    }
    let e = decide_with(
        &p,
        json!({"resources": [{"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "ork-system"}}]}),
    )
    .expect_err("ork's namespace")
    .to_string();
    assert!(e.contains("in ork's own namespace \"ork-system\""), "{e}");
    let d = decide_with(
        &p,
        json!({"resources": [{"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "other"}}]}),
    )
    .expect("declared namespace");
    assert_eq!(
        d.resources.expect("children")[0].namespace.as_deref(),
        Some("other")
    );
}

#[test]
fn other_namespaces_and_cluster_scope_need_a_declaration() {
    let e = refusal(json!({"resources": [{"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "kube-system"}}]}));
    assert!(e.contains("namespace \"kube-system\""), "{e}");
    let e = refusal(
        json!({"resources": [{"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole", "metadata": {"name": "r"}}]}),
    );
    assert!(e.contains("clusterScoped: true"), "{e}");
    let mut p = policy();
    for m in &mut p.managed {
        m.cluster_scoped = m.kind == "ClusterRole";
    }
    let d = decide_with(
        &p,
        json!({"resources": [{"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole", "metadata": {"name": "r", "namespace": "team"}}]}),
    )
    .expect("declared cluster-scoped");
    let child = &d.resources.expect("children")[0];
    assert_eq!(child.namespace, None);
    assert!(child.object["metadata"].get("namespace").is_none());
}

#[test]
fn the_cr_itself_is_recognised_by_group_kind_namespace_and_name_whatever_the_version() {
    for metadata in [
        json!({"name": "hello"}),
        json!({"name": "hello", "namespace": "team"}),
        json!({"name": "hello", "namespace": ""}),
    ] {
        for api_version in ["demo.ork.dev/v1", "demo.ork.dev/v1beta1", "demo.ork.dev/v2"] {
            let e = refusal(json!({"resources": [
                {"apiVersion": api_version, "kind": "WebApp", "metadata": metadata}]}));
            assert!(
                e.contains("names the CR itself"),
                "{api_version} {metadata}: {e}"
            );
        }
    }
    // Another WebApp, or the same name in another namespace, is a child like any other.
    assert!(
        decide_json(json!({"resources": [
            {"apiVersion": "demo.ork.dev/v1", "kind": "WebApp", "metadata": {"name": "other"}}]}))
        .is_ok()
    );
    let e = refusal(
        json!({"resources": [{"apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
        "metadata": {"name": "hello", "namespace": "elsewhere"}}]}),
    );
    assert!(e.contains("namespace \"elsewhere\""), "{e}");
}

#[test]
fn the_cr_itself_is_refused_even_when_its_type_is_not_declared() {
    let mut p = policy();
    p.managed.retain(|m| m.kind != "WebApp");
    let e = decide_with(
        &p,
        json!({"resources": [{"apiVersion": "demo.ork.dev/v1beta1", "kind": "WebApp",
            "metadata": {"name": "hello"}}]}),
    )
    .expect_err("itself")
    .to_string();
    assert!(e.contains("names the CR itself"), "{e}");
}

#[test]
fn a_cluster_scoped_cr_is_itself_in_any_namespace() {
    let mut p = policy();
    p.owner.namespace = None;
    let e = decide_with(
        &p,
        json!({"resources": [{"apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
            "metadata": {"name": "hello", "namespace": "anywhere"}}]}),
    )
    .expect_err("itself")
    .to_string();
    assert!(e.contains("names the CR itself"), "{e}");
}

#[test]
fn malformed_api_versions_are_refused() {
    for (api_version, why) in [
        ("demo.ork.dev/", "the version is missing"),
        ("apps/", "the version is missing"),
        ("/v1", "without a slash"),
        ("apps/v1/x", "expected group/version"),
        ("Apps/v1", "DNS subdomain"),
    ] {
        let e = refusal(json!({"resources": [
            {"apiVersion": api_version, "kind": "Deployment", "metadata": {"name": "d"}}]}));
        assert!(
            e.contains("is malformed") && e.contains(why),
            "{api_version}: {e}"
        );
    }
}

#[test]
fn a_version_the_api_server_does_not_serve_is_refused() {
    let e = refusal(json!({"resources": [
        {"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "d"}}]}));
    assert!(
        e.contains(
            "Deployment apps/v1beta1: the API server serves apps/deployments in v1, not v1beta1"
        ),
        "{e}"
    );
    let e = refusal(json!({"resources": [{"type": "custom", "fields": {
        "apiVersion": "apps/v2", "kind": "Deployment", "name": "d"}}]}));
    assert!(e.contains("not v2"), "{e}");
}

#[test]
fn a_served_older_version_is_accepted_and_kept() {
    let d = decide_json(
        json!({"resources": [{"apiVersion": "batch/v1beta1", "kind": "CronJob",
        "metadata": {"name": "c"}, "spec": {}}]}),
    )
    .expect("v1beta1 is served");
    let child = &d.resources.expect("children")[0];
    assert_eq!(child.managed.version, "v1beta1");
    assert_eq!(child.object["apiVersion"], "batch/v1beta1");
}

#[test]
fn labels_and_annotations_must_be_maps_of_strings() {
    let child = |metadata: Value| {
        refusal(
            json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": metadata}]}),
        )
    };
    let e = child(json!({"name": "s", "labels": "x"}));
    assert!(
        e.contains("metadata.labels must be a map of strings, got \"x\""),
        "{e}"
    );
    let e = child(json!({"name": "s", "labels": {"app": 1}}));
    assert!(
        e.contains("metadata.labels.\"app\" must be a string, got 1"),
        "{e}"
    );
    let e = child(json!({"name": "s", "annotations": ["a"]}));
    assert!(
        e.contains("metadata.annotations must be a map of strings"),
        "{e}"
    );
    let e = child(json!({"name": "s", "labels": {"bad key": "v"}}));
    assert!(e.contains("key \"bad key\""), "{e}");
    let e = child(json!({"name": "s", "labels": {"app": "not ok"}}));
    assert!(e.contains("value \"not ok\""), "{e}");
    let e = child(json!({"name": "s", "annotations": {"a": "x".repeat(300 * 1024)}}));
    assert!(e.contains("more than Kubernetes' limit"), "{e}");
    // Annotation values are free text; null maps are no maps.
    let d = decide_json(json!({"resources": [{"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "s", "labels": null, "annotations": {"note": "any text: ok"}}}]}))
    .expect("valid");
    assert!(
        d.resources.expect("children")[0].object["metadata"]
            .get("labels")
            .is_none()
    );
}

#[test]
fn metadata_must_be_an_object_with_a_valid_name() {
    let e =
        refusal(json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": "s"}]}));
    assert!(e.contains("metadata must be an object, got \"s\""), "{e}");
    let e =
        refusal(json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {}}]}));
    assert!(e.contains("metadata.name is required"), "{e}");
    let e = refusal(
        json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": 5}}]}),
    );
    assert!(e.contains("metadata.name must be a string"), "{e}");
    let e = refusal(
        json!({"resources": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "Web"}}]}),
    );
    assert!(
        e.contains("metadata.name \"Web\" is not a valid Kubernetes name"),
        "{e}"
    );
    let e = refusal(
        json!({"resources": [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a.b"}}]}),
    );
    assert!(e.contains("not a valid Service name"), "{e}");
    let e = refusal(json!({"resources": [{"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "s", "namespace": 3}}]}));
    assert!(e.contains("metadata.namespace must be a string"), "{e}");
    let e = refusal(
        json!({"resources": [{"apiVersion": "v1", "kind": "Ser vice", "metadata": {"name": "s"}}]}),
    );
    assert!(e.contains("kind \"Ser vice\" must be a type name"), "{e}");
    let e = refusal(json!({"resources": ["a Service"]}));
    assert!(e.contains("resources[0]: expected an object"), "{e}");
    let e = refusal(json!({"resources": [{"kind": "Service"}]}));
    assert!(
        e.contains("expected 'apiVersion' (full form) or 'type'+'fields'"),
        "{e}"
    );
}

#[test]
fn duplicates_are_refused() {
    let e = refusal(json!({"resources": [
        {"type": "service", "fields": {"name": "a", "port": 1}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "team"}}]}));
    assert!(e.contains("resources[1]: Service a is listed twice"), "{e}");
}

#[test]
fn absent_and_empty_resources_differ() {
    assert!(decide_json(json!({})).expect("ok").resources.is_none());
    assert!(
        decide_json(json!({"resources": null}))
            .expect("ok")
            .resources
            .is_none()
    );
    assert_eq!(
        decide_json(json!({"resources": []})).expect("ok").resources,
        Some(vec![])
    );
}

#[test]
fn a_resources_own_force_conflict_is_honoured() {
    let d = decide_json(json!({"resources": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}, "forceConflict": false},
        {"type": "service", "fields": {"name": "b", "port": 80, "forceConflict": false}},
        {"type": "service", "forceConflict": true, "fields": {"name": "c", "port": 80}},
        {"type": "service", "fields": {"name": "d", "port": 80}}
    ]}))
    .expect("valid");
    let children = d.resources.expect("children");
    let force: Vec<Option<bool>> = children.iter().map(|c| c.force_conflict).collect();
    assert_eq!(force, [Some(false), Some(false), Some(true), None]);
    for child in &children {
        assert!(
            child.object.get("forceConflict").is_none(),
            "never sent to Kubernetes"
        );
    }
    let e = refusal(json!({"resources": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}, "forceConflict": "no"}]}));
    assert!(e.contains("forceConflict must be true or false"), "{e}");
    let e = refusal(
        json!({"resources": [{"type": "service", "forceConflict": true,
        "fields": {"name": "b", "port": 80, "forceConflict": false}}]}),
    );
    assert!(
        e.contains("forceConflict is true next to 'fields' but false inside them"),
        "{e}"
    );
}

#[test]
fn a_cluster_scoped_cr_s_namespaced_children_need_a_declared_namespace() {
    let mut p = policy();
    p.owner.namespace = None;
    let cm = |ns: Option<&str>| {
        let mut d =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
        if let Some(ns) = ns {
            d["metadata"]["namespace"] = json!(ns);
        }
        json!({"resources": [d]})
    };
    for ns in [None, Some("default"), Some("team-a")] {
        let e = decide_with(&p, cm(ns)).expect_err("undeclared").to_string();
        assert!(e.contains("the CR is cluster-scoped"), "{ns:?}: {e}");
    }
    p.managed[0].namespaces = vec!["team-a".into()];
    let d = decide_with(&p, cm(Some("team-a"))).expect("declared");
    let children = d.resources.expect("resources");
    assert_eq!(children[0].namespace.as_deref(), Some("team-a"));
}

/// A policy that manages RoleBindings, which may bind `bind_roles`.
fn binding_policy(bind_roles: &[(&str, &str)]) -> Policy {
    let mut p = policy();
    let mut t = ManagedType::namespaced(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        "rolebindings",
        "v1",
        &["v1"],
    );
    t.bind_roles = bind_roles
        .iter()
        .map(|(k, n)| (k.to_string(), n.to_string()))
        .collect();
    p.managed.push(t);
    p
}

fn role_binding(kind: &str, role: &str) -> Value {
    json!({"resources": [{
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "members"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [{"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}],
    }]})
}

#[test]
fn a_binding_may_name_only_a_role_its_managed_resource_lists_in_bind_roles() {
    let p = binding_policy(&[("ClusterRole", "view")]);
    decide_with(&p, role_binding("ClusterRole", "view")).expect("declared");
    for (kind, role) in [
        ("ClusterRole", "cluster-admin"),
        ("Role", "view"),
        ("ClusterRole", "edit"),
    ] {
        let e = decide_with(&p, role_binding(kind, role))
            .expect_err("not declared")
            .to_string();
        assert!(
            e.contains(&format!("RoleBinding members binds {kind} {role}"))
                && e.contains(&format!("bindRoles: [{{kind: {kind}, name: {role}}}]")),
            "{e}"
        );
    }
    let e = decide_with(&binding_policy(&[]), role_binding("ClusterRole", "view"))
        .expect_err("nothing declared")
        .to_string();
    assert!(e.contains("bindRoles does not list"), "{e}");
    let mut no_ref = role_binding("ClusterRole", "view");
    no_ref["resources"][0]
        .as_object_mut()
        .expect("map")
        .remove("roleRef");
    let e = decide_with(&p, no_ref).expect_err("no roleRef").to_string();
    assert!(e.contains("roleRef needs kind and name"), "{e}");
}

/// For a Metacontroller controller the same refusals name the controller's annotation to add,
/// since a controller has no Katalog fields.
#[test]
fn a_controller_s_refusals_name_the_annotation_that_allows_it() {
    let mut p = binding_policy(&[]);
    p.controller = Some("DecoratorController cluster-parent".into());
    let e = decide_with(&p, role_binding("ClusterRole", "my-clusterrole"))
        .expect_err("not allowed")
        .to_string();
    assert!(
        e.contains(
            "annotate DecoratorController cluster-parent with `orkestra.orkspace.io/bind-roles: \"ClusterRole/my-clusterrole\"`"
        ),
        "{e}"
    );
    assert!(!e.contains("managedResources"), "{e}");
    let e = decide_with(
        &p,
        json!({"resources": [{"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "ork-system"}}]}),
    )
    .expect_err("ork's namespace")
    .to_string();
    assert!(
        e.contains("`orkestra.orkspace.io/children-in-ork-namespace: \"true\"`"),
        "{e}"
    );
}

#[test]
fn a_service_account_token_secret_is_refused_unless_its_managed_resource_opts_in() {
    let mut p = policy();
    p.managed.push(ManagedType::namespaced(
        "",
        "Secret",
        "secrets",
        "v1",
        &["v1"],
    ));
    let token = |kind: &str| {
        json!({"resources": [{
            "apiVersion": "v1", "kind": "Secret", "type": kind,
            "metadata": {"name": "stolen", "annotations": {"kubernetes.io/service-account.name": "default"}},
        }]})
    };
    let e = decide_with(&p, token("kubernetes.io/service-account-token"))
        .expect_err("a minted token")
        .to_string();
    assert!(
        e.contains("Secret stolen is of type kubernetes.io/service-account-token")
            && e.contains("serviceAccountTokens: true"),
        "{e}"
    );
    decide_with(&p, token("Opaque")).expect("an ordinary Secret");
    for t in p.managed.iter_mut().filter(|t| t.kind == "Secret") {
        t.service_account_tokens = true;
    }
    decide_with(&p, token("kubernetes.io/service-account-token")).expect("opted in");
}

/// Finding L6 of issue 47: a ClusterRole child could join `view`/`edit`/`admin` through an
/// aggregation label, without any binding or `bind`.
#[test]
fn a_cluster_role_that_aggregates_is_refused_unless_its_managed_resource_opts_in() {
    let mut p = policy();
    for m in &mut p.managed {
        m.cluster_scoped = m.kind == "ClusterRole";
    }
    let role = |extra: Value| {
        let mut role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "tenant-reader"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
        if let (Value::Object(r), Value::Object(e)) = (&mut role, extra) {
            for (k, v) in e {
                if k == "labels" {
                    r["metadata"]["labels"] = v;
                } else {
                    r.insert(k, v);
                }
            }
        }
        json!({"resources": [role]})
    };
    let joins = role(json!({"labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}));
    let e = decide_with(&p, joins.clone())
        .expect_err("joins view")
        .to_string();
    assert!(
        e.contains("aggregate-to-view") && e.contains("roleAggregation: true"),
        "{e}"
    );
    let gathers = role(json!({"aggregationRule": {"clusterRoleSelectors": [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]}}));
    let e = decide_with(&p, gathers.clone())
        .expect_err("gathers admin")
        .to_string();
    assert!(e.contains("aggregationRule"), "{e}");
    decide_with(&p, role(json!({"labels": {"team": "a"}}))).expect("an ordinary ClusterRole");
    for t in p.managed.iter_mut().filter(|t| t.kind == "ClusterRole") {
        t.role_aggregation = true;
    }
    decide_with(&p, joins).expect("opted in");
    decide_with(&p, gathers).expect("opted in");
}
