//! "Why is my CR not ready?" (SPEC §14) against the local cluster: the flight recorder behind
//! ork's objects endpoints, who may read it, and `ork explain` with `--save` replayed offline.

mod common;

use common::*;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use ork_test_support::fake_service::{FakeService, Reply, webapp_answer};
use ork_test_support::{TestNamespace, apply_yaml, client};
use serde_json::Value;

const TOKEN: &str = "tok-inspect-9b31c7e0";

/// `ork explain` with `args`: its exit code and what it printed.
fn explain(args: &[&str]) -> Result<(i32, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .arg("explain")
        .args(args)
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.code().unwrap_or(-1), text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_cr_is_explained_to_those_who_may_read_it_and_its_exchange_replays_offline()
-> Result<()> {
    // The service fails with a long message that echoes the credential it got; later it heals.
    let broken = Arc::new(AtomicBool::new(true));
    let failing = broken.clone();
    let cause = format!(
        "database connection lost while provisioning (auth {TOKEN}): {}",
        "the replica set did not answer; ".repeat(40)
    );
    let body = cause.clone();
    let svc = FakeService::start(move |req| {
        if failing.load(Ordering::SeqCst) {
            Reply::Respond(500, body.clone())
        } else {
            webapp_answer(req)
        }
    })
    .await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: reconciler-token}}\nstringData: {{token: {TOKEN}}}\n"
    );
    apply_yaml(&admin, &secret, &ns.name).await?;
    let auth = format!(
        "            auth:\n              secretRef: {{name: reconciler-token, key: token, namespace: {}}}\n",
        ns.name
    );
    let katalog = katalog(&ns.name, &http(&svc.url), &auth);
    let (client, ork) = start_katalog(&ns, &katalog).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let (_, message) = wait_ready(&api, "web", "False").await?;
    assert!(
        message.contains("unexpected status 500") && message.contains("the replica set"),
        "the Ready message starts with the cause and keeps it: {message}"
    );
    let addr = ork.http().await?;
    let server = format!("http://{addr}");
    let path = format!("/katalog/webapp/objects/{}/web", ns.name);

    // Only a caller who may get the CR reads its record.
    assert_eq!(get(addr, &path).await?.0, 401);
    let nobody = service_account_token(&client, &ns.name, "default").await?;
    let (status, body) = get_as(addr, &path, &nobody).await?;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("may not get demo.ork.dev/webapps web"),
        "{body}"
    );
    let admin_token = admin_token()?;
    let (status, body) = get_as(addr, &path, &admin_token).await?;
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains(TOKEN),
        "the credential is in the record: {body}"
    );
    let record: Value = serde_json::from_str(&body)?;
    let last = &record["records"][0];
    assert_eq!(last["outcome"], "error");
    assert_eq!(last["reason"], "ServiceError");
    assert_eq!(last["trigger"], "create");
    assert_eq!(last["request"]["key"], format!("{}/web", ns.name));
    assert!(last["next"].is_string(), "the next retry: {last}");
    let (status, objects) = get_as(addr, "/katalog/webapp/objects", &admin_token).await?;
    assert_eq!(status, 200);
    let objects: Value = serde_json::from_str(&objects)?;
    assert_eq!(objects["counts"]["total"], 1);
    assert_eq!(objects["counts"]["ready"], 0);

    // ork explain: not Ready (exit 1), why, whole, and what was asked and answered.
    let target = ["webapp/web", "-n", &ns.name, "--server", &server];
    let (code, text) = explain(&target)?;
    assert_eq!(code, 1, "{text}");
    for expected in [
        "not Ready since",
        "ServiceError",
        "the replica set did not answer; the replica set did not answer;",
        "last reconciles (newest first):",
        "create",
        "last request:",
        "next try at",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
    assert!(!text.contains(TOKEN), "the credential in explain:\n{text}");
    assert!(
        text.matches("the replica set did not answer;").count() >= 40,
        "the whole error:\n{text}"
    );

    // The service heals; explain says Ready (exit 0) with the plan per child; --save replays.
    broken.store(false, Ordering::SeqCst);
    std::process::Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["retry", "webapp/web", "-n", &ns.name])
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    wait_ready(&api, "web", "True").await?;
    let saved = std::env::temp_dir().join(format!("ork-explain-{}", ns.name));
    let save = saved.display().to_string();
    let mut with_save = target.to_vec();
    with_save.extend(["--save", &save]);
    let (code, text) = wait_for_explained(&with_save, "Deployment").await?;
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(": Ready since"), "{text}");
    // The newest plan: created by the first good answer, unchanged by any after it.
    for kind in ["Deployment", "Service"] {
        let line = format!("{kind} {}/web: ", ns.name);
        assert!(
            text.contains(&format!("{line}create")) || text.contains(&format!("{line}unchanged")),
            "{text}"
        );
    }
    let katalog_file = std::env::temp_dir()
        .join(format!("ork-run-{}", ns.name))
        .join("katalog.yaml");
    let replayed = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["simulate", "-k"])
        .arg(&katalog_file)
        .args(["--cycles", "1", "--cr"])
        .arg(saved.join("cr.json"))
        .arg("--replay")
        .arg(&saved)
        .output()?;
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&replayed.stderr)
    );
    assert!(out.contains("Deployment") && out.contains("web"), "{out}");
    assert!(!out.contains("error"), "{out}");
    Ok(())
}

/// `ork explain` until its output names `what` (the recorder has the reconcile).
async fn wait_for_explained(args: &[&str], what: &str) -> Result<(i32, String)> {
    let mut last = (0, String::new());
    for _ in 0..50 {
        last = explain(args)?;
        if last.1.contains(what) {
            return Ok(last);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Ok(last)
}
