//! The core's promises against the local cluster: fields the service drops are removed, a bad
//! answer fails its own CR only and frees its worker, a cluster-scoped CR's namespaced children
//! go with it.

mod common;

use common::*;

use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use ork_test_support::fake_service::{FakeService, Reply};
use ork_test_support::{
    TestNamespace, apply_yaml, client, resolve, wait_crd_established, wait_for,
};
use serde_json::{Value, json};

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn answer(resources: Value) -> Reply {
    Reply::ok(json!({"result": "ok", "status": {"phase": "Ready"}, "resources": resources}))
}

/// `katalog` (one of `configmap_katalog`'s) with `reconcile.onStart: call`.
fn on_start_call(katalog: String) -> String {
    katalog.replace(
        "          workers: ",
        "          onStart: call\n          workers: ",
    )
}

/// How many calls the service got for the CR `name`.
fn calls_for(svc: &FakeService, name: &str) -> usize {
    svc.received()
        .iter()
        .filter(|r| r.body["object"]["metadata"]["name"] == name)
        .count()
}

/// A service that answers every CR with one ConfigMap of the CR's name.
async fn one_config_map_each() -> std::io::Result<FakeService> {
    FakeService::start(|req| {
        let name = req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        answer(json!([config_map(name, json!({"k": "v"}))]))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_map_key_the_service_stops_sending_is_removed_from_the_live_object() -> Result<()>
{
    let svc = FakeService::start(|req| {
        let data = if req["object"]["spec"]["image"] == "v2" {
            json!({"a": "1"})
        } else {
            json!({"a": "1", "b": "2"})
        };
        answer(json!([config_map("settings", data)]))
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, _ork) = start_katalog(&ns, &configmap_katalog(&ns.name, &svc.url, 2, "")).await?;
    create_webapp(&client, &ns.name, "web", "v1").await?;
    let maps = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
    wait_for("the ConfigMap with keys a and b", WAIT, || async {
        let data = maps.get("settings").await.ok()?.data?;
        (data.len() == 2).then_some(())
    })
    .await?;

    let api = webapps(&client, &ns.name).await?;
    let patch = json!({"spec": {"image": "v2"}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let data = wait_for("key b removed", WAIT, || async {
        let data = maps.get("settings").await.ok()?.data?;
        (!data.contains_key("b")).then_some(data)
    })
    .await?;
    assert_eq!(data.get("a").map(String::as_str), Some("1"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_with_malformed_labels_fails_its_cr_only_and_frees_the_worker() -> Result<()> {
    let svc = FakeService::start(|req| {
        let name = req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        if name == "bad" {
            answer(json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "bad", "labels": "x"}}]))
        } else {
            answer(json!([config_map(name, json!({"k": "v"}))]))
        }
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    // One worker: a leaked worker would stop the entry.
    let (client, ork) = start_katalog(&ns, &configmap_katalog(&ns.name, &svc.url, 1, "")).await?;
    create_webapp(&client, &ns.name, "bad", "x").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "bad", "False").await?;
    assert!(message.contains("labels"), "{message}");
    for name in ["good-1", "good-2", "good-3"] {
        create_webapp(&client, &ns.name, name, "x").await?;
    }
    for name in ["good-1", "good-2", "good-3"] {
        wait_ready(&api, name, "True").await?;
    }
    let maps = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
    assert!(
        maps.get_opt("bad").await?.is_none(),
        "nothing of the bad answer applied"
    );
    let busy = wait_for("no worker busy", WAIT, || async {
        let text = get(ork.probes().await.ok()?, "/metrics").await.ok()?.1;
        let line = text
            .lines()
            .find(|l| l.starts_with("ork_workers_busy{") && l.contains("webapp"))?
            .to_string();
        line.ends_with(" 0").then_some(line)
    })
    .await?;
    assert!(busy.ends_with(" 0"));
    assert!(!ork.log().contains("panicked"), "no panic in the log");
    Ok(())
}

/// Tools built for Orkestra select on its marks: the CR and its children carry the managed
/// label and the managed-by (the Katalog's name) and managed-since annotations, the latter
/// written once, all within the writes ork makes anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciled_cr_and_its_children_carry_orkestra_s_managed_marks() -> Result<()> {
    const BY: &str = "orkestra.orkspace.io/managed-by";
    const SINCE: &str = "orkestra.orkspace.io/managed-since";
    // One ConfigMap holding the CR's image: an edit of the image rewrites it.
    let svc = FakeService::start(|req| {
        let image = req["object"]["spec"]["image"].clone();
        answer(json!([config_map("web", json!({ "image": image }))]))
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let katalog = configmap_katalog(&ns.name, &svc.url, 2, "");
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    create_webapp(&client, &ns.name, "web", "v1").await?;
    let api = webapps(&client, &ns.name).await?;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let marks = |meta: &kube::core::ObjectMeta| {
        let a = meta.annotations.clone().unwrap_or_default();
        (a.get(BY).cloned(), a.get(SINCE).cloned())
    };
    let (cr_since, child_since) = wait_for("the marks on the CR and its child", WAIT, || async {
        let cr = api.get("web").await.ok()?;
        let child = maps.get("web").await.ok()?;
        let labelled = cr
            .labels()
            .get("orkestra.orkspace.io/managed")
            .map(String::as_str);
        let ((by, since), (child_by, child_since)) = (marks(&cr.metadata), marks(&child.metadata));
        (labelled == Some("true")
            && by.as_deref() == Some("test")
            && child_by.as_deref() == Some("test"))
        .then_some((since?, child_since?))
    })
    .await?;
    assert!(
        cr_since.ends_with('Z') && child_since.ends_with('Z'),
        "{cr_since} {child_since}"
    );
    // An edit rewrites the child; when ork took both over stays.
    create_webapp(&client, &ns.name, "web", "v2").await?;
    let (cr, child) = wait_for("the edit applied", WAIT, || async {
        let child = maps.get("web").await.ok()?;
        let image = child.data.as_ref()?.get("image")?.clone();
        (image == "v2").then_some(())?;
        Some((api.get("web").await.ok()?, child))
    })
    .await?;
    assert_eq!(marks(&cr.metadata).1.as_deref(), Some(cr_since.as_str()));
    assert_eq!(
        marks(&child.metadata).1.as_deref(),
        Some(child_since.as_str())
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_service_sees_typed_objects_and_nothing_is_reapplied() -> Result<()> {
    let svc = one_config_map_each().await?;
    let ns = TestNamespace::create(&client().await?).await?;
    // `onStart: call`: every CR is called at start, unchanged or not, as Orkestra does.
    let katalog = on_start_call(configmap_katalog(&ns.name, &svc.url, 2, ""));
    let (client, ork) = start_katalog(&ns, &katalog).await?;
    create_webapp(&client, &ns.name, "web", "v1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    drop(ork);

    // The restarted ork reads the CR and its child from a list, whose items carry no type.
    let calls = svc.calls();
    let (_, ork) = start_katalog(&ns, &katalog).await?;
    wait_for("the start-up call", WAIT, || async {
        (svc.calls() > calls).then_some(())
    })
    .await?;
    let request = svc.received().last().cloned().expect("a request").body;
    assert_eq!(request["object"]["kind"], "WebApp");
    assert_eq!(request["object"]["apiVersion"], "demo.ork.dev/v1");
    let child = &request["prepared"]["children"]["configmap"]["web"];
    assert_eq!(child["kind"], "ConfigMap", "{child}");
    assert_eq!(child["apiVersion"], "v1");
    // The answer is what it was: the child is left alone.
    let applies = wait_for("the reconcile recorded", WAIT, || async {
        let text = get(ork.probes().await.ok()?, "/metrics").await.ok()?.1;
        text.contains("ork_reconciles_total{").then_some(text)
    })
    .await?;
    let applied: Vec<&str> = applies
        .lines()
        .filter(|l| l.starts_with("ork_apply_operations_total{") && !l.ends_with(" 0"))
        .collect();
    assert!(
        applied.is_empty(),
        "no apply after the restart: {applied:?}"
    );
    Ok(())
}

const TENANT_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: tenants.demo.ork.dev}
spec:
  group: demo.ork.dev
  scope: Cluster
  names: {plural: tenants, singular: tenant, kind: Tenant}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;

/// ork for a cluster-scoped `Tenant` whose service answers one ConfigMap `<name>-quota` in the
/// test namespace (a child Kubernetes does not collect: ork's finalizer goes on the tenant).
struct Tenants {
    tenants: Api<DynamicObject>,
    maps: Api<ConfigMap>,
    katalog: std::path::PathBuf,
    _svc: FakeService,
}

impl Tenants {
    async fn start(ns: &TestNamespace) -> Result<(Tenants, Ork)> {
        let client = client().await?;
        apply_yaml(&client, TENANT_CRD, &ns.name).await?;
        wait_crd_established(&client, "tenants.demo.ork.dev").await?;
        let target = ns.name.clone();
        let svc = FakeService::start(move |req| {
            let name = req["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default();
            let mut cm = config_map(&format!("{name}-quota"), json!({"cpu": "4"}));
            cm["metadata"]["namespace"] = json!(target);
            answer(json!([cm]))
        })
        .await?;
        let katalog = format!(
            r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: test}}
spec:
  crds:
    tenant:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: Tenant, plural: tenants}}
      namespaced: false
      labelSelector: {{test: "{ns}"}}
      operatorBox:
        reconcile:
          default: false
          queue: {{retryBackoff: {{initial: 200ms, max: 2s}}}}
          remote:
            endpoint: "{url}"
            timeout: 2s
            managedResources:
              - {{group: "", version: v1, plural: configmaps, namespaces: ["{ns}"]}}
"#,
            ns = ns.name,
            url = svc.url
        );
        let dir = std::env::temp_dir().join(format!("ork-core-{}", ns.name));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("katalog.yaml");
        std::fs::write(&path, katalog)?;
        let (ar, _) = resolve(
            &client,
            &GroupVersionKind::gvk("demo.ork.dev", "v1", "Tenant"),
        )
        .await?;
        let t = Tenants {
            tenants: Api::all_with(client.clone(), &ar),
            maps: Api::namespaced(client, &ns.name),
            katalog: path,
            _svc: svc,
        };
        let ork = t.spawn("ork.log")?;
        Ok((t, ork))
    }

    fn spawn(&self, log: &str) -> Result<Ork> {
        let log = self.katalog.with_file_name(log);
        spawn_ork(&self.katalog, &log, &[], &[])
    }

    /// Creates tenant `name` and waits for its ConfigMap.
    async fn create(&self, ns: &TestNamespace, name: &str) -> Result<ConfigMap> {
        let tenant = json!({"apiVersion": "demo.ork.dev/v1", "kind": "Tenant",
            "metadata": {"name": name, "labels": {"test": ns.name}}, "spec": {}});
        self.tenants
            .create(&Default::default(), &serde_json::from_value(tenant)?)
            .await?;
        let quota = format!("{name}-quota");
        wait_for("the tenant's ConfigMap", WAIT, || async {
            self.maps.get_opt(&quota).await.ok().flatten()
        })
        .await
    }

    async fn wait_gone(&self, name: &str) -> Result<()> {
        let quota = format!("{name}-quota");
        wait_for(
            "the ConfigMap deleted and the tenant gone",
            WAIT,
            || async {
                let cm_gone = matches!(self.maps.get_opt(&quota).await, Ok(None));
                let cr_gone = matches!(self.tenants.get_opt(name).await, Ok(None));
                (cm_gone && cr_gone).then_some(())
            },
        )
        .await
    }

    /// Deletes tenant `name` past ork's finalizer: removed by hand first, as a user might.
    async fn delete_past_the_finalizer(&self, name: &str) -> Result<()> {
        let none = json!({"metadata": {"finalizers": null}});
        self.tenants
            .patch(name, &PatchParams::default(), &Patch::Merge(&none))
            .await?;
        self.tenants.delete(name, &DeleteParams::default()).await?;
        Ok(())
    }
}

/// How many children `ork` swept (its `/metrics`).
async fn swept(ork: &Ork) -> Result<u64> {
    let (_, metrics) = get(ork.probes().await?, "/metrics").await?;
    Ok(metrics
        .lines()
        .filter(|l| l.starts_with("ork_apply_operations_total") && l.contains("result=\"swept\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_scoped_cr_s_namespaced_children_are_deleted_with_it() -> Result<()> {
    let ns = TestNamespace::create(&client().await?).await?;
    let (t, ork) = Tenants::start(&ns).await?;
    let name = format!("t-{}", ns.name);
    let cm = t.create(&ns, &name).await?;
    let uid = t.tenants.get(&name).await?.metadata.uid.unwrap_or_default();
    assert_eq!(
        cm.metadata.labels.unwrap_or_default()["orkestra.orkspace.io/owner-uid"],
        uid
    );
    let finalizers = t
        .tenants
        .get(&name)
        .await?
        .metadata
        .finalizers
        .unwrap_or_default();
    assert!(
        finalizers.contains(&"orkestra.orkspace.io/remote-finalizer".to_string()),
        "{finalizers:?}"
    );

    let before = swept(&ork).await?;
    t.tenants.delete(&name, &DeleteParams::default()).await?;
    t.wait_gone(&name).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(swept(&ork).await?, before, "the finalizer did the work");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_of_a_cr_deleted_past_ork_s_finalizer_are_deleted_running_or_at_start()
-> Result<()> {
    let ns = TestNamespace::create(&client().await?).await?;
    let (t, ork) = Tenants::start(&ns).await?;

    // While ork runs: the tenant goes at once, without ork's finalize.
    let running = format!("r-{}", ns.name);
    t.create(&ns, &running).await?;
    let before = swept(&ork).await?;
    t.delete_past_the_finalizer(&running).await?;
    t.wait_gone(&running).await?;
    assert!(swept(&ork).await? > before, "counted in /metrics");

    // While ork is stopped: the next ork finds the ConfigMap without its tenant.
    let stopped = format!("s-{}", ns.name);
    t.create(&ns, &stopped).await?;
    drop(ork);
    t.delete_past_the_finalizer(&stopped).await?;
    let _ork = t.spawn("ork-again.log")?;
    t.wait_gone(&stopped).await?;

    // Deleted past the finalizer and created again at once under the same name: the new
    // tenant ends up with its own ConfigMap.
    let again = format!("a-{}", ns.name);
    t.create(&ns, &again).await?;
    t.delete_past_the_finalizer(&again).await?;
    t.create(&ns, &again).await?;
    let uid = t
        .tenants
        .get(&again)
        .await?
        .metadata
        .uid
        .unwrap_or_default();
    let quota = format!("{again}-quota");
    wait_for("the ConfigMap owned by the new tenant", WAIT, || async {
        let cm = t.maps.get_opt(&quota).await.ok().flatten()?;
        (cm.metadata.labels?.get("orkestra.orkspace.io/owner-uid") == Some(&uid)).then_some(())
    })
    .await?;

    // A tenant that only left ork's selection still exists: its ConfigMap stays.
    let relabelled = format!("l-{}", ns.name);
    t.create(&ns, &relabelled).await?;
    let off = json!({"metadata": {"labels": {"test": "someone-else"}}});
    t.tenants
        .patch(&relabelled, &PatchParams::default(), &Patch::Merge(&off))
        .await?;
    wait_for("ork to look at the relabelled tenant", WAIT, || async {
        _ork.log()
            .contains("left this entry's view but exists")
            .then_some(())
    })
    .await?;
    let quota = format!("{relabelled}-quota");
    assert!(t.maps.get_opt(&quota).await?.is_some());
    let none = json!({"metadata": {"finalizers": null}});
    t.tenants
        .patch(&relabelled, &PatchParams::default(), &Patch::Merge(&none))
        .await?;
    t.tenants
        .delete(&relabelled, &DeleteParams::default())
        .await?;
    t.maps.delete(&quota, &DeleteParams::default()).await?;
    // Tenants are cluster-scoped: none may outlive the test.
    t.tenants.delete(&again, &DeleteParams::default()).await?;
    t.wait_gone(&again).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_object_the_cr_does_not_own_is_not_taken_over_unless_adopt_is_set() -> Result<()>
{
    let svc = FakeService::start(|req| {
        let name = req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default();
        answer(json!([config_map(
            &format!("{name}-settings"),
            json!({"from": "ork"})
        )]))
    })
    .await?;
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let maps = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
    for name in ["web-settings", "adopted-settings"] {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": name}, "data": {"from": "someone"}}),
        )?;
        maps.create(&Default::default(), &cm).await?;
    }

    // Without adopt: refused, named, and the object left alone.
    let (client, _ork) = start_katalog(&ns, &configmap_katalog(&ns.name, &svc.url, 2, "")).await?;
    create_webapp(&client, &ns.name, "web", "x").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "web", "False").await?;
    assert!(
        message.contains("web-settings already exists") && message.contains("adopt"),
        "{message}"
    );
    let untouched = maps.get("web-settings").await?;
    assert_eq!(untouched.data.unwrap_or_default()["from"], "someone");
    // The flight recorder keeps the plan with its refused step, for `ork explain`.
    let addr = _ork.http().await?;
    let path = format!("/katalog/webapp/objects/{}/web", ns.name);
    let (code, body) = get_as(addr, &path, &admin_token()?).await?;
    assert_eq!(code, 200, "{body}");
    let record: serde_json::Value = serde_json::from_str(&body)?;
    let steps = record["records"][0]["plan"]["steps"].to_string();
    assert!(
        steps.contains("refused") && steps.contains("web-settings"),
        "{record:#}"
    );

    // An object created while ork runs is known too, and so is one that carries ork's label
    // without ork having written it (the children's watch sees it, the other watch does not).
    let labelled = json!({"orkestra.orkspace.io/managed": "true"});
    for (cr, labels) in [("late", json!({})), ("labelled", labelled)] {
        let name = format!("{cr}-settings");
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels}, "data": {"from": "someone"}
        }))?;
        maps.create(&Default::default(), &cm).await?;
        create_webapp(&client, &ns.name, cr, "x").await?;
        let (_, message) = wait_ready(&api, cr, "False").await?;
        assert!(
            message.contains(&format!("{name} already exists")),
            "{message}"
        );
        let untouched = maps.get(&name).await?;
        assert_eq!(untouched.data.unwrap_or_default()["from"], "someone");
    }
    drop(_ork);

    // With adopt: true on the managed resource, ork takes it over.
    let adopting = configmap_katalog(&ns.name, &svc.url, 2, ", adopt: true");
    let (client, _ork) = start_katalog(&ns, &adopting).await?;
    create_webapp(&client, &ns.name, "adopted", "x").await?;
    wait_ready(&api, "adopted", "True").await?;
    let taken = maps.get("adopted-settings").await?;
    assert_eq!(taken.data.unwrap_or_default()["from"], "ork");
    Ok(())
}

/// ork speaks HTTP/1.1 with the API server by default (`--api-http1`, the old spelling, says
/// the same); `--api-http2` shares one HTTP/2 connection for every request and watch where the
/// API server offers it, as client-go. Either way the CR converges, and ork says at start which
/// it got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ork_speaks_http1_with_the_api_server_unless_told_http2() -> Result<()> {
    let svc = one_config_map_each().await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let katalog = configmap_katalog(&ns.name, &svc.url, 2, "");
    for (args, http, name) in [
        (&[][..], "HTTP/1.1", "by-default"),
        (&["--api-http1"][..], "HTTP/1.1", "over-h1"),
        (&["--api-http2"][..], "HTTP/2.0", "over-h2"),
    ] {
        // The first ork is stopped (dropped) before the second starts.
        let (client, ork) = start_katalog_with(&ns, &katalog, args).await?;
        create_webapp(&client, &ns.name, name, "x").await?;
        wait_ready(&webapps(&client, &ns.name).await?, name, "True").await?;
        let maps = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
        assert!(
            maps.get_opt(name).await?.is_some(),
            "{name}'s child applied"
        );
        let log = ork.log();
        let start = log
            .lines()
            .find(|l| l.contains("ork starting"))
            .unwrap_or_default();
        assert!(start.contains(http), "{args:?}: {start}");
    }
    Ok(())
}

/// The recovery after a service outage (SPEC §10): while the service cannot answer, one CR is
/// tried about every second ahead of its backoff; the first answer lets every CR that waited
/// for it go. Without it, a CR whose backoff had grown to a minute stayed failed for that minute
/// after the service was back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cr_failing_while_its_service_is_down_is_reconciled_once_it_answers_not_after_its_backoff()
-> Result<()> {
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let script_down = down.clone();
    let svc = FakeService::start(move |req| {
        if script_down.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::Respond(503, "down for maintenance".into())
        } else {
            ork_test_support::fake_service::webapp_answer(req)
        }
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let katalog = katalog(&ns.name, &http(&svc.url), "").replace(
        "retryBackoff: {initial: 200ms, max: 2s}",
        "retryBackoff: {initial: 1s, max: 2m, multiplier: 2}",
    );
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "web", "False").await?;
    assert!(message.contains("503"), "{message}");
    // Enough failures in a row that the CR's own retry is a minute or more away.
    let failed = wait_for("seven failed calls", WAIT, || async {
        let n = svc.calls();
        (n >= 7).then_some(n)
    })
    .await?;
    let backoff = Duration::from_secs(1 << (failed - 1).min(7)).min(Duration::from_secs(120));
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    let back = std::time::Instant::now();
    wait_ready(&api, "web", "True").await?;
    let took = back.elapsed();
    eprintln!("Ready {took:?} after the service answered again (its backoff: {backoff:?})");
    assert!(
        took < backoff / 4,
        "Ready after {took:?}: the CR waited out its backoff of {backoff:?}"
    );
    Ok(())
}

/// Status hygiene (SPEC §14): status keys and conditions the service stops returning go from
/// the CR, and `observedGeneration` is the generation the service's status describes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_keys_and_conditions_the_service_stops_returning_leave_the_cr() -> Result<()> {
    let svc = FakeService::start(|req| {
        let replicas = req["object"]["spec"]["replicas"].as_i64().unwrap_or(1);
        let (status, conditions) = if replicas == 1 {
            (
                json!({"phase": "Active", "quotaItems": 2}),
                json!([{"type": "HasUsers", "status": "True", "reason": "Bound", "message": "3 users bound"}]),
            )
        } else {
            (json!({"phase": "Active"}), json!([]))
        };
        Reply::ok(json!({"result": "ok", "status": status, "conditions": conditions, "resources": []}))
    })
    .await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, _ork) = start(&ns, &svc).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_for("the first status", WAIT, || async {
        let o = api.get("web").await.ok()?;
        (o.data["status"]["quotaItems"] == 2).then_some(())
    })
    .await?;
    let has_users = |o: &DynamicObject| {
        o.data["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "HasUsers"))
    };
    assert!(has_users(&api.get("web").await?));
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicas": 2}})),
    )
    .await?;
    let status = wait_for("the second status", WAIT, || async {
        let o = api.get("web").await.ok()?;
        (o.data["status"]["observedGeneration"] == 2).then_some(o)
    })
    .await?;
    assert_eq!(status.data["status"]["phase"], "Active");
    assert!(
        status.data["status"].get("quotaItems").is_none(),
        "a key the service no longer returns stays: {}",
        status.data["status"]
    );
    assert!(!has_users(&status), "{}", status.data["status"]);
    assert_eq!(ready(&status).map(|(s, _)| s).as_deref(), Some("True"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_calls_only_what_changed_while_ork_was_down_and_on_start_call_calls_all()
-> Result<()> {
    let svc = one_config_map_each().await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let katalog = configmap_katalog(&ns.name, &svc.url, 2, "");
    let (client, ork) = start_katalog(&ns, &katalog).await?;
    let names = ["edited", "child-gone", "child-drifted", "untouched"];
    for name in names {
        create_webapp(&client, &ns.name, name, "v1").await?;
    }
    let api = webapps(&client, &ns.name).await?;
    for name in names {
        wait_ready(&api, name, "True").await?;
    }
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    // Every CR's record is written (its seal rides on the metrics annotation).
    wait_for("every CR sealed", WAIT, || async {
        let list = api.list(&Default::default()).await.ok()?;
        list.items
            .iter()
            .all(|o| {
                o.annotations()
                    .get("orkestra.orkspace.io/metrics")
                    .is_some_and(|m| m.contains("seal"))
            })
            .then_some(())
    })
    .await?;
    drop(ork);

    // While ork is down: an edit, a child deleted, a child changed, one CR left alone.
    create_webapp(&client, &ns.name, "edited", "v2").await?;
    maps.delete("child-gone", &Default::default()).await?;
    let drift = json!({"data": {"k": "changed by hand"}});
    maps.patch(
        "child-drifted",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&drift),
    )
    .await?;
    let before: Vec<usize> = names.iter().map(|n| calls_for(&svc, n)).collect();
    let (_, ork) = start_katalog(&ns, &katalog).await?;
    for (i, name) in names.iter().take(3).enumerate() {
        wait_for(
            &format!("{name} called after the restart"),
            WAIT,
            || async { (calls_for(&svc, name) > before[i]).then_some(()) },
        )
        .await?;
    }
    wait_for("the deleted child back", WAIT, || async {
        maps.get_opt("child-gone").await.ok()?
    })
    .await?;
    wait_for("the changed child put back", WAIT, || async {
        let cm = maps.get("child-drifted").await.ok()?;
        (cm.data?.get("k")? == "v").then_some(())
    })
    .await?;
    // The untouched CR is not called: the metric says so once the start is through.
    let metrics = wait_for("the unchanged CR counted", WAIT, || async {
        let text = get(ork.probes().await.ok()?, "/metrics").await.ok()?.1;
        text.lines()
            .any(|l| l.starts_with("ork_unchanged_at_start_total{") && l.ends_with(" 1"))
            .then_some(text)
    })
    .await?;
    assert!(metrics.contains("entry=\"webapp\""), "{metrics}");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(
        calls_for(&svc, "untouched"),
        before[3],
        "an unchanged CR was called"
    );
    drop(ork);

    // `onStart: call`: every CR is called.
    let before = calls_for(&svc, "untouched");
    let (_, _ork) = start_katalog(&ns, &on_start_call(katalog.clone())).await?;
    wait_for(
        "the unchanged CR called with onStart: call",
        WAIT,
        || async { (calls_for(&svc, "untouched") > before).then_some(()) },
    )
    .await?;
    Ok(())
}

/// SPEC §19: an entry reconfigured while ork was down (here its `args`) calls each CR whose
/// CR and children did not change, so it gets the new configuration's answer, each at its
/// own moment of a spread (the resync period, at most five minutes) rather than all at once;
/// a restart with the same configuration calls none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconfigured_entry_calls_its_unchanged_crs_each_in_its_turn() -> Result<()> {
    let svc = one_config_map_each().await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let katalog = configmap_katalog(&ns.name, &svc.url, 2, "").replace(
        "          workers: ",
        "          resync: 6s\n          workers: ",
    );
    anyhow::ensure!(katalog.contains("resync: 6s"), "the fixture sets a resync");
    let (client, ork) = start_katalog(&ns, &katalog).await?;
    let names = ["a", "b", "c", "d"];
    for name in names {
        create_webapp(&client, &ns.name, name, "v1").await?;
    }
    let api = webapps(&client, &ns.name).await?;
    for name in names {
        wait_ready(&api, name, "True").await?;
    }
    wait_for("every CR sealed", WAIT, || async {
        let list = api.list(&Default::default()).await.ok()?;
        (list.items.len() == names.len()
            && list.items.iter().all(|o| {
                o.annotations()
                    .get("orkestra.orkspace.io/metrics")
                    .is_some_and(|m| m.contains("seal"))
            }))
        .then_some(())
    })
    .await?;
    let seals = |list: &kube::core::ObjectList<DynamicObject>| -> Vec<String> {
        list.items
            .iter()
            .filter_map(|o| {
                let m: Value =
                    serde_json::from_str(o.annotations().get("orkestra.orkspace.io/metrics")?)
                        .ok()?;
                m["seal"].as_str().map(str::to_string)
            })
            .collect()
    };
    let first_seals = seals(&api.list(&Default::default()).await?);
    drop(ork);

    let reconfigured = katalog.replace(
        "            timeout: 5s\n",
        "            timeout: 5s\n            args: {tier: gold}\n",
    );
    anyhow::ensure!(
        reconfigured.contains("tier: gold"),
        "the fixture changes args"
    );
    let (_, ork) = start_katalog(&ns, &reconfigured).await?;
    let gold = |name: &str| {
        svc.received().iter().any(|r| {
            r.body["object"]["metadata"]["name"] == name && r.body["args"]["tier"] == "gold"
        })
    };
    wait_for("every CR called with the new args", WAIT, || async {
        names.iter().all(|n| gold(n)).then_some(())
    })
    .await?;
    let turns = ork
        .log()
        .matches("the entry was reconfigured since its last reconcile; called in its turn")
        .count();
    anyhow::ensure!(
        turns == names.len(),
        "each unchanged CR was called in its turn, not at the start: {turns}"
    );
    // Sealed under the new configuration: the next restart calls nobody.
    wait_for("every CR sealed under the new args", WAIT, || async {
        let now = seals(&api.list(&Default::default()).await.ok()?);
        (now.len() == names.len() && now.iter().all(|s| !first_seals.contains(s))).then_some(())
    })
    .await?;
    drop(ork);
    let (_, ork) = start_katalog(&ns, &reconfigured).await?;
    wait_for("the unchanged CRs counted", WAIT, || async {
        let text = get(ork.probes().await.ok()?, "/metrics").await.ok()?.1;
        text.lines()
            .any(|l| l.starts_with("ork_unchanged_at_start_total{") && l.ends_with(" 4"))
            .then_some(())
    })
    .await?;
    Ok(())
}
