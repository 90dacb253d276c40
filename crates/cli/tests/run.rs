//! `ork run` against the local cluster and a scripted reconcile service on 127.0.0.1.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Service};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use ork_test_support::{TestNamespace, apply_yaml, client, field_managers, resolve, wait_for};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const CRD: &str = include_str!("../../../examples/webapp/crd.yaml");
const WAIT: Duration = Duration::from_secs(30);

/// How the fake service answers a request: HTTP status and body.
type Answer = Box<dyn Fn(&Value) -> (u16, String) + Send>;

/// A scripted reconcile service: answers every POST with `answer(request)`, records requests.
#[derive(Clone)]
struct FakeService {
    url: String,
    calls: Arc<Mutex<Vec<Value>>>,
    answer: Arc<Mutex<Answer>>,
}

impl FakeService {
    async fn start(
        answer: impl Fn(&Value) -> (u16, String) + Send + 'static,
    ) -> Result<FakeService> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/reconcile", listener.local_addr()?);
        let svc = FakeService {
            url,
            calls: Arc::default(),
            answer: Arc::new(Mutex::new(Box::new(answer))),
        };
        let s = svc.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        let Some(end) = find(&buf, b"\r\n\r\n") else {
                            let mut chunk = [0u8; 8192];
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        while buf.len() < end + 4 + len {
                            let mut chunk = [0u8; 8192];
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let body: Value = serde_json::from_slice(&buf[end + 4..end + 4 + len])
                            .unwrap_or(Value::Null);
                        buf.drain(..end + 4 + len);
                        let (status, text) = {
                            let answer = s.answer.lock().expect("lock");
                            answer(&body)
                        };
                        s.calls.lock().expect("lock").push(body);
                        let resp = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                            text.len()
                        );
                        if conn.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Ok(svc)
    }

    fn set_answer(&self, answer: impl Fn(&Value) -> (u16, String) + Send + 'static) {
        *self.answer.lock().expect("lock") = Box::new(answer);
    }

    fn calls(&self) -> usize {
        self.calls.lock().expect("lock").len()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The example's children, built from the request like the example service does.
fn webapp_answer(req: &Value) -> (u16, String) {
    let name = req["object"]["metadata"]["name"]
        .as_str()
        .unwrap_or("x")
        .to_string();
    let image = req["object"]["spec"]["image"].clone();
    (
        200,
        json!({
            "result": "ok",
            "status": {"phase": "Ready"},
            "resources": [
                {"type": "deployment", "fields": {"name": name, "image": image, "replicas": 1, "port": 80}},
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                 "spec": {"selector": {"app": name}, "ports": [{"port": 80, "protocol": "TCP"}]}}
            ]
        })
        .to_string(),
    )
}

/// `ork run` on a Katalog for the test namespace; killed when dropped.
struct Ork(Child);

impl Drop for Ork {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn katalog(ns: &str, url: &str, extra_managed: &str) -> String {
    format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: test}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          resync: 10m
          queue: {{retryBackoff: {{initial: 200ms, max: 2s}}}}
          remote:
            endpoint: "{url}"
            timeout: 2s
            managedResources:
              - {{group: apps, version: v1, plural: deployments}}
              - {{group: "", version: v1, plural: services}}
{extra_managed}"#
    )
}

async fn start(ns: &TestNamespace, svc: &FakeService) -> Result<(Client, Ork)> {
    let client = client().await?;
    apply_yaml(&client, CRD, &ns.name).await?;
    let dir = std::env::temp_dir().join(format!("ork-run-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog(&ns.name, &svc.url, ""))?;
    let child = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["run", "-k"])
        .arg(&path)
        .arg("--kubeconfig")
        .arg(ork_test_support::kubeconfig_path())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()?;
    Ok((client, Ork(child)))
}

async fn create_webapp(client: &Client, ns: &str, name: &str, image: &str) -> Result<()> {
    let yaml = format!(
        "apiVersion: demo.ork.dev/v1\nkind: WebApp\nmetadata: {{name: {name}}}\nspec: {{image: \"{image}\", replicas: 1}}\n"
    );
    apply_yaml(client, &yaml, ns).await?;
    Ok(())
}

async fn webapps(client: &Client, ns: &str) -> Result<Api<DynamicObject>> {
    let (ar, _) = resolve(
        client,
        &GroupVersionKind::gvk("demo.ork.dev", "v1", "WebApp"),
    )
    .await?;
    Ok(Api::namespaced_with(client.clone(), ns, &ar))
}

fn ready(obj: &DynamicObject) -> Option<(String, String)> {
    obj.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
}

async fn wait_ready(api: &Api<DynamicObject>, name: &str, want: &str) -> Result<(String, String)> {
    wait_for(&format!("{name} Ready={want}"), WAIT, || async {
        let obj = api.get(name).await.ok()?;
        ready(&obj).filter(|(s, _)| s == want)
    })
    .await
}

/// The example answer's WebApp "web" created and reconciled to Ready=True.
struct Ready {
    svc: FakeService,
    ns: TestNamespace,
    client: Client,
    api: Api<DynamicObject>,
    _ork: Ork,
}

impl Ready {
    async fn web() -> Result<Ready> {
        let svc = FakeService::start(webapp_answer).await?;
        let ns = TestNamespace::create(&client().await?).await?;
        let (client, ork) = start(&ns, &svc).await?;
        create_webapp(&client, &ns.name, "web", "nginx:1").await?;
        let api = webapps(&client, &ns.name).await?;
        wait_ready(&api, "web", "True").await?;
        Ok(Ready {
            svc,
            ns,
            client,
            api,
            _ork: ork,
        })
    }
}

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
    let cr = api.get("web").await?;
    assert_eq!(cr.data["status"]["phase"], "Ready");
    assert_eq!(cr.data["status"]["observedGeneration"], 1);
    assert!(
        cr.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("orkestra.orkspace.io/health")
    );

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
        (
            200,
            json!({"resources": [
                {"type": "deployment", "fields": {"name": name, "image": "nginx"}},
                {"type": "configmap", "fields": {"name": name, "data": {"a": "b"}}}
            ]})
            .to_string(),
        )
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
    let events = Api::<Event>::namespaced(client.clone(), &ns.name)
        .list(&ListParams::default())
        .await?;
    assert!(
        events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("WebAppReconcileError")
                && e.type_.as_deref() == Some("Warning"))
    );
    // Retried with backoff.
    wait_for("a retry", WAIT, || async {
        (svc.calls() >= 2).then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_errors_are_recorded_retried_and_recover() -> Result<()> {
    let svc = FakeService::start(|_| (500, "boom".into())).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, _ork) = start(&ns, &svc).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "web", "False").await?;
    assert!(message.contains("unexpected status 500"), "{message}");

    svc.set_answer(|_| (200, "<html>not json".into()));
    wait_for("garbage body reported", WAIT, || async {
        let obj = api.get("web").await.ok()?;
        ready(&obj).filter(|(_, m)| m.contains("not valid JSON"))
    })
    .await?;

    svc.set_answer(webapp_answer);
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
    svc.set_answer(|req| {
        let name = req["object"]["metadata"]["name"].as_str().unwrap_or("x").to_string();
        (200, json!({"resources": [{"type": "deployment", "fields": {"name": name, "image": "nginx:1"}}]}).to_string())
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
