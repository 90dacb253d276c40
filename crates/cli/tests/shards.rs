//! `ork run --shards` against the local cluster: three replicas split nine shards evenly, a
//! killed replica's shards are taken over and its CRs keep being reconciled, and no key is ever
//! reconciled by two replicas at once (the service counts calls in flight per key).

mod common;

use common::*;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams};
use ork_test_support::{TestNamespace, apply_yaml, client, wait_for};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A reconcile service that takes `delay` per call, serves calls concurrently, and counts
/// overlapping calls for one key.
#[derive(Clone)]
struct SlowService {
    in_flight: Arc<Mutex<HashMap<String, u32>>>,
    overlaps: Arc<Mutex<Vec<String>>>,
    calls: Arc<Mutex<Vec<(String, Instant)>>>,
    /// Calls wait until this is true (so a measurement starts with a full queue).
    open: tokio::sync::watch::Receiver<bool>,
    opener: Arc<tokio::sync::watch::Sender<bool>>,
}

impl SlowService {
    async fn start(delay: Duration, open: bool) -> Result<(SlowService, String)> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr: SocketAddr = listener.local_addr()?;
        let (opener, rx) = tokio::sync::watch::channel(open);
        let svc = SlowService {
            in_flight: Arc::default(),
            overlaps: Arc::default(),
            calls: Arc::default(),
            open: rx,
            opener: Arc::new(opener),
        };
        let s = svc.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(s.clone().serve(conn, delay));
            }
        });
        Ok((svc, format!("http://{addr}/reconcile")))
    }

    async fn serve(self, mut conn: tokio::net::TcpStream, delay: Duration) {
        let mut buf = Vec::new();
        loop {
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                let mut chunk = [0u8; 8192];
                match conn.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:")?.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let mut chunk = [0u8; 8192];
                match conn.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let body: Value =
                serde_json::from_slice(&buf[end + 4..end + 4 + len]).unwrap_or_default();
            buf.drain(..end + 4 + len);
            let key = body["key"].as_str().unwrap_or_default().to_string();
            let mut open = self.open.clone();
            if open.wait_for(|o| *o).await.is_err() {
                return;
            }
            {
                let mut f = self.in_flight.lock().expect("lock");
                let n = f.entry(key.clone()).or_default();
                *n += 1;
                if *n > 1 {
                    self.overlaps.lock().expect("lock").push(key.clone());
                }
            }
            self.calls
                .lock()
                .expect("lock")
                .push((key.clone(), Instant::now()));
            tokio::time::sleep(delay).await;
            *self
                .in_flight
                .lock()
                .expect("lock")
                .entry(key.clone())
                .or_default() -= 1;
            let name = body["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default();
            let image = body["object"]["spec"]["image"].clone();
            let answer =
                json!({"result": "ok", "resources": [{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name}, "data": {"image": image}}]})
                .to_string();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                answer.len()
            );
            if conn.write_all(resp.as_bytes()).await.is_err() {
                return;
            }
        }
    }

    fn calls(&self) -> usize {
        self.calls.lock().expect("lock").len()
    }

    /// No key was in two calls at once; `context` follows the keys that were.
    fn assert_no_overlaps(&self, context: &str) {
        let overlaps = self.overlaps.lock().expect("lock").clone();
        assert!(
            overlaps.is_empty(),
            "keys reconciled twice at once: {overlaps:?}{context}"
        );
    }

    fn open(&self) {
        self.opener.send_replace(true);
    }
}

fn katalog_for(ns: &str, url: &str) -> String {
    configmap_katalog(ns, url, 4, "")
}

/// Shard → holder identity, for valid shard Leases.
async fn holders(leases: &Api<Lease>) -> BTreeMap<u32, String> {
    let now = Timestamp::now();
    let Ok(list) = leases.list(&ListParams::default()).await else {
        return BTreeMap::new();
    };
    list.items
        .into_iter()
        .filter_map(|l| {
            let shard = l
                .metadata
                .name
                .as_deref()?
                .strip_prefix("orkestra-konductor-shard-")?
                .parse()
                .ok()?;
            let spec = l.spec?;
            let holder = spec.holder_identity.filter(|h| !h.is_empty())?;
            let renewed = spec.renew_time?.0;
            let valid = renewed
                + k8s_openapi::jiff::SignedDuration::from_secs(i64::from(
                    spec.lease_duration_seconds.unwrap_or(4),
                ))
                >= now;
            valid.then_some((shard, holder))
        })
        .collect()
}

fn split(holders: &BTreeMap<u32, String>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for h in holders.values() {
        *out.entry(h.clone()).or_default() += 1;
    }
    out
}

struct Fleet {
    orks: Vec<Ork>,
}

fn start_replicas(n: usize, ns: &TestNamespace, home: &str, katalog: &str) -> Result<Fleet> {
    start_replicas_with(n, ns, home, katalog, &["--shards=9", "--lease-duration=4s"])
}

fn start_replicas_with(
    n: usize,
    ns: &TestNamespace,
    home: &str,
    katalog: &str,
    args: &[&str],
) -> Result<Fleet> {
    let dir = std::env::temp_dir().join(format!("ork-shards-{}-{n}", ns.name));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("katalog.yaml");
    std::fs::write(&path, katalog)?;
    let env = [("ORK_NAMESPACE", home)];
    let orks = (0..n)
        .map(|i| spawn_ork(&path, &dir.join(format!("ork-{i}.log")), args, &env))
        .collect::<Result<Vec<_>>>()?;
    Ok(Fleet { orks })
}

async fn create_all(client: &kube::Client, ns: &str, names: &[String]) -> Result<()> {
    for name in names {
        create_webapp(client, ns, name, "v1").await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_split_shards_take_over_a_killed_one_and_never_share_a_key() -> Result<()> {
    let (svc, url) = SlowService::start(Duration::from_millis(100), true).await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let home = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, CRD, &ns.name).await?;
    let client = admin.clone();
    let mut fleet = start_replicas(3, &ns, &home.name, &katalog_for(&ns.name, &url))?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &home.name);
    let even = wait_for("nine shards held 3/3/3", WAIT, || async {
        let h = holders(&leases).await;
        let s = split(&h);
        (h.len() == 9 && s.len() == 3 && s.values().all(|n| *n == 3)).then_some(s)
    })
    .await?;
    assert_eq!(even.values().copied().collect::<Vec<_>>(), [3, 3, 3]);

    let names: Vec<String> = (0..30).map(|i| format!("app-{i}")).collect();
    create_all(&client, &ns.name, &names).await?;
    let api = webapps(&client, &ns.name).await?;
    for name in &names {
        wait_ready(&api, name, "True").await?;
    }

    // SIGKILL one replica: its shards are taken over, its CRs keep being reconciled.
    let victim = fleet.orks.remove(0);
    let victim_id = format!("-{}", victim.child.id());
    drop(victim);
    let killed = Instant::now();
    let after = wait_for("the killed replica's shards taken over", WAIT, || async {
        let h = holders(&leases).await;
        let s = split(&h);
        (h.len() == 9 && s.len() == 2 && !s.keys().any(|id| id.ends_with(&victim_id))).then_some(s)
    })
    .await?;
    eprintln!(
        "takeover: {:.1}s after SIGKILL (lease 4s); split now {:?}",
        killed.elapsed().as_secs_f64(),
        after.values().collect::<Vec<_>>()
    );
    let maps = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
    for name in &names {
        let patch = json!({"spec": {"image": "v2"}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    for name in &names {
        wait_for(&format!("{name} edited after the kill"), WAIT, || async {
            let cm = maps.get(name).await.ok()?;
            (cm.data?.get("image")? == "v2").then_some(())
        })
        .await?;
    }
    svc.assert_no_overlaps("");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_reconcile_faster_than_one_when_the_service_is_the_limit() -> Result<()> {
    // Reports figures only: timing is never a pass/fail condition. ORK_SHARD_DELAY_MS sets the
    // service's time per call (default 100 ms).
    let delay = std::env::var("ORK_SHARD_DELAY_MS")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(100);
    let mut rates = Vec::new();
    for replicas in [1, 3] {
        let (svc, url) = SlowService::start(Duration::from_millis(delay), false).await?;
        let admin = client().await?;
        let ns = TestNamespace::create(&admin).await?;
        let home = TestNamespace::create(&admin).await?;
        apply_yaml(&admin, CRD, &ns.name).await?;
        let client = admin.clone();
        let _fleet = start_replicas(replicas, &ns, &home.name, &katalog_for(&ns.name, &url))?;
        let leases: Api<Lease> = Api::namespaced(client.clone(), &home.name);
        wait_for("every shard held", WAIT, || async {
            let h = holders(&leases).await;
            (h.len() == 9 && split(&h).len() == replicas).then_some(())
        })
        .await?;
        // Every CR waits in the queues (the service holds its calls) before the clock starts.
        let names: Vec<String> = (0..120).map(|i| format!("app-{i}")).collect();
        create_all(&client, &ns.name, &names).await?;
        let api = webapps(&client, &ns.name).await?;
        wait_for("every CR listed", WAIT, || async {
            let n = api.list(&ListParams::default()).await.ok()?.items.len();
            (n == names.len()).then_some(())
        })
        .await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let started = Instant::now();
        svc.open();
        wait_for("every CR called", Duration::from_secs(60), || async {
            (svc.calls() >= names.len()).then_some(())
        })
        .await?;
        let rate = names.len() as f64 / started.elapsed().as_secs_f64();
        eprintln!("{replicas} replica(s), 4 workers each, {delay} ms per call: {rate:.1} CRs/s");
        rates.push(rate);
    }
    eprintln!(
        "scale-out: 3 replicas / 1 replica = {:.2}x",
        rates[1] / rates[0]
    );
    Ok(())
}

/// Replicas started together while CRs are created at once (issue: 1 of 90 reconciled in two
/// minutes, the rest waiting for the hourly resync): every CR is reconciled, by its shard's
/// holder, however the shards move while the replicas find each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crs_created_while_replicas_start_and_split_are_all_reconciled() -> Result<()> {
    let (svc, url) = SlowService::start(Duration::from_millis(20), true).await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let home = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, CRD, &ns.name).await?;
    let names: Vec<String> = (0..90).map(|i| format!("app-{i}")).collect();
    // Half before the replicas start (their first lists hold them), half while they start, as
    // `kubectl apply` of a folder next to a fresh install does; the default lease duration.
    create_all(&admin, &ns.name, &names[..45]).await?;
    let _fleet = start_replicas_with(
        3,
        &ns,
        &home.name,
        &katalog_for(&ns.name, &url),
        &["--shards=9"],
    )?;
    // The rest while the replicas list, register and claim their shards.
    tokio::time::sleep(Duration::from_millis(800)).await;
    create_all(&admin, &ns.name, &names[45..]).await?;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), &home.name);
    wait_for("nine shards held 3/3/3", WAIT, || async {
        let h = holders(&leases).await;
        let s = split(&h);
        (h.len() == 9 && s.len() == 3 && s.values().all(|n| *n == 3)).then_some(())
    })
    .await?;
    let split_at = Instant::now();
    let maps = Api::<ConfigMap>::namespaced(admin.clone(), &ns.name);
    let missing = wait_for("every CR's ConfigMap", WAIT, || async {
        let have: std::collections::BTreeSet<String> = maps
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        names.iter().all(|n| have.contains(n)).then_some(())
    })
    .await;
    eprintln!(
        "all 90 converged {:.1}s after the split ({} calls)",
        split_at.elapsed().as_secs_f64(),
        svc.calls()
    );
    missing?;
    svc.assert_no_overlaps("");
    Ok(())
}

/// A replica that releases a shard waits for its reconciles there (longer than a Lease lasts,
/// with a slow service) and keeps renewing the Leases it keeps meanwhile: no shard it still
/// dispatches is taken by the newcomer, and no key is reconciled by two replicas at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_draining_a_shard_keeps_its_other_leases() -> Result<()> {
    let (svc, url) = SlowService::start(Duration::from_secs(6), true).await?;
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let home = TestNamespace::create(&admin).await?;
    apply_yaml(&admin, CRD, &ns.name).await?;
    // Calls of 6 s, longer than a 4 s Lease, within the call timeout.
    let katalog = katalog_for(&ns.name, &url).replace("timeout: 5s", "timeout: 20s");
    let first = start_replicas(1, &ns, &home.name, &katalog)?;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), &home.name);
    wait_for("one replica holds all nine", WAIT, || async {
        (holders(&leases).await.len() == 9).then_some(())
    })
    .await?;
    let names: Vec<String> = (0..18).map(|i| format!("app-{i}")).collect();
    create_all(&admin, &ns.name, &names).await?;
    wait_for("calls in flight", WAIT, || async {
        (svc.calls() >= 2).then_some(())
    })
    .await?;
    // The newcomer: the first replica releases shards with six-second calls in flight there.
    let dir = std::env::temp_dir().join(format!("ork-shards-{}-late", ns.name));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("katalog.yaml"), &katalog)?;
    let second = spawn_ork(
        &dir.join("katalog.yaml"),
        &dir.join("ork.log"),
        &["--shards=9", "--lease-duration=4s"],
        &[("ORK_NAMESPACE", home.name.as_str())],
    )?;
    let maps = Api::<ConfigMap>::namespaced(admin.clone(), &ns.name);
    wait_for("every CR reconciled", Duration::from_secs(90), || async {
        let n = maps.list(&ListParams::default()).await.ok()?.items.len();
        (n >= names.len()).then_some(())
    })
    .await?;
    let shard_lines = |log: String| {
        log.lines()
            .filter(|l| l.contains("shard"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    svc.assert_no_overlaps(&format!(
        "\n--- first ---\n{}\n--- second ---\n{}",
        shard_lines(first.orks[0].log()),
        shard_lines(second.log())
    ));
    Ok(())
}
