//! Running ork in production (SPEC §6–§7): HTTP endpoints and metrics, leader election with two
//! processes, graceful shutdown. Against the local cluster, services on 127.0.0.1.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use common::*;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams};
use ork_test_support::fake_service::{FakeService, Reply, webapp_answer};
use ork_test_support::{TestNamespace, apply_yaml, client, wait_for};
use serde_json::{Value, json};

/// Parses Prometheus text: every sample as `name{labels}` → value; malformed lines fail.
fn parse_prometheus(text: &str) -> Result<BTreeMap<String, f64>> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            if line.starts_with("# HELP ")
                || line.starts_with("# TYPE ")
                || line.starts_with("# EOF")
                || line.is_empty()
            {
                continue;
            }
            bail!("unexpected comment line {line:?}");
        }
        let Some((series, value)) = line.rsplit_once(' ') else {
            bail!("no value in {line:?}");
        };
        if series.contains('{') && !series.ends_with('}') {
            bail!("unbalanced labels in {line:?}");
        }
        samples.insert(series.to_string(), value.parse::<f64>()?);
    }
    Ok(samples)
}

fn sample(samples: &BTreeMap<String, f64>, series: &str) -> f64 {
    samples.get(series).copied().unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_report_health_and_metrics_move_with_reconciles() -> Result<()> {
    let Ready {
        svc,
        ns,
        client,
        api,
        _ork: ork,
    } = Ready::web().await?;
    let addr = ork.http().await?;
    let probes = ork.probes().await?;
    assert!(
        !ork.log().contains('\u{1b}'),
        "no colour codes in a log that is not a terminal"
    );
    assert_eq!(get(probes, "/healthz").await?, (200, "ok".to_string()));
    assert_eq!(get(probes, "/readyz").await?.0, 200);
    // Probes and the inspector are apart: neither listener answers the other's paths.
    assert_eq!(get(addr, "/healthz").await?.0, 404);
    assert_eq!(get(probes, "/katalog").await?.0, 404);

    // The Katalog's health is for those who may list its CRs, loopback or not (SPEC §11).
    for path in ["/katalog", "/katalog/webapp/health"] {
        assert_eq!(get(addr, path).await?.0, 401, "{path} without a token");
    }
    let nobody = service_account_token(&client, &ns.name, "default").await?;
    let (status, body) = get_as(addr, "/katalog", &nobody).await?;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(&format!(
            "system:serviceaccount:{}:default may not list demo.ork.dev/webapps",
            ns.name
        )),
        "{body}"
    );
    let admin = admin_token()?;
    let (status, body) = get_as(addr, "/katalog/webapp/health", &admin).await?;
    assert_eq!(status, 200);
    let report: Value = serde_json::from_str(&body)?;
    assert_eq!(report["state"], "healthy");
    assert_eq!(report["health"]["totalReconciles"], 1);
    assert_eq!(get_as(addr, "/katalog/nope/health", &admin).await?.0, 404);
    let (_, all) = get_as(addr, "/katalog", &admin).await?;
    let all: Value = serde_json::from_str(&all)?;
    assert_eq!(all["entries"][0]["name"], "webapp");
    assert_eq!(all["metadata"]["name"], "test");

    let (status, text) = get(probes, "/metrics").await?;
    assert_eq!(status, 200);
    let before = parse_prometheus(&text)?;
    let ok = r#"ork_reconciles_total{entry="webapp",result="ok"}"#;
    assert_eq!(sample(&before, ok), 1.0);
    assert_eq!(
        sample(
            &before,
            r#"ork_apply_operations_total{entry="webapp",kind="Deployment",result="ok"}"#
        ),
        1.0
    );
    assert_eq!(
        sample(
            &before,
            r#"ork_remote_call_duration_seconds_count{entry="webapp",outcome="ok"}"#
        ),
        1.0
    );
    assert_eq!(
        sample(
            &before,
            r#"ork_entry_health_state{entry="webapp",state="healthy"}"#
        ),
        1.0
    );
    assert_eq!(sample(&before, r#"ork_queue_depth{entry="webapp"}"#), 0.0);
    assert_eq!(sample(&before, "ork_leader"), 1.0);
    for name in ["ork_reconcile_duration_seconds_bucket", "ork_workers_busy"] {
        assert!(
            before.keys().any(|k| k.starts_with(name)),
            "{name} is exported"
        );
    }

    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicas": 2}})),
    )
    .await?;
    wait_for("a second call", WAIT, || async {
        (svc.calls() >= 2).then_some(())
    })
    .await?;
    wait_for("the counter to move", WAIT, || async {
        let after = parse_prometheus(&get(probes, "/metrics").await.ok()?.1).ok()?;
        (sample(&after, ok) == 2.0).then_some(())
    })
    .await?;
    drop((ns, client));
    Ok(())
}

/// The Lease holder, if any.
async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt("orkestra-konductor")
        .await
        .ok()
        .flatten()?
        .spec?
        .holder_identity
        .filter(|h| !h.is_empty())
}

async fn is_leader(ork: &Ork) -> bool {
    let Ok(addr) = ork.probes().await else {
        return false;
    };
    let Ok((_, text)) = get(addr, "/metrics").await else {
        return false;
    };
    parse_prometheus(&text).is_ok_and(|m| sample(&m, "ork_leader") == 1.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_reconciles_and_a_standby_takes_over_when_it_dies() -> Result<()> {
    let svc = FakeService::start(webapp_answer).await?;
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    apply_yaml(&client, CRD, &ns.name).await?;
    let dir = std::env::temp_dir().join(format!("ork-lease-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog(&ns.name, &http(&svc.url), ""))?;
    let args = ["--leader-elect", "--lease-duration=4s"];
    // ork's own namespace holds the Lease; children never go there.
    let home = TestNamespace::create(&client).await?;
    let env = [("ORK_NAMESPACE", home.name.as_str())];
    let first = spawn_ork(&path, &dir.join("a.log"), &args, &env)?;
    let second = spawn_ork(&path, &dir.join("b.log"), &args, &env)?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &home.name);
    wait_for("a leader", WAIT, || async { holder(&leases).await }).await?;
    // Both are ready (caches warm) whichever leads.
    for ork in [&first, &second] {
        wait_for("ready", WAIT, || async {
            (get(ork.probes().await.ok()?, "/readyz").await.ok()?.0 == 200).then_some(())
        })
        .await?;
    }

    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    let api = webapps(&client, &ns.name).await?;
    wait_ready(&api, "web", "True").await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(svc.calls(), 1, "exactly one process reconciled");
    let leaders = [is_leader(&first).await, is_leader(&second).await];
    assert_eq!(leaders.iter().filter(|l| **l).count(), 1, "{leaders:?}");

    // SIGKILL the leader: no release, the standby must wait for the lease to expire.
    let (mut leader, standby) = if leaders[0] {
        (first, second)
    } else {
        (second, first)
    };
    leader.child.kill()?;
    leader.child.wait()?;
    let killed = Instant::now();
    wait_for("the standby to lead", WAIT, || async {
        is_leader(&standby).await.then_some(())
    })
    .await?;
    let takeover = killed.elapsed();
    // A figure for the report, not a bound: timing is for benchmarks, not pass/fail.
    println!(
        "takeover after SIGKILL: {:.1}s (lease duration 4s)",
        takeover.as_secs_f64()
    );

    // A new leader calls only what changed since the old one's last successful reconcile
    // (SPEC §17, warm restarts): the CR is as the old leader left it, so it is not called and
    // keeps its resync; the new leader counts it.
    wait_for("the takeover's start-up pass", WAIT, || async {
        let (_, text) = get(standby.probes().await.ok()?, "/metrics").await.ok()?;
        let m = parse_prometheus(&text).ok()?;
        (sample(&m, "ork_unchanged_at_start_total{entry=\"webapp\"}") == 1.0).then_some(())
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let settled = svc.calls();
    assert_eq!(settled, 1, "an unchanged CR is not called at a takeover");

    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicas": 3}})),
    )
    .await?;
    wait_for("the edit reconciled", WAIT, || async {
        (svc.calls() > settled).then_some(())
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        svc.calls(),
        settled + 1,
        "the edit was reconciled once by the new leader"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_in_flight_work_releases_the_lease_and_exits_zero() -> Result<()> {
    // The service takes a second: the reconcile is in flight when SIGTERM arrives.
    let svc = FakeService::start(|req| {
        std::thread::sleep(Duration::from_millis(1500));
        webapp_answer(req)
    })
    .await?;
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    apply_yaml(&client, CRD, &ns.name).await?;
    let dir = std::env::temp_dir().join(format!("ork-term-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog(&ns.name, &http(&svc.url), ""))?;
    let home = TestNamespace::create(&client).await?;
    let env = [("ORK_NAMESPACE", home.name.as_str())];
    let mut ork = spawn_ork(
        &path,
        &dir.join("ork.log"),
        &["--leader-elect", "--lease-duration=4s"],
        &env,
    )?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &home.name);
    wait_for("the lease", WAIT, || async { holder(&leases).await }).await?;

    create_webapp(&client, &ns.name, "web", "nginx:1").await?;
    wait_for("the call in flight", WAIT, || async {
        (svc.calls() >= 1).then_some(())
    })
    .await?;
    let pid = ork.child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()?;
    let status = wait_for("ork to exit", WAIT, || {
        let status = ork.child.try_wait().ok().flatten();
        async move { status }
    })
    .await?;
    assert!(status.success(), "exit code 0, got {status}");
    let api = webapps(&client, &ns.name).await?;
    let (state, _) = wait_ready(&api, "web", "True").await?;
    assert_eq!(
        state, "True",
        "the in-flight reconcile was finished, not abandoned"
    );
    assert_eq!(holder(&leases).await, None, "the lease was released");
    Ok(())
}

/// A kubeconfig for the local cluster that authenticates with `token` instead of the admin's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_rbac_is_enough_and_a_missing_rule_is_named_at_startup() -> Result<()> {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};

    let svc = FakeService::start(webapp_answer).await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, CRD, &ns.name).await?;
    let dir = std::env::temp_dir().join(format!("ork-rbac-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog(&ns.name, &http(&svc.url), ""))?;
    let name = format!("ork-{}", ns.name);
    let home = TestNamespace::create(&admin).await?;
    apply_yaml(
        &admin,
        &generate_rbac(&path, &home.name, &name)?,
        &home.name,
    )
    .await?;
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());

    let result = async {
        let token = service_account_token(&admin, &home.name, &name).await?;
        let kubeconfig = dir.join("kubeconfig");
        kubeconfig_with_token(&token, &kubeconfig)?;
        let kubeconfig_arg = format!("--kubeconfig={}", kubeconfig.display());
        let env = [("ORK_NAMESPACE", home.name.as_str())];

        // With exactly the generated RBAC: reconciles, and nothing is forbidden.
        let ork = spawn_ork(
            &path,
            &dir.join("ok.log"),
            &["--leader-elect", &kubeconfig_arg],
            &env,
        )?;
        create_webapp(&admin, &ns.name, "web", "nginx:1").await?;
        let api = webapps(&admin, &ns.name).await?;
        wait_ready(&api, "web", "True").await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let log = ork.log().to_lowercase();
        assert!(
            !log.contains("forbidden"),
            "a request was forbidden:\n{log}"
        );
        drop(ork);

        // Without the rule for Services: the startup check names it and ork does not start.
        // (The entry watches one namespace, so its rules are a Role there.)
        let entry_roles: Api<k8s_openapi::api::rbac::v1::Role> =
            Api::namespaced(admin.clone(), &ns.name);
        let mut role = entry_roles.get(&name).await?;
        role.rules = Some(
            role.rules
                .unwrap_or_default()
                .into_iter()
                .filter(|r| {
                    r.resources
                        .as_ref()
                        .is_none_or(|res| !res.contains(&"services".to_string()))
                })
                .collect(),
        );
        role.metadata.managed_fields = None;
        entry_roles
            .replace(&name, &Default::default(), &role)
            .await?;
        let mut ork = spawn_ork(
            &path,
            &dir.join("missing.log"),
            &["--leader-elect", &kubeconfig_arg],
            &env,
        )?;
        let status = wait_for("ork to refuse to start", WAIT, || {
            let status = ork.child.try_wait().ok().flatten();
            async move { status }
        })
        .await?;
        assert!(!status.success());
        let log = ork.log();
        for verb in [
            "get", "list", "watch", "create", "update", "patch", "delete",
        ] {
            assert!(
                log.contains(&format!("{verb} core/services")),
                "{verb} services is named:\n{log}"
            );
        }
        assert!(
            !log.contains("apps/deployments"),
            "only what is missing is named"
        );
        assert!(
            log.contains("ork generate rbac -k"),
            "the fix is named:\n{log}"
        );
        anyhow::Ok(())
    }
    .await;
    let _ = roles.delete(&name, &Default::default()).await;
    let _ = bindings.delete(&name, &Default::default()).await;
    result
}

/// With its CRD deleted while ork runs, the entry is degraded and ork not ready (it used to say
/// healthy while every watch failed with 404); with the CRD back, both recover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_crd_makes_the_entry_degraded_and_ork_not_ready_until_it_is_back() -> Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let group = format!("{}.ork.dev", ns.name);
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: gadgets.{group}}}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: gadgets, singular: gadget, kind: Gadget}}\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      subresources: {{status: {{}}}}\n      schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n"
    );
    apply_yaml(&admin, &crd, &ns.name).await?;
    let svc = FakeService::start(|_| Reply::ok(json!({"status": {"phase": "Ready"}}))).await?;
    let katalog = format!(
        "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {{name: crd-gone}}\nspec:\n  crds:\n    gadget:\n      apiTypes: {{group: {group}, version: v1, kind: Gadget, plural: gadgets}}\n      namespace: {}\n      operatorBox:\n        reconcile:\n          default: false\n          remote: {{endpoint: \"{}\", timeout: 2s}}\n",
        ns.name, svc.url
    );
    let dir = std::env::temp_dir().join(format!("ork-crd-gone-{}", ns.name));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("katalog.yaml"), katalog)?;
    let ork = spawn_ork(
        &dir.join("katalog.yaml"),
        &dir.join("ork.log"),
        &["--unauthenticated-loopback"],
        &[],
    )?;
    let addr = ork.http().await?;
    let probes = ork.probes().await?;
    let status_of = |path: &'static str| async move {
        let at = if path == "/readyz" { probes } else { addr };
        get(at, path).await.ok().map(|r| r.0)
    };
    wait_for("ready", WAIT, || async {
        (status_of("/readyz").await? == 200).then_some(())
    })
    .await?;
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let name = format!("gadgets.{group}");
    crds.delete(&name, &Default::default()).await?;
    let body = wait_for("the entry degraded", WAIT, || async {
        let (code, body) = get(addr, "/katalog/gadget/health").await.ok()?;
        (code == 503).then_some(body)
    })
    .await?;
    assert!(
        body.contains("does not serve") && body.contains("was its CRD deleted?"),
        "{body}"
    );
    assert_eq!(status_of("/readyz").await, Some(503));
    apply_yaml(&admin, &crd, &ns.name).await?;
    wait_for("ready again", WAIT, || async {
        (status_of("/readyz").await? == 200 && status_of("/katalog/gadget/health").await? == 200)
            .then_some(())
    })
    .await?;
    let _ = crds.delete(&name, &Default::default()).await;
    Ok(())
}
