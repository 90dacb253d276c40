//! R6: the API server throttles ork. ork runs as a ServiceAccount of its own (bound to
//! `cluster-admin`, so not exempt from API Priority and Fairness as `system:masters` is), and a
//! FlowSchema puts all its requests in a priority level of one seat that rejects what it cannot
//! seat at once: the API server answers 429 with `Retry-After`. CRs are created and edited
//! meanwhile by the harness (exempt); then the FlowSchema goes and everything must converge.
//! With a cluster of the run's own, a second phase restarts the API server with API Priority
//! and Fairness off and a tiny `--max-requests-inflight`: 429s for everybody.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use kube::api::{Api, DeleteParams};
use kube::core::{DynamicObject, GroupVersionKind};
use ork_test_support::{apply_yaml, kubeconfig_with_token, resolve, service_account_token};

use super::service::ChaosService;
use super::stage::{
    CALL_TIMEOUT, Config, Report, Shared, Stage, create_all, edit_for, katalog, names, retry,
    scope, snapshot,
};

const NAME: &str = "ork-chaos-throttle";

fn identity(home: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ServiceAccount
metadata: {{name: ork, namespace: {home}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: ork-chaos-{home}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects: [{{kind: ServiceAccount, name: ork, namespace: {home}}}]
"#
    )
}

/// No seats of its own, none borrowed, no queue: the API server serves ork's requests one at a
/// time at best and answers the others 429 with `Retry-After`.
fn pressure(home: &str) -> String {
    format!(
        r#"apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: {NAME}}}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 0
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {{type: Reject}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {NAME}}}
spec:
  priorityLevelConfiguration: {{name: {NAME}}}
  matchingPrecedence: 50
  distinguisherMethod: {{type: ByUser}}
  rules:
    - subjects: [{{kind: ServiceAccount, serviceAccount: {{name: ork, namespace: {home}}}}}]
      resourceRules:
        - {{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}}
      nonResourceRules:
        - {{verbs: ["*"], nonResourceURLs: ["*"]}}
"#
    )
}

/// The API server's own count of requests it rejected, and served, under the FlowSchema.
async fn flow_counts(client: &kube::Client) -> (u64, u64) {
    let Ok(request) = http::Request::get("/metrics").body(Vec::new()) else {
        return (0, 0);
    };
    let Ok(text) = client.request_text(request).await else {
        return (0, 0);
    };
    let schema = format!("flow_schema=\"{NAME}\"");
    let sum = |metric: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(metric) && l.contains(&schema))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    };
    (
        sum("apiserver_flowcontrol_rejected_requests_total{"),
        sum("apiserver_flowcontrol_dispatched_requests_total{"),
    )
}

/// Deletes the cluster-scoped `group/kind` named `name`, if it is there.
async fn delete(client: &kube::Client, group: &str, kind: &str, name: &str) {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    let Ok((ar, _)) = resolve(client, &gvk).await else {
        return;
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let dp = DeleteParams::default();
    let _ = retry(Duration::from_secs(30), || async {
        match api.delete(name, &dp).await {
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            other => other.map(|_| ()),
        }
    })
    .await;
}

/// Ends the pressure: the FlowSchema first, then its priority level.
async fn delete_pressure(client: &kube::Client) {
    for kind in ["FlowSchema", "PriorityLevelConfiguration"] {
        delete(client, "flowcontrol.apiserver.k8s.io", kind, NAME).await;
    }
}

pub async fn r6(cfg: &Config) -> Result<Report> {
    let stage = Stage::new(cfg, "r6").await?;
    let home = stage.home.name.clone();
    apply_yaml(&stage.client, &identity(&home), &home).await?;
    let token = service_account_token(&stage.client, &home, "ork").await?;
    let kubeconfig = stage.dir.join("kubeconfig-ork");
    kubeconfig_with_token(&token, &kubeconfig)?;
    let svc = ChaosService::start(CALL_TIMEOUT, cfg.seed ^ 6).await?;
    let k = stage.katalog(
        "katalog.yaml",
        &katalog(&stage.ns.name, &svc.url, None, false),
    )?;
    let (rejected_before, dispatched_before) = flow_counts(&stage.client).await;
    apply_yaml(&stage.client, &pressure(&home), "default").await?;
    let kc_arg = format!("--kubeconfig={}", kubeconfig.display());
    let mut ork = stage.spawn(cfg, &k, "ork", &[&kc_arg])?;
    let model: Shared = Arc::default();
    let started = Instant::now();
    let all = names("t-", 0..cfg.crs);
    create_all(&stage.crs, &model, &all, cfg.concurrency).await?;
    let mut edits = edit_for(
        &stage.crs,
        &model,
        &all,
        cfg.concurrency,
        Duration::from_secs(cfg.throttle_secs),
    )
    .await?;
    let pressure_s = started.elapsed().as_secs_f64();
    let (rejected, dispatched) = flow_counts(&stage.client).await;
    let (rejected, dispatched) = (
        rejected.saturating_sub(rejected_before),
        dispatched.saturating_sub(dispatched_before),
    );
    let calls_under_pressure = svc.call_count();
    delete_pressure(&stage.client).await;
    let mut relieved = Instant::now();
    let mut clock_name = "the FlowSchema went";
    let mut notes = vec![format!(
        "APF: the API server rejected {rejected} of ork's requests with 429 and served {dispatched} over {pressure_s:.1} s ({:.1} rejections/s)",
        rejected as f64 / pressure_s.max(0.1)
    )];
    let mut load_tail = String::new();
    if let Some(apiserver) = &cfg.apiserver {
        // Phase two: the API server itself short of seats, for everybody.
        let (argv, _) = apiserver.stop()?;
        let mut tight: Vec<String> = argv
            .iter()
            .filter(|a| {
                !a.starts_with("--max-requests-inflight")
                    && !a.starts_with("--max-mutating-requests-inflight")
                    && !a.starts_with("--enable-priority-and-fairness")
            })
            .cloned()
            .collect();
        tight.extend([
            "--enable-priority-and-fairness=false".to_string(),
            "--max-requests-inflight=3".to_string(),
            "--max-mutating-requests-inflight=1".to_string(),
        ]);
        apiserver.start(&tight)?;
        let tight_started = Instant::now();
        let tight_edits = edit_for(
            &stage.crs,
            &model,
            &all,
            cfg.concurrency,
            Duration::from_secs(cfg.throttle_secs),
        )
        .await?;
        edits += tight_edits;
        apiserver.stop()?;
        apiserver.start(&argv)?;
        relieved = Instant::now();
        clock_name = "the API server got its seats back";
        load_tail = format!(
            "; then the API server restarted with APF off and 3 + 1 seats for {:.1} s ({tight_edits} edits, every client throttled), restarted as it was",
            tight_started.elapsed().as_secs_f64()
        );
        if !ork.alive() {
            notes.push("ork exited during the max-in-flight phase".into());
        }
    }
    let mut report = Report {
        name: "R6".into(),
        title: "API server throttling".into(),
        load: format!(
            "{} CRs created and {edits} spec edits; ork throttled by a FlowSchema (no seats of its own: 429 for what does not fit) for {pressure_s:.1} s ({calls_under_pressure} calls reached the service){load_tail}",
            cfg.crs
        ),
        faults: BTreeMap::from([
            ("429 from APF".to_string(), rejected),
            ("served under APF".to_string(), dispatched),
        ]),
        notes,
        ..Report::default()
    };
    let scope = scope(&stage, None, "ork");
    stage
        .finish(
            cfg,
            &svc,
            &scope,
            &snapshot(&model),
            &mut report,
            relieved,
            clock_name,
        )
        .await?;
    stage.teardown(cfg, &scope, &mut report).await?;
    delete(
        &stage.client,
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        &format!("ork-chaos-{home}"),
    )
    .await;
    Ok(report)
}
