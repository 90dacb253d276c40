//! Inputs (SPEC §20) against the local cluster, with `ork run` under exactly the RBAC `ork
//! generate rbac` derives: a CR's Secret reaches the service in `prepared.inputs`, an edit of
//! it reconciles that CR and no other, a label-selected list follows adds and removals, a
//! deleted input makes the CR wait with `InputMissing`, and the Secret's value is nowhere in
//! what ork keeps or shows (conditions, the flight recorder, its log) even when the service
//! echoes it.

mod common;

use std::time::Duration;

use anyhow::{Result, ensure};
use common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams};
use ork_test_support::fake_service::{FakeService, Reply};
use ork_test_support::{TestNamespace, apply_yaml, client, wait_for};
use serde_json::{Value, json};

fn inputs_katalog(ns: &str, shared: &str, url: &str) -> String {
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
        observe:
          inputs:
            - {{name: db, apiVersion: v1, kind: Secret, matchName: "{{{{ .metadata.name }}}}-db", values: true}}
            - {{name: registry, apiVersion: v1, kind: Secret, matchName: registry, namespace: {shared}, optional: true}}
            - {{name: shared, apiVersion: v1, kind: ConfigMap, matchLabels: {{shared: "yes"}}}}
        reconcile:
          default: false
          resync: 10m
          queue: {{retryBackoff: {{initial: 200ms, max: 2s}}}}
          remote:
            endpoint: "{url}"
            timeout: 5s
"#
    )
}

fn base64(text: &str) -> String {
    serde_json::to_value(k8s_openapi::ByteString(text.as_bytes().to_vec()))
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn secret(name: &str, password: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}}}\nstringData: {{password: \"{password}\"}}\n"
    )
}

fn shared_map(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, labels: {{shared: \"yes\"}}}}\ndata: {{k: v}}\n"
    )
}

/// The service: `ok`, except for a CR named `echo`, whose answer is an error that repeats its
/// password back.
fn answer(req: &Value) -> Reply {
    if req["object"]["metadata"]["name"] == "echo" {
        let password = req["prepared"]["inputs"]["db"]["data"]["password"]
            .as_str()
            .and_then(|b| serde_json::from_value::<k8s_openapi::ByteString>(json!(b)).ok())
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .unwrap_or_default();
        return Reply::ok(
            json!({"result": "error", "error": format!("login as admin:{password} refused")}),
        );
    }
    Reply::ok(json!({"result": "ok", "resources": []}))
}

/// The requests the service received for CR `name`.
fn calls(svc: &FakeService, name: &str) -> Vec<Value> {
    svc.received()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["object"]["metadata"]["name"] == name)
        .collect()
}

fn shared_names(req: &Value) -> Vec<String> {
    req["prepared"]["inputs"]["shared"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits for the call of `name` after the first `after` with `check` holding.
async fn next_call(
    svc: &FakeService,
    name: &str,
    after: usize,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Result<Value> {
    wait_for(what, WAIT, || async {
        calls(svc, name).into_iter().skip(after).find(|c| check(c))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cr_gets_its_inputs_and_exactly_their_readers_follow_each_change() -> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let home = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, CRD, &ns.name).await?;
    for yaml in [
        secret("one-db", "pass-one-1"),
        secret("two-db", "pass-two-1"),
        secret("echo-db", "hunter2-echo"),
        shared_map("shared-a"),
    ] {
        apply_yaml(&admin, &yaml, &ns.name).await?;
    }
    // The registry's Secret lives in a namespace of its own, which the Katalog names.
    let shared = TestNamespace::create(&admin).await?;
    apply_yaml(
        &admin,
        &secret("registry", "registry-token-9"),
        &shared.name,
    )
    .await?;
    let registry: Api<Secret> = Api::namespaced(admin.clone(), &shared.name);
    ensure!(
        registry.get_opt("registry").await?.is_some(),
        "fixture registry"
    );
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), &ns.name);
    let maps: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns.name);
    for name in ["one-db", "two-db", "echo-db"] {
        ensure!(secrets.get_opt(name).await?.is_some(), "fixture {name}");
    }
    ensure!(
        maps.get_opt("shared-a").await?.is_some(),
        "fixture shared-a"
    );

    let svc = FakeService::start(answer).await?;
    let dir = std::env::temp_dir().join(format!("ork-inputs-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, inputs_katalog(&ns.name, &shared.name, &svc.url))?;
    let rbac = generate_rbac(&path, &home.name, "probe")?;
    ensure!(
        rbac.contains(&format!("namespace: {}", shared.name)) && rbac.contains("- registry"),
        "the literal input is read by name, in its namespace: {rbac}"
    );
    let name = format!("ork-{}", ns.name);
    let ork = spawn_ork_with_generated_rbac(&admin, &path, &home.name, &name).await?;
    let result = async {
        for cr in ["one", "two"] {
            create_webapp(&admin, &ns.name, cr, "nginx:1").await?;
        }
        let api = webapps(&admin, &ns.name).await?;
        for cr in ["one", "two"] {
            wait_ready(&api, cr, "True").await?;
        }

        // What the service got: its own Secret with its value, the registry's without, the
        // shared list.
        let first = calls(&svc, "one").last().cloned().unwrap_or_default();
        let inputs = &first["prepared"]["inputs"];
        ensure!(
            inputs["db"]["data"]["password"] == json!(base64("pass-one-1")),
            "one's own Secret with its value: {inputs}"
        );
        ensure!(
            inputs["db"]["metadata"].get("managedFields").is_none(),
            "{inputs}"
        );
        ensure!(
            inputs["registry"]["metadata"]["name"] == "registry"
                && inputs["registry"].get("data").is_none(),
            "a Secret without values: {inputs}"
        );
        ensure!(shared_names(&first) == ["shared-a"], "{inputs}");

        // An edit of one's Secret reconciles one; then an edit of two's, two (the probe that
        // two's count is judged by: an extra call for one's edit would have come first).
        let (ones, twos) = (calls(&svc, "one").len(), calls(&svc, "two").len());
        apply_yaml(&admin, &secret("one-db", "pass-one-2"), &ns.name).await?;
        next_call(&svc, "one", ones, "one called with its new password", |c| {
            c["prepared"]["inputs"]["db"]["data"]["password"] == json!(base64("pass-one-2"))
        })
        .await?;
        apply_yaml(&admin, &secret("two-db", "pass-two-2"), &ns.name).await?;
        next_call(&svc, "two", twos, "two called with its new password", |c| {
            c["prepared"]["inputs"]["db"]["data"]["password"] == json!(base64("pass-two-2"))
        })
        .await?;
        ensure!(
            calls(&svc, "two").len() == twos + 1,
            "one's Secret edit did not reconcile two"
        );
        ensure!(calls(&svc, "one").len() == ones + 1, "one called once");

        // The label-selected list follows a new object and one that loses the label.
        let (ones, twos) = (calls(&svc, "one").len(), calls(&svc, "two").len());
        apply_yaml(&admin, &shared_map("shared-b"), &ns.name).await?;
        for (cr, after) in [("one", ones), ("two", twos)] {
            next_call(&svc, cr, after, &format!("{cr} sees shared-b"), |c| {
                shared_names(c) == ["shared-a", "shared-b"]
            })
            .await?;
        }
        let (ones, twos) = (calls(&svc, "one").len(), calls(&svc, "two").len());
        let unlabel = json!({"metadata": {"labels": {"shared": null}}});
        maps.patch("shared-b", &PatchParams::default(), &Patch::Merge(&unlabel))
            .await?;
        for (cr, after) in [("one", ones), ("two", twos)] {
            next_call(
                &svc,
                cr,
                after,
                &format!("{cr} no longer sees shared-b"),
                |c| shared_names(c) == ["shared-a"],
            )
            .await?;
        }

        // A deleted input: the CR waits, its condition naming what is missing; back, it is
        // reconciled again.
        let ones = calls(&svc, "one").len();
        secrets.delete("one-db", &Default::default()).await?;
        let (_, message) = wait_for("one waiting for its Secret", WAIT, || async {
            let obj = api.get("one").await.ok()?;
            let cond = obj.data["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Ready")?
                .clone();
            (cond["status"] == "False" && cond["reason"] == "InputMissing").then(|| {
                (
                    cond["reason"].as_str().unwrap_or("").to_string(),
                    cond["message"].as_str().unwrap_or("").to_string(),
                )
            })
        })
        .await?;
        ensure!(
            message.contains(&format!("input db: Secret {}/one-db not found", ns.name)),
            "{message}"
        );
        ensure!(
            calls(&svc, "one").len() == ones,
            "the service is not called without the input"
        );
        apply_yaml(&admin, &secret("one-db", "pass-one-3"), &ns.name).await?;
        wait_ready(&api, "one", "True").await?;

        // The service echoes a password: the condition, the record and the log do not.
        create_webapp(&admin, &ns.name, "echo", "nginx:1").await?;
        let (_, message) = wait_ready(&api, "echo", "False").await?;
        ensure!(
            message.contains("login as admin:(redacted) refused"),
            "the echo redacted: {message}"
        );
        let addr = ork.http().await?;
        let path = format!("/katalog/webapp/objects/{}/echo", ns.name);
        let (status, record) = get_as(addr, &path, &admin_token()?).await?;
        ensure!(status == 200, "{status} {record}");
        let parsed: Value = serde_json::from_str(&record)?;
        let last = &parsed["records"][0];
        ensure!(
            last["reason"] == "ServiceReported"
                && last["answer"]["error"] == "login as admin:(redacted) refused"
                && last["request"]["prepared"]["inputs"]["db"]["data"]["password"] == "(redacted)",
            "the record keeps the exchange without the password: {record}"
        );
        // Let the log catch up with the last reconciles.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let log = ork.log();
        ensure!(log.contains("watching an input type"), "the log is ork's");
        for value in [
            "hunter2-echo",
            "pass-one-1",
            "pass-one-2",
            "pass-two-2",
            "registry-token-9",
        ] {
            for shown in [value.to_string(), base64(value)] {
                ensure!(!record.contains(&shown), "{shown} in the record: {record}");
                ensure!(!message.contains(&shown), "{shown} in the condition");
                ensure!(!log.contains(&shown), "{shown} in ork's log");
            }
        }
        Ok(())
    }
    .await;
    delete_cluster_rbac(&admin, &name).await;
    drop(ork);
    result
}
