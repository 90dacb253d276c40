//! `ork simulate` as a user runs it: the examples, steady-state detection, record/replay, and
//! the same children as a real run against the local cluster.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;
use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::api::Api;
use ork_engine::drift::already_applied;
use ork_test_support::fake_service::{FakeService, Reply, webapp_answer};
use ork_test_support::{TestNamespace, client};
use serde_json::{Value, json};

fn example(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/webapp")
        .join(file)
}

fn simulate(katalog: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ork"))
        .arg("simulate")
        .arg("-k")
        .arg(katalog)
        .arg("--cr")
        .arg(example("cr.yaml"))
        .arg("--crd")
        .arg(example("crd.yaml"))
        .args(extra)
        .output()
        .expect("ork runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Katalog like the example's, pointing at `url`, in a temporary folder.
fn http_katalog(url: &str, dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("dir");
    let text = std::fs::read_to_string(example("katalog.yaml"))
        .expect("example")
        .replace("http://127.0.0.1:8025/reconcile", url);
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, text).expect("write");
    path
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ork-sim-{name}-{}", std::process::id()))
}

#[test]
fn the_bash_example_reaches_steady_state() {
    let out = simulate(&example("katalog-exec.yaml"), &["--full"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!(stdout(&out));
    // Issue 46 (4): by default one line per created child, not every child in full.
    let summary = stdout(&simulate(&example("katalog-exec.yaml"), &[]));
    assert!(
        summary.contains("  + Deployment bash-demo/hello (")
            && summary.contains("lines; --full shows it)"),
        "{summary}"
    );
    assert!(!summary.contains("ownerReferences"), "{summary}");
    assert!(
        summary.lines().count() * 3 < stdout(&out).lines().count(),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_example_reaches_steady_state_with_json_output() -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let katalog = http_katalog(&svc.url, &temp("http"));
    let out = tokio::task::spawn_blocking(move || simulate(&katalog, &["-o", "json"])).await?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&stdout(&out))?;
    assert_eq!(report["steady"], true);
    assert_eq!(report["failed"], false);
    assert_eq!(report["cycles"].as_array().map(Vec::len), Some(3));
    assert_eq!(report["cycles"][0]["changes"][0]["change"], "created");
    assert!(report["objects"]["Deployment default/hello"]["spec"].is_object());
    assert_eq!(svc.calls(), 3, "one call per cycle");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_flips_a_field_never_reaches_steady_state() -> Result<()> {
    let n = Arc::new(AtomicUsize::new(0));
    let svc = FakeService::start(move |req| {
        let flip = n.fetch_add(1, Ordering::SeqCst) % 2 + 1;
        let name = req["object"]["metadata"]["name"].as_str().unwrap_or("x").to_string();
        Reply::ok(json!({"resources": [{"type": "deployment", "fields": {"name": name, "image": "nginx", "replicas": flip}}]}))
    })
    .await?;
    let katalog = http_katalog(&svc.url, &temp("flip"));
    let out = tokio::task::spawn_blocking(move || simulate(&katalog, &["--cycles", "5"])).await?;
    assert!(!out.status.success(), "not steady is a failure");
    let text = stdout(&out);
    assert!(text.contains("spec.replicas: 2 → 1"), "{text}");
    assert!(
        text.ends_with("not steady after 5 cycles: the last cycle still changed something\n"),
        "{text}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_then_replay_gives_the_same_output_without_the_service() -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let dir = temp("replay");
    let katalog = http_katalog(&svc.url, &dir);
    let tape = dir.join("tape");
    let (k, t) = (katalog.clone(), tape.clone());
    let recorded = tokio::task::spawn_blocking(move || {
        simulate(&k, &["--record", t.to_str().unwrap_or_default()])
    })
    .await?;
    assert!(recorded.status.success());
    let calls = svc.calls();
    drop(svc);
    // The service is gone: a real call would now fail.
    let replayed = tokio::task::spawn_blocking(move || {
        simulate(&katalog, &["--replay", tape.to_str().unwrap_or_default()])
    })
    .await?;
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    assert_eq!(stdout(&replayed), stdout(&recorded));
    assert_eq!(
        std::fs::read_dir(dir.join("tape"))?.count(),
        calls,
        "one file per call"
    );
    Ok(())
}

#[test]
fn a_failing_command_is_reported_and_the_exit_code_says_so() {
    let dir = temp("fail");
    std::fs::create_dir_all(&dir).expect("dir");
    let text = std::fs::read_to_string(example("katalog-exec.yaml"))
        .expect("example")
        .replace(
            "command: [\"./reconcile.sh\"]",
            "command: [\"sh\", \"-c\", \"echo broken input >&2; exit 3\"]",
        );
    let katalog = dir.join("katalog.yaml");
    std::fs::write(&katalog, text).expect("write");
    let out = simulate(&katalog, &[]);
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("error: remote reconciler: command sh: exit status: 3; stderr: broken input"),
        "{text}"
    );
    assert!(text.contains("Warning WebAppReconcileError"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_children_are_what_the_real_run_creates() -> Result<()> {
    // The same bash example, simulated and run for real in a fresh namespace.
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    let dir = temp(&ns.name);
    std::fs::create_dir_all(&dir)?;
    let text = std::fs::read_to_string(example("katalog-exec.yaml"))?
        .replace("namespace: bash-demo", &format!("namespace: {}", ns.name))
        .replace(
            "\"./reconcile.sh\"",
            &format!("\"{}\"", example("reconcile.sh").display()),
        );
    let katalog = dir.join("katalog.yaml");
    std::fs::write(&katalog, &text)?;
    let k = katalog.clone();
    let out = tokio::task::spawn_blocking(move || simulate(&k, &["-o", "json"])).await?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&stdout(&out))?;
    let simulated = |kind: &str| report["objects"][format!("{kind} {}/hello", ns.name)].clone();

    let (client, _ork) = start_katalog(&ns, &text).await?;
    ork_test_support::apply_yaml(
        &client,
        &std::fs::read_to_string(example("cr.yaml"))?,
        &ns.name,
    )
    .await?;
    wait_ready(&webapps(&client, &ns.name).await?, "hello", "True").await?;
    let deploy = serde_json::to_value(
        Api::<Deployment>::namespaced(client.clone(), &ns.name)
            .get("hello")
            .await?,
    )?;
    let service = serde_json::to_value(
        Api::<Service>::namespaced(client.clone(), &ns.name)
            .get("hello")
            .await?,
    )?;
    for (kind, live) in [("Deployment", deploy), ("Service", service)] {
        let sim = simulated(kind);
        assert!(sim["spec"].is_object(), "{kind} was simulated");
        // The live object carries server defaults on top of what ork applied.
        assert!(
            already_applied(&sim["spec"], &live["spec"]),
            "{kind}: simulated spec {} is not what the real run applied: {}",
            sim["spec"],
            live["spec"]
        );
        let labels = |v: &Value| {
            let mut l = v["metadata"]["labels"].clone();
            // The owner's uid is the simulated CR's, not the real one's.
            l.as_object_mut()
                .map(|m| m.remove("orkestra.orkspace.io/owner-uid"));
            l
        };
        assert_eq!(labels(&sim), labels(&live), "{kind} labels");
        assert_eq!(
            sim["metadata"]["ownerReferences"][0]["kind"],
            live["metadata"]["ownerReferences"][0]["kind"]
        );
    }
    Ok(())
}

fn check(katalog: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["check", "--entry", "webapp", "-k"])
        .arg(katalog)
        .arg("--cr")
        .arg(example("cr.yaml"))
        .output()
        .expect("ork runs")
}

#[test]
fn check_passes_the_bash_example() {
    let out = check(&example("katalog-exec.yaml"));
    assert!(out.status.success(), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        "bash-demo/hello: the answer follows protocol v1\n0 of 1 answers break the protocol\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_names_every_way_an_answer_breaks_the_protocol() -> Result<()> {
    let svc = FakeService::start(|_| {
        Reply::ok(json!({
            "result": "requeue",
            "stauts": {"phase": "typo"},
            "resources": [
                {"type": "configmap", "fields": {"name": "cfg"}},
                {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "default"}}
            ]
        }))
    })
    .await?;
    let katalog = http_katalog(&svc.url, &temp("check"));
    let out = tokio::task::spawn_blocking(move || check(&katalog)).await?;
    assert!(!out.status.success());
    let text = stdout(&out);
    for expected in [
        "error: result=requeue but requeueAfter is empty",
        "error: resources[0]: ConfigMap (core) is not declared",
        "error: resources[1]: metadata.name is required",
        "warning: unknown field \"stauts\" is ignored",
        "1 of 1 answers break the protocol",
    ] {
        assert!(text.contains(expected), "missing {expected:?}:\n{text}");
    }
    assert_eq!(svc.calls(), 1, "one call per CR");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_applies_the_enqueue_gate_as_ork_run_does() -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let dir = temp("gate");
    std::fs::create_dir_all(&dir)?;
    let katalog = dir.join("katalog.yaml");
    std::fs::write(
        &katalog,
        format!(
            r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: gate}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      operatorBox:
        preReconcile:
          enqueueGate: {{when: [{{field: spec.image, equals: "never"}}]}}
        reconcile:
          default: false
          remote:
            endpoint: "{}"
            managedResources:
              - {{group: apps, version: v1, plural: deployments}}
              - {{group: "", version: v1, plural: services}}
"#,
            svc.url
        ),
    )?;
    let out =
        tokio::task::spawn_blocking(move || simulate(&katalog, &["-o", "json", "--cycles", "1"]))
            .await?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        report["cycles"][0]["calls"],
        json!([]),
        "a create the enqueue gate closes is never reconciled"
    );
    assert_eq!(svc.calls(), 0);
    Ok(())
}
