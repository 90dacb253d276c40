//! `ork run` against the local cluster and a scripted reconcile service on 127.0.0.1.

mod common;

use common::*;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Service};
use k8s_openapi::api::events::v1::Event as SeriesEvent;
use kube::api::{Api, ListParams, Patch, PatchParams};
use ork_test_support::fake_service::{FakeService, Reply, webapp_answer};
use ork_test_support::{TestNamespace, apply_yaml, client, field_managers, wait_for};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_applies_owned_children_once_and_an_edit_calls_once_more() -> Result<()> {
    let Ready {
        svc,
        ns,
        client,
        api,
        _ork,
    } = Ready::web().await?;

    let deploy = Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .get("web")
        .await?;
    let owner = &deploy.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("WebApp", Some(true))
    );
    let managers = field_managers(&deploy.metadata);
    assert!(
        managers.contains(&"orkestra-remote".to_string()),
        "{managers:?}"
    );
    assert_eq!(
        deploy.metadata.labels.unwrap_or_default()["orkestra.orkspace.io/managed"],
        "true"
    );
    Api::<Service>::namespaced(client.clone(), &ns.name)
        .get("web")
        .await?;
    // The status comes with the reconcile; the annotations after it, on the lane (SPEC §10):
    // waited for, not expected at the same instant.
    let cr = wait_for("the health annotation written", WAIT, || async {
        let cr = api.get("web").await.ok()?;
        cr.metadata
            .annotations
            .as_ref()?
            .contains_key("orkestra.orkspace.io/health")
            .then_some(cr)
    })
    .await?;
    assert_eq!(cr.data["status"]["phase"], "Ready");
    assert_eq!(cr.data["status"]["observedGeneration"], 1);
    // Who wrote the status and annotations reads "ork" in managedFields, not "unknown".
    let managers = field_managers(&cr.metadata);
    assert!(managers.contains(&"ork".to_string()), "{managers:?}");

    // Left alone, ork's own writes (status, annotations, children) cause no further call.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(svc.calls(), 1, "exactly one call for a create");

    let patch = json!({"spec": {"image": "nginx:2"}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for("the new image applied", WAIT, || async {
        let d = Api::<Deployment>::namespaced(client.clone(), &ns.name)
            .get("web")
            .await
            .ok()?;
        let image = d.spec?.template.spec?.containers.first()?.image.clone()?;
        (image == "nginx:2").then_some(())
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(svc.calls(), 2, "exactly one more call for a spec edit");

    // Deleting the CR garbage-collects its children through the owner references.
    api.delete("web", &Default::default()).await?;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);
    wait_for("the Deployment garbage-collected", WAIT, || async {
        matches!(deployments.get_opt("web").await, Ok(None)).then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undeclared_type_rejects_whole_response_and_nothing_is_applied() -> Result<()> {
    let svc = FakeService::start(|req| {
        let name = req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("x")
            .to_string();
        Reply::ok(json!({"resources": [
            {"type": "deployment", "fields": {"name": name, "image": "nginx"}},
            {"type": "configmap", "fields": {"name": name, "data": {"a": "b"}}}
        ]}))
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, _ork) = start(&ns, &svc).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "web", "False").await?;
    assert!(
        message.contains("ConfigMap (core) is not declared"),
        "{message}"
    );
    assert!(
        Api::<Deployment>::namespaced(client.clone(), &ns.name)
            .get_opt("web")
            .await?
            .is_none(),
        "nothing applied"
    );
    // Events go on the lower-priority lane after the status (SPEC §10): waited for, not
    // expected at once.
    wait_for("a Warning event", WAIT, || async {
        let events = Api::<Event>::namespaced(client.clone(), &ns.name)
            .list(&ListParams::default())
            .await
            .ok()?;
        events
            .items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("WebAppReconcileError")
                    && e.type_.as_deref() == Some("Warning")
            })
            .then_some(())
    })
    .await?;
    // Retried with backoff; the repeated failure is one event object with a series count.
    let warnings = wait_for("three failures in one event series", WAIT, || async {
        let list = Api::<SeriesEvent>::namespaced(client.clone(), &ns.name)
            .list(&ListParams::default())
            .await
            .ok()?;
        let warnings: Vec<SeriesEvent> = list
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("WebAppReconcileError"))
            .collect();
        let count = warnings.first()?.series.as_ref()?.count;
        (count >= 3).then_some(warnings)
    })
    .await?;
    assert_eq!(warnings.len(), 1, "one event object for the series");
    assert!(svc.calls() >= 3);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_errors_are_recorded_retried_and_recover() -> Result<()> {
    let svc = FakeService::start(|_| Reply::Respond(500, "boom".into())).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, _ork) = start(&ns, &svc).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "web", "False").await?;
    assert!(message.contains("unexpected status 500"), "{message}");

    svc.set_script(|_| Reply::ok("<html>not json"));
    wait_for("garbage body reported", WAIT, || async {
        let obj = api.get("web").await.ok()?;
        ready(&obj).filter(|(_, m)| m.contains("not valid JSON"))
    })
    .await?;

    svc.set_script(webapp_answer);
    wait_ready(&api, "web", "True").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_child_is_pruned_and_hand_edited_child_is_restored() -> Result<()> {
    let Ready {
        svc,
        ns,
        client,
        api,
        _ork,
    } = Ready::web().await?;
    let deployments = Api::<Deployment>::namespaced(client.clone(), &ns.name);

    // Someone scales the Deployment by hand: the owner is reconciled and the service's answer wins.
    let patch = json!({"spec": {"replicas": 5}});
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for("replicas restored to 1", WAIT, || async {
        let d = deployments.get("web").await.ok()?;
        (d.spec?.replicas == Some(1)).then_some(())
    })
    .await?;

    // The service stops returning the Service: ork prunes it.
    svc.set_script(|req| {
        let name = req["object"]["metadata"]["name"].as_str().unwrap_or("x").to_string();
        Reply::ok(json!({"resources": [{"type": "deployment", "fields": {"name": name, "image": "nginx:1"}}]}))
    });
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicas": 2}})),
    )
    .await?;
    let services = Api::<Service>::namespaced(client.clone(), &ns.name);
    wait_for("the Service pruned", WAIT, || async {
        matches!(services.get_opt("web").await, Ok(None)).then_some(())
    })
    .await?;
    assert!(
        deployments.get_opt("web").await?.is_some(),
        "the Deployment stays"
    );
    Ok(())
}

/// `prepared.trigger` of every request so far: (reason, attempt).
fn triggers(svc: &FakeService) -> Vec<(String, u64)> {
    svc.received()
        .iter()
        .map(|r| {
            let t = &r.body["prepared"]["trigger"];
            (
                t["reason"].as_str().unwrap_or_default().to_string(),
                t["attempt"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_after_calls_the_service_again() -> Result<()> {
    let svc = FakeService::start(|req| {
        let Reply::Respond(_, body) = webapp_answer(req) else {
            unreachable!("webapp_answer always responds")
        };
        let mut answer: Value = serde_json::from_str(&body).unwrap_or_default();
        answer["result"] = json!("requeue");
        answer["requeueAfter"] = json!("1s");
        Reply::ok(answer)
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, _ork) = start(&ns, &svc).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    wait_for("three calls", WAIT, || async {
        (svc.calls() >= 3).then_some(())
    })
    .await?;
    let t = triggers(&svc);
    assert_eq!(t[0].0, "create");
    assert!(
        t[1..].iter().all(|(reason, _)| reason == "requeue"),
        "{t:?}"
    );
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_attempts_grow_on_failure_and_reset_after_success() -> Result<()> {
    let svc =
        FakeService::start(|_| Reply::ok(json!({"result": "error", "error": "not yet"}))).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, _ork) = start(&ns, &svc).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "web", "False").await?;
    assert_eq!(message, "service reported: not yet");
    wait_for("three attempts", WAIT, || async {
        (svc.calls() >= 3).then_some(())
    })
    .await?;
    let attempts: Vec<u64> = triggers(&svc).iter().take(3).map(|t| t.1).collect();
    assert_eq!(attempts, [1, 2, 3], "each retry counts as the next attempt");

    svc.set_script(webapp_answer);
    wait_ready(&api, "web", "True").await?;
    let after_success = svc.calls();
    svc.set_script(|_| Reply::Respond(503, String::new()));
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicas": 3}})),
    )
    .await?;
    wait_for("a call after the edit", WAIT, || async {
        (svc.calls() > after_success).then_some(())
    })
    .await?;
    assert_eq!(
        triggers(&svc)[after_success],
        ("update".to_string(), 1),
        "the backoff was reset by the success"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_or_unreachable_service_is_a_recorded_failure_not_a_crash() -> Result<()> {
    let svc = FakeService::start(|_| Reply::Hang).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, mut ork) = start(&ns, &svc).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "web", "False").await?;
    assert!(message.contains("timed out after 2s"), "{message}");
    assert!(ork.child.try_wait()?.is_none(), "ork is still running");

    // Nothing listens on this port any more.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let ns2 = TestNamespace::create(&client).await?;
    let (_, mut ork2) = start_with(&ns2, &http(&format!("http://{closed}/reconcile")), "").await?;
    create_webapp(&client, &ns2.name, "web", "nginx:1").await?;
    let api2 = webapps(&client, &ns2.name).await?;
    let (_, message) = wait_ready(&api2, "web", "False").await?;
    assert!(message.contains("cannot connect"), "{message}");
    assert!(ork2.child.try_wait()?.is_none(), "ork is still running");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_ref_rotation_sends_the_new_token_and_never_shows_it() -> Result<()> {
    const OLD: &str = "tok-alpha-5f1e9c";
    const NEW: &str = "tok-bravo-77d0a2";
    let svc = FakeService::start(webapp_answer).await?;
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let secret = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: reconciler-token}}\nstringData: {{token: {value}}}\n"
        )
    };
    apply_yaml(&client, &secret(OLD), &ns.name).await?;
    let auth = format!(
        "            auth:\n              secretRef: {{name: reconciler-token, key: token, namespace: {}}}\n",
        ns.name
    );
    let (client, ork) = start_with(&ns, &http(&svc.url), &auth).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    let first = svc.received();
    assert_eq!(
        first[0].header("authorization"),
        Some(format!("Bearer {OLD}").as_str())
    );

    apply_yaml(&client, &secret(NEW), &ns.name).await?;
    // Give the Secret watch a moment, then make a change that needs a call.
    let edits = std::sync::atomic::AtomicUsize::new(2);
    wait_for("the rotated token in use", WAIT, || {
        let api = api.clone();
        let svc = svc.clone();
        let edit = edits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        async move {
            let image = format!("nginx:{edit}");
            api.patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"image": image}})),
            )
            .await
            .ok()?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let last = svc.received().last().cloned()?;
            (last.header("authorization") == Some(format!("Bearer {NEW}").as_str())).then_some(())
        }
    })
    .await
    .inspect_err(|_| eprintln!("--- ork log ---\n{}", ork.log()))?;

    // The token appears nowhere a user can read it: ork's log, the CR, the events.
    let log = ork.log();
    assert!(log.contains("reconciled"), "debug log was captured");
    for token in [OLD, NEW] {
        assert!(!log.contains(token), "token in ork's log");
        let cr = serde_json::to_string(&api.get("web").await?)?;
        assert!(!cr.contains(token), "token on the CR");
        let events = serde_json::to_string(
            &Api::<Event>::namespaced(client.clone(), &ns.name)
                .list(&ListParams::default())
                .await?,
        )?;
        assert!(!events.contains(token), "token in an event");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_script_is_a_reconciler_through_the_exec_transport() -> Result<()> {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp/reconcile.sh");
    let ns = TestNamespace::create(&client().await?).await?;
    let command = format!("command: [\"{}\"]", script.display());
    let (client, _ork) = start_with(&ns, &command, "            env: {EXTRA: unused}\n").await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    assert_eq!(
        api.get("web").await?.data["status"]["url"],
        "http://web:8080"
    );
    let deploy = Api::<Deployment>::namespaced(client.clone(), &ns.name)
        .get("web")
        .await?;
    assert_eq!(deploy.spec.and_then(|s| s.replicas), Some(1));

    // A CR the script refuses (no image): its error reaches the CR.
    let no_image =
        "apiVersion: demo.ork.dev/v1\nkind: WebApp\nmetadata: {name: empty}\nspec: {replicas: 1}\n";
    apply_yaml(&client, no_image, &ns.name).await?;
    let (_, message) = wait_ready(&api, "empty", "False").await?;
    assert_eq!(message, "service reported: spec.image is empty");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_in_other_namespaces_are_deleted_through_the_finalizer() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let other = TestNamespace::create(&client).await?;
    let other_name = other.name.clone();
    let svc = FakeService::start(move |req| {
        let name = req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("x")
            .to_string();
        Reply::ok(json!({"resources": [
            {"type": "deployment", "fields": {"name": name, "image": "nginx:1"}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": format!("{name}-config"), "namespace": other_name},
             "data": {"owner": name}}
        ]}))
    })
    .await?;
    let managed = format!(
        "              - {{group: \"\", version: v1, plural: configmaps, namespaces: [{}]}}\n",
        other.name
    );
    let (client, _ork) = start_with(&ns, &http(&svc.url), &managed).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    let finalizers = api
        .get("web")
        .await?
        .metadata
        .finalizers
        .unwrap_or_default();
    assert_eq!(finalizers, ["orkestra.orkspace.io/remote-finalizer"]);
    let configmaps =
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), &other.name);
    let cm = configmaps.get("web-config").await?;
    assert!(
        cm.metadata.owner_references.is_none(),
        "no owner reference across namespaces"
    );

    api.delete("web", &Default::default()).await?;
    wait_for("the CR gone", WAIT, || async {
        matches!(api.get_opt("web").await, Ok(None)).then_some(())
    })
    .await?;
    assert!(
        configmaps.get_opt("web-config").await?.is_none(),
        "the other-namespace child was deleted"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalize_calls_repeat_until_the_service_lets_the_cr_go() -> Result<()> {
    let let_go = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = let_go.clone();
    let svc = FakeService::start(move |req| {
        if req["prepared"]["finalizing"] == true {
            let done = flag.load(std::sync::atomic::Ordering::SeqCst);
            return Reply::ok(
                json!({"result": "requeue", "requeueAfter": "1s", "finalized": done}),
            );
        }
        webapp_answer(req)
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, _ork) = start_with(&ns, &http(&svc.url), "            finalize: true\n").await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;

    api.delete("web", &Default::default()).await?;
    let finalize_calls = || {
        svc.received()
            .iter()
            .filter(|r| r.body["prepared"]["finalizing"] == true)
            .count()
    };
    wait_for("two finalize calls", WAIT, || async {
        (finalize_calls() >= 2).then_some(())
    })
    .await?;
    let held = api.get("web").await?;
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "the CR is held while the service is not done"
    );

    let_go.store(true, std::sync::atomic::Ordering::SeqCst);
    wait_for("the CR gone", WAIT, || async {
        matches!(api.get_opt("web").await, Ok(None)).then_some(())
    })
    .await?;
    // The event is written as the finalizer goes: it may land just after the CR.
    wait_for("the WebAppFinalized event", WAIT, || async {
        let events = Api::<Event>::namespaced(client.clone(), &ns.name)
            .list(&ListParams::default())
            .await
            .ok()?;
        events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("WebAppFinalized"))
            .then_some(())
    })
    .await?;
    Ok(())
}

const DATABASE_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: databases.demo.ork.dev}
spec:
  group: demo.ork.dev
  scope: Namespaced
  names: {plural: databases, singular: database, kind: Database}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

/// A Database entry and a WebApp entry that depends on it (`condition`) and reads the Database
/// named by `spec.database` as `prepared.cross.db`.
fn two_entries(ns: &str, db_url: &str, web_url: &str, condition: &str) -> String {
    format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: test}}
spec:
  crds:
    database:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: Database, plural: databases}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          remote: {{endpoint: "{db_url}", managedResources: []}}
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      namespace: {ns}
      dependsOn: {{database: {condition}}}
      operatorBox:
        observe:
          cross:
            - {{crd: database, selector: {{name: "{{{{ .spec.database }}}}"}}, as: db}}
        reconcile:
          default: false
          remote:
            endpoint: "{web_url}"
            managedResources:
              - {{group: apps, version: v1, plural: deployments}}
              - {{group: "", version: v1, plural: services}}
"#,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_objects_of_another_entry_reach_the_service() -> Result<()> {
    let databases =
        FakeService::start(|_| Reply::ok(json!({"status": {"endpoint": "db.internal:5432"}})))
            .await?;
    let webapps_svc = FakeService::start(webapp_answer).await?;
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    apply_yaml(&client, DATABASE_CRD, &ns.name).await?;
    let katalog = two_entries(&ns.name, &databases.url, &webapps_svc.url, "started");
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    apply_yaml(&client, "apiVersion: demo.ork.dev/v1\nkind: Database\nmetadata: {name: orders}\nspec: {size: small}\n", &ns.name).await?;
    wait_for("the Database reconciled", WAIT, || async {
        (databases.calls() >= 1).then_some(())
    })
    .await?;
    let web = "apiVersion: demo.ork.dev/v1\nkind: WebApp\nmetadata: {name: web}\nspec: {image: nginx, database: orders}\n";
    apply_yaml(&client, web, &ns.name).await?;
    wait_ready(&webapps(&client, &ns.name).await?, "web", "True").await?;
    let request = &webapps_svc.received()[0].body;
    assert_eq!(
        request["prepared"]["cross"]["db"]["metadata"]["name"],
        "orders"
    );
    assert_eq!(request["prepared"]["cross"]["db"]["spec"]["size"], "small");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_wait_until_a_dependency_is_healthy() -> Result<()> {
    let databases =
        FakeService::start(|_| Reply::Respond(500, "db service not ready".into())).await?;
    let webapps_svc = FakeService::start(webapp_answer).await?;
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    apply_yaml(&client, DATABASE_CRD, &ns.name).await?;
    let katalog = two_entries(&ns.name, &databases.url, &webapps_svc.url, "healthy");
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    apply_yaml(
        &client,
        "apiVersion: demo.ork.dev/v1\nkind: Database\nmetadata: {name: orders}\n",
        &ns.name,
    )
    .await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    wait_for("the Database failing twice", WAIT, || async {
        (databases.calls() >= 2).then_some(())
    })
    .await?;
    assert_eq!(
        webapps_svc.calls(),
        0,
        "the WebApp entry waits for a healthy database entry"
    );

    databases.set_script(|_| Reply::ok(json!({})));
    wait_ready(&webapps(&client, &ns.name).await?, "web", "True").await?;
    assert_eq!(webapps_svc.calls(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_selector_limits_what_is_reconciled() -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let text = katalog(&ns.name, &http(&svc.url), "").replace(
        &format!("      namespace: {}\n", ns.name),
        &format!(
            "      namespace: {}\n      fieldSelector: {{metadata.name: web}}\n",
            ns.name
        ),
    );
    assert!(text.contains("fieldSelector"));
    let (client, _ork) = start_katalog(&ns, &text).await?;
    create_webapp(&client, &ns.name, "other", "nginx:1").await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    wait_ready(&webapps(&client, &ns.name).await?, "web", "True").await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let keys: Vec<String> = svc
        .received()
        .iter()
        .filter_map(|r| r.body["key"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        keys,
        [format!("{}/web", ns.name)],
        "only the selected CR is reconciled"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtls_with_the_ca_and_client_certificate_from_secrets() -> Result<()> {
    use ork_test_support::pki::TestPki;
    let pki = TestPki::generate()?;
    let svc = FakeService::start_tls(webapp_answer, &pki, true).await?;
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let indent = |pem: &str| {
        pem.lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let secrets = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: service-ca}}\nstringData:\n  ca.crt: |\n{}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: ork-client}}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}\n  tls.key: |\n{}\n",
        indent(&pki.ca_pem),
        indent(&pki.client_cert_pem),
        indent(&pki.client_key_pem)
    );
    apply_yaml(&client, &secrets, &ns.name).await?;
    let tls = format!(
        "            tls:\n              caSecretRef: {{name: service-ca, namespace: {ns}}}\n              clientCertSecretRef: {{name: ork-client, namespace: {ns}}}\n",
        ns = ns.name
    );
    let (client, ork) = start_with(&ns, &http(&svc.url), &tls).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    wait_ready(&webapps(&client, &ns.name).await?, "web", "True").await?;
    assert_eq!(svc.calls(), 1);
    let log = ork.log();
    assert!(
        !log.contains("BEGIN PRIVATE KEY")
            && !log.contains(pki.client_key_pem.lines().nth(1).unwrap_or("-")),
        "no key material in the log"
    );
    Ok(())
}

/// `ork retry KIND/NAME` (the `requested-at` annotation): a CR waiting out a long backoff is
/// reconciled at once, its backoff started over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ork_retry_reconciles_a_cr_now_instead_of_after_its_backoff() -> Result<()> {
    let svc = FakeService::start(|_| Reply::Respond(500, "down for maintenance".into())).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let katalog = katalog(&ns.name, &http(&svc.url), "")
        .replace("initial: 200ms, max: 2s", "initial: 10m, max: 20m");
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "False").await?;
    // The next attempt is ten minutes away; the service is back now.
    svc.set_script(webapp_answer);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["retry", "webapp/web", "-n", &ns.name])
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("WebApp/web: reconcile requested at"),
        "{stdout}"
    );
    wait_ready(&api, "web", "True").await?;
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["retry", "nosuchkind/web"])
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("serves no kind \"nosuchkind\""),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    Ok(())
}

/// Issue 46 (1) and finding L3: a service that fails on one CR (an HTTP 500) or crashes on it
/// (closes the connection) while it answers the others gets that CR at its backoff's pace, not
/// once a second through the outage probe; the healthy CR stays Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_failing_on_one_cr_gets_it_at_the_backoffs_pace() -> Result<()> {
    use futures::StreamExt;
    let name_of = |req: &Value| {
        req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let svc = FakeService::start(move |req| match name_of(req).as_str() {
        "fails" => Reply::Respond(500, "boom".into()),
        "crashes" => Reply::Close,
        _ => webapp_answer(req),
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let katalog = katalog(&ns.name, &http(&svc.url), "")
        .replace("initial: 200ms, max: 2s", "initial: 1s, max: 2m");
    assert!(katalog.contains("max: 2m"), "the fixture sets the backoff");
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    let api = webapps(&client, &ns.name).await?;
    // Count every write to the failing CRs (status, annotations) from the start.
    let writes = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let seen = writes.clone();
    let mut stream = api
        .watch(&kube::api::WatchParams::default(), "0")
        .await?
        .boxed();
    tokio::spawn(async move {
        while let Some(Ok(kube::api::WatchEvent::Modified(o))) = stream.next().await {
            let meta = &o.metadata;
            if let (Some(n), Some(rv)) = (&meta.name, &meta.resource_version) {
                seen.lock().expect("lock").push((n.clone(), rv.clone()));
            }
        }
    });
    for name in ["fails", "crashes", "healthy"] {
        create_webapp(&client, &ns.name, name, "nginx:1").await?;
    }
    assert_eq!(api.list(&ListParams::default()).await?.items.len(), 3);
    let started = std::time::Instant::now();
    wait_ready(&api, "healthy", "True").await?;
    let (_, message) = wait_ready(&api, "crashes", "False").await?;
    assert!(
        message.contains("closed the connection without answering")
            && message.contains("did it crash"),
        "{message}"
    );
    let (_, message) = wait_ready(&api, "fails", "False").await?;
    assert!(message.contains("unexpected status 500"), "{message}");

    let window = Duration::from_secs(20);
    tokio::time::sleep(window.saturating_sub(started.elapsed())).await;
    let calls = |name: &str| {
        svc.received()
            .iter()
            .filter(|r| name_of(&r.body) == name)
            .count()
    };
    // 1 s doubling: tries at 0, 1, 3, 7, 15 s (and a second's slack for the start) in 20 s;
    // before the fix the probe called each failing CR about once a second (20 in 20 s).
    for name in ["fails", "crashes"] {
        let n = calls(name);
        assert!((2..=6).contains(&n), "{name}: {n} calls in about 20 s");
        let written = writes
            .lock()
            .expect("lock")
            .iter()
            .filter(|(n, _)| n == name)
            .count();
        assert!(written <= 2 * 6, "{name}: {written} writes in about 20 s");
    }
    let obj = api.get("healthy").await?;
    assert_eq!(ready(&obj).map(|r| r.0), Some("True".to_string()));
    Ok(())
}
