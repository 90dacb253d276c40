//! Changing a reconciler safely, against the local cluster (SPEC §19): `ork diff` (a candidate
//! endpoint's answers for every live CR, rehearsed with server-side dry runs; nothing written)
//! and `ork retry --all`.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use kube::Client;
use kube::api::{Api, ListParams};
use kube::core::{DynamicObject, GroupVersionKind};
use ork_test_support::fake_service::{FakeService, Reply};
use ork_test_support::{TestNamespace, apply_yaml, client, resolve, wait_for};
use serde_json::{Value, json};

use common::{WAIT, configmap_katalog, create_webapp, spawn_ork, wait_ready, webapps};

/// Two types of this file's own, so that the API server's request counts for their group are
/// this test's alone (other tests write ConfigMaps and WebApps meanwhile).
const CRDS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: diffapps.diff.ork.dev}
spec:
  group: diff.ork.dev
  scope: Namespaced
  names: {kind: DiffApp, plural: diffapps, singular: diffapp, listKind: DiffAppList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: diffparts.diff.ork.dev}
spec:
  group: diff.ork.dev
  scope: Namespaced
  names: {kind: DiffPart, plural: diffparts, singular: diffpart, listKind: DiffPartList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

fn diffapp_katalog(ns: &str, url: &str) -> String {
    format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: diff-test}}
spec:
  crds:
    diffapp:
      apiTypes: {{group: diff.ork.dev, version: v1, kind: DiffApp, plural: diffapps}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          workers: 4
          remote:
            endpoint: "{url}"
            timeout: 5s
            managedResources:
              - {{group: diff.ork.dev, version: v1, plural: diffparts}}
"#
    )
}

/// One DiffPart `<name>-part` of `size`.
fn part_answer(req: &Value, size: u32) -> Reply {
    let name = req["object"]["metadata"]["name"].as_str().unwrap_or("x");
    Reply::ok(json!({
        "result": "ok",
        "status": {"phase": "Ready"},
        "resources": [{
            "apiVersion": "diff.ork.dev/v1", "kind": "DiffPart",
            "metadata": {"name": format!("{name}-part")},
            "spec": {"color": "blue", "size": size}
        }]
    }))
}

/// Whether the CR `d07` and the like has an odd number.
fn odd(name: &str) -> bool {
    name.trim_start_matches('d')
        .parse::<u32>()
        .is_ok_and(|n| n % 2 == 1)
}

/// `ork diff` with the cluster's kubeconfig, off the test's runtime (its fake services answer
/// meanwhile).
async fn ork_diff(args: &[&str]) -> Result<std::process::Output> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let run = move || {
        Command::new(env!("CARGO_BIN_EXE_ork"))
            .arg("diff")
            .args(args)
            .env("KUBECONFIG", ork_test_support::kubeconfig_path())
            .output()
    };
    Ok(tokio::task::spawn_blocking(run).await??)
}

/// The API server's request counts for group `diff.ork.dev`, by (verb, dryRun, scope).
async fn requests_for_the_group(
    client: &Client,
) -> Result<BTreeMap<(String, String, String), f64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let label = |line: &str, name: &str| -> String {
        line.split_once(&format!("{name}=\""))
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(v, _)| v.to_string())
            .unwrap_or_default()
    };
    let mut counts = BTreeMap::new();
    for line in text.lines().filter(|l| {
        l.starts_with("apiserver_request_total{") && l.contains("group=\"diff.ork.dev\"")
    }) {
        let value: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_default();
        *counts
            .entry((
                label(line, "verb"),
                label(line, "dry_run"),
                label(line, "scope"),
            ))
            .or_default() += value;
    }
    Ok(counts)
}

/// The writes counted with `dry_run`. A DELETE of a whole namespace's collection is the
/// namespace controller emptying another test's namespace as it goes, never `ork diff`'s.
fn writes(counts: &BTreeMap<(String, String, String), f64>, dry_run: &str) -> f64 {
    counts
        .iter()
        .filter(|((verb, d, scope), _)| {
            let emptying_a_namespace = verb == "DELETE" && scope == "namespace";
            d == dry_run
                && !emptying_a_namespace
                && matches!(verb.as_str(), "POST" | "PUT" | "PATCH" | "APPLY" | "DELETE")
        })
        .map(|(_, n)| n)
        .sum()
}

/// The resourceVersion of every object of `api`, by name.
async fn versions(api: &Api<DynamicObject>) -> Result<BTreeMap<String, String>> {
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|o| {
            (
                o.metadata.name.unwrap_or_default(),
                o.metadata.resource_version.unwrap_or_default(),
            )
        })
        .collect())
}

#[tokio::test]
async fn a_candidate_changing_half_the_crs_shows_those_with_their_field_and_writes_nothing()
-> Result<()> {
    let client = client().await?;
    apply_yaml(&client, CRDS, "default").await?;
    let ns = TestNamespace::create(&client).await?;
    let stable = FakeService::start(|req| part_answer(req, 1)).await?;
    let candidate = FakeService::start(|req| {
        let name = req["object"]["metadata"]["name"].as_str().unwrap_or("");
        part_answer(req, if odd(name) { 2 } else { 1 })
    })
    .await?;
    let dir = std::env::temp_dir().join(format!("ork-diff-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let katalog = dir.join("katalog.yaml");
    std::fs::write(&katalog, diffapp_katalog(&ns.name, &stable.url))?;
    let names: Vec<String> = (0..20).map(|i| format!("d{i:02}")).collect();
    let (apps, parts) = {
        let ork = spawn_ork(&katalog, &dir.join("ork.log"), &[], &[])?;
        for name in &names {
            apply_yaml(
                &client,
                &format!("apiVersion: diff.ork.dev/v1\nkind: DiffApp\nmetadata: {{name: {name}}}\nspec: {{}}\n"),
                &ns.name,
            )
            .await?;
        }
        let apps = api(&client, &ns.name, "DiffApp").await?;
        let parts = api(&client, &ns.name, "DiffPart").await?;
        for name in &names {
            wait_ready(&apps, name, "True").await?;
        }
        wait_for("20 DiffParts", WAIT, || async {
            (versions(&parts).await.ok()?.len() == 20).then_some(())
        })
        .await?;
        // The lane writes each CR's record (its metrics annotation) after the burst: stopped
        // only once all 20 carry it, so no write of ork's is still on its way to the API
        // server when the versions are read.
        wait_for("every DiffApp's record written", WAIT, || async {
            let list = apps.list(&ListParams::default()).await.ok()?;
            (list.items.len() == 20
                && list.items.iter().all(|o| {
                    o.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get("orkestra.orkspace.io/metrics"))
                        .is_some_and(|m| m.contains("seal"))
                }))
            .then_some(())
        })
        .await?;
        // Stopped before the counts are read: every write to the group from now on is the
        // diff's. (The other test diffs beside a running `ork run`.)
        drop(ork);
        (apps, parts)
    };
    let before = (versions(&apps).await?, versions(&parts).await?);
    let counts_before = requests_for_the_group(&client).await?;
    let stable_calls = stable.received().len();

    let out = ork_diff(&["-k", path(&katalog)?, "--endpoint", &candidate.url]).await?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    ensure!(
        out.status.code() == Some(0),
        "changes alone exit 0: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in &names {
        let head = format!("DiffApp {}/{name}: changes", ns.name);
        let update = format!("~ update DiffPart {}/{name}-part", ns.name);
        if odd(name) {
            ensure!(
                text.contains(&head) && text.contains(&update),
                "{name} changes: {text}"
            );
        } else {
            ensure!(
                !text.contains(&format!("/{name}")),
                "{name} unchanged: {text}"
            );
        }
    }
    ensure!(
        text.matches("spec.size: 1 → 2").count() == 10,
        "the field, once per changed CR: {text}"
    );
    ensure!(
        text.contains("20 CRs: 10 unchanged, 10 with changes, 0 refused, 0 losing a child"),
        "{text}"
    );
    ensure!(
        candidate.received().len() == 20 && stable.received().len() == stable_calls,
        "every CR asked of the candidate, none of the stable endpoint"
    );
    // Nothing written: the same objects at the same versions; the API server saw the diff's
    // writes only as dry runs.
    ensure!(
        (versions(&apps).await?, versions(&parts).await?) == before,
        "nothing changed"
    );
    let counts_after = requests_for_the_group(&client).await?;
    ensure!(
        writes(&counts_after, "") == writes(&counts_before, ""),
        "no write without dry-run: {counts_before:?} → {counts_after:?}"
    );
    ensure!(
        writes(&counts_after, "All") >= writes(&counts_before, "All") + 10.0,
        "the 10 updates were sent as dry runs: {counts_before:?} → {counts_after:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_candidate_dropping_a_child_exits_1_naming_the_cr_and_the_child_beside_a_running_ork()
-> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    // Two ConfigMaps per WebApp; the candidate drops `two`'s second one.
    let maps = |req: &Value, keep_b: bool| {
        let name = req["object"]["metadata"]["name"].as_str().unwrap_or("x");
        let mut resources = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("{name}-a")}, "data": {"k": "v"}})];
        if keep_b {
            resources.push(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("{name}-b")}, "data": {"k": "v"}}));
        }
        Reply::ok(json!({"result": "ok", "resources": resources}))
    };
    let stable = FakeService::start(move |req| maps(req, true)).await?;
    let candidate =
        FakeService::start(move |req| maps(req, req["object"]["metadata"]["name"] != "two"))
            .await?;
    let (client, _ork) =
        common::start_katalog(&ns, &configmap_katalog(&ns.name, &stable.url, 2, "")).await?;
    for name in ["one", "two"] {
        create_webapp(&client, &ns.name, name, "nginx:1").await?;
    }
    let apps = webapps(&client, &ns.name).await?;
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), &ns.name);
    for name in ["one", "two"] {
        wait_ready(&apps, name, "True").await?;
    }
    for name in ["one-a", "one-b", "two-a", "two-b"] {
        wait_for(&format!("ConfigMap {name}"), WAIT, || async {
            configmaps.get_opt(name).await.ok().flatten()
        })
        .await?;
    }
    let katalog = std::env::temp_dir()
        .join(format!("ork-run-{}", ns.name))
        .join("katalog.yaml");
    let children: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns.name,
        &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    let versions_before = versions(&children).await?;

    let out = ork_diff(&["-k", path(&katalog)?, "--endpoint", &candidate.url]).await?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    ensure!(out.status.code() == Some(1), "a lost child exits 1: {text}");
    ensure!(
        text.contains(&format!("WebApp {}/two: would lose a child", ns.name))
            && text.contains(&format!("- prune ConfigMap {}/two-b", ns.name)),
        "{text}"
    );
    ensure!(!text.contains(&format!("{}/one", ns.name)), "{text}");

    let out = ork_diff(&[
        "-k",
        path(&katalog)?,
        "--endpoint",
        &candidate.url,
        "--json",
    ])
    .await?;
    ensure!(out.status.code() == Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).context("the JSON report")?;
    let crs = &report["entries"][0]["crs"];
    let two = crs
        .as_array()
        .and_then(|c| c.iter().find(|c| c["key"] == format!("{}/two", ns.name)))
        .context("two in the report")?;
    ensure!(two["verdict"] == "changed", "{two}");
    ensure!(
        two["children"]
            == json!([{"action": "prune", "kind": "ConfigMap",
            "namespace": ns.name, "name": "two-b"}]),
        "{two}"
    );
    ensure!(report["entries"][0]["totals"]["losing"] == 1, "{report}");

    // A candidate that refuses connections: every CR refused, named, exit 1.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let url = format!("http://{closed}/reconcile");
    let out = ork_diff(&["-k", path(&katalog)?, "--endpoint", &url]).await?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    ensure!(out.status.code() == Some(1), "{text}");
    for name in ["one", "two"] {
        ensure!(
            text.contains(&format!("WebApp {}/{name}: refused (", ns.name)),
            "{text}"
        );
    }
    ensure!(text.contains("2 refused"), "{text}");

    // A selector that matches nothing says so, and exits 0.
    let out = ork_diff(&["-k", path(&katalog)?, "-l", "nothing=here"]).await?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    ensure!(
        out.status.code() == Some(0) && text.contains("no CRs match"),
        "{text}"
    );

    // The child is still there, every child as it was (the running ork may still write its
    // CRs' annotations; their children it has no reason to write).
    ensure!(configmaps.get_opt("two-b").await?.is_some());
    ensure!(
        versions(&children).await? == versions_before,
        "the children were not written"
    );
    Ok(())
}

async fn api(client: &Client, ns: &str, kind: &str) -> Result<Api<DynamicObject>> {
    let (ar, _) = resolve(client, &GroupVersionKind::gvk("diff.ork.dev", "v1", kind)).await?;
    Ok(Api::namespaced_with(client.clone(), ns, &ar))
}

fn path(p: &std::path::Path) -> Result<&str> {
    p.to_str().context("a UTF-8 path")
}

#[tokio::test]
async fn retry_all_reconciles_every_selected_cr_once() -> Result<()> {
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let svc = FakeService::start(|req| {
        let name = req["object"]["metadata"]["name"].as_str().unwrap_or("x");
        Reply::ok(
            json!({"result": "ok", "resources": [{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("{name}-a")}, "data": {"k": "v"}}]}),
        )
    })
    .await?;
    let (client, _ork) =
        common::start_katalog(&ns, &configmap_katalog(&ns.name, &svc.url, 2, "")).await?;
    let names = ["r1", "r2", "r3", "r4", "r5"];
    for name in names {
        create_webapp(&client, &ns.name, name, "nginx:1").await?;
    }
    // One more, left out by the selector.
    apply_yaml(
        &client,
        "apiVersion: demo.ork.dev/v1\nkind: WebApp\nmetadata: {name: other, labels: {tier: other}}\nspec: {image: nginx, replicas: 1}\n",
        &ns.name,
    )
    .await?;
    let apps = webapps(&client, &ns.name).await?;
    for name in names.iter().chain(&["other"]) {
        wait_ready(&apps, name, "True").await?;
    }
    let calls = |name: &str| {
        svc.received()
            .iter()
            .filter(|r| r.body["object"]["metadata"]["name"] == name)
            .count()
    };
    let before: Vec<usize> = names.iter().map(|n| calls(n)).collect();
    let other_before = calls("other");

    let ns_name = ns.name.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_ork"))
            .args([
                "retry",
                "webapps",
                "--all",
                "-l",
                "tier!=other",
                "--rate",
                "20",
                "-n",
            ])
            .arg(&ns_name)
            .env("KUBECONFIG", ork_test_support::kubeconfig_path())
            .output()
    })
    .await??;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    ensure!(
        out.status.success() && text.contains("5 webapps: reconcile requested"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each selected CR is called again, once; the one left out is not.
    wait_for("a call for each selected CR", WAIT, || async {
        names
            .iter()
            .zip(&before)
            .all(|(n, b)| calls(n) > *b)
            .then_some(())
    })
    .await?;
    let after: Vec<usize> = names.iter().map(|n| calls(n)).collect();
    ensure!(
        after.iter().zip(&before).all(|(a, b)| *a == b + 1),
        "once each: {before:?} → {after:?}"
    );
    ensure!(
        calls("other") == other_before,
        "the unselected CR was not asked"
    );
    Ok(())
}
