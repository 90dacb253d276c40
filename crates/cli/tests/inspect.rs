//! "Why is my CR not ready?" (SPEC §14) against the local cluster: the flight recorder behind
//! ork's objects endpoints, who may read it, and `ork explain` with `--save` replayed offline.

mod common;

use common::*;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use ork_test_support::fake_service::{FakeService, Reply, webapp_answer};
use ork_test_support::{TestNamespace, apply_yaml, client, wait_for};
use serde_json::{Value, json};

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
    // The service fails with a long message that echoes the credential it got, then answers
    // what ork must reject, then heals.
    let phase = Arc::new(std::sync::atomic::AtomicU8::new(0));
    let now = phase.clone();
    let cause = format!(
        "database connection lost while provisioning (auth {TOKEN}): {}",
        "the replica set did not answer; ".repeat(40)
    );
    let body = cause.clone();
    let svc = FakeService::start(move |req| match now.load(Ordering::SeqCst) {
        0 => Reply::Respond(500, body.clone()),
        1 => Reply::ok(serde_json::json!({"resources": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-declared"}}
        ]})),
        _ => webapp_answer(req),
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
    let records = record["records"].as_array().cloned().unwrap_or_default();
    // Newest first; by now the backoff may have retried it.
    let last = &records[0];
    assert_eq!(last["outcome"], "error");
    assert_eq!(last["reason"], "ServiceError");
    assert!(
        last["trigger"] == "create" || last["trigger"] == "retry",
        "{last}"
    );
    assert_eq!(
        records.last().map(|r| r["trigger"].clone()),
        Some(json!("create")),
        "the oldest record is the reconcile the creation started: {records:?}"
    );
    assert_eq!(last["request"]["key"], format!("{}/web", ns.name));
    assert!(last["next"].is_string(), "the next retry: {last}");
    let (status, objects) = get_as(addr, "/katalog/webapp/objects", &admin_token).await?;
    assert_eq!(status, 200);
    let objects: Value = serde_json::from_str(&objects)?;
    assert_eq!(objects["counts"]["total"], 1);
    assert_eq!(objects["counts"]["ready"], 0);
    // Orkestra's bodies, for tools written against Orkestra: `/katalog`'s summary and the
    // entry's flat health fields, beside ork's own.
    let (status, body) = get_as(addr, "/katalog", &admin_token).await?;
    assert_eq!(status, 200, "{body}");
    let katalog: Value = serde_json::from_str(&body)?;
    assert_eq!(katalog["total"], 1, "{katalog}");
    assert_eq!(katalog["crds"][0]["name"], "webapp", "{katalog}");
    assert_eq!(
        katalog["crds"][0]["gvr"],
        "demo.ork.dev/v1, Resource=webapps"
    );
    assert_eq!(
        katalog["crds"][0]["endpoints"]["health"],
        "/katalog/webapp/health"
    );
    assert!(katalog["statusCounts"].is_object(), "{katalog}");
    assert!(
        katalog["entries"].is_array(),
        "ork's own beside it: {katalog}"
    );
    let (_, body) = get_as(addr, "/katalog/webapp/health", &admin_token).await?;
    let health: Value = serde_json::from_str(&body)?;
    assert_eq!(health["started"], true, "{health}");
    assert!(
        health["totalReconciles"].as_u64().is_some_and(|n| n >= 1),
        "{health}"
    );
    assert!(
        health["errorRate"]
            .as_f64()
            .is_some_and(|r| r > 0.0 && r <= 1.0),
        "{health}"
    );
    assert!(
        health["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("500")),
        "{health}"
    );
    assert!(!body.contains(TOKEN), "{body}");

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

    // An answer ork rejects: --save keeps it, and ork simulate --replay rejects it the same
    // way, offline, without the service.
    phase.store(1, Ordering::SeqCst);
    ork_retry("webapp/web", &ns.name)?;
    wait_for_reason(&api, "web", "AnswerRejected").await?;
    let saved = std::env::temp_dir().join(format!("ork-explain-{}", ns.name));
    let save = saved.display().to_string();
    let mut with_save = target.to_vec();
    with_save.extend(["--save", &save, "--full"]);
    let (code, text) = wait_for_explained(&with_save, "AnswerRejected").await?;
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("not-declared"), "the answer is shown: {text}");
    for file in ["0001.json", "cr.json"] {
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(saved.join(file))?.permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{file} is its owner's alone");
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
    assert!(
        out.contains("response rejected, nothing applied") && out.contains("ConfigMap"),
        "the replay rejects the saved answer as ork did: {out}"
    );

    // The service heals; explain says Ready (exit 0) with the plan per child.
    phase.store(2, Ordering::SeqCst);
    ork_retry("webapp/web", &ns.name)?;
    wait_ready(&api, "web", "True").await?;
    let (code, text) = wait_for_explained(&target, "Deployment").await?;
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
    Ok(())
}

/// Waits until CR `name`'s Ready condition is False with `reason`.
async fn wait_for_reason(
    api: &kube::Api<kube::core::DynamicObject>,
    name: &str,
    reason: &str,
) -> Result<()> {
    ork_test_support::wait_for(&format!("{name} Ready=False {reason}"), WAIT, || async {
        let obj = api.get(name).await.ok()?;
        condition(&obj, "Ready")
            .filter(|(s, r, _)| s == "False" && r == reason)
            .map(drop)
    })
    .await
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

/// Debian's Chromium, headless, as the suite runs it: `args` then `url`; what it printed.
fn chromium(args: &[&str], url: &str) -> Result<String> {
    let browser = std::env::var("ORK_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let profile = tempfile_dir("ork-chromium")?;
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .map_err(|e| anyhow::anyhow!("{browser}: {e} (cargo xtask test installs it)"))?;
    let _ = std::fs::remove_dir_all(&profile);
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A new empty folder under the system's temporary one.
fn tempfile_dir(prefix: &str) -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_in_chromium_shows_the_entry_the_counts_and_a_failing_cr() -> Result<()> {
    let svc = FakeService::start(|req| {
        if req["object"]["metadata"]["name"] == "bad" {
            // A long error whose suggested fix comes last (issue 46.4: it scrolled out of sight).
            Reply::Respond(
                500,
                format!(
                    "quota exceeded in region <eu-1>: {}to fix it, raise the quota",
                    "the tenant holds too many volumes; ".repeat(12)
                ),
            )
        } else {
            webapp_answer(req)
        }
    })
    .await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let katalog = katalog(&ns.name, &http(&svc.url), "");
    let (client, ork) = start_katalog_with(&ns, &katalog, &["--unauthenticated-loopback"]).await?;
    for name in ["good", "bad"] {
        create_webapp(&client, &ns.name, name, "nginx:1").await?;
    }
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "good", "True").await?;
    wait_ready(&api, "bad", "False").await?;
    let base = format!("http://{}", ork.http().await?);

    let overview = chromium(&["--dump-dom"], &format!("{base}/status"))?;
    assert!(overview.contains("<h1>ork: test</h1>"), "{overview}");
    assert!(
        overview.contains(r#"<a href="/status/webapp">webapp</a>"#),
        "{overview}"
    );
    assert!(overview.contains("WebApp"), "{overview}");

    let entry = chromium(&["--dump-dom"], &format!("{base}/status/webapp"))?;
    for count in [
        r#"<li data-count="total">CRs: <b>2</b></li>"#,
        r#"<li data-count="ready">ready: <b>1</b></li>"#,
        r#"<li data-count="notReady">not ready: <b>1</b></li>"#,
    ] {
        assert!(entry.contains(count), "{count} in {entry}");
    }
    let link = format!(r#"<a href="/status/webapp/{}/bad">"#, ns.name);
    assert!(entry.contains(&link), "{entry}");
    // Ready, Reconciling and Stalled per CR; a cut message ends in an ellipsis and keeps the
    // whole text (the fix included) in its title.
    let row = |name: &str| -> String {
        let at = entry
            .find(&format!(r#"/{name}">"#))
            .unwrap_or_else(|| panic!("{name}'s row in {entry}"));
        let end = entry[at..].find("</tr>").map_or(entry.len(), |e| at + e);
        entry[at..end].to_string()
    };
    let good = row("good");
    assert!(
        good.contains(r#"data-condition="ready">True</td>"#)
            && good.contains(r#"data-condition="stalled">False</td>"#),
        "{good}"
    );
    let bad = row("bad");
    assert!(
        bad.contains(r#"data-condition="ready">False</td>"#)
            && bad.contains(r#"data-condition="reconciling">True</td>"#),
        "{bad}"
    );
    assert!(
        bad.contains(r#"class="message cut""#) && bad.contains("…</td>"),
        "{bad}"
    );
    assert!(
        bad.contains("to fix it, raise the quota\""),
        "the title is whole: {bad}"
    );

    let url = format!("{base}/status/webapp/{}/bad", ns.name);
    let explain = chromium(&["--dump-dom"], &url)?;
    for expected in [
        "quota exceeded in region &lt;eu-1&gt;",
        "to fix it, raise the quota</pre>",
        r#"<pre id="error" class="wrap">"#,
        r#"<table id="conditions">"#,
        "ServiceError",
        r#"<table id="timeline">"#,
        r#"<pre id="request">"#,
    ] {
        assert!(explain.contains(expected), "{expected} in {explain}");
    }
    assert!(!explain.contains("<eu-1>"), "service text is escaped");

    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    chromium(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,900",
        ],
        &url,
    )?;
    assert!(
        std::fs::metadata(&shot).is_ok_and(|m| m.len() > 1000),
        "a screenshot at {}",
        shot.display()
    );
    eprintln!("status page screenshot: {}", shot.display());
    Ok(())
}

/// The events about CR `name`, as (reason, note, series count).
async fn events_of(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> Result<Vec<(String, String, i32)>> {
    use k8s_openapi::api::events::v1::Event;
    let events: kube::Api<Event> = kube::Api::namespaced(client.clone(), ns);
    Ok(events
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .map(|e| {
            (
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
                e.series.map_or(1, |s| s.count),
            )
        })
        .collect())
}

/// The condition `kind` of `obj`: its status, reason and message.
fn condition(obj: &kube::core::DynamicObject, kind: &str) -> Option<(String, String, String)> {
    obj.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .map(|c| {
            let s = |f: &str| c[f].as_str().unwrap_or_default().to_string();
            (s("status"), s("reason"), s("message"))
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_way_a_cr_fails_names_its_step_says_whether_it_stalls_and_keeps_one_event_series_per_cause()
-> Result<()> {
    let broken_calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = broken_calls.clone();
    let long = "the replica set did not answer; ".repeat(40);
    let svc = FakeService::start(move |req| {
        match req["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
        {
            "slow" => Reply::Hang,
            "broken" => {
                // The cause changes after three calls: a new event series.
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let cause = if n < 3 { "disk full" } else { "quota exceeded" };
                Reply::Respond(
                    500,
                    format!("{cause}: {}", "the replica set did not answer; ".repeat(40)),
                )
            }
            "rejected" => Reply::ok(serde_json::json!({"resources": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}}
            ]})),
            _ => webapp_answer(req),
        }
    })
    .await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let katalog = katalog(&ns.name, &http(&svc.url), "").replace(
        "        reconcile:\n",
        "        validation:\n          rules:\n            - {field: spec.image, operator: exists, message: spec.image is required}\n            - {field: spec.replicas, operator: lt, value: 3, action: warn, message: more than 2 replicas cost extra}\n        reconcile:\n",
    );
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    for name in ["slow", "broken", "rejected", "fine"] {
        create_webapp(&client, &ns.name, name, "nginx:1").await?;
    }
    apply_yaml(
        &client,
        "apiVersion: demo.ork.dev/v1\nkind: WebApp\nmetadata: {name: invalid}\nspec: {replicas: 1}\n",
        &ns.name,
    )
    .await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "fine", "True").await?;
    for (name, reason, stalled, cause) in [
        ("slow", "ServiceTimeout", false, "timed out"),
        (
            "broken",
            "ServiceError",
            false,
            "the replica set did not answer",
        ),
        ("rejected", "AnswerRejected", true, "ConfigMap"),
        (
            "invalid",
            "ValidationFailed",
            true,
            "spec.image is required",
        ),
    ] {
        let obj =
            ork_test_support::wait_for(&format!("{name} failing as {reason}"), WAIT, || async {
                let obj = api.get(name).await.ok()?;
                condition(&obj, "Ready")
                    .filter(|(s, r, _)| s == "False" && r == reason)
                    .map(|_| obj)
            })
            .await?;
        let (_, _, message) = condition(&obj, "Ready").unwrap_or_default();
        assert!(message.contains(cause), "{name}: {message}");
        let stalls = condition(&obj, "Stalled").is_some_and(|(s, _, _)| s == "True");
        assert_eq!(
            stalls, stalled,
            "{name}: Stalled in {:?}",
            obj.data["status"]
        );
        let reconciling = condition(&obj, "Reconciling").is_some_and(|(s, _, _)| s == "True");
        assert_eq!(
            reconciling, !stalled,
            "{name}: Reconciling in {:?}",
            obj.data["status"]
        );
    }
    // Orkestra's validation conditions, as Orkestra writes them, beside ork's.
    let fine = api.get("fine").await?;
    assert_eq!(
        condition(&fine, "ValidationFailed"),
        Some(("False".into(), "ValidationPassed".into(), String::new()))
    );
    assert_eq!(
        condition(&fine, "ValidationWarning"),
        Some(("False".into(), "NoWarnings".into(), String::new()))
    );
    let invalid = api.get("invalid").await?;
    assert_eq!(
        condition(&invalid, "ValidationFailed"),
        Some((
            "True".into(),
            "DenyRuleViolation".into(),
            "field \"spec.image\": spec.image is required (got \"\")".into()
        ))
    );
    api.patch(
        "fine",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 5}})),
    )
    .await?;
    let warned = ork_test_support::wait_for("the warn rule's condition", WAIT, || async {
        let obj = api.get("fine").await.ok()?;
        condition(&obj, "ValidationWarning").filter(|(s, _, _)| s == "True")
    })
    .await?;
    assert_eq!(
        warned,
        (
            "True".into(),
            "WarnRuleViolation".into(),
            "field \"spec.replicas\": more than 2 replicas cost extra (got \"5\")".into()
        )
    );
    // The long cause is kept (far past 1,000 characters) on the condition.
    let broken = api.get("broken").await?;
    let (_, _, message) = condition(&broken, "Ready").unwrap_or_default();
    assert!(
        message.len() > 1000 && message.contains(&long[..200]),
        "{}",
        message.len()
    );
    // A CR failing a validation rule never reaches the service.
    assert!(
        svc.received()
            .iter()
            .all(|r| r.body["object"]["metadata"]["name"] != "invalid"),
        "the service was called for a CR its Katalog refuses"
    );
    // One event series per cause: the first cause's events fold into one object with a count,
    // the second cause starts another.
    let series = ork_test_support::wait_for("two causes, two event series", WAIT, || async {
        let events = events_of(&client, &ns.name, "broken").await.ok()?;
        let failures: Vec<_> = events
            .into_iter()
            .filter(|(reason, _, _)| reason.ends_with("ReconcileError"))
            .collect();
        (failures.len() == 2).then_some(failures)
    })
    .await?;
    let disk: Vec<_> = series
        .iter()
        .filter(|(_, note, _)| note.contains("disk full"))
        .collect();
    let quota: Vec<_> = series
        .iter()
        .filter(|(_, note, _)| note.contains("quota exceeded"))
        .collect();
    assert_eq!((disk.len(), quota.len()), (1, 1), "{series:?}");
    assert!(
        disk[0].2 >= 2,
        "repeats of one cause are one series: {series:?}"
    );
    Ok(())
}

/// `kubectl wait --for=condition=<condition> webapps.demo.ork.dev/<name>` in `ns` with
/// `timeout`: whether it succeeded, and what it said.
fn kubectl_wait(ns: &str, name: &str, condition: &str, timeout: &str) -> Result<(bool, String)> {
    let out = Command::new("kubectl")
        .args(["wait", "-n", ns, &format!("--for=condition={condition}")])
        .arg(format!("--timeout={timeout}"))
        .arg(format!("webapps.demo.ork.dev/{name}"))
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cr_whose_service_is_down_says_service_unreachable_and_is_not_stalled() -> Result<()> {
    // Nothing listens on port 1 of loopback: every call is refused.
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let katalog = katalog(&ns.name, &http("http://127.0.0.1:1/reconcile"), "");
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    create_webapp(&client, &ns.name, "down", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let obj = ork_test_support::wait_for("down failing as ServiceUnreachable", WAIT, || async {
        let obj = api.get("down").await.ok()?;
        condition(&obj, "Ready")
            .filter(|(s, r, _)| s == "False" && r == "ServiceUnreachable")
            .map(|_| obj)
    })
    .await?;
    let (_, _, message) = condition(&obj, "Ready").unwrap_or_default();
    assert!(message.contains("127.0.0.1:1"), "{message}");
    assert!(message.contains("cannot connect"), "{message}");
    // A retry may help once the service is back: Reconciling, not Stalled.
    assert_eq!(
        condition(&obj, "Reconciling").map(|(s, _, _)| s).as_deref(),
        Some("True")
    );
    assert!(
        condition(&obj, "Stalled").is_none(),
        "{:?}",
        obj.data["status"]
    );
    // kubectl reads the same conditions.
    let (ok, said) = kubectl_wait(&ns.name, "down", "Reconciling", "20s")?;
    assert!(ok, "{said}");
    let (ok, said) = kubectl_wait(&ns.name, "down", "Ready", "2s")?;
    assert!(!ok, "kubectl wait saw a failing CR Ready: {said}");
    Ok(())
}

/// `queue.maxAttempts` used up: no retry comes until the CR changes or resyncs, so the CR
/// says Stalled (kstatus), not Reconciling, with the reason of its last failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cr_that_used_all_its_attempts_is_stalled_until_it_changes() -> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let katalog = katalog(&ns.name, &http("http://127.0.0.1:1/reconcile"), "").replace(
        "queue: {retryBackoff: {initial: 200ms, max: 2s}}",
        "queue: {maxAttempts: 2, retryBackoff: {initial: 200ms, max: 2s}}",
    );
    let (client, _ork) = start_katalog(&ns, &katalog).await?;
    create_webapp(&client, &ns.name, "spent", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    let obj = ork_test_support::wait_for("spent stalled after its attempts", WAIT, || async {
        let obj = api.get("spent").await.ok()?;
        condition(&obj, "Stalled")
            .filter(|(s, r, _)| s == "True" && r == "ServiceUnreachable")
            .map(|_| obj)
    })
    .await?;
    assert!(
        condition(&obj, "Reconciling").is_none(),
        "{:?}",
        obj.data["status"]
    );
    let (_, reason, _) = condition(&obj, "Ready").unwrap_or_default();
    assert_eq!(reason, "ServiceUnreachable");
    let (ok, said) = kubectl_wait(&ns.name, "spent", "Stalled", "20s")?;
    assert!(ok, "{said}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_the_api_server_forbids_says_apply_forbidden_stalls_and_kubectl_wait_works()
-> Result<()> {
    use k8s_openapi::api::rbac::v1::Role;

    let svc = FakeService::start(webapp_answer).await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, CRD, &ns.name).await?;
    let home = TestNamespace::create(&admin).await?;
    let dir = std::env::temp_dir().join(format!("ork-forbidden-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog(&ns.name, &http(&svc.url), ""))?;
    let name = format!("ork-{}", ns.name);
    let _ork = spawn_ork_with_generated_rbac(&admin, &path, &home.name, &name).await?;
    create_webapp(&admin, &ns.name, "fine", "nginx:1").await?;
    let api = webapps(&admin, &ns.name).await?;
    wait_ready(&api, "fine", "True").await?;
    let (ok, said) = kubectl_wait(&ns.name, "fine", "Ready", "30s")?;
    assert!(ok, "kubectl wait --for=condition=Ready: {said}");
    // ork may no longer write Deployments there (a cluster admin took the right away).
    let roles: kube::Api<Role> = kube::Api::namespaced(admin.clone(), &ns.name);
    let mut role = roles.get(&name).await?;
    role.rules = Some(
        role.rules
            .unwrap_or_default()
            .into_iter()
            .filter(|r| {
                r.resources
                    .as_ref()
                    .is_none_or(|res| !res.contains(&"deployments".to_string()))
            })
            .collect(),
    );
    role.metadata.managed_fields = None;
    roles.replace(&name, &Default::default(), &role).await?;
    create_webapp(&admin, &ns.name, "blocked", "nginx:1").await?;
    let obj = ork_test_support::wait_for("blocked failing as ApplyForbidden", WAIT, || async {
        let obj = api.get("blocked").await.ok()?;
        condition(&obj, "Ready")
            .filter(|(s, r, _)| s == "False" && r == "ApplyForbidden")
            .map(|_| obj)
    })
    .await?;
    let (_, _, message) = condition(&obj, "Ready").unwrap_or_default();
    assert!(message.contains("forbidden"), "{message}");
    assert!(message.contains("deployments"), "{message}");
    // No retry helps until RBAC changes: Stalled.
    assert_eq!(
        condition(&obj, "Stalled").map(|(s, _, _)| s).as_deref(),
        Some("True")
    );
    let (ok, said) = kubectl_wait(&ns.name, "blocked", "Stalled", "20s")?;
    assert!(ok, "{said}");
    for kind in ["clusterrole", "clusterrolebinding"] {
        let _ = Command::new("kubectl")
            .args(["delete", kind, &name, "--ignore-not-found"])
            .env("KUBECONFIG", ork_test_support::kubeconfig_path())
            .output();
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_a_child_started_names_the_child_in_the_record_and_in_explain() -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let (client, ork) = start(&ns, &svc).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    let services: kube::Api<k8s_openapi::api::core::v1::Service> =
        kube::Api::namespaced(client.clone(), &ns.name);
    services.delete("web", &Default::default()).await?;
    let addr = ork.http().await?;
    let path = format!("/katalog/webapp/objects/{}/web", ns.name);
    let token = admin_token()?;
    let want = format!("Service {}/web deleted", ns.name);
    let record = ork_test_support::wait_for("a record naming the deleted child", WAIT, || async {
        let (_, body) = get_as(addr, &path, &token).await.ok()?;
        let v: Value = serde_json::from_str(&body).ok()?;
        let records = v["records"].as_array()?.clone();
        records.into_iter().find(|r| r["cause"] == want.as_str())
    })
    .await?;
    assert_eq!(record["trigger"], "child", "{record}");
    assert_eq!(record["outcome"], "ok", "{record}");
    let (code, text) = explain(&[
        "webapp/web",
        "-n",
        &ns.name,
        "--server",
        &format!("http://{addr}"),
    ])?;
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!("child    #1  ok        ({want})")) || text.contains(&want),
        "{text}"
    );
    Ok(())
}

/// A sample of ork's `/metrics` (0 when absent).
async fn metric(ork: &Ork, series: &str) -> Result<f64> {
    let (_, text) = get(ork.probes().await?, "/metrics").await?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0))
}

/// Issue 47, finding M2: every request with any bearer token cost a TokenReview (767 a second
/// from one client). Now a token's answer is remembered by its digest, and an address that
/// presents refused tokens is refused (429) before ork asks again: a flood of made-up tokens
/// costs the API server a handful of reviews, and a known user keeps reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_made_up_tokens_costs_the_api_server_a_handful_of_reviews() -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (_, ork) = start_katalog(&ns, &katalog(&ns.name, &http(&svc.url), "")).await?;
    let addr = ork.http().await?;
    let admin = admin_token()?;
    let reviews = |review: &str, result: &str| {
        format!("ork_inspector_reviews_total{{review=\"{review}\",result=\"{result}\"}}")
    };
    // A known user: reviewed once, however often it reads.
    for _ in 0..50 {
        assert_eq!(get_as(addr, "/katalog", &admin).await?.0, 200);
    }
    assert_eq!(metric(&ork, &reviews("token", "authenticated")).await?, 1.0);
    assert_eq!(metric(&ork, &reviews("access", "allowed")).await?, 1.0);
    // One refused token sent again and again: reviewed once.
    for _ in 0..50 {
        assert_eq!(get_as(addr, "/katalog", "not-a-token").await?.0, 401);
    }
    assert_eq!(
        metric(&ork, &reviews("token", "unauthenticated")).await?,
        1.0
    );
    // A new made-up token per request.
    let started = std::time::Instant::now();
    let mut codes = std::collections::BTreeMap::<u16, usize>::new();
    for i in 0..500 {
        let (code, _) = get_as(addr, "/katalog", &format!("made-up-{i}")).await?;
        *codes.entry(code).or_default() += 1;
    }
    let took = started.elapsed();
    let refused = metric(&ork, &reviews("token", "unauthenticated")).await?;
    eprintln!("500 made-up tokens in {took:?}: {codes:?}, {refused} TokenReviews refused");
    // The first refused token, a burst of 10, then one every 2 s of the flood.
    let bound = 11.0 + (took.as_secs_f64() / 2.0).ceil();
    assert!(
        refused <= bound,
        "{refused} TokenReviews for the flood (at most {bound})"
    );
    let throttled = codes.get(&429).copied().unwrap_or(0) as f64;
    assert!(throttled >= 500.0 - bound, "{codes:?}");
    assert_eq!(codes.get(&200), None, "{codes:?}");
    assert_eq!(
        metric(&ork, "ork_inspector_throttled_total").await?,
        throttled
    );
    // The known user is still served, from memory.
    assert_eq!(get_as(addr, "/katalog", &admin).await?.0, 200);
    Ok(())
}

/// Issue 47, finding M2: ork held every half-sent request (19,890 in the review) and, at the
/// file-descriptor limit, stopped answering `/healthz` on the port they shared. Now the
/// inspector's listener holds a capped number of connections, drops one that has not sent its
/// headers in time, and the probes have a listener of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_are_dropped_and_never_starve_the_probes() -> Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let svc = FakeService::start(webapp_answer).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let args = ["--http-max-connections=20", "--http-header-timeout=2s"];
    let (_, ork) = start_katalog_with(&ns, &katalog(&ns.name, &http(&svc.url), ""), &args).await?;
    let (addr, probes) = (ork.http().await?, ork.probes().await?);
    assert_eq!(get(probes, "/healthz").await?.0, 200);
    let mut held = Vec::new();
    for _ in 0..200 {
        let mut c = tokio::net::TcpStream::connect(addr).await?;
        c.write_all(b"GET /katalog HTTP/1.1\r\nHost: ork\r\nX-Slow: ")
            .await?;
        held.push(c);
    }
    // The probes answer at once, whatever the inspector's port holds.
    let asked = std::time::Instant::now();
    assert_eq!(get(probes, "/healthz").await?, (200, "ok".to_string()));
    assert_eq!(get(probes, "/readyz").await?.0, 200);
    assert!(asked.elapsed() < std::time::Duration::from_secs(1));
    // Past the cap, connections are closed as they come; the held ones within the timeout.
    let mut closed = 0;
    let deadline = std::time::Duration::from_secs(6);
    for c in &mut held {
        let mut buf = [0u8; 256];
        match tokio::time::timeout(deadline, c.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => closed += 1,
            // hyper may answer 408 before it closes.
            Ok(Ok(_)) => {
                if matches!(
                    tokio::time::timeout(deadline, c.read(&mut buf)).await,
                    Ok(Ok(0) | Err(_))
                ) {
                    closed += 1;
                }
            }
            Err(_) => {}
        }
    }
    eprintln!(
        "{closed} of 200 half-sent requests closed within {:?}",
        asked.elapsed()
    );
    assert_eq!(closed, 200, "every half-sent request is dropped");
    drop(held);
    // And the inspector answers again.
    wait_for("the inspector answering", WAIT, || async {
        (get(addr, "/katalog").await.ok()?.0 == 401).then_some(())
    })
    .await?;
    Ok(())
}

/// Issue 47, finding L2: another site could sign a browser in to the status page (no Origin or
/// Sec-Fetch-Site check), frame it, and have its answers sniffed; there was no way to sign out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_refuses_a_cross_site_sign_in_cannot_be_framed_and_signs_out() -> Result<()>
{
    let svc = FakeService::start(webapp_answer).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (_, ork) = start_katalog(&ns, &katalog(&ns.name, &http(&svc.url), "")).await?;
    let addr = ork.http().await?;
    ork_test_support::install_crypto();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let post = |path: &str, origin: Option<&str>, site: Option<&str>| {
        let mut req = http
            .post(format!("http://{addr}{path}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("token=tok-123");
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        if let Some(s) = site {
            req = req.header("sec-fetch-site", s);
        }
        req.send()
    };
    let ours = format!("http://{addr}");
    for (origin, site) in [
        (None, None),
        (Some("http://evil.example"), None),
        (Some(ours.as_str()), Some("cross-site")),
    ] {
        let resp = post("/status/login", origin, site).await?;
        assert_eq!(resp.status(), 403, "{origin:?} {site:?}");
        assert!(resp.headers().get("set-cookie").is_none());
    }
    let signed_in = post("/status/login", Some(&ours), None).await?;
    assert_eq!(signed_in.status(), 303);
    let cookie = signed_in.headers()["set-cookie"].to_str()?.to_string();
    for attribute in [
        "ork_token=tok-123",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/status",
    ] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    let same_site = post("/status/login", None, Some("same-origin")).await?;
    assert_eq!(same_site.status(), 303);
    let signed_out = post("/status/logout", Some(&ours), None).await?;
    assert_eq!(signed_out.status(), 303);
    let cookie = signed_out.headers()["set-cookie"].to_str()?.to_string();
    assert!(
        cookie.starts_with("ork_token=;") && cookie.contains("Max-Age=0"),
        "{cookie}"
    );
    assert_eq!(
        post("/status/logout", Some("http://evil.example"), None)
            .await?
            .status(),
        403
    );
    // Every answer of the inspector, a 404 of text included, forbids framing and sniffing.
    for path in ["/status", "/katalog", "/katalog/nope", "/no/such/path"] {
        let resp = http.get(format!("http://{addr}{path}")).send().await?;
        let h = resp.headers();
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert!(
            h["content-security-policy"]
                .to_str()?
                .contains("frame-ancestors 'none'"),
            "{path}"
        );
    }
    let admin = admin_token()?;
    let resp = http
        .get(format!("http://{addr}/katalog/nope"))
        .bearer_auth(&admin)
        .send()
        .await?;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    Ok(())
}

/// Issue 47, informational: `Authorization: bearer …` (the scheme is case-insensitive, RFC
/// 9110) was refused as no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_scheme_in_lower_case_is_accepted() -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (_, ork) = start_katalog(&ns, &katalog(&ns.name, &http(&svc.url), "")).await?;
    let addr = ork.http().await?;
    ork_test_support::install_crypto();
    let admin = admin_token()?;
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let resp = reqwest::Client::new()
            .get(format!("http://{addr}/katalog"))
            .header("authorization", format!("{scheme} {admin}"))
            .send()
            .await?;
        assert_eq!(resp.status(), 200, "{scheme}");
    }
    Ok(())
}

/// Finding L8 of issue 47: `ork explain` first read `/katalog`, which needs `list` on every
/// entry's CRs (cluster-wide for an entry of several namespaces), so a tenant who may only
/// `get` their own CR could not explain it. It now asks for the record by the CR's type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_who_may_only_get_their_cr_explains_it() -> Result<()> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let svc = FakeService::start(webapp_answer).await?;
    let admin = client().await?;
    let (ns, other) = (
        TestNamespace::create(&admin).await?,
        TestNamespace::create(&admin).await?,
    );
    // Two namespaces: the entry watches cluster-wide, so `/katalog` needs a cluster-wide list.
    let katalog = katalog(&ns.name, &http(&svc.url), "").replace(
        &format!("      namespace: {}\n", ns.name),
        &format!("      allowedNamespaces: [{}, {}]\n", ns.name, other.name),
    );
    assert!(
        katalog.contains("allowedNamespaces"),
        "the fixture's entry has two namespaces"
    );
    let (client, ork) = start_katalog(&ns, &katalog).await?;
    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    // The tenant: `get` on WebApps of its namespace, nothing else.
    for (kind, doc) in [
        (
            "ServiceAccount",
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "tenant"}}),
        ),
        (
            "Role",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "webapp-reader"},
            "rules": [{"apiGroups": ["demo.ork.dev"], "resources": ["webapps"], "verbs": ["get"]}]}),
        ),
        (
            "RoleBinding",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "tenant-reads-webapps"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "webapp-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": ns.name}]}),
        ),
    ] {
        apply_yaml(&admin, &doc.to_string(), &ns.name)
            .await
            .with_context(|| format!("applying the tenant's {kind}"))?;
    }
    assert!(
        kube::Api::<ServiceAccount>::namespaced(admin.clone(), &ns.name)
            .get_opt("tenant")
            .await?
            .is_some()
            && kube::Api::<Role>::namespaced(admin.clone(), &ns.name)
                .get_opt("webapp-reader")
                .await?
                .is_some()
            && kube::Api::<RoleBinding>::namespaced(admin.clone(), &ns.name)
                .get_opt("tenant-reads-webapps")
                .await?
                .is_some(),
        "the tenant's RBAC exists"
    );
    let token = service_account_token(&admin, &ns.name, "tenant").await?;
    let dir = std::env::temp_dir().join(format!("ork-tenant-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = dir.join("kubeconfig");
    kubeconfig_with_token(&token, &kubeconfig)?;
    let server = format!("http://{}", ork.http().await?);
    // The tenant may not list the entry's CRs: /katalog is closed to it.
    assert_eq!(get_as(ork.http().await?, "/katalog", &token).await?.0, 403);
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["explain", "webapp/web", "-n", &ns.name, "--server", &server])
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(": Ready since") && text.contains("last reconciles"),
        "{text}"
    );
    Ok(())
}
