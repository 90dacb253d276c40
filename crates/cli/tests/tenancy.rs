//! Safe in a shared cluster (SPEC §11, second round): what one tenant or CR author writes cannot
//! stop ork for the others. Each test reproduces an attack against the local cluster.

mod common;

use common::*;

use anyhow::Result;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use ork_test_support::fake_service::{FakeService, Reply};
use ork_test_support::{TestNamespace, apply_yaml, client, wait_for};
use serde_json::{Value, json};

/// A CRD of its own (a group per test run), namespaced, whose `spec` keeps any field: the kind a
/// tenant can fill with anything the API server accepts.
fn open_crd(group: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: boxes.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: boxes, singular: box, kind: Box}}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {{status: {{}}}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
            status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"#
    )
}

/// `{"a": {"a": … "bottom" …}}`, `levels` maps deep.
fn nested(levels: usize) -> Value {
    let mut v = json!("bottom");
    for _ in 0..levels {
        v = json!({ "a": v });
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cr_nested_too_deep_is_named_on_itself_and_stops_nobody_else() -> Result<()> {
    let admin = client().await?;
    let a = TestNamespace::create(&admin).await?;
    let b = TestNamespace::create(&admin).await?;
    let group = format!("{}.ork.dev", a.name);
    apply_yaml(&admin, &open_crd(&group), &a.name).await?;
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&group, "v1", "Box"), "boxes");
    let result = async {
        wait_for("the CRD to be served", WAIT, || async {
            Api::<DynamicObject>::namespaced_with(admin.clone(), &a.name, &ar)
                .list(&ListParams::default())
                .await
                .ok()
        })
        .await?;
        // Raw requests: kube's typed decoding of the deep object would fail in the test too.
        let path = |ns: &str| format!("/apis/{group}/v1/namespaces/{ns}/boxes");
        let create = |ns: &str, name: &str, spec: Value| {
            let body = json!({
                "apiVersion": format!("{group}/v1"), "kind": "Box",
                "metadata": {"name": name}, "spec": spec,
            });
            let req = kube::core::Request::new(path(ns))
                .create(&PostParams::default(), body.to_string().into_bytes());
            let admin = admin.clone();
            async move { anyhow::Ok(admin.request_text(req?).await?) }
        };
        // The Ready condition of a Box, read without decoding its spec (skipped unread).
        let ready_of = |ns: &str, name: &str| {
            let req = kube::core::Request::new(path(ns)).get(name, &Default::default());
            let admin = admin.clone();
            async move {
                #[derive(serde::Deserialize)]
                struct StatusOnly {
                    status: Option<Value>,
                }
                let text = admin.request_text(req.ok()?).await.ok()?;
                let status = serde_json::from_str::<StatusOnly>(&text).ok()?.status?;
                ready_in(&status)
            }
        };
        // Before ork starts, so its first list holds it (kube's decoder stops at 128 levels; the
        // whole list used to fail, again and again, and the entry never became ready).
        create(&a.name, "deep", nested(150)).await?;
        create(&b.name, "plain", json!({"size": 1})).await?;

        let svc = FakeService::start(|_| Reply::ok(json!({"status": {"phase": "Packed"}}))).await?;
        let katalog = format!(
            r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: tenancy}}
spec:
  crds:
    box:
      apiTypes: {{group: {group}, version: v1, kind: Box, plural: boxes}}
      operatorBox:
        reconcile:
          default: false
          queue: {{retryBackoff: {{initial: 200ms, max: 2s}}}}
          remote:
            endpoint: "{}"
            timeout: 2s
"#,
            svc.url
        );
        let dir = std::env::temp_dir().join(format!("ork-tenancy-{}", a.name));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("katalog.yaml"), katalog)?;
        let ork = spawn_ork(&dir.join("katalog.yaml"), &dir.join("ork.log"), &[], &[])?;

        // The other tenant's CR is reconciled, and ork is ready.
        wait_for("the plain Box Ready", WAIT, || async {
            ready_of(&b.name, "plain")
                .await
                .filter(|(s, _)| s == "True")
        })
        .await?;
        wait_for("ork ready", WAIT, || async {
            let (code, _) = get(ork.probes().await.ok()?, "/readyz").await.ok()?;
            (code == 200).then_some(())
        })
        .await?;
        // A CR created after the start is reconciled too.
        create(&a.name, "later", json!({"size": 2})).await?;
        wait_for("the later Box Ready", WAIT, || async {
            ready_of(&a.name, "later")
                .await
                .filter(|(s, _)| s == "True")
        })
        .await?;

        // The deep one says why on itself, and the service never saw it.
        let (_, message) = wait_for("the deep Box Ready=False", WAIT, || async {
            ready_of(&a.name, "deep")
                .await
                .filter(|(s, _)| s == "False")
        })
        .await?;
        assert!(
            message.contains("spec is nested deeper than 100 levels"),
            "{message}"
        );
        let events = Api::<Event>::namespaced(admin.clone(), &a.name);
        let warning = wait_for("a Warning event on the deep Box", WAIT, || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|e| {
                e.involved_object.name.as_deref() == Some("deep")
                    && e.type_.as_deref() == Some("Warning")
            })
        })
        .await?;
        assert!(
            warning
                .message
                .unwrap_or_default()
                .contains("nested deeper than 100 levels")
        );
        assert!(
            svc.received()
                .iter()
                .all(|r| r.body["object"]["metadata"]["name"] != "deep"),
            "the deep CR was sent to the service"
        );
        let (_, metrics) = get(ork.probes().await?, "/metrics").await?;
        assert!(
            metrics
                .lines()
                .any(|l| l.starts_with("ork_undecodable_objects_total{") && !l.ends_with(" 0")),
            "{metrics}"
        );
        drop(ork);
        Ok::<_, anyhow::Error>(())
    }
    .await;
    let _ = Api::<CustomResourceDefinition>::all(admin.clone())
        .delete(&format!("boxes.{group}"), &DeleteParams::default())
        .await;
    result
}

fn rbac_answer(resources: Value) -> Reply {
    Reply::ok(json!({"status": {"phase": "Bound"}, "resources": resources}))
}

fn grant_all_role() -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": "grant-all"},
           "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})
}

fn binding(name: &str, role_kind: &str, role: &str, group: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": name},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
           "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]})
}

/// Under exactly the RBAC `ork generate rbac` derives, a service that manages Roles and
/// RoleBindings can neither grant more than ork holds nor bind a role the Katalog did not name;
/// a binding to a role it did name (`bindRoles`) is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_cannot_grant_what_ork_does_not_hold_nor_bind_undeclared_roles() -> Result<()> {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};

    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let home = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, CRD, &ns.name).await?;
    let svc = FakeService::start(|_| {
        rbac_answer(json!([
            grant_all_role(),
            binding("everyone", "Role", "grant-all", "system:authenticated")
        ]))
    })
    .await?;
    let katalog = katalog(
        &ns.name,
        &http(&svc.url),
        "              - {group: rbac.authorization.k8s.io, version: v1, plural: roles}
              - {group: rbac.authorization.k8s.io, version: v1, plural: rolebindings, bindRoles: [{kind: ClusterRole, name: view}]}
",
    );
    let dir = std::env::temp_dir().join(format!("ork-tenancy-rbac-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog)?;
    let name = format!("ork-{}", ns.name);
    let result = async {
        let _ork = spawn_ork_with_generated_rbac(&admin, &path, &home.name, &name).await?;
        create_webapp(&admin, &ns.name, "web", "nginx:1").await?;
        let api = webapps(&admin, &ns.name).await?;
        let roles: Api<Role> = Api::namespaced(admin.clone(), &ns.name);
        let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), &ns.name);

        // A binding of a role bindRoles does not list: the whole answer is refused.
        let (_, message) = wait_for("the binding refused", WAIT, || async {
            let obj = api.get("web").await.ok()?;
            ready(&obj).filter(|(s, m)| s == "False" && m.contains("bindRoles"))
        })
        .await?;
        assert!(
            message.contains("RoleBinding everyone binds Role grant-all"),
            "{message}"
        );
        assert!(
            roles.get_opt("grant-all").await?.is_none(),
            "nothing applied"
        );
        assert!(bindings.get_opt("everyone").await?.is_none());

        // A Role granting more than ork holds: the API server refuses it (no `escalate`).
        svc.set_script(|_| rbac_answer(json!([grant_all_role()])));
        wait_for("the Role refused", WAIT, || async {
            let obj = api.get("web").await.ok()?;
            ready(&obj).filter(|(s, m)| s == "False" && m.contains("forbidden"))
        })
        .await?;
        assert!(roles.get_opt("grant-all").await?.is_none());

        // A binding of a declared role: applied.
        svc.set_script(|_| {
            rbac_answer(json!([binding(
                "viewers",
                "ClusterRole",
                "view",
                "tenant-a"
            )]))
        });
        wait_ready(&api, "web", "True").await?;
        let viewers = bindings.get("viewers").await?;
        assert_eq!(viewers.role_ref.name, "view");
        Ok::<_, anyhow::Error>(())
    }
    .await;
    delete_cluster_rbac(&admin, &name).await;
    result
}

/// A service cannot mint a ServiceAccount token through a Secret child, nor read back what the
/// cluster or anyone put into the Secrets it applied (unless the Katalog opts in).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_can_neither_mint_service_account_tokens_nor_read_secret_values_back()
-> Result<()> {
    use k8s_openapi::api::core::v1::Secret;

    let ns = TestNamespace::create(&client().await?).await?;
    let secret = |name: &str, type_: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "type": type_,
               "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": "default"}},
               "stringData": {"password": "s3cret-value"}})
    };
    let plain = secret("settings", "Opaque");
    let svc = FakeService::start(move |_| {
        Reply::ok(json!({"status": {"phase": "Ready"}, "resources": [plain.clone()]}))
    })
    .await?;
    let (client, _ork) = start_with(
        &ns,
        &http(&svc.url),
        "              - {group: \"\", version: v1, plural: secrets}\n",
    )
    .await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns.name);
    assert!(secrets.get("settings").await?.data.is_some(), "applied");

    // The next call sees its Secret, without the values.
    let calls = svc.calls();
    api.patch(
        "web",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await?;
    wait_for("another call", WAIT, || async {
        (svc.calls() > calls).then_some(())
    })
    .await?;
    let sent = svc
        .received()
        .last()
        .map(|r| r.body["prepared"]["children"]["secret"]["settings"].clone())
        .unwrap_or_default();
    assert_eq!(sent["metadata"]["name"], "settings", "{sent}");
    assert!(
        sent.get("data").is_none() && sent.get("stringData").is_none(),
        "{sent}"
    );
    assert!(!sent.to_string().contains("s3cret"), "{sent}");

    // A token Secret: refused whole, nothing applied.
    let token = secret("stolen", "kubernetes.io/service-account-token");
    svc.set_script(move |_| Reply::ok(json!({"resources": [token.clone()]})));
    api.patch(
        "web",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await?;
    let (_, message) = wait_for("the token Secret refused", WAIT, || async {
        let obj = api.get("web").await.ok()?;
        ready(&obj).filter(|(s, m)| s == "False" && m.contains("service-account-token"))
    })
    .await?;
    assert!(message.contains("serviceAccountTokens: true"), "{message}");
    assert!(secrets.get_opt("stolen").await?.is_none());
    Ok(())
}

/// A tenant who may write ConfigMaps in namespace B copies ork's owner marks (label,
/// annotations, field manager) onto a ConfigMap there, naming a CR of namespace A whose
/// children live in B. It triggers nothing, never reaches that CR's `prepared.children`, and
/// ork never deletes it; ork's own child beside it is pruned as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ownership_marks_copied_by_a_tenant_count_for_nothing() -> Result<()> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let admin = client().await?;
    let a = TestNamespace::create(&admin).await?;
    let b = TestNamespace::create(&admin).await?;
    let prune = Arc::new(AtomicBool::new(false));
    let answer = {
        let prune = prune.clone();
        let ns = b.name.clone();
        move |_: &Value| {
            let resources = if prune.load(Ordering::SeqCst) {
                json!([])
            } else {
                json!([{"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "shared", "namespace": ns}, "data": {"k": "v"}}])
            };
            Reply::ok(json!({"status": {"phase": "Ready"}, "resources": resources}))
        }
    };
    let svc = FakeService::start(answer).await?;
    let katalog = configmap_katalog(&a.name, &svc.url, 1, &format!(", namespaces: [{}]", b.name));
    let (_, _ork) = start_katalog(&a, &katalog).await?;
    create_webapp(&admin, &a.name, "web", "nginx:1").await?;
    let api = webapps(&admin, &a.name).await?;
    wait_ready(&api, "web", "True").await?;
    let uid = api.get("web").await?.metadata.uid.unwrap_or_default();
    let b_maps: Api<ConfigMap> = Api::namespaced(admin.clone(), &b.name);
    let shared = b_maps.get("shared").await?;

    // The tenant: ConfigMaps in B, nothing else.
    apply_yaml(
        &admin,
        &format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: tenant}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: tenant}}\nrules: [{{apiGroups: [\"\"], resources: [configmaps], verbs: [\"*\"]}}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: tenant}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}}\nsubjects: [{{kind: ServiceAccount, name: tenant, namespace: {}}}]\n",
            b.name
        ),
        &b.name,
    )
    .await?;
    let token = service_account_token(&admin, &b.name, "tenant").await?;
    let dir = std::env::temp_dir().join(format!("ork-tenant-{}", b.name));
    std::fs::create_dir_all(&dir)?;
    kubeconfig_with_token(&token, &dir.join("kubeconfig"))?;
    let kc = kube::config::Kubeconfig::read_from(dir.join("kubeconfig"))?;
    let tenant = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?,
    )?;
    let tenant_maps: Api<ConfigMap> = Api::namespaced(tenant, &b.name);
    let forge = |round: u32| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "forged",
                   "labels": {"orkestra.orkspace.io/managed": "true", "orkestra.orkspace.io/owner-uid": uid},
                   "annotations": {"orkestra.orkspace.io/owner": format!("webapp/{}/web", a.name),
                                   "orkestra.orkspace.io/owner-kind": "WebApp.demo.ork.dev",
                                   "orkestra.orkspace.io/owner-mark": "0".repeat(64)}},
               "data": {"round": round.to_string()}})
    };
    let calls = svc.calls();
    for round in 0..5 {
        tenant_maps
            .patch(
                "forged",
                &kube::api::PatchParams::apply("orkestra-remote").force(),
                &kube::api::Patch::Apply(forge(round)),
            )
            .await?;
    }
    // Then a hand edit of ork's own child beside it, on the same watch: once ork has called
    // for that drift, it has seen every forged edit before it, and those called for nothing.
    b_maps
        .patch(
            "shared",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"data": {"k": "tampered"}})),
        )
        .await?;
    wait_for("the drift of ork's own child called for", WAIT, || async {
        (svc.calls() > calls).then_some(())
    })
    .await?;
    assert_eq!(
        svc.calls(),
        calls + 1,
        "the tenant's edits called the service"
    );

    // The next reconcile: ork's child is sent, the forged one is not; then ork prunes its own.
    prune.store(true, Ordering::SeqCst);
    api.patch(
        "web",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await?;
    wait_for("shared pruned", WAIT, || async {
        b_maps.get_opt("shared").await.ok()?.is_none().then_some(())
    })
    .await?;
    let sent = svc
        .received()
        .iter()
        .map(|r| r.body["prepared"]["children"]["configmap"].clone())
        .next_back()
        .unwrap_or_default();
    assert!(sent.get("shared").is_some(), "{sent}");
    assert!(sent.get("forged").is_none(), "{sent}");
    assert!(
        b_maps.get_opt("forged").await?.is_some(),
        "ork deleted the tenant's object"
    );
    assert!(
        shared
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("orkestra.orkspace.io/owner-mark"),
        "ork marks the child it wrote"
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Whether the API server lets `user` do `verb` on `group/resource` in `namespace` (everywhere
/// when `None`), asked as the admin.
async fn may(
    admin: &kube::Client,
    user: &str,
    verb: &str,
    (group, resource): (&str, &str),
    namespace: Option<&str>,
) -> Result<bool> {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                namespace: namespace.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(admin.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// An entry allowed in two exact namespaces is watched in each and granted there only (finding
/// L5: it got cluster-wide rights, Secrets of kube-system and of ork's namespace included), and
/// under exactly that RBAC it reconciles CRs of both namespaces, sees their edits, and leaves a
/// CR of a third namespace alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_of_two_namespaces_is_watched_and_granted_in_those_two_only() -> Result<()> {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};

    let admin = client().await?;
    let (a, b, other, home) = (
        TestNamespace::create(&admin).await?,
        TestNamespace::create(&admin).await?,
        TestNamespace::create(&admin).await?,
        TestNamespace::create(&admin).await?,
    );
    apply_yaml(&admin, CRD, &a.name).await?;
    let svc = FakeService::start(|req| {
        let replicas = req["object"]["spec"]["replicas"].clone();
        Reply::ok(json!({"status": {"phase": "Ready"}, "resources": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
             "data": {"replicas": replicas.to_string()}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "password"},
             "stringData": {"password": "not-telling"}}
        ]}))
    })
    .await?;
    let katalog = format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: test}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      allowedNamespaces: [{a}, {b}]
      operatorBox:
        reconcile:
          default: false
          queue: {{retryBackoff: {{initial: 200ms, max: 2s}}}}
          remote:
            endpoint: "{url}"
            timeout: 5s
            managedResources:
              - {{group: "", version: v1, plural: configmaps}}
              - {{group: "", version: v1, plural: secrets}}
"#,
        a = a.name,
        b = b.name,
        url = svc.url
    );
    let dir = std::env::temp_dir().join(format!("ork-tenancy-two-{}", a.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog)?;
    let name = format!("ork-{}", a.name);
    let user = format!("system:serviceaccount:{}:{name}", home.name);
    let result = async {
        let ork = spawn_ork_with_generated_rbac(&admin, &path, &home.name, &name).await?;
        // The RBAC: in the two namespaces, nowhere else.
        let secrets = ("", "secrets");
        for ns in [&a.name, &b.name] {
            assert!(may(&admin, &user, "list", secrets, Some(ns)).await?, "{ns}");
            assert!(
                may(
                    &admin,
                    &user,
                    "watch",
                    ("demo.ork.dev", "webapps"),
                    Some(ns)
                )
                .await?
            );
        }
        for ns in [None, Some("kube-system"), Some(other.name.as_str())] {
            assert!(!may(&admin, &user, "list", secrets, ns).await?, "{ns:?}");
            assert!(!may(&admin, &user, "list", ("demo.ork.dev", "webapps"), ns).await?);
            assert!(!may(&admin, &user, "create", ("", "configmaps"), ns).await?);
        }

        // Under it, CRs of both namespaces are reconciled...
        for ns in [&a.name, &b.name, &other.name] {
            create_webapp(&admin, ns, "web", "nginx:1").await?;
        }
        for ns in [&a.name, &b.name] {
            let api = webapps(&admin, ns).await?;
            wait_ready(&api, "web", "True").await?;
            let cm = Api::<ConfigMap>::namespaced(admin.clone(), ns)
                .get("settings")
                .await?;
            assert_eq!(cm.data.unwrap_or_default()["replicas"], "1");
            assert!(
                Api::<Secret>::namespaced(admin.clone(), ns)
                    .get_opt("password")
                    .await?
                    .is_some()
            );
        }
        // ... an edit in the second namespace is seen ...
        webapps(&admin, &b.name)
            .await?
            .patch(
                "web",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"replicas": 3}})),
            )
            .await?;
        let configmaps = Api::<ConfigMap>::namespaced(admin.clone(), &b.name);
        wait_for("the edit in the second namespace applied", WAIT, || async {
            let cm = configmaps.get("settings").await.ok()?;
            (cm.data
                .unwrap_or_default()
                .get("replicas")
                .map(String::as_str)
                == Some("3"))
            .then_some(())
        })
        .await?;
        // ... and a CR of the third namespace was never the entry's: no call, no status.
        let asked: Vec<String> = svc
            .received()
            .iter()
            .filter_map(|r| {
                r.body["object"]["metadata"]["namespace"]
                    .as_str()
                    .map(String::from)
            })
            .collect();
        assert!(
            asked.contains(&a.name) && asked.contains(&b.name),
            "{asked:?}"
        );
        assert!(!asked.contains(&other.name), "{asked:?}");
        let stray = webapps(&admin, &other.name).await?.get("web").await?;
        assert!(ready(&stray).is_none(), "{:?}", stray.data["status"]);
        let log = ork.log();
        assert!(!log.contains("forbidden"), "{log}");
        Ok::<_, anyhow::Error>(())
    }
    .await;
    delete_cluster_rbac(&admin, &name).await;
    result
}
