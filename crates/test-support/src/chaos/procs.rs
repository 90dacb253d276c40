//! ork processes (spawned, SIGKILLed, their logs), the CPU/RSS sampler, and the API server's
//! stop/start for R2.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// One `ork run` process; SIGKILLed when dropped.
#[derive(Debug)]
pub struct Ork {
    pub child: Child,
    pub pid: u32,
    pub label: String,
    pub log: PathBuf,
}

impl Ork {
    /// Spawns `ork run -k katalog ARGS` serving no HTTP endpoint, its stderr to `log`.
    ///
    /// # Errors
    /// When the binary cannot start.
    pub fn spawn(
        bin: &Path,
        katalog: &Path,
        log: &Path,
        label: &str,
        args: &[&str],
        ork_namespace: &str,
    ) -> Result<Ork> {
        Ork::spawn_serving(bin, katalog, log, label, args, ork_namespace, "none")
    }

    /// As [`spawn`](Self::spawn), serving `/readyz` and the rest of the probes on `http_addr`
    /// (R7 waits for a new replica to be ready, as a Deployment's rollout does): with
    /// `--probe-addr` where `bin` knows it, else with `--http-addr` as releases before it.
    ///
    /// # Errors
    /// When the binary cannot start.
    pub fn spawn_serving(
        bin: &Path,
        katalog: &Path,
        log: &Path,
        label: &str,
        args: &[&str],
        ork_namespace: &str,
        http_addr: &str,
    ) -> Result<Ork> {
        let probe_flag = Command::new(bin)
            .args(["run", "--help"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--probe-addr"));
        let serving = if probe_flag {
            vec![
                format!("--probe-addr={http_addr}"),
                "--http-addr=none".into(),
            ]
        } else {
            vec![format!("--http-addr={http_addr}")]
        };
        let child = Command::new(bin)
            .args(["run", "-k"])
            .arg(katalog)
            .args(&serving)
            .arg("--no-dev-files")
            .args(args)
            .env("KUBECONFIG", ork_test_support::kubeconfig_path())
            .env("ORK_NAMESPACE", ork_namespace)
            .env(
                "RUST_LOG",
                "info,kube=warn,kube_client=warn,kube_runtime=warn,hyper=off,reqwest=off,tower=off,h2=off,rustls=off",
            )
            .env("RUST_BACKTRACE", "1")
            // The Lease identity is then host and pid, as the scenarios expect.
            .env_remove("POD_NAME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).with_context(|| log.display().to_string())?)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        Ok(Ork {
            pid: child.id(),
            child,
            label: label.to_string(),
            log: log.to_path_buf(),
        })
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM: ork stops taking work, lets in-flight reconciles finish and gives its Leases
    /// up (as a pod being deleted). Reap it with [`wait_exit`](Self::wait_exit).
    pub fn terminate(&self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
    }

    /// Waits up to `limit` for the process to exit; false when it is still running.
    pub async fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.alive() {
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        true
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Ork {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Lines of the logs that mention a panic (the panic hook's "panicked at", or ork's own
/// "reconcile panicked" for a caught one), with the file they came from.
pub fn panics(logs: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    for log in logs {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        for line in text.lines().filter(|l| l.contains("panicked")) {
            out.push(format!(
                "{}: {}",
                log.display(),
                line.chars().take(400).collect::<String>()
            ));
        }
    }
    out
}

/// One sample of one process.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Seconds since the sampler started.
    pub t: f64,
    pub label: String,
    pub pid: u32,
    pub rss_kib: u64,
    /// utime + stime in clock ticks.
    pub cpu_ticks: u64,
}

/// Samples RSS and CPU time of the registered processes twice a second, from /proc.
#[derive(Debug, Clone)]
pub struct Sampler {
    started: Instant,
    pids: Arc<Mutex<BTreeMap<u32, String>>>,
    samples: Arc<Mutex<Vec<Sample>>>,
    pub ticks_per_s: f64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Sampler {
    pub fn start() -> Sampler {
        let ticks_per_s = Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0);
        let s = Sampler {
            started: Instant::now(),
            pids: Arc::default(),
            samples: Arc::default(),
            ticks_per_s,
        };
        let bg = s.clone();
        tokio::spawn(async move {
            loop {
                bg.sample_once();
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
        s
    }

    pub fn watch(&self, pid: u32, label: &str) {
        lock(&self.pids).insert(pid, label.to_string());
    }

    pub fn unwatch(&self, pid: u32) {
        lock(&self.pids).remove(&pid);
    }

    /// Seconds since the sampler started (the time axis of the samples).
    pub fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn sample_once(&self) {
        let t = self.now();
        let pids: Vec<(u32, String)> = lock(&self.pids)
            .iter()
            .map(|(p, l)| (*p, l.clone()))
            .collect();
        let mut got = Vec::new();
        for (pid, label) in pids {
            let Some((rss_kib, cpu_ticks)) = read_proc(pid) else {
                continue;
            };
            got.push(Sample {
                t,
                label,
                pid,
                rss_kib,
                cpu_ticks,
            });
        }
        lock(&self.samples).extend(got);
    }

    pub fn samples(&self) -> Vec<Sample> {
        lock(&self.samples).clone()
    }
}

/// (VmRSS in KiB, utime + stime in ticks) of a live, non-zombie process.
fn read_proc(pid: u32) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(") ")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    // After "(comm) ": state is field 3 of stat(5), utime 14, stime 15 → indices 11, 12 here.
    let cpu = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())?;
    Some((rss, cpu))
}

/// What the samples of one scenario say.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub peak_rss_mib: f64,
    /// The last sample at or before convergence (of the process alive at the end).
    pub rss_at_converge_mib: f64,
    /// The last sample of the idle window.
    pub rss_at_end_mib: f64,
    /// CPU seconds of every ork process from the scenario's start to convergence.
    pub cpu_s_load: f64,
    pub load_s: f64,
    /// CPU % of the surviving process during the idle window after convergence.
    pub cpu_pct_idle: f64,
    /// RSS (MiB) of the surviving process at ten points in time across the scenario.
    pub timeline: Vec<(f64, f64)>,
}

impl Usage {
    /// Growth from convergence to the end of the idle window, MiB.
    pub fn growth_after_load_mib(&self) -> f64 {
        self.rss_at_end_mib - self.rss_at_converge_mib
    }
}

/// Summarises the samples in `[start, end]` with convergence at `converged` (sampler times).
pub fn usage(samples: &[Sample], ticks: f64, start: f64, converged: f64, end: f64) -> Usage {
    let mine: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.t >= start && s.t <= end)
        .collect();
    let mib = |k: u64| k as f64 / 1024.0;
    let mut u = Usage {
        load_s: converged - start,
        ..Usage::default()
    };
    u.peak_rss_mib = mine.iter().map(|s| mib(s.rss_kib)).fold(0.0, f64::max);
    // Every process of a scenario is started by it: its CPU time so far is the scenario's.
    let mut per_pid: BTreeMap<u32, u64> = BTreeMap::new();
    for s in mine.iter().filter(|s| s.t <= converged) {
        per_pid.insert(s.pid, s.cpu_ticks);
    }
    u.cpu_s_load = per_pid.values().map(|t| *t as f64 / ticks).sum();
    // The surviving process: the one with the last sample.
    let Some(last) = mine.last() else {
        return u;
    };
    let survivor: Vec<&&Sample> = mine.iter().filter(|s| s.pid == last.pid).collect();
    u.rss_at_end_mib = mib(last.rss_kib);
    let at_conv = survivor
        .iter()
        .rev()
        .find(|s| s.t <= converged)
        .or(survivor.first());
    if let Some(c) = at_conv {
        u.rss_at_converge_mib = mib(c.rss_kib);
        let idle_s = last.t - c.t;
        if idle_s > 0.5 {
            u.cpu_pct_idle =
                100.0 * (last.cpu_ticks.saturating_sub(c.cpu_ticks)) as f64 / ticks / idle_s;
        }
    }
    for k in 0..=10 {
        let at = start + (end - start) * f64::from(k) / 10.0;
        // Any ork alive at that moment (the largest, with two replicas).
        let near = mine
            .iter()
            .filter(|s| (s.t - at).abs() <= 0.6)
            .map(|s| mib(s.rss_kib))
            .fold(0.0, f64::max);
        if near > 0.0 {
            u.timeline.push((at - start, near));
        }
    }
    u
}

/// The local cluster's kube-apiserver, stopped and started again by R2 (only for a cluster of
/// this run's own: `cargo xtask chaos` passes the `pids` file of the cluster it started).
#[derive(Debug, Clone)]
pub struct ApiServer {
    pub pids_file: PathBuf,
}

impl ApiServer {
    fn pid(&self) -> Result<u32> {
        let text = std::fs::read_to_string(&self.pids_file)?;
        text.lines()
            .find_map(|l| l.strip_prefix("kube-apiserver ")?.trim().parse().ok())
            .context("no kube-apiserver in the pids file")
    }

    /// SIGTERM, SIGKILL when it is still there 5 s later (it waits for long watches otherwise);
    /// returns its command line for [`start`](Self::start) and whether SIGKILL was needed.
    ///
    /// # Errors
    /// When it is not running.
    pub fn stop(&self) -> Result<(Vec<String>, bool)> {
        let pid = self.pid()?;
        let argv: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))?
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if !argv.first().is_some_and(|a| a.ends_with("kube-apiserver")) {
            bail!("pid {pid} is not a kube-apiserver");
        }
        Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()?;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut killed = false;
        while read_proc(pid).is_some() {
            if Instant::now() > deadline && !killed {
                Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status()?;
                killed = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok((argv, killed))
    }

    /// Starts it again with the same command line (its log appended), recorded in the pids file.
    ///
    /// # Errors
    /// When it cannot be started.
    pub fn start(&self, argv: &[String]) -> Result<()> {
        use std::os::unix::process::CommandExt;
        let (prog, args) = argv.split_first().context("empty command line")?;
        let log_path = self
            .pids_file
            .parent()
            .map(|d| d.join("kube-apiserver.log"))
            .context("pids file without a folder")?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        let child = Command::new(prog)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()?;
        let text = std::fs::read_to_string(&self.pids_file)?;
        let updated: String = text
            .lines()
            .map(|l| {
                if l.starts_with("kube-apiserver ") {
                    format!("kube-apiserver {}\n", child.id())
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(&self.pids_file, updated)?;
        // Not waited for: `cargo xtask chaos` stops it by pid at the end.
        drop(child);
        Ok(())
    }
}
