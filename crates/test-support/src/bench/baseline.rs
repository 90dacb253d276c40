//! The baseline: a plain client doing the job with only the necessary writes per CR — create
//! the Widget, call the service, server-side apply its two ConfigMaps (owner reference to the
//! Widget), one status write — with the operators' concurrency: as many creating tasks as the
//! bench uses for them, as many reconciling tasks as ork has workers. Run as its own
//! process (`ork-bench baseline-client`) so its CPU and memory are measured like the others'.
//!
//! `baseline-spec` is the same client making, in addition, the requests SPEC §10/§11 ask of
//! any remote reconciler for a new CR: a read of each child before its first apply (an object
//! of that name that is not the CR's is not taken over), the annotation write and the success
//! event. The ratio of ork to it is what ork's runtime costs (watches, caches, queue) beyond the
//! contract's own requests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, GetParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::http1::Conn;
use crate::probe;
use crate::systems::{GROUP, KIND, widget, widgets};

/// Does the job for `n` Widgets in `ns`: `workers` tasks create the Widgets (as the bench does
/// for the operators) and hand each to one of `workers` reconcile tasks at once (an ideal
/// controller: no watch, no cache). Returns what it measured on itself:
/// `{"elapsed_s", "cpu_s", "peak_rss_mib"}`.
///
/// # Errors
/// On the first failed write or call.
pub async fn run(
    client: Client,
    ns: &str,
    n: usize,
    service: SocketAddr,
    workers: usize,
    spec: bool,
) -> Result<Value> {
    let cpu0 = probe::cpu_seconds(std::process::id()).unwrap_or(0.0);
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = async_channel(n);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers {
        let (client, ns, next, tx) = (client.clone(), ns.to_string(), next.clone(), tx.clone());
        tasks.spawn(async move {
            let crs = widgets(&client, &ns);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return anyhow::Ok(());
                }
                let obj: DynamicObject = serde_json::from_value(widget(i))?;
                let cr = crs.create(&PostParams::default(), &obj).await?;
                tx.send(cr).await.ok().context("reconcile tasks gone")?;
            }
        });
    }
    drop(tx);
    for _ in 0..workers {
        let (client, ns, rx) = (client.clone(), ns.to_string(), rx.clone());
        tasks.spawn(async move {
            let mut conn = Conn::new(service);
            loop {
                let cr = rx.lock().await.recv().await;
                let Some(cr) = cr else { return anyhow::Ok(()) };
                reconcile(&client, &ns, cr, &mut conn, spec).await?;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    Ok(json!({
        "elapsed_s": elapsed,
        "cpu_s": probe::cpu_seconds(std::process::id()).unwrap_or(0.0) - cpu0,
        "peak_rss_mib": probe::own_peak_rss_mib(),
    }))
}

type Queue = (
    tokio::sync::mpsc::Sender<DynamicObject>,
    Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<DynamicObject>>>,
);

/// A multi-consumer queue from tokio's mpsc (the receiver shared behind a lock).
fn async_channel(capacity: usize) -> Queue {
    let (tx, rx) = tokio::sync::mpsc::channel(capacity.max(1));
    (tx, Arc::new(tokio::sync::Mutex::new(rx)))
}

/// Call, two applies, one status write; with `spec` also the adopt reads, the annotation write
/// and the success event.
async fn reconcile(
    client: &Client,
    ns: &str,
    cr: DynamicObject,
    conn: &mut Conn,
    spec: bool,
) -> Result<()> {
    let crs = widgets(client, ns);
    let name = cr
        .metadata
        .name
        .clone()
        .context("created Widget has a name")?;
    let uid = cr
        .metadata
        .uid
        .clone()
        .context("created Widget has a uid")?;
    let request = json!({"key": format!("{ns}/{name}"), "object": cr});
    let (code, body) = conn
        .request("POST", "/reconcile", &serde_json::to_vec(&request)?)
        .await?;
    if code != 200 {
        bail!("service answered {code} for {name}");
    }
    let answer: Value = serde_json::from_slice(&body)?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let owner = json!([{"apiVersion": format!("{GROUP}/v1"), "kind": KIND, "name": name, "uid": uid,
        "controller": true, "blockOwnerDeletion": true}]);
    let pp = PatchParams::apply("bench-baseline").force();
    for mut child in answer["resources"].as_array().cloned().unwrap_or_default() {
        child["metadata"]["ownerReferences"] = owner.clone();
        let child_name = child["metadata"]["name"]
            .as_str()
            .context("child name")?
            .to_string();
        if spec {
            cms.get_metadata_opt_with(&child_name, &GetParams::any())
                .await?;
        }
        cms.patch(&child_name, &pp, &Patch::Apply(&child)).await?;
    }
    let status = json!({"status": answer["status"]});
    crs.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    if spec {
        let annotations = json!({"metadata": {"annotations": {"bench.ork.dev/health": "Healthy"}}});
        crs.patch(&name, &PatchParams::default(), &Patch::Merge(&annotations))
            .await?;
        success_event(client, ns, &name, &uid).await?;
    }
    Ok(())
}

/// An events.k8s.io/v1 event on the Widget, as ork records a first success.
async fn success_event(client: &Client, ns: &str, name: &str, uid: &str) -> Result<()> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let event = Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(Timestamp::now())),
        reporting_controller: Some("bench-baseline".into()),
        reporting_instance: Some("bench-baseline".into()),
        action: Some("Reconcile".into()),
        reason: Some("Reconciled".into()),
        note: Some(format!("Remote reconciler succeeded for {ns}/{name}")),
        type_: Some("Normal".into()),
        regarding: Some(ObjectReference {
            api_version: Some(format!("{GROUP}/v1")),
            kind: Some(KIND.into()),
            namespace: Some(ns.into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..ObjectReference::default()
        }),
        ..Event::default()
    };
    events.create(&PostParams::default(), &event).await?;
    Ok(())
}
