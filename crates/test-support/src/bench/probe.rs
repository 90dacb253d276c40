//! What the bench reads from outside the systems it measures: process CPU and peak RSS from
//! `/proc`, and the API server's own `apiserver_request_total` counters from `/metrics`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::Result;
use kube::Client;

/// Verbs the API server counts as writes (server-side apply is its own verb, `APPLY`).
const WRITE_VERBS: [&str; 5] = ["POST", "PUT", "PATCH", "APPLY", "DELETE"];

/// The resources the bench's job touches (plus leases, for operators that hold one).
const JOB_RESOURCES: [&str; 4] = ["widgets", "configmaps", "events", "leases"];

/// CPU seconds (user + system) a process has used so far; `None` when it is gone.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at field 3 (state).
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / clock_ticks())
}

/// Peak resident set size (`VmHWM`) in MiB; `None` when the process is gone.
pub fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Peak RSS of the calling process, for the baseline client reporting on itself.
pub fn own_peak_rss_mib() -> Option<f64> {
    peak_rss_mib(std::process::id())
}

fn clock_ticks() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The PIDs of the local cluster's processes from `pids` next to the kubeconfig (written by
/// `cargo xtask cluster up`): name → pid.
pub fn cluster_pids(kubeconfig: &Path) -> BTreeMap<String, u32> {
    let file = kubeconfig
        .parent()
        .map(|d| d.join("pids"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    file.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// Requests served by the API server, keyed by `(verb, resource[/subresource])`, summed over
/// response codes, groups and versions.
#[derive(Clone, Debug, Default)]
pub struct ApiCounts(pub BTreeMap<(String, String), f64>);

impl ApiCounts {
    /// Reads the API server's counters now.
    ///
    /// # Errors
    /// When `/metrics` cannot be read.
    pub async fn read(client: &Client) -> Result<ApiCounts> {
        let req = http::Request::get("/metrics").body(Vec::new())?;
        let text = client.request_text(req).await?;
        let mut counts = BTreeMap::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let value: f64 = value.trim().parse().unwrap_or(0.0);
            let label = |name: &str| -> String {
                let key = format!("{name}=\"");
                labels
                    .split(',')
                    .find_map(|kv| kv.strip_prefix(&key))
                    .map(|v| v.trim_end_matches('"').to_string())
                    .unwrap_or_default()
            };
            let (verb, resource, sub) = (label("verb"), label("resource"), label("subresource"));
            // A server-side dry run (`ork diff`) is counted apart from the writes it rehearses.
            let verb = if label("dry_run").is_empty() {
                verb
            } else {
                format!("{verb} (dry run)")
            };
            let resource = if sub.is_empty() {
                resource
            } else {
                format!("{resource}/{sub}")
            };
            *counts.entry((verb, resource)).or_insert(0.0) += value;
        }
        Ok(ApiCounts(counts))
    }

    /// What happened between `before` and `self`.
    pub fn since(&self, before: &ApiCounts) -> ApiCounts {
        let mut out = BTreeMap::new();
        for (k, v) in &self.0 {
            let d = v - before.0.get(k).copied().unwrap_or(0.0);
            if d > 0.0 {
                out.insert(k.clone(), d);
            }
        }
        ApiCounts(out)
    }

    /// Only the writes.
    pub fn writes(&self) -> ApiCounts {
        ApiCounts(
            self.0
                .iter()
                .filter(|((verb, _), _)| WRITE_VERBS.contains(&verb.as_str()))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        )
    }

    /// Split into the requests of the job (on Widgets, ConfigMaps, events, leases; the job
    /// deletes nothing) and the rest: on a shared cluster, other clients' traffic and namespace
    /// clean-up.
    pub fn split_job(&self) -> (ApiCounts, ApiCounts) {
        let job = |verb: &str, r: &str| {
            let base = r.split('/').next().unwrap_or(r);
            verb != "DELETE" && JOB_RESOURCES.contains(&base)
        };
        let (a, b): (BTreeMap<_, _>, BTreeMap<_, _>) = self
            .0
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .partition(|((verb, r), _)| job(verb, r));
        (ApiCounts(a), ApiCounts(b))
    }

    pub fn total(&self) -> f64 {
        // Not `sum()`: the sum of no f64 is -0.0, printed as "-0.00".
        self.0.values().fold(0.0, |a, b| a + b)
    }
}

/// CPU seconds of a set of processes, read at two moments.
#[derive(Clone, Debug, Default)]
pub struct CpuSnapshot(pub BTreeMap<String, f64>);

impl CpuSnapshot {
    pub fn read(pids: &BTreeMap<String, u32>) -> CpuSnapshot {
        CpuSnapshot(
            pids.iter()
                .filter_map(|(name, pid)| Some((name.clone(), cpu_seconds(*pid)?)))
                .collect(),
        )
    }

    pub fn since(&self, before: &CpuSnapshot) -> CpuSnapshot {
        CpuSnapshot(
            self.0
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v - before.0.get(k)?)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_and_rss_are_readable() {
        assert!(cpu_seconds(std::process::id()).is_some());
        assert!(own_peak_rss_mib().is_some_and(|m| m > 0.0));
    }
}
