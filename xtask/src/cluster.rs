//! The local cluster: etcd + kube-apiserver + kube-controller-manager 1.20.2 on loopback.
//!
//! State lives in `target/ork-cluster/`: the admin kubeconfig, logs, and `pids` (name, pid) so
//! `down` stops exactly what `up` started. Binaries are built once per machine by
//! `scripts/build-kubernetes.sh` into `~/.cache/ork/`.

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::{Result, run, workspace_root};

const COMPONENTS: [&str; 3] = ["etcd", "kube-apiserver", "kube-controller-manager"];

/// Where the cluster's files are.
pub fn state_dir() -> PathBuf {
    workspace_root().join("target/ork-cluster")
}

pub fn kubeconfig() -> PathBuf {
    state_dir().join("kubeconfig")
}

fn bin_dir() -> PathBuf {
    let cache = std::env::var_os("ORK_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".cache/ork"));
    cache.join("kubernetes-1.20.2/bin")
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// Starts the cluster unless ours is already running and ready. Returns true if it started one.
pub fn up() -> Result<bool> {
    let dir = state_dir();
    if running_pids(&dir).is_some_and(|p| p.len() == COMPONENTS.len()) && ready(&dir) {
        eprintln!(
            "cluster: already running, reusing it ({})",
            kubeconfig().display()
        );
        return Ok(false);
    }
    stop(&dir);
    let started = Instant::now();
    start_in(&dir, "ork-local")?;
    eprintln!(
        "cluster: kube-apiserver 1.20.2 ready on https://127.0.0.1:{} in {:.1}s; KUBECONFIG={}",
        api_port(&dir).unwrap_or_default(),
        started.elapsed().as_secs_f64(),
        kubeconfig().display()
    );
    Ok(true)
}

/// Starts a fresh cluster whose files (kubeconfig naming cluster `name`, logs, `pids`) live in
/// `dir`; whatever was in `dir` is removed first. `cargo xtask chaos` runs one of its own this
/// way, since its R2 restarts the API server.
pub fn start_in(dir: &Path, name: &str) -> Result<()> {
    ensure_tools()?;
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
        Command::new("etcd")
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
        Command::new(bin_dir().join("kube-apiserver"))
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
            .arg("--max-requests-inflight=1000")
            .arg("--max-mutating-requests-inflight=500")
            .arg("--enable-priority-and-fairness=false"),
    )?;
    write_kubeconfig(dir, name, api_port, &token)?;
    wait_ready(dir, Duration::from_secs(90))?;
    spawn(
        dir,
        "kube-controller-manager",
        Command::new(bin_dir().join("kube-controller-manager"))
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
            // No insecure port (10252 by default in 1.20): two clusters on one machine must not clash.
            .arg("--port=0")
            .arg("--kube-api-qps=100")
            .arg("--kube-api-burst=200"),
    )?;
    Ok(())
}

/// Stops the processes `up` recorded, and only those.
pub fn down() -> Result<()> {
    let dir = state_dir();
    let stopped = stop(&dir);
    eprintln!("cluster: stopped {stopped} process(es)");
    Ok(())
}

pub fn status() -> Result<()> {
    let dir = state_dir();
    match running_pids(&dir) {
        Some(pids) if !pids.is_empty() => {
            for (name, pid) in &pids {
                println!("{name}\t{pid}\trunning");
            }
            println!("ready\t{}", ready(&dir));
            println!("kubeconfig\t{}", kubeconfig().display());
        }
        _ => println!("no cluster running"),
    }
    Ok(())
}

fn ensure_tools() -> Result<()> {
    let script = workspace_root().join("xtask/scripts/build-kubernetes.sh");
    let needs_build = !bin_dir().join("kube-apiserver").exists();
    if needs_build {
        eprintln!(
            "cluster: building Kubernetes 1.20.2 from Debian's source package (once per machine, about 10 minutes on 2 cores)..."
        );
    }
    run(Command::new("bash").arg(script))?;
    let mut missing = Vec::new();
    for (tool, pkg) in [
        ("etcd", "etcd-server"),
        ("openssl", "openssl"),
        ("curl", "curl"),
    ] {
        if !on_path(tool) {
            missing.push(pkg);
        }
    }
    if !missing.is_empty() {
        run(Command::new("apt-get")
            .args(["install", "-y", "-qq"])
            .args(&missing))?;
    }
    Ok(())
}

fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
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

fn wait_ready(dir: &Path, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ready(dir) {
            return Ok(());
        }
        if running_pids(dir).is_none_or(|p| p.len() < 2) {
            return Err(format!(
                "the API server exited; see {}",
                dir.join("kube-apiserver.log").display()
            )
            .into());
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
