//! A progressive rollout against the local cluster (SPEC §19): the candidate endpoint serves
//! only the CRs whose key hashes into its share, halts back to the stable endpoint when it
//! starts failing (every CR it served reconciled by the stable one again, told by an event),
//! and `ork rollout status|resume|promote` steer it through the running ork.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{Api, ListParams};
use ork_test_support::fake_service::{FakeService, Reply};
use ork_test_support::{TestNamespace, apply_yaml, client, service_account_token, wait_for};
use serde_json::{Value, json};

use common::{WAIT, create_webapp, start_katalog, webapps};

const CRS: usize = 20;

/// One ConfigMap `<name>-served` saying which service answered.
fn answer(by: &'static str) -> impl Fn(&Value) -> Reply + Send + 'static {
    move |req: &Value| {
        let name = req["object"]["metadata"]["name"].as_str().unwrap_or("x");
        Reply::ok(json!({
            "result": "ok",
            "resources": [{
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("{name}-served")},
                "data": {"by": by}
            }]
        }))
    }
}

/// The CR's bucket among 100, as ork hashes it (FNV-1a over the length-prefixed salt and key):
/// the test computes the share on its own, so a share chosen any other way fails it.
fn bucket(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for s in ["rollout", key] {
        let bytes = (s.len() as u64).to_le_bytes().into_iter().chain(s.bytes());
        for b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h % 100
}

fn katalog(ns: &str, stable: &str, candidate: &str) -> String {
    format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: rollout-test}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      namespace: {ns}
      operatorBox:
        reconcile:
          default: false
          workers: 4
          queue: {{retryBackoff: {{initial: 200ms, max: 2s}}}}
          remote:
            endpoint: "{stable}"
            timeout: 5s
            managedResources:
              - {{group: "", version: v1, plural: configmaps}}
            rollout:
              endpoint: "{candidate}"
              percent: 25
              halt: {{maxFailureRate: 0.5, minReconciles: 3, window: 5m}}
"#
    )
}

/// Which service made each CR's ConfigMap, by CR name (those that have one).
async fn served(cms: &Api<ConfigMap>) -> Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = cms
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|cm| {
            let name = cm.metadata.name?.strip_suffix("-served")?.to_string();
            let by = cm.data?.get("by")?.clone();
            Some((name, by))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// `ork rollout ACTION --entry webapp --server http://ADDR --json` with the cluster's
/// kubeconfig (its admin token is what ork shows the API server): exit code and the JSON.
async fn ork_rollout(addr: std::net::SocketAddr, action: &str) -> Result<(i32, Value)> {
    let action = action.to_string();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_ork"))
            .args(["rollout", &action, "--entry", "webapp", "--json"])
            .arg(format!("--server=http://{addr}"))
            .env("KUBECONFIG", ork_test_support::kubeconfig_path())
            .env_remove("ORK_TOKEN")
            .env_remove("ORK_SERVER")
            .output()
    })
    .await??;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let v = serde_json::from_str(&text).with_context(|| {
        format!(
            "ork rollout: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    Ok((out.status.code().unwrap_or(-1), v))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_serves_its_hashed_share_halts_on_failures_and_is_steered_by_hand() -> Result<()>
{
    let stable = FakeService::start(answer("stable")).await?;
    let candidate = FakeService::start(answer("candidate")).await?;
    let ns = TestNamespace::create(&client().await?).await?;
    let (client, ork) = start_katalog(&ns, &katalog(&ns.name, &stable.url, &candidate.url)).await?;
    let addr = ork.http().await?;
    let names: Vec<String> = (0..CRS).map(|i| format!("r{i:02}")).collect();
    for name in &names {
        create_webapp(&client, &ns.name, name, "nginx:1").await?;
    }
    let apps = webapps(&client, &ns.name).await?;
    ensure!(
        apps.list(&ListParams::default()).await?.items.len() == CRS,
        "the fixture's CRs exist"
    );
    let quarter: BTreeSet<String> = names
        .iter()
        .filter(|n| bucket(&format!("{}/{n}", ns.name)) < 25)
        .cloned()
        .collect();
    ensure!(
        !quarter.is_empty() && quarter.len() < CRS,
        "the fixture's keys fall on both sides of the share: {quarter:?}"
    );

    // Exactly the hashed quarter is served by the candidate.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns.name);
    let want: Vec<(String, String)> = names
        .iter()
        .map(|n| {
            let by = if quarter.contains(n) {
                "candidate"
            } else {
                "stable"
            };
            (n.clone(), by.to_string())
        })
        .collect();
    wait_for("each CR's ConfigMap from its endpoint", WAIT, || async {
        (served(&cms).await.ok()? == want).then_some(())
    })
    .await?;
    let asked: BTreeSet<String> = candidate
        .received()
        .iter()
        .filter_map(|r| {
            r.body["object"]["metadata"]["name"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    ensure!(
        asked == quarter,
        "the candidate was asked about its share only: {asked:?}"
    );
    let (code, status) = ork_rollout(addr, "status").await?;
    ensure!(
        code == 0 && status["phase"] == "Progressing" && status["percent"] == 25,
        "{status}"
    );
    let (code, katalog) = common::get_as(addr, "/katalog", &common::admin_token()?).await?;
    let katalog: Value = serde_json::from_str(&katalog)?;
    ensure!(
        code == 200 && katalog["entries"][0]["rollout"]["phase"] == "Progressing",
        "/katalog shows the rollout beside the entry's health: {katalog}"
    );

    // The candidate starts failing: its CRs, edited, fail there until the rule halts it; then
    // every CR of its share is reconciled by the stable endpoint again.
    candidate.set_script(|_| Reply::Respond(500, "candidate broke".into()));
    for name in &quarter {
        apps.patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await?;
    }
    let all_stable: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.clone(), "stable".to_string()))
        .collect();
    wait_for("every ConfigMap from the stable endpoint", WAIT, || async {
        (served(&cms).await.ok()? == all_stable).then_some(())
    })
    .await?;
    let (code, status) = ork_rollout(addr, "status").await?;
    ensure!(
        code == 3 && status["phase"] == "Halted" && status["percent"] == 0,
        "halted, and a script polling the status is told: {code} {status}"
    );
    let why = status["halted"].as_str().unwrap_or_default();
    ensure!(
        why.contains(&candidate.url) && why.contains("failed"),
        "the halt names the candidate and its failures: {why}"
    );
    let events: Api<Event> = Api::namespaced(client.clone(), &ns.name);
    let first = quarter.iter().next().context("a CR of the share")?;
    wait_for(
        "a RolloutHalted event on a CR of the share",
        WAIT,
        || async {
            events
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|e| {
                    e.reason.as_deref() == Some("WebAppRolloutHalted")
                        && e.involved_object.name.as_deref() == Some(first.as_str())
                })
                .map(|_| ())
        },
    )
    .await?;
    let record: Value = {
        let (code, body) = common::get_as(
            addr,
            &format!("/katalog/webapp/objects/{}/{first}", ns.name),
            &common::admin_token()?,
        )
        .await?;
        ensure!(code == 200, "{code}: {body}");
        serde_json::from_str(&body)?
    };
    let endpoints: Vec<&str> = record["records"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["endpoint"].as_str())
        .collect();
    ensure!(
        endpoints.first() == Some(&"stable") && endpoints.contains(&"candidate"),
        "the flight recorder says which endpoint served each reconcile: {record}"
    );

    let target = format!("webapp/{first}");
    let (explained, server) = (
        tokio::task::spawn_blocking({
            let ns = ns.name.clone();
            move || {
                Command::new(env!("CARGO_BIN_EXE_ork"))
                    .args(["explain", &target, "-n", &ns, "--full"])
                    .arg(format!("--server=http://{addr}"))
                    .env("KUBECONFIG", ork_test_support::kubeconfig_path())
                    .output()
            }
        })
        .await??,
        addr,
    );
    let shown = String::from_utf8_lossy(&explained.stdout);
    ensure!(
        shown.contains("(stable service") && shown.contains("(candidate service"),
        "ork explain names the endpoint of each reconcile (ork at {server}): {shown}"
    );

    // Fixed, resumed, then promoted by hand: every CR on the candidate.
    candidate.set_script(answer("candidate"));
    let (code, resumed) = ork_rollout(addr, "resume").await?;
    ensure!(code == 0 && resumed["phase"] == "Progressing", "{resumed}");
    wait_for("the share on the candidate again", WAIT, || async {
        (served(&cms).await.ok()? == want).then_some(())
    })
    .await?;
    // A reader of the entry sees the rollout but may not steer it.
    apply_yaml(
        &client,
        &format!(
            r#"apiVersion: v1
kind: ServiceAccount
metadata: {{name: reader}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: webapp-reader}}
rules:
  - {{apiGroups: [demo.ork.dev], resources: [webapps], verbs: [get, list, watch]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: webapp-reader}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: webapp-reader}}
subjects: [{{kind: ServiceAccount, name: reader, namespace: {ns}}}]
"#,
            ns = ns.name
        ),
        &ns.name,
    )
    .await?;
    let reader = service_account_token(&client, &ns.name, "reader").await?;
    let (code, _) = common::get_as(addr, "/katalog/webapp/rollout", &reader).await?;
    ensure!(code == 200, "a reader reads the rollout: {code}");
    let refused = reqwest::Client::new()
        .post(format!("http://{addr}/katalog/webapp/rollout/promote"))
        .bearer_auth(&reader)
        .send()
        .await?
        .status()
        .as_u16();
    ensure!(refused == 403, "a reader may not promote: {refused}");
    let (_, status) = ork_rollout(addr, "status").await?;
    ensure!(status["phase"] == "Progressing", "still: {status}");

    let (code, promoted) = ork_rollout(addr, "promote").await?;
    ensure!(
        code == 0 && promoted["phase"] == "Promoted" && promoted["percent"] == 100,
        "{promoted}"
    );
    let all_candidate: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.clone(), "candidate".to_string()))
        .collect();
    wait_for("every ConfigMap from the candidate", WAIT, || async {
        (served(&cms).await.ok()? == all_candidate).then_some(())
    })
    .await?;
    let metrics = common::get(ork.probes().await?, "/metrics").await?.1;
    ensure!(
        metrics.contains("ork_rollout_percent{entry=\"webapp\",state=\"Promoted\"} 100")
            && metrics.contains("ork_rollout_reconciles_total{entry=\"webapp\",endpoint=\"candidate\",result=\"error\"}"),
        "the metrics say where the rollout stands and what each endpoint did"
    );
    drop(ork);
    Ok(())
}
