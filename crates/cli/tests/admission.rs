//! Admission by the entry's own service (SPEC §21) against the local cluster: `ork run
//! --register-webhooks` serves the webhook on loopback with a serving certificate from the CA
//! it keeps in its namespace, and the API server calls it for every write of the entry's CRs.
//! A CR the service denies is not stored and the writer reads the service's message; a CR the
//! service defaults is stored with the default; a dry run reaches the service as one; the CA
//! survives a restart; serving certificates are renewed with no failed write; a service that
//! hangs has writes refused within the timeout, with a message naming ork (`failurePolicy: Fail`).

mod common;

use std::time::Duration;

use anyhow::{Result, bail, ensure};
use common::*;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use ork_test_support::fake_service::{FakeService, Reply};
use ork_test_support::{TestNamespace, apply_yaml, client, wait_for};
use serde_json::{Value, json};

fn admission_katalog(name: &str, ns: &str, url: &str) -> String {
    format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: {name}}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          remote:
            endpoint: "{url}"
            timeout: 5s
            admission: {{validate: true, mutate: true, path: /admit, timeout: 3s}}
"#
    )
}

/// Denies the image `forbidden:1`, defaults `spec.replicas` to 3, and reconciles to nothing.
fn answer(req: &Value) -> Reply {
    let spec = &req["object"]["spec"];
    match req["phase"].as_str() {
        Some("validate") if spec["image"] == "forbidden:1" => {
            Reply::ok(json!({"allowed": false, "message": "image forbidden:1 is not allowed here"}))
        }
        Some("validate") => Reply::ok(json!({"allowed": true})),
        Some("mutate") if spec["replicas"].is_null() => Reply::ok(json!({"allowed": true,
            "patch": [{"op": "add", "path": "/spec/replicas", "value": 3}]})),
        Some(_) => Reply::ok(json!({"allowed": true})),
        None => Reply::ok(json!({"result": "ok", "resources": []})),
    }
}

fn webapp(name: &str, image: &str, replicas: Option<u32>) -> Result<DynamicObject> {
    let mut spec = json!({"image": image});
    if let Some(r) = replicas {
        spec["replicas"] = json!(r);
    }
    Ok(serde_json::from_value(json!({
        "apiVersion": "demo.ork.dev/v1", "kind": "WebApp",
        "metadata": {"name": name}, "spec": spec,
    }))?)
}

/// The admission requests the service received for CR `name`, of `phase`.
fn asked(svc: &FakeService, name: &str, phase: &str) -> Vec<Value> {
    svc.received()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["phase"] == phase && b["object"]["metadata"]["name"] == name)
        .collect()
}

/// Starts `ork run --register-webhooks` (its CA in `home`) and waits for the registration.
async fn start_ork(katalog: &std::path::Path, log: &std::path::Path, home: &str) -> Result<Ork> {
    let ork = spawn_ork(
        katalog,
        log,
        &[
            "--register-webhooks",
            "--webhook-addr=127.0.0.1:0",
            "--webhook-cert-lifetime=3s",
        ],
        &[("ORK_NAMESPACE", home)],
    )?;
    wait_for("both webhooks registered", WAIT, || async {
        let log = ork.log();
        (log.matches("registered the admission webhook").count() >= 2).then_some(())
    })
    .await?;
    Ok(ork)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_denies_defaults_and_sees_dry_runs_at_admission() -> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let home = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, CRD, &ns.name).await?;
    let svc = FakeService::start(answer).await?;
    let dir = std::env::temp_dir().join(format!("ork-admission-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    let katalog_name = format!("adm-{}", ns.name);
    std::fs::write(&path, admission_katalog(&katalog_name, &ns.name, &svc.url))?;
    let configuration = format!("ork-{katalog_name}-webapp");
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(admin.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(admin.clone());
    let result = async {
        let ork = start_ork(&path, &dir.join("ork.log"), &home.name).await?;
        ensure!(
            validating.get_opt(&configuration).await?.is_some()
                && mutating.get_opt(&configuration).await?.is_some(),
            "both configurations exist"
        );
        let apps = webapps(&admin, &ns.name).await?;

        // Denied: not stored, and the writer reads the service's words.
        let denied = apps
            .create(
                &PostParams::default(),
                &webapp("bad", "forbidden:1", Some(1))?,
            )
            .await;
        match denied {
            Ok(_) => bail!("a forbidden image was admitted"),
            Err(e) => ensure!(
                e.to_string()
                    .contains("image forbidden:1 is not allowed here"),
                "the service's message reaches the writer: {e}"
            ),
        }
        ensure!(
            apps.get_opt("bad").await?.is_none(),
            "a denied CR is not stored"
        );

        // Defaulted: stored with what the mutation added; the validation saw it.
        apps.create(&PostParams::default(), &webapp("web", "nginx:1", None)?)
            .await?;
        let web = apps.get("web").await?;
        ensure!(
            web.data["spec"]["replicas"] == 3,
            "defaulted: {:?}",
            web.data
        );
        ensure!(
            asked(&svc, "web", "validate")
                .iter()
                .any(|r| r["object"]["spec"]["replicas"] == 3 && r["operation"] == "CREATE"),
            "the validation judged the defaulted CR"
        );
        let user = asked(&svc, "web", "mutate")
            .first()
            .map(|r| r["userInfo"]["username"].clone())
            .unwrap_or_default();
        ensure!(user.is_string(), "the service is told who writes: {user}");

        // A dry run reaches the service as one, and stores nothing.
        let dry = PostParams {
            dry_run: true,
            ..Default::default()
        };
        apps.create(&dry, &webapp("dry", "nginx:1", Some(1))?)
            .await?;
        ensure!(
            asked(&svc, "dry", "validate")
                .iter()
                .all(|r| r["dryRun"] == true)
                && !asked(&svc, "dry", "validate").is_empty(),
            "dryRun: true"
        );
        ensure!(
            apps.get_opt("dry").await?.is_none(),
            "a dry run is not stored"
        );

        // Serving certificates live 3 s and are renewed after 2: writes over several
        // renewals are all admitted.
        for i in 0..6 {
            apps.create(
                &PostParams::default(),
                &webapp(&format!("renew-{i}"), "nginx:1", Some(1))?,
            )
            .await?;
            tokio::time::sleep(Duration::from_millis(1000)).await;
        }
        ensure!(
            ork.log()
                .contains("renewed the admission webhook's serving certificate"),
            "renewed meanwhile"
        );

        // A restart keeps the CA: the caBundle registered stays the same.
        let secrets: Api<Secret> = Api::namespaced(admin.clone(), &home.name);
        let ca = secrets
            .get("ork-webhook-ca")
            .await?
            .data
            .unwrap_or_default();
        let bundle = |c: &ValidatingWebhookConfiguration| {
            c.webhooks
                .as_ref()
                .and_then(|w| w[0].client_config.ca_bundle.clone())
        };
        let before = bundle(&validating.get(&configuration).await?);
        drop(ork);
        let ork = start_ork(&path, &dir.join("ork-2.log"), &home.name).await?;
        let after_ca = secrets
            .get("ork-webhook-ca")
            .await?
            .data
            .unwrap_or_default();
        ensure!(ca == after_ca, "the CA Secret is reused after a restart");
        ensure!(
            bundle(&validating.get(&configuration).await?) == before,
            "the same caBundle"
        );
        apps.create(&PostParams::default(), &webapp("again", "nginx:1", None)?)
            .await?;
        ensure!(
            apps.get("again").await?.data["spec"]["replicas"] == 3,
            "defaulted again"
        );

        // The service hung: the write is refused within the timeout, naming ork and the cause.
        svc.set_script(|_| Reply::Hang);
        let started = std::time::Instant::now();
        let refused = apps
            .create(&PostParams::default(), &webapp("down", "nginx:1", Some(1))?)
            .await;
        let took = started.elapsed();
        match refused {
            Ok(_) => bail!("admitted with the service down"),
            Err(e) => {
                let text = e.to_string();
                ensure!(
                    text.contains("ork: the admission service of entry webapp")
                        && text.contains("failurePolicy: Fail")
                        && !text.contains("context deadline exceeded"),
                    "ork answers before the API server gives up: {text}"
                );
            }
        }
        ensure!(
            took < Duration::from_secs(10),
            "within the webhook timeout: {took:?}"
        );
        drop(ork);
        Ok(())
    }
    .await;
    let _ = validating.delete(&configuration, &Default::default()).await;
    let _ = mutating.delete(&configuration, &Default::default()).await;
    result
}
