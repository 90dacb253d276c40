//! The fleet's replicas: started with a Katalog of their own, probed for readiness, SIGTERMed
//! like a pod being deleted; and the shards they hold, as their Leases say.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ListParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::super::procs::Ork;
use super::super::service::ChaosService;
use super::super::stage::{Stage, hostname, katalog, lock};

/// The leader-election Lease (R7); R8's shard Leases are `<this>-shard-<i>`.
pub(super) const LEADER_LEASE: &str = "orkestra-konductor";

/// A Deployment pod's `terminationGracePeriodSeconds` in `ork generate bundle`: SIGKILL after it.
const TERMINATION_GRACE: Duration = Duration::from_secs(30);

/// One `ork run` of the fleet: its label (the URL suffix it calls, the stamp on what it writes)
/// and its Lease identity.
#[derive(Debug)]
pub(super) struct Replica {
    pub(super) label: String,
    pub(super) identity: String,
    pub(super) ork: Ork,
    /// It serves `/readyz` (R7) on a port it logs.
    serves: bool,
}

/// Starts `bin` as replica `label`: its own Katalog calling `<service>/<label>`, its log in the
/// stage's folder, sampled like every ork of the stage.
pub(super) fn start(
    stage: &Stage,
    svc: &ChaosService,
    bin: &Path,
    label: &str,
    args: &[&str],
    serve: bool,
) -> Result<Replica> {
    let path = stage.katalog(
        &format!("katalog-{label}.yaml"),
        &katalog(&stage.ns.name, &format!("{}/{label}", svc.url), None, false),
    )?;
    let log = stage.dir.join(format!("ork-{label}.log"));
    // Port 0: ork binds a free one and logs it; none picked ahead can be taken meanwhile.
    let http = if serve { "127.0.0.1:0" } else { "none" };
    let ork = Ork::spawn_serving(bin, &path, &log, label, args, &stage.home.name, http)?;
    stage.sampler.watch(ork.pid, label);
    lock(&stage.logs).push(log);
    Ok(Replica {
        label: label.to_string(),
        identity: format!("{}-{}", hostname(), ork.pid),
        ork,
        serves: serve,
    })
}

/// The port ork logged it serves its endpoints on (`serving /healthz …`), once it has.
fn logged_port(log: &Path) -> Option<u16> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().find(|l| l.contains("serving /healthz"))?;
    let at = line.find("127.0.0.1:")? + "127.0.0.1:".len();
    let port: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    port.parse().ok()
}

/// Whether `GET /readyz` on `port` answers 200.
async fn ready(port: u16) -> bool {
    let Ok(mut conn) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let asked = conn
        .write_all(b"GET /readyz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await;
    let mut head = [0u8; 12];
    asked.is_ok() && conn.read_exact(&mut head).await.is_ok() && head.starts_with(b"HTTP/1.1 200")
}

/// Waits for `/readyz` of `r` (its caches synced), as a rollout waits for the readiness probe.
pub(super) async fn wait_ready(r: &mut Replica, limit: Duration) -> Result<f64> {
    if !r.serves {
        bail!("{} serves no HTTP endpoints", r.label);
    }
    let started = Instant::now();
    loop {
        if let Some(port) = logged_port(&r.ork.log)
            && ready(port).await
        {
            break;
        }
        if !r.ork.alive() {
            bail!(
                "{} exited before it was ready (log {})",
                r.label,
                r.ork.log.display()
            );
        }
        if started.elapsed() > limit {
            bail!("{} not ready within {limit:?}", r.label);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Fails unless `ork run --help` of `bin` names every one of `flags`: the previous release may
/// not know a flag the current one has.
pub(super) fn knows_flags(bin: &Path, flags: &[&str]) -> Result<()> {
    let out = std::process::Command::new(bin)
        .args(["run", "--help"])
        .output()
        .with_context(|| format!("running {} run --help", bin.display()))?;
    let help = String::from_utf8_lossy(&out.stdout);
    let missing: Vec<&&str> = flags.iter().filter(|f| !help.contains(**f)).collect();
    if !missing.is_empty() {
        bail!("{} does not know {missing:?}", bin.display());
    }
    Ok(())
}

/// The shard of a key as ork computes it (FNV-1a 64 of `namespace/name`, modulo the shards);
/// the value is fixed across releases, and the test below pins it to ork's own.
pub(super) fn shard_of(key: &str, total: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    u32::try_from(h % u64::from(total.max(1))).unwrap_or(0)
}

/// Shard → holder identity of every shard Lease held and not expired.
pub(super) async fn shard_holders(leases: &Api<Lease>) -> BTreeMap<u32, String> {
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
                .strip_prefix(&format!("{LEADER_LEASE}-shard-"))?
                .parse()
                .ok()?;
            let spec = l.spec?;
            let holder = spec.holder_identity.filter(|h| !h.is_empty())?;
            let until = spec.renew_time?.0
                + SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(15)));
            (until >= now).then_some((shard, holder))
        })
        .collect()
}

/// Every shard held by a live replica, split evenly among them (each holds ⌊N/k⌋ or ⌈N/k⌉).
pub(super) fn settled(holders: &BTreeMap<u32, String>, alive: &[String], total: u32) -> bool {
    let k = alive.len().max(1) as u32;
    let mut per: BTreeMap<&str, u32> = alive.iter().map(|a| (a.as_str(), 0)).collect();
    for h in holders.values() {
        match per.get_mut(h.as_str()) {
            Some(n) => *n += 1,
            None => return false,
        }
    }
    holders.len() == total as usize
        && per
            .values()
            .all(|n| (total / k..=total.div_ceil(k)).contains(n))
}

/// How a SIGTERMed replica went.
#[derive(Debug)]
pub(super) struct Exit {
    label: String,
    after: Duration,
    /// Still running after the pod's grace period: SIGKILLed, as a kubelet does.
    killed: bool,
}

impl Exit {
    pub(super) fn describe(&self) -> String {
        if self.killed {
            format!(
                "{} still running {:.0} s after SIGTERM: SIGKILLed",
                self.label,
                self.after.as_secs_f64()
            )
        } else {
            format!("{} {:.1}s", self.label, self.after.as_secs_f64())
        }
    }
}

/// SIGTERMs `r` and watches it go in a task of its own (the fleet carries on meanwhile, as
/// the rest of a cluster does while a pod terminates).
pub(super) fn terminate(stage: &Stage, mut r: Replica) -> tokio::task::JoinHandle<Exit> {
    let sampler = stage.sampler.clone();
    r.ork.terminate();
    let terminated = Instant::now();
    tokio::spawn(async move {
        let exited = r.ork.wait_exit(TERMINATION_GRACE).await;
        if !exited {
            r.ork.kill();
        }
        sampler.unwatch(r.ork.pid);
        Exit {
            label: r.label.clone(),
            after: terminated.elapsed(),
            killed: !exited,
        }
    })
}

/// The lines of the stage's ork logs that say reconciles were abandoned at shutdown.
pub(super) fn abandoned(stage: &Stage) -> Vec<String> {
    let mut out = Vec::new();
    for log in lock(&stage.logs).iter() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        for line in text.lines().filter(|l| l.contains("abandoned=")) {
            out.push(format!(
                "{}: {}",
                log.display(),
                line.chars().take(300).collect::<String>()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_of_keys_match_orks_own_hash() {
        // The value ork's shard_set test pins: the harness and ork agree on every key's shard.
        assert_eq!(shard_of("ns/a", 1024), 798);
    }

    #[test]
    fn a_fleet_is_settled_only_with_every_shard_held_evenly_by_live_replicas() {
        let alive = vec!["a".to_string(), "b".to_string()];
        let held = |hs: &[&str]| -> BTreeMap<u32, String> {
            hs.iter()
                .enumerate()
                .map(|(i, h)| (i as u32, h.to_string()))
                .collect()
        };
        assert!(settled(&held(&["a", "b", "a"]), &alive, 3));
        assert!(!settled(&held(&["a", "a", "a"]), &alive, 3), "uneven");
        assert!(!settled(&held(&["a", "b"]), &alive, 3), "a shard free");
        assert!(
            !settled(&held(&["a", "b", "dead"]), &alive, 3),
            "held by the dead"
        );
    }
}
