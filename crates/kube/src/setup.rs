//! An entry's `setup` in `ork run` (SPEC §9), as Orkestra runs it: each file applied in order,
//! what is to be waited for after it, then `setup.wait`; the entry starts only once every wait
//! has passed, and `ork run` stops with the wait named when one does not in time.

use std::time::{Duration, Instant};

use kube::Client;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject};
use kube::discovery::{Discovery, Scope};
use ork_katalog::{Setup, SetupWait};
use serde_json::Value;

use crate::install::{InstallError, apply_files};

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(250);

/// Applies `setup`'s files (namespaced objects without a namespace go to `namespace`) and
/// waits for what it names, in Orkestra's order.
///
/// # Errors
/// A file that cannot be applied, a kind the API server does not serve, or a wait that did not
/// pass in time.
pub async fn run_setup(
    client: &Client,
    setup: &Setup,
    namespace: &str,
) -> Result<(), InstallError> {
    for (i, file) in setup.iter().enumerate() {
        apply_files(client, std::slice::from_ref(file), namespace).await?;
        for wait in setup.waits_after(i) {
            wait_for(client, wait, namespace).await?;
        }
    }
    for wait in &setup.wait {
        wait_for(client, wait, namespace).await?;
    }
    Ok(())
}

/// Waits until `wait`'s object exists (and is ready, when asked).
async fn wait_for(client: &Client, wait: &SetupWait, namespace: &str) -> Result<(), InstallError> {
    let discovery = Discovery::new(client.clone()).run().await?;
    let (ar, scope) = served(&discovery, &wait.kind).ok_or_else(|| InstallError::WaitKind {
        kind: wait.kind.clone(),
    })?;
    let ns = wait.namespace.as_deref().unwrap_or(namespace);
    let api: Api<DynamicObject> = match scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), ns, &ar),
        Scope::Cluster => Api::all_with(client.clone(), &ar),
    };
    let what = match scope {
        Scope::Namespaced => format!("{} {ns}/{}", ar.kind, wait.name),
        Scope::Cluster => format!("{} {}", ar.kind, wait.name),
    };
    tracing::info!(%what, ready = wait.ready, "setup: waiting");
    let limit = wait.timeout.get();
    let started = Instant::now();
    loop {
        let why = match api.get_opt(&wait.name).await {
            Ok(Some(_)) if !wait.ready => {
                tracing::info!(%what, "setup: found");
                return Ok(());
            }
            Ok(Some(obj)) => {
                let obj = serde_json::to_value(&obj).unwrap_or(Value::Null);
                match readiness(&ar.kind, &obj) {
                    Ok(()) => {
                        tracing::info!(%what, "setup: ready");
                        return Ok(());
                    }
                    Err(reason) => reason,
                }
            }
            Ok(None) => "not found".to_string(),
            Err(e) => e.to_string(),
        };
        if started.elapsed() >= limit {
            return Err(InstallError::WaitTimedOut {
                what,
                timeout: wait.timeout.to_string(),
                why,
            });
        }
        tokio::time::sleep(POLL.min(limit.saturating_sub(started.elapsed()))).await;
    }
}

/// The resource serving `kind` (its kind or plural, in any case), the core group's
/// first, then in the API server's order of preference.
fn served(discovery: &Discovery, kind: &str) -> Option<(ApiResource, Scope)> {
    let wanted = kind.to_ascii_lowercase();
    let mut groups: Vec<_> = discovery.groups().collect();
    groups.sort_by_key(|g| !g.name().is_empty());
    groups.into_iter().find_map(|g| {
        g.recommended_resources()
            .into_iter()
            .find_map(|(ar, caps)| {
                let names = [ar.kind.to_ascii_lowercase(), ar.plural.to_ascii_lowercase()];
                (names.contains(&wanted) && !ar.plural.contains('/')).then_some((ar, caps.scope))
            })
    })
}

/// Whether `obj` (of `kind`) is ready as Orkestra judges it: a Deployment rolled out (as
/// `kubectl rollout status` says), anything else with condition `Ready` `True` (as
/// `kubectl wait --for=condition=Ready`); else why not.
fn readiness(kind: &str, obj: &Value) -> Result<(), String> {
    let status = &obj["status"];
    if kind == "Deployment" {
        let number = |v: &Value| v.as_i64().unwrap_or(0);
        let generation = number(&obj["metadata"]["generation"]);
        if number(&status["observedGeneration"]) < generation {
            return Err("its new generation is not observed yet".into());
        }
        let wanted = obj["spec"]["replicas"].as_i64().unwrap_or(1);
        let updated = number(&status["updatedReplicas"]);
        let total = number(&status["replicas"]);
        let available = number(&status["availableReplicas"]);
        if updated < wanted {
            return Err(format!("{updated} of {wanted} replicas updated"));
        }
        if total > updated {
            return Err(format!(
                "{} old replicas pending termination",
                total - updated
            ));
        }
        if available < updated {
            return Err(format!(
                "{available} of {updated} updated replicas available"
            ));
        }
        return Ok(());
    }
    let ready = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
    match ready {
        Some(c) if c["status"] == "True" => Ok(()),
        Some(c) => Err(format!(
            "condition Ready is {}",
            c["status"].as_str().unwrap_or("unknown")
        )),
        None => Err("no condition Ready".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deployment_is_ready_once_rolled_out_and_anything_else_once_ready() {
        let deployment = |generation, observed, updated, total, available| {
            json!({"metadata": {"generation": generation}, "spec": {"replicas": 2},
                   "status": {"observedGeneration": observed, "updatedReplicas": updated,
                              "replicas": total, "availableReplicas": available}})
        };
        assert_eq!(readiness("Deployment", &deployment(2, 2, 2, 2, 2)), Ok(()));
        assert_eq!(
            readiness("Deployment", &deployment(2, 1, 2, 2, 2)),
            Err("its new generation is not observed yet".into())
        );
        assert_eq!(
            readiness("Deployment", &deployment(1, 1, 1, 2, 1)),
            Err("1 of 2 replicas updated".into())
        );
        assert_eq!(
            readiness("Deployment", &deployment(1, 1, 2, 3, 2)),
            Err("1 old replicas pending termination".into())
        );
        assert_eq!(
            readiness("Deployment", &deployment(1, 1, 2, 2, 1)),
            Err("1 of 2 updated replicas available".into())
        );
        let with =
            |status| json!({"status": {"conditions": [{"type": "Ready", "status": status}]}});
        assert_eq!(readiness("Certificate", &with("True")), Ok(()));
        assert_eq!(
            readiness("Certificate", &with("False")),
            Err("condition Ready is False".into())
        );
        assert_eq!(
            readiness("Secret", &json!({"data": {}})),
            Err("no condition Ready".into())
        );
    }
}
