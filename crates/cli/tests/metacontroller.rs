//! Metacontroller's CompositeControllers run unchanged on ork (SPEC §15), against the local
//! cluster, with hooks written as Metacontroller's examples are (`examples/metacontroller`):
//! children, status and deletion as Metacontroller would produce them.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::{Client, ResourceExt};
use ork_test_support::{
    TestNamespace, apply_yaml, client, resolve, wait_crd_established, wait_for,
};
use serde_json::{Value, json};

use common::{WAIT, delete_cluster_rbac, spawn_ork};

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/metacontroller")
}

/// `hooks.py` on a port of its own choosing; killed when dropped.
struct Hooks {
    child: Child,
    url: String,
}

impl Hooks {
    fn start() -> Result<Hooks> {
        let mut child = Command::new("python3")
            .arg(example().join("hooks.py"))
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting python3 hooks.py")?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("hooks.py stdout")?).read_line(&mut line)?;
        let port = line
            .trim()
            .rsplit_once("127.0.0.1:")
            .map(|(_, p)| p.to_string())
            .context("hooks.py did not say its port")?;
        Ok(Hooks {
            child,
            url: format!("http://127.0.0.1:{port}"),
        })
    }

    /// `file` of the example with its hooks at this server.
    fn controllers(&self, file: &str, dir: &Path) -> Result<PathBuf> {
        let text = std::fs::read_to_string(example().join(file))?.replace("HOOKS", &self.url);
        let path = dir.join(file);
        std::fs::write(&path, text)?;
        Ok(path)
    }
}

impl Drop for Hooks {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The example's parents of `kind`, everywhere.
async fn parents(client: &Client, kind: &str) -> Result<Api<DynamicObject>> {
    let (ar, _) = resolve(
        client,
        &GroupVersionKind::gvk("example.ork.dev", "v1", kind),
    )
    .await?;
    Ok(Api::all_with(client.clone(), &ar))
}

/// The example's parents of `kind` in `namespace`.
async fn parents_in(client: &Client, kind: &str, namespace: &str) -> Result<Api<DynamicObject>> {
    let (ar, _) = resolve(
        client,
        &GroupVersionKind::gvk("example.ork.dev", "v1", kind),
    )
    .await?;
    Ok(Api::namespaced_with(client.clone(), namespace, &ar))
}

async fn install_parent_crds(client: &Client) -> Result<()> {
    apply_yaml(
        client,
        &std::fs::read_to_string(example().join("crds.yaml"))?,
        "default",
    )
    .await?;
    for crd in [
        "configmapaggregators",
        "globalconfigmaps",
        "rollouts",
        "reservations",
    ] {
        wait_crd_established(client, &format!("{crd}.example.ork.dev")).await?;
    }
    Ok(())
}

fn dir(name: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ork-metacontroller-{name}"));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `ork run --controllers FILE` with no Katalog, its log in `dir`.
fn ork_with(dir: &Path, args: &[&str]) -> Result<common::Ork> {
    spawn_ork(
        &dir.join("no-katalog.yaml"),
        &dir.join("ork.log"),
        args,
        &[],
    )
}

#[tokio::test]
async fn an_aggregator_gathers_related_configmaps_across_namespaces_with_v2_keys() -> Result<()> {
    let client = client().await?;
    install_parent_crds(&client).await?;
    let (a, b) = (
        TestNamespace::create(&client).await?,
        TestNamespace::create(&client).await?,
    );
    let hooks = Hooks::start()?;
    let dir = dir(&a.name)?;
    let file = hooks.controllers("controllers.yaml", &dir)?;
    let _ork = ork_with(&dir, &["--controllers", file.to_str().context("path")?])?;
    let label = format!("aggregate-{}", a.name);
    for (ns, name, value) in [(&a.name, "one", "1"), (&b.name, "two", "2")] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {label.clone(): "yes"}}, "data": {"k": value}});
        apply_yaml(&client, &cm.to_string(), ns).await?;
    }
    let aggregators = parents(&client, "ConfigMapAggregator").await?;
    let parent_name = format!("agg-{}", a.name);
    let parent = json!({"apiVersion": "example.ork.dev/v1", "kind": "ConfigMapAggregator",
        "metadata": {"name": parent_name},
        "spec": {"selectLabels": {label.clone(): "yes"}, "target": {"namespace": a.name, "name": "merged"}}});
    let created = aggregators
        .create(&PostParams::default(), &serde_json::from_value(parent)?)
        .await?;
    let uid = created.uid().context("uid")?;
    let merged: Api<ConfigMap> = Api::namespaced(client.clone(), &a.name);
    let want = |n: usize| {
        let merged = merged.clone();
        async move {
            let cm = merged.get_opt("merged").await.ok()??;
            (cm.data.clone().unwrap_or_default().len() == n).then_some(cm)
        }
    };
    let cm = wait_for("the merged ConfigMap with both sources", WAIT, || want(2)).await?;
    let data = cm.data.clone().unwrap_or_default();
    assert_eq!(
        data.get(&format!("{}.one.k", a.name)).map(String::as_str),
        Some("1")
    );
    assert_eq!(
        data.get(&format!("{}.two.k", b.name)).map(String::as_str),
        Some("2")
    );
    // generateSelector: the child carries the parent's UID as Metacontroller's label.
    assert_eq!(cm.labels().get("controller-uid"), Some(&uid));
    let status = wait_for("the parent's status from the hook", WAIT, || async {
        let p = aggregators.get(&parent_name).await.ok()?;
        let s = p.data.get("status")?.clone();
        (s["sources"] == 2).then_some(s)
    })
    .await?;
    assert_eq!(status["keys"], 2, "{status}");
    assert_eq!(status["observedGeneration"], 1, "{status}");
    // A third source syncs the parent: its related objects are watched (no resync is set).
    let three = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "three", "labels": {label.clone(): "yes"}}, "data": {"k": "3"}});
    apply_yaml(&client, &three.to_string(), &b.name).await?;
    wait_for("the third source in the merged ConfigMap", WAIT, || want(3)).await?;
    // The parent is cluster-scoped and its child namespaced: deleting the parent takes it.
    aggregators
        .delete(&parent_name, &DeleteParams::default())
        .await?;
    wait_for(
        "the merged ConfigMap gone with its parent",
        WAIT,
        || async { matches!(merged.get_opt("merged").await, Ok(None)).then_some(()) },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn update_strategies_keep_update_or_recreate_children_as_declared() -> Result<()> {
    let client = client().await?;
    install_parent_crds(&client).await?;
    let ns = TestNamespace::create(&client).await?;
    let hooks = Hooks::start()?;
    let dir = dir(&ns.name)?;
    let file = hooks.controllers("controllers.yaml", &dir)?;
    let _ork = ork_with(&dir, &["--controllers", file.to_str().context("path")?])?;
    let rollout = |value: &str| {
        json!({"apiVersion": "example.ork.dev/v1", "kind": "Rollout",
            "metadata": {"name": "web"}, "spec": {"value": value}})
        .to_string()
    };
    apply_yaml(&client, &rollout("one"), &ns.name).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns.name);
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns.name);
    let sa_value = |sa: &ServiceAccount| sa.annotations().get("example.ork.dev/value").cloned();
    let first = wait_for("the three children", WAIT, || async {
        cms.get_opt("web-ondelete").await.ok()??;
        secrets.get_opt("web-inplace").await.ok()??;
        sas.get_opt("web-recreate").await.ok()?
    })
    .await?;
    let first_uid = first.uid().context("uid")?;
    apply_yaml(&client, &rollout("two"), &ns.name).await?;
    // InPlace: updated where it stands.
    wait_for("the InPlace Secret updated", WAIT, || async {
        let s = secrets.get_opt("web-inplace").await.ok()??;
        let v = s.data?.get("value")?.0.clone();
        (v == b"two").then_some(())
    })
    .await?;
    // Recreate: a new object with the new value.
    let recreated = wait_for("the Recreate ServiceAccount replaced", WAIT, || async {
        let sa = sas.get_opt("web-recreate").await.ok()??;
        (sa_value(&sa).as_deref() == Some("two") && sa.uid().as_deref() != Some(&first_uid))
            .then_some(sa)
    })
    .await?;
    // OnDelete: the existing ConfigMap is left as it was.
    let kept = cms.get("web-ondelete").await?;
    assert_eq!(
        kept.data
            .unwrap_or_default()
            .get("value")
            .map(String::as_str),
        Some("one")
    );
    // Not a loop: the recreated child stays the same object while nothing changes.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = sas.get("web-recreate").await?;
    assert_eq!(
        still.uid(),
        recreated.uid(),
        "the ServiceAccount was recreated again"
    );
    // v1 keys: the children by name, as the hook saw them.
    let rollouts = parents_in(&client, "Rollout", &ns.name).await?;
    let status = wait_for("the hook's view of its children", WAIT, || async {
        let p = rollouts.get("web").await.ok()?;
        let s = p.data.get("status")?.clone();
        (s["value"] == "two").then_some(s)
    })
    .await?;
    assert_eq!(
        status["observedConfigMaps"],
        json!(["web-ondelete"]),
        "{status}"
    );
    // OnDelete children come back, as the hook wants them now, once someone deletes them.
    cms.delete("web-ondelete", &DeleteParams::default()).await?;
    wait_for(
        "the OnDelete ConfigMap created anew with the new value",
        WAIT,
        || async {
            let cm = cms.get_opt("web-ondelete").await.ok()??;
            (cm.data?.get("value")? == "two").then_some(())
        },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_controller_created_while_ork_runs_is_served_finalizes_and_stops_when_deleted()
-> Result<()> {
    let client = client().await?;
    install_parent_crds(&client).await?;
    let ns = TestNamespace::create(&client).await?;
    let hooks = Hooks::start()?;
    let dir = dir(&ns.name)?;
    let ork = ork_with(&dir, &["--metacontroller"])?;
    let file = hooks.controllers("reservation.yaml", &dir)?;
    // ork installs Metacontroller's CRDs when absent; then the controller object can be made.
    wait_crd_established(&client, "compositecontrollers.metacontroller.k8s.io").await?;
    apply_yaml(&client, &std::fs::read_to_string(&file)?, "default").await?;
    let reservations_here = parents_in(&client, "Reservation", &ns.name).await?;
    let reservation = |name: &str| {
        json!({"apiVersion": "example.ork.dev/v1", "kind": "Reservation",
            "metadata": {"name": name}, "spec": {}})
        .to_string()
    };
    apply_yaml(&client, &reservation("r1"), &ns.name).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    wait_for("r1's ticket", WAIT, || async {
        cms.get_opt("r1-ticket").await.ok()?
    })
    .await?;
    let held = wait_for(
        "r1 with Metacontroller's finalizer and its status",
        WAIT,
        || async {
            let r = reservations_here.get("r1").await.ok()?;
            let phase = r.data.pointer("/status/phase")?.as_str()?.to_string();
            (phase == "Reserved").then_some(r)
        },
    )
    .await?;
    assert!(
        held.finalizers()
            .contains(&"metacontroller.io/compositecontroller-reservation".to_string()),
        "{:?}",
        held.finalizers()
    );
    // The finalize hook holds the deletion until the parent is released.
    reservations_here
        .delete("r1", &DeleteParams::default())
        .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deleting = reservations_here.get("r1").await?;
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let release = json!({"metadata": {"annotations": {"example.ork.dev/release": "yes"}}});
    reservations_here
        .patch("r1", &PatchParams::default(), &Patch::Merge(&release))
        .await?;
    wait_for(
        "r1 gone once its finalize hook said finalized",
        WAIT,
        || async { matches!(reservations_here.get_opt("r1").await, Ok(None)).then_some(()) },
    )
    .await?;
    // Deleting the controller object stops it being served.
    let gvk = GroupVersionKind::gvk("metacontroller.k8s.io", "v1alpha1", "CompositeController");
    let controllers =
        Api::<DynamicObject>::all_with(client.clone(), &resolve(&client, &gvk).await?.0);
    controllers
        .delete("reservation", &DeleteParams::default())
        .await?;
    wait_for(
        "ork saying the controller is no longer served",
        WAIT,
        || async { ork.log().contains("no longer served").then_some(()) },
    )
    .await?;
    apply_yaml(&client, &reservation("r2"), &ns.name).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        cms.get_opt("r2-ticket").await?.is_none(),
        "a deleted controller still served r2"
    );
    let r2 = reservations_here.get("r2").await?;
    assert!(r2.finalizers().is_empty(), "{:?}", r2.finalizers());
    Ok(())
}

#[tokio::test]
async fn a_decorator_labels_annotates_and_attaches_to_objects_it_does_not_own() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let hooks = Hooks::start()?;
    let dir = dir(&ns.name)?;
    let file = hooks.controllers("decorator.yaml", &dir)?;
    let _ork = ork_with(&dir, &["--controllers", file.to_str().context("path")?])?;
    let service = |name: &str, labels: Value, annotations: Value| {
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}})
        .to_string()
    };
    apply_yaml(
        &client,
        &service("web", json!({"decorate": "yes", "stale": "x"}), json!({})),
        &ns.name,
    )
    .await?;
    apply_yaml(&client, &service("plain", json!({}), json!({})), &ns.name).await?;
    apply_yaml(
        &client,
        &service(
            "skipped",
            json!({"decorate": "yes"}),
            json!({"example.ork.dev/skip": "true"}),
        ),
        &ns.name,
    )
    .await?;
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(client.clone(), &ns.name);
    let web = wait_for("web decorated", WAIT, || async {
        let s = services.get("web").await.ok()?;
        let labels = s.labels();
        (labels.get("decorated-by").map(String::as_str) == Some("ork-example")
            && !labels.contains_key("stale"))
        .then_some(s)
    })
    .await?;
    assert_eq!(
        web.annotations()
            .get("example.ork.dev/ports")
            .map(String::as_str),
        Some("2")
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let attached = wait_for("web's attachment", WAIT, || async {
        cms.get_opt("web-ports").await.ok()?
    })
    .await?;
    assert_eq!(
        attached
            .data
            .clone()
            .unwrap_or_default()
            .get("ports")
            .map(String::as_str),
        Some("80,443")
    );
    let owner = attached
        .owner_references()
        .first()
        .cloned()
        .context("owner")?;
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Service", "web")
    );
    assert_eq!(owner.uid, web.uid().unwrap_or_default());
    assert_eq!(owner.controller, Some(true));
    assert_eq!(
        attached
            .annotations()
            .get("metacontroller.k8s.io/decorator-controller")
            .map(String::as_str),
        Some("service-ports")
    );
    // Nothing of ork's own on an object it only decorates: no conditions, no health annotation.
    let status = serde_json::to_value(&web.status)?;
    assert!(
        status.get("conditions").is_none_or(Value::is_null),
        "{status}"
    );
    assert!(
        !web.annotations()
            .contains_key("orkestra.orkspace.io/health")
    );
    // What the selectors leave out is left alone.
    for name in ["plain", "skipped"] {
        let s = services.get(name).await?;
        assert!(
            !s.labels().contains_key("decorated-by"),
            "{name} was decorated"
        );
        assert!(cms.get_opt(&format!("{name}-ports")).await?.is_none());
    }
    Ok(())
}

#[tokio::test]
async fn generated_rbac_for_the_controllers_is_enough_and_names_no_wildcard() -> Result<()> {
    let admin = client().await?;
    install_parent_crds(&admin).await?;
    let ns = TestNamespace::create(&admin).await?;
    let home = TestNamespace::create(&admin).await?;
    let hooks = Hooks::start()?;
    let dir = dir(&ns.name)?;
    let file = hooks.controllers("controllers.yaml", &dir)?;
    let name = format!("ork-{}", ns.name);
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["generate", "rbac", "-k"])
        .arg(dir.join("no-katalog.yaml"))
        .arg("--controllers")
        .arg(&file)
        .args([
            "--metacontroller",
            "--namespace",
            &home.name,
            "--name",
            &name,
        ])
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rbac = String::from_utf8(out.stdout)?;
    assert!(!rbac.contains("'*'") && !rbac.contains("\"*\""), "{rbac}");
    apply_yaml(&admin, &rbac, &home.name).await?;
    let result = async {
        let token = ork_test_support::service_account_token(&admin, &home.name, &name).await?;
        let kubeconfig = dir.join("kubeconfig");
        ork_test_support::kubeconfig_with_token(&token, &kubeconfig)?;
        let ork = spawn_ork(
            &dir.join("no-katalog.yaml"),
            &dir.join("rbac.log"),
            &[
                "--controllers",
                file.to_str().context("path")?,
                &format!("--kubeconfig={}", kubeconfig.display()),
            ],
            &[("ORK_NAMESPACE", home.name.as_str())],
        )?;
        let rollout = json!({"apiVersion": "example.ork.dev/v1", "kind": "Rollout",
            "metadata": {"name": "web"}, "spec": {"value": "one"}});
        apply_yaml(&admin, &rollout.to_string(), &ns.name).await?;
        let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), &ns.name);
        wait_for(
            "the Rollout's children under ork's own RBAC",
            WAIT,
            || async { sas.get_opt("web-recreate").await.ok()? },
        )
        .await?;
        let log = ork.log().to_lowercase();
        assert!(
            !log.contains("forbidden"),
            "a request was forbidden:\n{log}"
        );
        anyhow::Ok(())
    }
    .await;
    delete_cluster_rbac(&admin, &name).await;
    result
}

#[tokio::test]
async fn a_cluster_scoped_parent_propagates_a_configmap_into_labelled_namespaces() -> Result<()> {
    let client = client().await?;
    install_parent_crds(&client).await?;
    let source = TestNamespace::create(&client).await?;
    let (a, b, c) = (
        TestNamespace::create(&client).await?,
        TestNamespace::create(&client).await?,
        TestNamespace::create(&client).await?,
    );
    let hooks = Hooks::start()?;
    let dir = dir(&source.name)?;
    let file = hooks.controllers("controllers.yaml", &dir)?;
    let _ork = ork_with(&dir, &["--controllers", file.to_str().context("path")?])?;
    let label = format!("propagate-{}", source.name);
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let mark = |on: bool| {
        let label = label.clone();
        json!({"metadata": {"labels": {label: if on { Some("yes") } else { None }}}})
    };
    for ns in [&a.name, &b.name] {
        namespaces
            .patch(ns, &PatchParams::default(), &Patch::Merge(&mark(true)))
            .await?;
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
        "data": {"level": "debug"}});
    apply_yaml(&client, &cm.to_string(), &source.name).await?;
    let parent_name = format!("gcm-{}", source.name);
    let parent = json!({"apiVersion": "example.ork.dev/v1", "kind": "GlobalConfigMap",
        "metadata": {"name": parent_name},
        "spec": {"namespaceLabel": {label.clone(): "yes"},
                 "source": {"namespace": source.name, "name": "settings"}}});
    let parents = parents(&client, "GlobalConfigMap").await?;
    parents
        .create(&PostParams::default(), &serde_json::from_value(parent)?)
        .await?;
    let copy_in = |ns: String| {
        let client = client.clone();
        let name = parent_name.clone();
        async move {
            Api::<ConfigMap>::namespaced(client, &ns)
                .get_opt(&name)
                .await
                .ok()
                .flatten()
        }
    };
    for ns in [&a.name, &b.name] {
        let copy = wait_for("a copy in a labelled namespace", WAIT, || {
            copy_in(ns.clone())
        })
        .await?;
        assert_eq!(
            copy.data
                .unwrap_or_default()
                .get("level")
                .map(String::as_str),
            Some("debug")
        );
    }
    assert!(
        copy_in(c.name.clone()).await.is_none(),
        "an unlabelled namespace got a copy"
    );
    // Labelling a namespace brings a copy, unlabelling takes it: related objects are watched,
    // one that stops matching too (no resync is set).
    namespaces
        .patch(&c.name, &PatchParams::default(), &Patch::Merge(&mark(true)))
        .await?;
    wait_for("a copy in the newly labelled namespace", WAIT, || {
        copy_in(c.name.clone())
    })
    .await?;
    namespaces
        .patch(
            &a.name,
            &PatchParams::default(),
            &Patch::Merge(&mark(false)),
        )
        .await?;
    wait_for("the copy gone from the unlabelled namespace", WAIT, || {
        let copy = copy_in(a.name.clone());
        async move { copy.await.is_none().then_some(()) }
    })
    .await?;
    let status = wait_for("the parent's status", WAIT, || async {
        let p = parents.get(&parent_name).await.ok()?;
        let s = p.data.get("status")?.clone();
        (s["copies"] == 2).then_some(s)
    })
    .await?;
    assert_eq!(status["source"], "found", "{status}");
    parents
        .delete(&parent_name, &DeleteParams::default())
        .await?;
    for ns in [&b.name, &c.name] {
        wait_for("the copies gone with their parent", WAIT, || {
            let copy = copy_in(ns.clone());
            async move { copy.await.is_none().then_some(()) }
        })
        .await?;
    }
    Ok(())
}

/// Finding H1 of issue 47: a customize hook had ork read any type with ork's own identity,
/// Secrets with their values and ork's own namespace included. Now a related type must be the
/// controller's (parent, children, Namespaces) or declared on it; Secret values come only on
/// opt-in; ork's namespace is never read for a hook.
#[tokio::test]
async fn a_customize_hook_reads_only_declared_types_never_orks_namespace_nor_secret_values()
-> Result<()> {
    use ork_test_support::fake_service::{FakeService, Reply};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU8, Ordering};
    let client = client().await?;
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: relatedprobes.h1.ork.dev}
spec:
  group: h1.ork.dev
  scope: Cluster
  names: {plural: relatedprobes, singular: relatedprobe, kind: RelatedProbe}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;
    apply_yaml(&client, crd, "default").await?;
    wait_crd_established(&client, "relatedprobes.h1.ork.dev").await?;
    let (tenant, home) = (
        TestNamespace::create(&client).await?,
        TestNamespace::create(&client).await?,
    );
    let label = format!("h1-{}", tenant.name);
    for (ns, name, value) in [
        (&tenant.name, "db", "tenant-secret-value"),
        (&home.name, "owner-key", "home-secret-value"),
    ] {
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "labels": {label.clone(): "yes"}},
            "stringData": {"password": value}});
        apply_yaml(&client, &secret.to_string(), ns).await?;
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &tenant.name);
    assert!(
        secrets.get_opt("db").await?.is_some(),
        "the fixture's Secret"
    );

    // Phase 0: the hook asks for ork's own namespace; 1: for the tenant's Secret by name and
    // for every Secret with the label, cluster-wide.
    let phase = Arc::new(AtomicU8::new(0));
    let (now, tenant_ns, home_ns, sel) = (
        phase.clone(),
        tenant.name.clone(),
        home.name.clone(),
        label.clone(),
    );
    let hook = FakeService::start(move |req| {
        if req.get("children").is_some() {
            return Reply::ok(json!({"status": {"synced": true}, "children": []}));
        }
        let rules = match now.load(Ordering::SeqCst) {
            0 => json!([{"apiVersion": "v1", "resource": "secrets", "namespace": home_ns}]),
            _ => json!([
                {"apiVersion": "v1", "resource": "secrets", "namespace": tenant_ns, "names": ["db"]},
                {"apiVersion": "v1", "resource": "secrets", "labelSelector": {"matchLabels": {sel.clone(): "yes"}}}
            ]),
        };
        Reply::ok(json!({"relatedResources": rules}))
    })
    .await?;
    let controller = |name: &str, annotations: Value| {
        json!({"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {
                "parentResource": {"apiVersion": "h1.ork.dev/v1", "resource": "relatedprobes",
                    "labelSelector": {"matchLabels": {"probe": name}}},
                "childResources": [{"apiVersion": "v1", "resource": "configmaps"}],
                "hooks": {
                    "customize": {"version": "v2", "webhook": {"url": hook.url}},
                    "sync": {"version": "v2", "webhook": {"url": hook.url}}}}})
    };
    let dir = dir(&tenant.name)?;
    let file = dir.join("controllers.yaml");
    let plain = controller("h1-plain", json!({}));
    let declared = controller(
        "h1-declared",
        json!({"orkestra.orkspace.io/related-resources": "v1/secrets"}),
    );
    std::fs::write(&file, format!("{plain}\n---\n{declared}\n"))?;
    let ork = spawn_ork(
        &dir.join("no-katalog.yaml"),
        &dir.join("ork.log"),
        &["--controllers", file.to_str().context("path")?],
        &[("ORK_NAMESPACE", home.name.as_str())],
    )?;
    let (ar, _) = resolve(
        &client,
        &GroupVersionKind::gvk("h1.ork.dev", "v1", "RelatedProbe"),
    )
    .await?;
    let probes: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    for which in ["h1-plain", "h1-declared"] {
        let name = format!("{which}-{}", tenant.name);
        let probe = json!({"apiVersion": "h1.ork.dev/v1", "kind": "RelatedProbe",
            "metadata": {"name": name, "labels": {"probe": which}}, "spec": {"round": 0}});
        probes
            .create(&PostParams::default(), &serde_json::from_value(probe)?)
            .await?;
    }
    let logged = |text: &'static str| {
        let log = ork.log.clone();
        wait_for(text, WAIT, move || {
            let log = log.clone();
            async move {
                std::fs::read_to_string(&log)
                    .ok()
                    .filter(|l| l.contains(text))
                    .map(|_| ())
            }
        })
    };
    logged("related v1/secrets is neither the parent's type, a child type nor Namespaces").await?;
    logged("in ork's own namespace").await?;
    let syncs = |controller: &str| -> Vec<Value> {
        hook.received()
            .into_iter()
            .filter(|r| {
                r.body.get("children").is_some()
                    && r.body["controller"]["metadata"]["name"] == controller
            })
            .map(|r| r.body)
            .collect()
    };
    assert!(
        syncs("h1-plain").is_empty(),
        "an undeclared type refuses the whole customize answer"
    );
    assert!(
        syncs("h1-declared").is_empty(),
        "ork's namespace refuses the whole answer"
    );

    phase.store(1, Ordering::SeqCst);
    let declared_name = format!("h1-declared-{}", tenant.name);
    probes
        .patch(
            &declared_name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"round": 1}})),
        )
        .await?;
    let sync = wait_for("a sync with the related Secret", WAIT, || async {
        syncs("h1-declared").pop()
    })
    .await?;
    let related = sync["related"]["Secret.v1"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let tenant_key = format!("{}/db", tenant.name);
    assert!(related.contains_key(&tenant_key), "{related:?}");
    assert!(
        related
            .keys()
            .all(|k| !k.starts_with(&format!("{}/", home.name))),
        "a cluster-wide read skips ork's namespace: {related:?}"
    );
    assert!(related[&tenant_key].get("data").is_none(), "{related:?}");
    let text = sync.to_string();
    for secret in ["tenant-secret-value", "home-secret-value"] {
        assert!(!text.contains(secret), "{secret} reached the hook");
    }
    for r in hook.received() {
        let body = r.body.to_string();
        assert!(!body.contains("dGVuYW50") && !body.contains("aG9tZS1zZWNyZXQ"));
    }
    Ok(())
}

/// Issue 47, finding M1: the inspector authorizes a controller's parents as it does a Katalog
/// entry's CRs. With controllers and no Katalog, a ServiceAccount without RBAC read every
/// parent's state through `/katalog` and `/status` (nothing was checked), and a parent's record
/// was 404 for everyone, so `ork explain` failed for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_s_parents_are_shown_only_to_those_who_may_read_them_and_explained()
-> Result<()> {
    let client = client().await?;
    install_parent_crds(&client).await?;
    let ns = TestNamespace::create(&client).await?;
    let home = TestNamespace::create(&client).await?;
    let hooks = Hooks::start()?;
    let dir = dir(&ns.name)?;
    let file = hooks.controllers("controllers.yaml", &dir)?;
    // A namespace of its own, so its Lease too: other tests' orks run the same controllers,
    // and this one's records must be of reconciles it makes.
    let ork = spawn_ork(
        &dir.join("no-katalog.yaml"),
        &dir.join("ork.log"),
        &["--controllers", file.to_str().context("path")?],
        &[("ORK_NAMESPACE", home.name.as_str())],
    )?;
    let rollout = json!({"apiVersion": "example.ork.dev/v1", "kind": "Rollout",
        "metadata": {"name": "web"}, "spec": {"value": "one"}});
    apply_yaml(&client, &rollout.to_string(), &ns.name).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns.name);
    wait_for("the parent's children", WAIT, || async {
        secrets.get_opt("web-inplace").await.ok()?
    })
    .await?;
    let addr = ork.http().await?;
    let nobody = common::service_account_token(&client, &ns.name, "default").await?;
    let record = format!("/katalog/rollout/objects/{}/web", ns.name);
    let page = format!("/status/rollout/{}/web", ns.name);
    for path in [
        "/katalog",
        "/status",
        "/katalog/rollout",
        "/katalog/rollout/health",
        "/katalog/rollout/objects",
        "/status/rollout",
        &record,
        &page,
    ] {
        let (code, body) = common::get_as(addr, path, &nobody).await?;
        assert_eq!(
            code, 403,
            "{path} for a ServiceAccount without RBAC: {body}"
        );
    }
    let (code, body) = common::get_as(addr, &record, &nobody).await?;
    assert!(
        body.contains("may not get example.ork.dev/rollouts web"),
        "{code} {body}"
    );
    let admin = common::admin_token()?;
    let (code, body) = common::get_as(addr, "/katalog", &admin).await?;
    assert_eq!(code, 200, "{body}");
    let katalog: Value = serde_json::from_str(&body)?;
    assert!(
        katalog["entries"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["name"] == "rollout")),
        "{katalog}"
    );
    // Other tests' orks run the same controllers over every namespace: one of them may have
    // reconciled this parent first, and this ork, finding it done, does not call its hook
    // again. Asked by hand, every ork reconciles it now, this one included.
    common::ork_retry("rollout/web", &ns.name)?;
    let body = wait_for("the parent's record of a reconcile", WAIT, || async {
        let (code, body) = common::get_as(addr, &record, &admin).await.ok()?;
        let v: Value = serde_json::from_str(&body).ok()?;
        (code == 200 && v["records"][0]["outcome"] == "ok").then_some(body)
    })
    .await?;
    let recorded: Value = serde_json::from_str(&body)?;
    assert_eq!(recorded["key"], format!("{}/web", ns.name), "{recorded}");
    assert_eq!(recorded["records"][0]["outcome"], "ok", "{recorded}");
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["explain", "rollout/web", "-n", &ns.name, "--server"])
        .arg(format!("http://{addr}"))
        .args(["--token", &admin])
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(2), "explain failed: {text}");
    assert!(
        text.contains("last reconciles (newest first)") && text.contains("Rollout"),
        "{text}"
    );
    Ok(())
}

/// Metacontroller's `clusteredparent` example in shape: a DecoratorController over ClusterRoles
/// (by annotation) attaches a RoleBinding to each. ork binds only the roles a controller names:
/// refused, with the annotation to add, until the controller object names the role
/// (`orkestra.orkspace.io/bind-roles`); then attached, put back when deleted, and removed with
/// its ClusterRole. A child in ork's own namespace likewise waits for
/// `orkestra.orkspace.io/children-in-ork-namespace: "true"`.
#[tokio::test]
async fn a_controller_binds_the_roles_and_uses_ork_s_namespace_only_as_its_annotations_allow()
-> Result<()> {
    use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
    use ork_test_support::fake_service::{FakeService, Reply};

    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let home = TestNamespace::create(&client).await?;
    let (tenant, ork_home) = (ns.name.clone(), home.name.clone());
    let marker = format!("ork-test-{tenant}/binding");
    let role = format!("{tenant}-role");
    let hook = FakeService::start(move |req| {
        let name = req["object"]["metadata"]["name"].as_str().unwrap_or_default();
        Reply::ok(json!({"attachments": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": name, "namespace": tenant},
             "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": tenant}],
             "roleRef": {"kind": "ClusterRole", "name": name, "apiGroup": "rbac.authorization.k8s.io"}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": format!("{name}-note"), "namespace": ork_home},
             "data": {"bound": name}}
        ]}))
    })
    .await?;
    let controller = |annotations: Value| {
        json!({"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "DecoratorController",
            "metadata": {"name": "cluster-parent", "annotations": annotations},
            "spec": {
                "resources": [{"apiVersion": "rbac.authorization.k8s.io/v1", "resource": "clusterroles",
                    "annotationSelector": {"matchExpressions": [{"key": marker, "operator": "Exists"}]}}],
                "attachments": [
                    {"apiVersion": "rbac.authorization.k8s.io/v1", "resource": "rolebindings"},
                    {"apiVersion": "v1", "resource": "configmaps"}],
                "hooks": {"sync": {"webhook": {"url": format!("{}/sync", hook.url)}}}}})
        .to_string()
    };
    let dir = dir(&ns.name)?;
    let file = dir.join("cluster-parent.yaml");
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), &ns.name);
    let notes: Api<ConfigMap> = Api::namespaced(client.clone(), &home.name);
    let result = async {
        apply_yaml(
            &client,
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": role, "annotations": {&marker: "default"}},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]})
            .to_string(),
            "default",
        )
        .await?;
        roles
            .get(&role)
            .await
            .context("the ClusterRole was applied")?;

        // As Metacontroller's manifest has it: the binding is refused and the log says how to
        // allow it.
        std::fs::write(&file, controller(json!({})))?;
        let args = ["--controllers", file.to_str().context("path")?];
        let env = [("ORK_NAMESPACE", home.name.as_str())];
        let ork = spawn_ork(
            &dir.join("no-katalog.yaml"),
            &dir.join("ork.log"),
            &args,
            &env,
        )?;
        let allow = format!("orkestra.orkspace.io/bind-roles: \"ClusterRole/{role}\"");
        wait_for("the refusal naming the annotation", WAIT, || async {
            ork.log().contains(&allow).then_some(())
        })
        .await?;
        assert!(bindings.get_opt(&role).await?.is_none(), "nothing applied");
        // Told as Metacontroller tells it: a SyncError event on the decorated object.
        let events: Api<k8s_openapi::api::core::v1::Event> = Api::all(client.clone());
        let by_name =
            kube::api::ListParams::default().fields(&format!("involvedObject.name={role}"));
        let told = wait_for("a SyncError event", WAIT, || async {
            let list = events.list(&by_name).await.ok()?;
            list.items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("SyncError"))
        })
        .await?;
        let note = told.message.unwrap_or_default();
        assert!(note.starts_with("Sync error: "), "{note}");
        drop(ork);

        // Named on the controller, with ork's namespace allowed: attached.
        std::fs::write(
            &file,
            controller(json!({
                "orkestra.orkspace.io/bind-roles": format!("ClusterRole/{role}"),
                "orkestra.orkspace.io/children-in-ork-namespace": "true"})),
        )?;
        let ork = spawn_ork(
            &dir.join("no-katalog.yaml"),
            &dir.join("ork2.log"),
            &args,
            &env,
        )?;
        let first = wait_for("the RoleBinding attached", WAIT, || async {
            bindings.get_opt(&role).await.ok()?
        })
        .await?;
        assert_eq!(first.role_ref.name, role);
        // Applied together with the binding (children are applied concurrently).
        wait_for("the ConfigMap in ork's namespace", WAIT, || async {
            notes.get_opt(&format!("{role}-note")).await.ok()?
        })
        .await?;
        // Deleted by hand: put back (a cluster-scoped parent's namespaced child).
        bindings.delete(&role, &DeleteParams::default()).await?;
        wait_for("the RoleBinding put back", WAIT, || async {
            let again = bindings.get_opt(&role).await.ok()??;
            (again.uid() != first.uid()).then_some(())
        })
        .await?;
        // The ClusterRole goes: its attachments go with it.
        roles.delete(&role, &DeleteParams::default()).await?;
        wait_for("the attachments removed", WAIT, || async {
            let gone = bindings.get_opt(&role).await.ok()?.is_none()
                && notes.get_opt(&format!("{role}-note")).await.ok()?.is_none();
            gone.then_some(())
        })
        .await?;
        let log = ork.log();
        assert!(!log.contains("bindRoles"), "{log}");
        Ok::<_, anyhow::Error>(())
    }
    .await;
    let _ = roles.delete(&role, &DeleteParams::default()).await;
    result
}

/// Metacontroller's `service-per-pod` in shape: a DecoratorController with a finalize hook
/// selects objects by annotation. An object whose annotation is removed is finalized, not
/// dropped: its finalize hook is called, its attachment deleted and the decorator's finalizer
/// removed, the object itself kept; with the annotation back it is decorated again.
#[tokio::test]
async fn an_object_a_decorator_stops_selecting_is_finalized_and_kept() -> Result<()> {
    use ork_test_support::fake_service::{FakeService, Reply};

    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let marker = format!("ork-test-{}/decorate", ns.name);
    let hook = FakeService::start(|req| {
        let name = req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        if req["finalizing"] == true {
            return Reply::ok(json!({"attachments": [], "finalized": true}));
        }
        Reply::ok(json!({"attachments": [
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": format!("{name}-extra")},
             "stringData": {"for": name}}]}))
    })
    .await?;
    let dir = dir(&ns.name)?;
    let file = dir.join("decorator.yaml");
    std::fs::write(
        &file,
        json!({"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "DecoratorController",
            "metadata": {"name": "extra-secret"},
            "spec": {
                "resources": [{"apiVersion": "v1", "resource": "configmaps",
                    "labelSelector": {"matchLabels": {&marker: "yes"}},
                    "annotationSelector": {"matchExpressions": [{"key": marker, "operator": "Exists"}]}}],
                "attachments": [{"apiVersion": "v1", "resource": "secrets"}],
                "hooks": {
                    "sync": {"webhook": {"url": format!("{}/sync", hook.url)}},
                    "finalize": {"webhook": {"url": format!("{}/finalize", hook.url)}}}}})
        .to_string(),
    )?;
    let _ork = ork_with(&dir, &["--controllers", file.to_str().context("path")?])?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns.name);
    let finalizer = "metacontroller.io/decoratorcontroller-extra-secret";
    let annotate = |on: bool| {
        let value = if on { json!("yes") } else { Value::Null };
        json!({"metadata": {"annotations": {&marker: value}}})
    };
    apply_yaml(
        &client,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "labels": {&marker: "yes"}, "annotations": {&marker: "yes"}},
            "data": {"k": "v"}})
        .to_string(),
        &ns.name,
    )
    .await?;
    cms.get("web").await.context("the ConfigMap was applied")?;
    wait_for("the attachment and the finalizer", WAIT, || async {
        secrets.get_opt("web-extra").await.ok()??;
        let cm = cms.get("web").await.ok()?;
        cm.finalizers().iter().any(|f| f == finalizer).then_some(())
    })
    .await?;

    // Opted out: finalized, the object kept.
    cms.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(annotate(false)),
    )
    .await?;
    wait_for(
        "the attachment deleted, the finalizer removed",
        WAIT,
        || async {
            let gone = secrets.get_opt("web-extra").await.ok()?.is_none();
            let cm = cms.get("web").await.ok()?;
            (gone && !cm.finalizers().iter().any(|f| f == finalizer)).then_some(())
        },
    )
    .await?;
    assert!(
        hook.received().iter().any(|r| r.body["finalizing"] == true),
        "the finalize hook was called"
    );
    assert!(cms.get_opt("web").await?.is_some(), "the object stays");

    // Opted in again: decorated again.
    cms.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(annotate(true)),
    )
    .await?;
    wait_for("the attachment back", WAIT, || async {
        secrets.get_opt("web-extra").await.ok()?
    })
    .await?;
    // Its label removed (the decorator's labelSelector): finalized as well, though a watch
    // selecting by that label would no longer see it.
    cms.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {&marker: null}}})),
    )
    .await?;
    wait_for("finalized when the label goes", WAIT, || async {
        let gone = secrets.get_opt("web-extra").await.ok()?.is_none();
        let cm = cms.get("web").await.ok()?;
        (gone && !cm.finalizers().iter().any(|f| f == finalizer)).then_some(())
    })
    .await?;
    cms.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    Ok(())
}

/// `--target-label-selector`, as Metacontroller's flag: of the controllers given, this ork runs
/// only those whose labels the selector selects, and a malformed selector stops it with why.
#[tokio::test]
async fn only_the_controllers_the_target_label_selector_selects_are_served() -> Result<()> {
    let client = client().await?;
    install_parent_crds(&client).await?;
    let ns = TestNamespace::create(&client).await?;
    let dir = dir(&ns.name)?;
    let controller = |name: &str, team: &str| {
        json!({"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
            "metadata": {"name": name, "labels": {"team": team}},
            "spec": {"generateSelector": true,
                "parentResource": {"apiVersion": "example.ork.dev/v1", "resource": "reservations"},
                "childResources": [{"apiVersion": "v1", "resource": "configmaps"}],
                "hooks": {"sync": {"webhook": {"url": "http://127.0.0.1:1/sync"}}}}})
        .to_string()
    };
    let file = dir.join("two-teams.yaml");
    std::fs::write(
        &file,
        format!(
            "{}\n---\n{}\n",
            controller("res-a", "a"),
            controller("res-b", "b")
        ),
    )?;
    let path = file.to_str().context("path")?;
    let ork = ork_with(
        &dir,
        &[
            "--controllers",
            path,
            "--target-label-selector",
            "team in (a, c)",
        ],
    )?;
    wait_for("res-a served", WAIT, || async {
        let log = ork.log();
        log.lines()
            .any(|l| l.contains("entry=res-a") && l.contains("serving CompositeController"))
            .then_some(())
    })
    .await?;
    let log = ork.log();
    assert!(!log.contains("entry=res-b"), "{log}");
    drop(ork);

    let refused = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args([
            "run",
            "--controllers",
            path,
            "--target-label-selector",
            "team in a",
        ])
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    let said = common::output_text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("--target-label-selector: \"team in a\""),
        "{said}"
    );
    Ok(())
}

/// As Metacontroller syncs again on its children's events, a sync that wrote children is
/// followed by one that sees them, with no edit and no resync: a decorator (of its own
/// marker, so no other test's ork runs it) writes into its attachment the number of
/// attachments it observed; the first sync saw none and made one, the next sees it.
#[tokio::test]
async fn the_sync_after_the_hooks_own_writes_sees_what_it_made() -> Result<()> {
    use ork_test_support::fake_service::{FakeService, Reply};

    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let marker = format!("ork-test-{}/observe", ns.name);
    let hook = FakeService::start(|req| {
        let name = req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        let seen = req["attachments"]["Secret.v1"]
            .as_object()
            .map_or(0, serde_json::Map::len);
        // Nothing written on the decorated object itself (a label there would cause a sync
        // of its own): only the attachment tells what the hook observed.
        Reply::ok(json!({
            "attachments": [{"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": format!("{name}-made")},
                "stringData": {"observed": seen.to_string()}}]}))
    })
    .await?;
    let dir = dir(&ns.name)?;
    let file = dir.join("observer.yaml");
    std::fs::write(
        &file,
        json!({"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "DecoratorController",
            "metadata": {"name": format!("observer-{}", ns.name)},
            "spec": {
                "resources": [{"apiVersion": "v1", "resource": "configmaps",
                    "annotationSelector": {"matchExpressions": [{"key": marker, "operator": "Exists"}]}}],
                "attachments": [{"apiVersion": "v1", "resource": "secrets",
                    "updateStrategy": {"method": "InPlace"}}],
                "hooks": {"sync": {"webhook": {"url": format!("{}/sync", hook.url)}}}}})
        .to_string(),
    )?;
    let _ork = ork_with(&dir, &["--controllers", file.to_str().context("path")?])?;
    apply_yaml(
        &client,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "annotations": {&marker: "yes"}}, "data": {"k": "v"}})
        .to_string(),
        &ns.name,
    )
    .await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    cms.get("web").await.context("the ConfigMap was applied")?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns.name);
    wait_for("the sync that saw its own attachment", WAIT, || async {
        let s = secrets.get_opt("web-made").await.ok()??;
        (s.data?.get("observed")?.0 == b"1").then_some(())
    })
    .await?;
    let calls = hook.calls();
    assert!(calls >= 2, "{calls} calls");
    Ok(())
}
