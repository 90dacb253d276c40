//! The local cluster: etcd + kube-apiserver + kube-controller-manager on loopback, built from the
//! official Kubernetes Go modules (SPEC §13).
//!
//! [`NEWEST`] is the default; [`OLDEST`] is the oldest minor ork supports; `--version X.Y.Z`
//! selects any release the Go module proxy serves. Binaries are built once per machine by
//! `scripts/build-kubernetes.sh` into `~/.cache/ork/kubernetes-X.Y.Z/` (etcd into
//! `~/.cache/ork/etcd-A.B.C/`). A cluster's state lives in its own folder — the admin kubeconfig,
//! logs, and `pids` (name, pid) so `down` stops exactly what `up` started — so clusters of
//! different versions run side by side: `target/ork-cluster/` for the newest (what the tests use
//! by default), `target/ork-cluster-X.Y.Z/` for any other.

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::tools::{Result, run, workspace_root};

/// The newest Kubernetes release that builds with the machine's Go (1.26): the default target.
pub const NEWEST: &str = "1.37.2";
/// The oldest minor ork's client libraries support (kube 5, k8s-openapi 0.29 `earliest`), at
/// its newest patch the Go module proxy serves.
pub const OLDEST: &str = "1.33.13";

const COMPONENTS: [&str; 3] = ["etcd", "kube-apiserver", "kube-controller-manager"];

/// `X.Y.Z` from `--version`'s value: a release, or `newest` / `oldest`.
pub fn version_arg(given: &str) -> Result<String> {
    let v = match given {
        "newest" => NEWEST,
        "oldest" => OLDEST,
        v => v.strip_prefix('v').unwrap_or(v),
    };
    let parts: Vec<&str> = v.split('.').collect();
    if parts.len() != 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!(
            "--version {given}: expected a release such as {NEWEST}, or newest / oldest"
        )
        .into());
    }
    Ok(v.to_string())
}

/// One local cluster of one Kubernetes version.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub version: String,
    dir: PathBuf,
}

impl Cluster {
    pub fn new(version: &str) -> Cluster {
        let target = workspace_root().join("target");
        let dir = if version == NEWEST {
            target.join("ork-cluster")
        } else {
            target.join(format!("ork-cluster-{version}"))
        };
        Cluster {
            version: version.to_string(),
            dir,
        }
    }

    pub fn newest() -> Cluster {
        Cluster::new(NEWEST)
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// Starts the cluster unless it is already running and ready. Returns true if it started one.
    pub fn up(&self) -> Result<bool> {
        let dir = &self.dir;
        if running_pids(dir).is_some_and(|p| p.len() == COMPONENTS.len()) && ready(dir) {
            eprintln!(
                "cluster: Kubernetes {} already running, reusing it ({})",
                self.version,
                self.kubeconfig().display()
            );
            return Ok(false);
        }
        stop(dir);
        let started = Instant::now();
        if let Err(e) = start_in(dir, &format!("ork-local-{}", self.version), &self.version) {
            stop(dir);
            return Err(e);
        }
        eprintln!(
            "cluster: kube-apiserver {} (etcd {}) ready on https://127.0.0.1:{} in {:.1}s; KUBECONFIG={}",
            server_version(dir).unwrap_or_else(|| self.version.clone()),
            etcd_version(&self.version).unwrap_or_default(),
            api_port(dir).unwrap_or_default(),
            started.elapsed().as_secs_f64(),
            self.kubeconfig().display()
        );
        Ok(true)
    }

    /// Stops the processes `up` recorded, and only those.
    pub fn down(&self) -> Result<()> {
        let stopped = stop(&self.dir);
        eprintln!(
            "cluster: Kubernetes {}: stopped {stopped} process(es)",
            self.version
        );
        Ok(())
    }

    pub fn status(&self) -> Result<()> {
        let dir = &self.dir;
        match running_pids(dir) {
            Some(pids) if !pids.is_empty() => {
                for (name, pid) in &pids {
                    println!("{name}\t{pid}\trunning");
                }
                println!("ready\t{}", ready(dir));
                if let Some(v) = server_version(dir) {
                    println!("version\t{v}");
                }
                println!("kubeconfig\t{}", self.kubeconfig().display());
            }
            _ => println!("no cluster of Kubernetes {} running", self.version),
        }
        Ok(())
    }
}

fn cache_dir() -> PathBuf {
    std::env::var_os("ORK_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".cache/ork"))
}

fn kubernetes_bin(version: &str) -> PathBuf {
    cache_dir().join(format!("kubernetes-{version}/bin"))
}

/// The etcd that `version` is tested with, as the build recorded it.
fn etcd_version(version: &str) -> Option<String> {
    let path = cache_dir().join(format!("kubernetes-{version}/etcd-version"));
    Some(fs::read_to_string(path).ok()?.trim().to_string())
}

fn etcd_bin(version: &str) -> Result<PathBuf> {
    let etcd = etcd_version(version).ok_or("the Kubernetes build recorded no etcd version")?;
    Ok(cache_dir().join(format!("etcd-{etcd}/bin/etcd")))
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// Starts a fresh cluster whose files (kubeconfig naming cluster `name`, logs, `pids`) live in
/// `dir`; whatever was in `dir` is removed first. `cargo xtask chaos` runs one of its own this
/// way, since its R2 restarts the API server.
pub fn start_in(dir: &Path, name: &str, version: &str) -> Result<()> {
    ensure_built(version)?;
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir.join("certs"))?;

    let [etcd_port, etcd_peer, api_port, kcm_port] = free_ports::<4>()?;
    let token = random_hex(24)?;
    fs::write(
        dir.join("tokens.csv"),
        format!("{token},admin,admin,\"system:masters\"\n"),
    )?;
    fs::write(dir.join("api-port"), api_port.to_string())?;
    run(Command::new("openssl")
        .args(["genrsa", "-out"])
        .arg(dir.join("sa.key"))
        .arg("2048")
        .stderr(Stdio::null()))?;
    run(Command::new("openssl")
        .args(["rsa", "-pubout", "-in"])
        .arg(dir.join("sa.key"))
        .arg("-out")
        .arg(dir.join("sa.pub"))
        .stderr(Stdio::null()))?;

    let etcd_url = format!("http://127.0.0.1:{etcd_port}");
    spawn(
        dir,
        "etcd",
        Command::new(etcd_bin(version)?)
            .arg(format!("--data-dir={}", dir.join("etcd").display()))
            .arg(format!("--listen-client-urls={etcd_url}"))
            .arg(format!("--advertise-client-urls={etcd_url}"))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"))
            .arg(format!(
                "--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"
            ))
            .arg(format!(
                "--initial-cluster=default=http://127.0.0.1:{etcd_peer}"
            ))
            .arg("--quota-backend-bytes=4294967296")
            .arg("--unsafe-no-fsync"),
    )?;
    spawn(
        dir,
        "kube-apiserver",
        Command::new(kubernetes_bin(version).join("kube-apiserver"))
            .arg(format!("--etcd-servers={etcd_url}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--secure-port={api_port}"))
            .arg(format!("--cert-dir={}", dir.join("certs").display()))
            .arg(format!(
                "--token-auth-file={}",
                dir.join("tokens.csv").display()
            ))
            .arg("--authorization-mode=RBAC")
            .arg(format!(
                "--service-account-key-file={}",
                dir.join("sa.pub").display()
            ))
            .arg(format!(
                "--service-account-signing-key-file={}",
                dir.join("sa.key").display()
            ))
            .arg("--service-account-issuer=https://kubernetes.default.svc")
            .arg("--service-cluster-ip-range=10.0.0.0/16")
            .arg("--advertise-address=127.0.0.1")
            // The `kubernetes` Service's endpoint may not be a loopback address (1.2x+); nothing
            // here reaches the API server through that Service.
            .arg("--endpoint-reconciler-type=none")
            // API Priority and Fairness stays on, as in every cluster since 1.20: `system:masters`
            // (the admin here) is exempt from it, ServiceAccounts are not; the chaos suite's R6
            // throttles ork through it. The seats are many, so the 2-core benches are not capped.
            .arg("--max-requests-inflight=1000")
            .arg("--max-mutating-requests-inflight=500"),
    )?;
    write_kubeconfig(dir, name, api_port, &token)?;
    wait_ready(dir, Duration::from_secs(90))?;
    spawn(
        dir,
        "kube-controller-manager",
        Command::new(kubernetes_bin(version).join("kube-controller-manager"))
            .arg(format!("--kubeconfig={}", dir.join("kubeconfig").display()))
            .arg("--controllers=garbagecollector,namespace,serviceaccount,serviceaccount-token")
            .arg(format!(
                "--service-account-private-key-file={}",
                dir.join("sa.key").display()
            ))
            .arg(format!(
                "--root-ca-file={}",
                dir.join("certs/apiserver.crt").display()
            ))
            .arg("--leader-elect=false")
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--secure-port={kcm_port}"))
            .arg("--kube-api-qps=100")
            .arg("--kube-api-burst=200"),
    )?;
    Ok(())
}

/// Builds Kubernetes `version` and its etcd unless the cache has them.
fn ensure_built(version: &str) -> Result<()> {
    if !kubernetes_bin(version).join("kube-apiserver").exists() {
        eprintln!(
            "cluster: building Kubernetes {version} and its etcd from the official Go modules (once per machine, about 10-15 minutes on 2 cores)..."
        );
    }
    let script = workspace_root().join("xtask/scripts/build-kubernetes.sh");
    run(Command::new("bash").arg(script).arg(version))
}

fn spawn(dir: &Path, name: &str, cmd: &mut Command) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let log = fs::File::create(dir.join(format!("{name}.log")))?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // Its own process group: a Ctrl-C in the shell that ran `up` does not stop the cluster.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    let mut pids = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("pids"))?;
    writeln!(pids, "{name} {}", child.id())?;
    Ok(())
}

/// Recorded processes that are still alive and still the program we started.
fn running_pids(dir: &Path) -> Option<Vec<(String, u32)>> {
    let text = fs::read_to_string(dir.join("pids")).ok()?;
    Some(
        text.lines()
            .filter_map(|l| {
                let (name, pid) = l.split_once(' ')?;
                let pid: u32 = pid.trim().parse().ok()?;
                is_ours(pid, name).then(|| (name.to_string(), pid))
            })
            .collect(),
    )
}

fn is_ours(pid: u32, name: &str) -> bool {
    fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|c| {
            let argv0 = c.split(|b| *b == 0).next()?.to_vec();
            String::from_utf8(argv0).ok()
        })
        .is_some_and(|argv0| argv0.ends_with(name))
        && !fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.split(") ")
                .nth(1)
                .is_some_and(|rest| rest.starts_with('Z'))
        })
}

/// Stops the processes recorded in `dir/pids` (still running the program recorded), and only
/// those.
pub fn stop(dir: &Path) -> usize {
    let Some(pids) = running_pids(dir) else {
        return 0;
    };
    // Reverse start order: the controller manager first, etcd last.
    for (_, pid) in pids.iter().rev() {
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while pids.iter().any(|(n, p)| is_ours(*p, n)) && Instant::now() < deadline {
        sleep(Duration::from_millis(100));
    }
    for (name, pid) in &pids {
        if is_ours(*pid, name) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
    let _ = fs::remove_file(dir.join("pids"));
    pids.len()
}

fn api_port(dir: &Path) -> Option<u16> {
    fs::read_to_string(dir.join("api-port"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn token(dir: &Path) -> Option<String> {
    let csv = fs::read_to_string(dir.join("tokens.csv")).ok()?;
    csv.split(',').next().map(str::to_string)
}

fn ready(dir: &Path) -> bool {
    let (Some(port), Some(token)) = (api_port(dir), token(dir)) else {
        return false;
    };
    Command::new("curl")
        .args(["-skf", "-o", "/dev/null", "--max-time", "2", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("https://127.0.0.1:{port}/readyz"))
        .status()
        .is_ok_and(|s| s.success())
}

/// The running API server's `gitVersion` (`v1.37.2`), from `/version`.
fn server_version(dir: &Path) -> Option<String> {
    let (port, token) = (api_port(dir)?, token(dir)?);
    let out = Command::new("curl")
        .args(["-skf", "--max-time", "2", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("https://127.0.0.1:{port}/version"))
        .output()
        .ok()?;
    let body = String::from_utf8(out.stdout).ok()?;
    let rest = &body[body.find("\"gitVersion\"")? + "\"gitVersion\"".len()..];
    let start = rest.find('"')? + 1;
    let len = rest[start..].find('"')?;
    Some(rest[start..start + len].to_string())
}

fn wait_ready(dir: &Path, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    // Gone only when three looks in a row (750 ms) do not find it: a clean-clone CI run once
    // stopped a starting API server whose log showed it serving, on one look.
    let mut missing = 0;
    while Instant::now() < deadline {
        if ready(dir) {
            return Ok(());
        }
        if running_pids(dir).is_none_or(|p| p.len() < 2) {
            missing += 1;
            if missing >= 3 {
                return Err(format!(
                    "the API server exited; see {}",
                    dir.join("kube-apiserver.log").display()
                )
                .into());
            }
        } else {
            missing = 0;
        }
        sleep(Duration::from_millis(250));
    }
    Err(format!("the API server was not ready within {limit:?}").into())
}

fn write_kubeconfig(dir: &Path, name: &str, port: u16, token: &str) -> Result<()> {
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: https://127.0.0.1:{port}
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: {token}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: admin
current-context: {name}
"
    );
    let path = dir.join("kubeconfig");
    fs::write(&path, text)?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
    Ok(())
}

fn free_ports<const N: usize>() -> Result<[u16; N]> {
    // Hold all listeners until every port is chosen so none repeats.
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut ports = [0u16; N];
    for (slot, l) in ports.iter_mut().zip(&listeners) {
        *slot = l.local_addr()?.port();
    }
    Ok(ports)
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    use std::io::Read;
    fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}
