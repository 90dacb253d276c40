//! `cargo xtask chaos [--crs N] [--scenarios r1,r2,r3,r4] [--kills K]`: the reliability suite.
//!
//! Builds ork and `ork-chaos` in release, starts a local cluster of its own (etcd,
//! kube-apiserver, kube-controller-manager in `<target>/ork-chaos-cluster/`, apart from the
//! shared one of `cargo xtask test`, because R2 stops and starts its API server), runs the
//! scenarios and stops exactly the processes it started. Logs, CPU/RSS samples and
//! `report.json` go to `<target>/ork-chaos/`.

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::{Result, cargo, run, target_dir, workspace_root};

pub fn chaos(args: &[&str]) -> Result<()> {
    let mut crs = "2000".to_string();
    let mut pass = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--crs" => crs = it.next().ok_or("--crs needs a number")?.to_string(),
            "--scenarios" | "--kills" => {
                pass.push(a.to_string());
                pass.push(
                    it.next()
                        .ok_or_else(|| format!("{a} needs a value"))?
                        .to_string(),
                );
            }
            other => return Err(format!("chaos: unknown argument {other:?}").into()),
        }
    }
    crs.parse::<usize>()
        .map_err(|_| format!("--crs {crs:?} is not a number"))?;
    run(Command::new(cargo()).current_dir(workspace_root()).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "ork",
        "-p",
        "ork-test-support",
        "--bin",
        "ork",
        "--bin",
        "ork-chaos",
    ]))?;
    let dir = target_dir().join("ork-chaos-cluster");
    let out = target_dir().join("ork-chaos");
    let _ = fs::remove_dir_all(&out);
    stop(&dir);
    let result = up(&dir).and_then(|()| {
        let bin = target_dir().join("release");
        run(Command::new(bin.join("ork-chaos"))
            .env("KUBECONFIG", dir.join("kubeconfig"))
            .arg(bin.join("ork"))
            .args(["--crs", &crs])
            .arg("--apiserver-pids")
            .arg(dir.join("pids"))
            .arg("--out")
            .arg(&out)
            .args(&pass))
    });
    let stopped = stop(&dir);
    eprintln!("chaos: cluster stopped ({stopped} processes)");
    result
}

fn bin_dir() -> PathBuf {
    let cache = std::env::var_os("ORK_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                .join(".cache/ork")
        });
    cache.join("kubernetes-1.20.2/bin")
}

/// The same cluster as `cluster::up` (see cluster.rs), in `dir`: R2 restarts this API server,
/// never the shared one.
fn up(dir: &Path) -> Result<()> {
    run(Command::new("bash").arg(workspace_root().join("xtask/scripts/build-kubernetes.sh")))?;
    let started = Instant::now();
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir.join("certs"))?;
    let listeners = (0..4)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<_>>()?;
    drop(listeners);
    let (etcd_port, etcd_peer, api_port, kcm_port) = (ports[0], ports[1], ports[2], ports[3]);
    let token = {
        let mut buf = [0u8; 24];
        use std::io::Read;
        fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
        buf.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    fs::write(
        dir.join("tokens.csv"),
        format!("{token},admin,admin,\"system:masters\"\n"),
    )?;
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
    let kubeconfig = dir.join("kubeconfig");
    fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: ork-chaos\n  cluster:\n    server: https://127.0.0.1:{api_port}\n    insecure-skip-tls-verify: true\nusers:\n- name: admin\n  user:\n    token: {token}\ncontexts:\n- name: ork-chaos\n  context:\n    cluster: ork-chaos\n    user: admin\ncurrent-context: ork-chaos\n"
        ),
    )?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&kubeconfig, fs::Permissions::from_mode(0o600))?;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let ok = Command::new("curl")
            .args(["-skf", "-o", "/dev/null", "--max-time", "2", "-H"])
            .arg(format!("Authorization: Bearer {token}"))
            .arg(format!("https://127.0.0.1:{api_port}/readyz"))
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the chaos cluster's API server was not ready in 90 s; see {}",
                dir.join("kube-apiserver.log").display()
            )
            .into());
        }
        sleep(Duration::from_millis(250));
    }
    spawn(
        dir,
        "kube-controller-manager",
        Command::new(bin_dir().join("kube-controller-manager"))
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
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
            .arg("--port=0")
            .arg("--kube-api-qps=100")
            .arg("--kube-api-burst=200"),
    )?;
    eprintln!(
        "chaos: a cluster of its own on https://127.0.0.1:{api_port} in {:.1}s ({})",
        started.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(())
}

fn spawn(dir: &Path, name: &str, cmd: &mut Command) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let log = fs::File::create(dir.join(format!("{name}.log")))?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
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

/// Whether `pid` is alive, not a zombie, and runs a program whose name ends with `name`.
fn is_ours(pid: u32, name: &str) -> bool {
    let argv0_ok = fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|c| String::from_utf8(c.split(|b| *b == 0).next()?.to_vec()).ok())
        .is_some_and(|a| a.ends_with(name));
    argv0_ok
        && !fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
}

/// Stops the processes recorded in `dir/pids` (R2 rewrites the API server's line when it
/// restarts it), and only those.
fn stop(dir: &Path) -> usize {
    let Ok(text) = fs::read_to_string(dir.join("pids")) else {
        return 0;
    };
    let pids: Vec<(String, u32)> = text
        .lines()
        .filter_map(|l| {
            let (n, p) = l.split_once(' ')?;
            let p: u32 = p.trim().parse().ok()?;
            is_ours(p, n).then(|| (n.to_string(), p))
        })
        .collect();
    for (_, pid) in pids.iter().rev() {
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while pids.iter().any(|(n, p)| is_ours(*p, n)) && Instant::now() < deadline {
        sleep(Duration::from_millis(100));
    }
    for (n, pid) in &pids {
        if is_ours(*pid, n) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
    let _ = fs::remove_file(dir.join("pids"));
    pids.len()
}
