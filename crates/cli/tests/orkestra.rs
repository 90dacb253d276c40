//! Bring your Orkestra Katalog (SPEC §9): the example `examples/orkestra-remote` — a Katalog in
//! the shape of Orkestra's remote walkthrough, with its CRD, setup and CR files and its Python
//! service — run unmodified, as a team moving from Orkestra would run it.
//!
//! The example's cluster test uses its fixed names (its namespace `orkestra-remote`, the CRD
//! `webapps.migrate.ork.dev`) and the service's default port 127.0.0.1:8026, as a user would; it
//! starts from a cluster without the CRD and leaves none behind.
//!
//! The other cluster tests move a team's live CRs from Orkestra (CRs carrying Orkestra's
//! finalizer, deleted under ork) and run `setup` in Orkestra's map form, each in a namespace of
//! its own with an in-process service.

mod common;

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

use anyhow::{Result, ensure};
use common::example::{
    CRD_NAME, ExampleCleanup, NAMESPACE, PORT, Reconciler, example, offline_katalog,
};
use common::{WAIT, ready, spawn_ork};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::{Client, ResourceExt};
use ork_test_support::{TestNamespace, apply_yaml, client, field_managers, resolve, wait_for};
use serde_json::{Value, json};

async fn webapps(client: &Client, ns: &str) -> Result<Api<DynamicObject>> {
    let gvk = GroupVersionKind::gvk("migrate.ork.dev", "v1alpha1", "WebApp");
    let (ar, _) = resolve(client, &gvk).await?;
    Ok(Api::namespaced_with(client.clone(), ns, &ar))
}

fn is_subset(small: &Value, big: &Value) -> bool {
    small
        .as_object()
        .is_some_and(|m| !m.is_empty() && m.iter().all(|(k, v)| big.get(k) == Some(v)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_orkestra_style_example_runs_unmodified_from_a_cluster_without_its_crd() -> Result<()> {
    let admin = client().await?;
    ensure!(
        TcpListener::bind(("127.0.0.1", PORT)).is_ok(),
        "127.0.0.1:{PORT} is taken: the example's Katalog calls its service there"
    );
    ExampleCleanup::now(&admin).await?;
    let _cleanup = ExampleCleanup;
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    assert!(
        crds.get_opt(CRD_NAME).await?.is_none(),
        "no CRD at the start"
    );

    let dir = std::env::temp_dir().join(format!("ork-orkestra-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let service = Reconciler::start(&example(), PORT, dir.join("reconciler.log"))?;
    let ork = spawn_ork(
        &example().join("katalog.yaml"),
        &dir.join("ork.log"),
        &[],
        &[],
    )?;
    let result = async {
        // ork installed the CRD from crdFile, and applied setup.yaml.
        let crd = wait_for("the CRD installed by ork", WAIT, || async {
            crds.get_opt(CRD_NAME).await.ok().flatten()
        })
        .await?;
        assert!(
            field_managers(&crd.metadata).contains(&"ork-setup".to_string()),
            "applied by ork: {:?}",
            field_managers(&crd.metadata)
        );
        let secrets: Api<Secret> = Api::namespaced(admin.clone(), NAMESPACE);
        wait_for("the token Secret from setup.yaml", WAIT, || async {
            secrets
                .get_opt("webapp-reconciler-token")
                .await
                .ok()
                .flatten()
        })
        .await?;

        // The CR from crFiles is reconciled (once the API server serves the new type).
        let api = wait_for("the WebApp type served", WAIT, || async {
            webapps(&admin, NAMESPACE).await.ok()
        })
        .await?;
        let cr = wait_for("my-webapp Ready=True", WAIT, || async {
            let cr = api.get("my-webapp").await.ok()?;
            (ready(&cr)?.0 == "True").then_some(cr)
        })
        .await?;
        assert_eq!(cr.data["status"]["phase"], "Running");
        assert_eq!(cr.data["status"]["replicas"], 2);
        assert_eq!(cr.data["status"]["environment"], "staging");
        // The entry's templated label is written onto the CR (after the reconcile, on ork's
        // lower-priority lane).
        wait_for("the entry's label on the CR", WAIT, || async {
            let cr = api.get("my-webapp").await.ok()?;
            (cr.labels().get("app.kubernetes.io/name")? == "my-webapp").then_some(())
        })
        .await?;

        // The Bearer token of the Secret reached the service; args were rendered from the CR;
        // the payload excludes were applied.
        let calls = service.calls_for("orkestra-remote/my-webapp");
        assert!(!calls.is_empty(), "the service was called");
        assert!(
            service.calls().iter().all(|c| c["authorized"] == true),
            "every call carried the Secret's token: {:?}",
            service.calls()
        );
        assert_eq!(
            calls[0]["args"],
            json!({"logLevel": "info", "environment": "staging", "appName": "my-webapp"})
        );
        assert_eq!(calls[0]["managedFieldsSent"], false);

        // Intents became a Deployment and a Service that routes to its pods.
        let deployments: Api<Deployment> = Api::namespaced(admin.clone(), NAMESPACE);
        let services: Api<Service> = Api::namespaced(admin.clone(), NAMESPACE);
        let deployment = serde_json::to_value(deployments.get("my-webapp").await?)?;
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 2);
        let container = &spec["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "nginx:1.27");
        assert_eq!(container["ports"][0]["containerPort"], 8080);
        assert_eq!(
            deployment["metadata"]["ownerReferences"][0]["name"], "my-webapp",
            "owned by the CR"
        );
        let pod_labels = &spec["template"]["metadata"]["labels"];
        assert!(is_subset(&spec["selector"]["matchLabels"], pod_labels));
        let svc = serde_json::to_value(services.get("my-webapp-svc").await?)?;
        assert!(
            is_subset(&svc["spec"]["selector"], pod_labels),
            "the Service selects the Deployment's pods: {} vs {}",
            svc["spec"]["selector"],
            pod_labels
        );
        assert_eq!(svc["spec"]["ports"][0]["port"], 8080);

        // Drift: replicas edited by hand are put back.
        deployments
            .patch(
                "my-webapp",
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"replicas": 5}})),
            )
            .await?;
        wait_for("replicas put back to 2", WAIT, || async {
            let d = deployments.get("my-webapp").await.ok()?;
            (d.spec?.replicas == Some(2)).then_some(())
        })
        .await?;

        // A CR outside allowedNamespaces is never sent to the service. An edit of the allowed
        // CR afterwards proves ork has seen both.
        let outside = TestNamespace::create(&admin).await?;
        let yaml = std::fs::read_to_string(example().join("cr.yaml"))?.replace(
            "namespace: orkestra-remote",
            &format!("namespace: {}", outside.name),
        );
        apply_yaml(&admin, &yaml, &outside.name).await?;
        api.patch(
            "my-webapp",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 3}})),
        )
        .await?;
        wait_for("the edit reconciled", WAIT, || async {
            let d = deployments.get("my-webapp").await.ok()?;
            (d.spec?.replicas == Some(3)).then_some(())
        })
        .await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let key = format!("{}/my-webapp", outside.name);
        assert!(
            service.calls_for(&key).is_empty(),
            "{key} is outside allowedNamespaces"
        );
        let foreign: Api<Deployment> = Api::namespaced(admin.clone(), &outside.name);
        assert!(foreign.get_opt("my-webapp").await?.is_none());

        // Deleting the CR takes its children with it (Kubernetes garbage collection, which
        // learns of a new CRD on its own discovery resync, every 30 s: hence the longer wait).
        api.delete("my-webapp", &DeleteParams::default()).await?;
        let gc = Duration::from_secs(120);
        wait_for("the Deployment and Service collected", gc, || async {
            let d = deployments.get_opt("my-webapp").await.ok()?;
            let s = services.get_opt("my-webapp-svc").await.ok()?;
            (d.is_none() && s.is_none()).then_some(())
        })
        .await?;
        anyhow::Ok(())
    }
    .await;
    if result.is_err() {
        eprintln!(
            "--- reconciler.py calls ---\n{:#?}\n--- ork log ---\n{}",
            service.calls(),
            ork.log()
        );
    }
    drop(ork);
    drop(service);
    result
}

#[test]
fn the_example_validates_and_shows_its_metadata() -> Result<()> {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .arg("validate")
        .current_dir(example())
        .output()?;
    let stdout = String::from_utf8(out.stdout)?;
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("Katalog webapp-remote 0.1.0 by the ork authors (license Apache-2.0)\n"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("\nwebapp: WebApp.migrate.ork.dev/v1alpha1 -> POST {{ reconcilerEndpoint }}"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  tags: example, migration, remote\n"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("./katalog.yaml: valid (1 entry)\n"),
        "{stdout}"
    );
    Ok(())
}

/// Issue 50 (3): as Orkestra does, `ork simulate` takes the `auth.secretRef` Secret from the
/// Katalog's own `setup` files: no `--secret`, no cluster, the Katalog unchanged.
#[test]
fn simulate_seeds_the_auth_secret_from_the_katalogs_setup_files() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("ork-orkestra-seed-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("home"))?;
    for file in ["crd.yaml", "setup.yaml", "cr.yaml", "reconciler.py"] {
        std::fs::copy(example().join(file), dir.join(file))?;
    }
    let setup = std::fs::read_to_string(dir.join("setup.yaml"))?;
    assert!(
        setup.contains("name: webapp-reconciler-token") && setup.contains("token: ork-demo-token"),
        "the example's setup holds the token Secret"
    );
    let service = Reconciler::start(&dir, 0, dir.join("reconciler.log"))?;
    let katalog = common::example::katalog_on_port(service.port)?;
    assert!(
        katalog.contains("secretRef:"),
        "the Katalog reads its token from a Secret"
    );
    std::fs::write(dir.join("katalog.yaml"), katalog)?;
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["simulate", "--cr", "cr.yaml"])
        .current_dir(&dir)
        .env_remove("KUBECONFIG")
        .env("HOME", dir.join("home"))
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("steady after"), "{text}");
    assert!(
        !text.contains("ork-demo-token"),
        "the value is never printed: {text}"
    );
    let calls = service.calls();
    assert!(
        !calls.is_empty() && calls.iter().all(|c| c["authorized"] == true),
        "{calls:?}"
    );
    drop(service);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn the_example_service_reaches_steady_state_in_simulate() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("ork-orkestra-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    for file in ["crd.yaml", "setup.yaml", "cr.yaml", "reconciler.py"] {
        std::fs::copy(example().join(file), dir.join(file))?;
    }
    let service = Reconciler::start(&dir, 0, dir.join("reconciler.log"))?;
    std::fs::write(dir.join("katalog.yaml"), offline_katalog(service.port)?)?;
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["simulate", "--cr", "cr.yaml"])
        .current_dir(&dir)
        .env("RECONCILER_TOKEN", "ork-demo-token")
        .output()?;
    let stdout = String::from_utf8(out.stdout)?;
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("+ Deployment orkestra-remote/my-webapp ("),
        "{stdout}"
    );
    assert!(
        stdout.contains("+ Service orkestra-remote/my-webapp-svc ("),
        "{stdout}"
    );
    assert!(stdout.contains("steady after"), "{stdout}");
    assert!(service.calls().iter().all(|c| c["authorized"] == true));
    drop(service);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Orkestra's finalizer, as Orkestra leaves it on every CR it managed.
const ORKESTRAS_FINALIZER: &str = "orkestra.orkspace.io/finalizer";

/// A WebApp of the example CRD in `ns` carrying Orkestra's finalizer, created as Orkestra
/// would have left it.
async fn orkestra_webapp(api: &Api<DynamicObject>, ns: &str, name: &str) -> Result<()> {
    let cr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "demo.ork.dev/v1",
        "kind": "WebApp",
        "metadata": {"name": name, "namespace": ns, "finalizers": [ORKESTRAS_FINALIZER]},
        "spec": {"image": "nginx:1", "replicas": 1}
    }))?;
    api.create(&kube::api::PostParams::default(), &cr).await?;
    Ok(())
}

/// A WebApp Orkestra left with its finalizer, deleted while nothing runs: it stays
/// Terminating (the setup the test must see before ork can be judged).
async fn terminating_orkestra_webapp(api: &Api<DynamicObject>, ns: &str, name: &str) -> Result<()> {
    orkestra_webapp(api, ns, name).await?;
    api.delete(name, &DeleteParams::default()).await?;
    let cr = api.get(name).await?;
    ensure!(
        cr.metadata.deletion_timestamp.is_some(),
        "{name} is Terminating, held by Orkestra's finalizer"
    );
    Ok(())
}

/// `kubectl delete` as a user moving from Orkestra types it (without waiting).
fn kubectl_delete(ns: &str, name: &str) -> Result<()> {
    let out = Command::new("kubectl")
        .args([
            "delete",
            "webapps.demo.ork.dev",
            name,
            "-n",
            ns,
            "--wait=false",
        ])
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    ensure!(
        out.status.success(),
        "kubectl delete: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// Whatever `body` found, the test's CRs are let go (a failed run must not leave its namespace
/// Terminating behind a finalizer nothing removes).
async fn releasing<F: std::future::Future<Output = Result<()>>>(
    api: &Api<DynamicObject>,
    body: F,
) -> Result<()> {
    let result = body.await;
    for name in ["deleted-before", "live"] {
        if api.get_opt(name).await?.is_some() {
            let none = json!({"metadata": {"finalizers": null}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&none))
                .await?;
        }
    }
    result
}

async fn gone(api: &Api<DynamicObject>, name: &str, limit: Duration) -> Result<()> {
    wait_for(&format!("{name} deleted"), limit, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crs_orkestra_left_its_finalizer_on_are_deleted_under_ork_with_their_children() -> Result<()>
{
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, common::CRD, &ns.name).await?;
    ork_test_support::wait_crd_established(&admin, "webapps.demo.ork.dev").await?;
    let api = common::webapps(&admin, &ns.name).await?;
    // One deleted under Orkestra's finalizer before ork ever ran, one live.
    releasing(&api, async {
        terminating_orkestra_webapp(&api, &ns.name, "deleted-before").await?;
        orkestra_webapp(&api, &ns.name, "live").await?;

        let svc = ork_test_support::fake_service::FakeService::start(
            ork_test_support::fake_service::webapp_answer,
        )
        .await?;
        let (_, _ork) = common::start_with(&ns, &common::http(&svc.url), "").await?;

        // The entry needs no finalizer (same-namespace children): the one that was waiting goes,
        // its children to garbage collection.
        gone(&api, "deleted-before", WAIT).await?;
        common::wait_ready(&api, "live", "True").await?;
        // On the live CR, Orkestra's finalizer is taken over: ork needs none, so none is left.
        let finalizers = wait_for("Orkestra's finalizer off the live CR", WAIT, || async {
            let cr = api.get("live").await.ok()?;
            (!cr.finalizers().iter().any(|f| f == ORKESTRAS_FINALIZER))
                .then(|| cr.finalizers().to_vec())
        })
        .await?;
        assert!(finalizers.is_empty(), "{finalizers:?}");
        let deployments: Api<Deployment> = Api::namespaced(admin.clone(), &ns.name);
        let services: Api<Service> = Api::namespaced(admin.clone(), &ns.name);
        ensure!(
            deployments.get_opt("live").await?.is_some(),
            "live's Deployment"
        );
        ensure!(services.get_opt("live").await?.is_some(), "live's Service");

        kubectl_delete(&ns.name, "live")?;
        gone(&api, "live", WAIT).await?;
        // Garbage collection learns of a CRD it has not seen on its discovery resync (30 s).
        wait_for(
            "live's Deployment and Service collected",
            Duration::from_secs(120),
            || async {
                let d = deployments.get_opt("live").await.ok()?;
                let s = services.get_opt("live").await.ok()?;
                (d.is_none() && s.is_none()).then_some(())
            },
        )
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orkestra_cr_of_an_entry_that_finalizes_gets_ork_s_finalizer_and_its_finalize_call()
-> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, common::CRD, &ns.name).await?;
    ork_test_support::wait_crd_established(&admin, "webapps.demo.ork.dev").await?;
    let api = common::webapps(&admin, &ns.name).await?;
    releasing(&api, async {
        terminating_orkestra_webapp(&api, &ns.name, "deleted-before").await?;
        orkestra_webapp(&api, &ns.name, "live").await?;

        let svc = ork_test_support::fake_service::FakeService::start(|req| {
            if req["prepared"]["finalizing"] == true {
                ork_test_support::fake_service::Reply::ok(
                    json!({"result": "ok", "finalized": true}),
                )
            } else {
                ork_test_support::fake_service::webapp_answer(req)
            }
        })
        .await?;
        // An entry named as Orkestra's examples name theirs (camelCase): the children ork tracks
        // for it are found by that name.
        let katalog = common::katalog(
            &ns.name,
            &common::http(&svc.url),
            "            finalize: true\n",
        )
        .replace("    webapp:\n", "    webApp:\n");
        ensure!(katalog.contains("    webApp:\n"), "the entry is webApp");
        let (_, _ork) = common::start_katalog(&ns, &katalog).await?;
        let finalized = |name: &str| {
            let key = format!("{}/{name}", ns.name);
            svc.received()
                .iter()
                .any(|r| r.body["key"] == key.as_str() && r.body["prepared"]["finalizing"] == true)
        };

        // The one deleted before ork ran is finalized as if ork's finalizer had held it.
        gone(&api, "deleted-before", WAIT).await?;
        assert!(finalized("deleted-before"), "its finalize call was made");
        // The live one carries ork's finalizer in place of Orkestra's.
        common::wait_ready(&api, "live", "True").await?;
        let finalizers = wait_for("ork's finalizer in place of Orkestra's", WAIT, || async {
            let cr = api.get("live").await.ok()?;
            (!cr.finalizers().iter().any(|f| f == ORKESTRAS_FINALIZER))
                .then(|| cr.finalizers().to_vec())
        })
        .await?;
        assert_eq!(finalizers, ["orkestra.orkspace.io/remote-finalizer"]);

        kubectl_delete(&ns.name, "live")?;
        gone(&api, "live", WAIT).await?;
        assert!(finalized("live"), "its finalize call was made");
        let deployments: Api<Deployment> = Api::namespaced(admin.clone(), &ns.name);
        ensure!(
            deployments.get_opt("live").await?.is_none(),
            "ork deleted the children it tracked before it let the CR go"
        );
        Ok(())
    })
    .await
}

/// A Katalog for the test namespace whose entry has `setup` (YAML at the entry's indentation),
/// its files written next to it.
fn with_setup(
    ns: &TestNamespace,
    url: &str,
    setup: &str,
    files: &[(&str, &str)],
) -> Result<String> {
    let dir = std::env::temp_dir().join(format!("ork-run-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    for (name, text) in files {
        std::fs::write(dir.join(name), text)?;
    }
    let katalog = common::katalog(&ns.name, &common::http(url), "").replace(
        &format!("      namespace: {}\n", ns.name),
        &format!("      namespace: {}\n{setup}", ns.name),
    );
    ensure!(katalog.contains(setup), "the setup is in the Katalog");
    Ok(katalog)
}

const SETUP_FILES: [(&str, &str); 2] = [
    (
        "config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config}\ndata: {a: b}\n",
    ),
    (
        "token.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: app-token}\nstringData: {token: t}\n",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_in_orkestra_s_map_form_is_applied_and_waited_for_before_the_entry_starts()
-> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let svc = ork_test_support::fake_service::FakeService::start(
        ork_test_support::fake_service::webapp_answer,
    )
    .await?;
    let setup = "      setup:
        apply:
          - ./config.yaml
          - path: ./token.yaml
            wait:
              - {kind: Secret, name: app-token, timeout: 20s}
        wait:
          - {kind: configmaps, name: app-config}
";
    let katalog = with_setup(&ns, &svc.url, setup, &SETUP_FILES)?;
    let (client, _ork) = common::start_katalog(&ns, &katalog).await?;
    common::create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = common::webapps(&client, &ns.name).await?;
    common::wait_ready(&api, "web", "True").await?;
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(admin.clone(), &ns.name);
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), &ns.name);
    let config = maps.get("app-config").await?;
    assert!(field_managers(&config.metadata).contains(&"ork-setup".to_string()));
    ensure!(
        secrets.get_opt("app-token").await?.is_some(),
        "the Secret of setup.apply[1]"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setup_wait_that_does_not_pass_stops_ork_run_with_the_wait_named() -> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let svc = ork_test_support::fake_service::FakeService::start(
        ork_test_support::fake_service::webapp_answer,
    )
    .await?;
    let setup = "      setup:
        apply: [./config.yaml]
        wait:
          - {kind: ConfigMap, name: never-made, timeout: 2s}
";
    let katalog = with_setup(&ns, &svc.url, setup, &SETUP_FILES)?;
    let (_, mut ork) = common::start_katalog(&ns, &katalog).await?;
    let status = wait_for("ork run to stop", WAIT, || {
        let done = ork.child.try_wait().ok().flatten();
        async move { done }
    })
    .await?;
    assert!(!status.success(), "ork run failed");
    let log = ork.log();
    let expected = format!(
        "setup.wait: ConfigMap {}/never-made did not pass within 2s: not found",
        ns.name
    );
    assert!(log.contains(&expected), "{expected}\n{log}");
    // What setup applied before the wait is there.
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(admin.clone(), &ns.name);
    ensure!(
        maps.get_opt("app-config").await?.is_some(),
        "setup.apply ran first"
    );
    Ok(())
}
