//! A test host of a test's own (the chaos suite's R5): a network namespace joined to this one by a veth pair,
//! with faults on its link that the kernel applies packet by packet.
//!
//! The kernels this runs on may lack `sch_netem` (`CONFIG_NET_SCH_NETEM`; the 2-core machines
//! this suite runs on have none), so the faults are made as netem makes them, one hook up:
//! iptables in the namespace sends every packet the host sends or receives to an NFQUEUE, and a
//! thread of this process, living in the namespace, gives each its verdict. A drop is real loss
//! (TCP retransmits); an accept after a delay is latency, and with jitter later packets overtake
//! earlier ones (TCP sees them out of order); dropping everything is a partition in which
//! connects and writes hang, as across a broken switch. `--queue-bypass` lets packets through
//! when the thread is gone, so a crashed run leaves no host without a network.
//!
//! Needs root (CAP_NET_ADMIN), `ip` (iproute2) and `iptables-legacy` (Debian's `iptables`:
//! the NFQUEUE target of iptables-nft needs `nft_queue`, which such kernels may lack too).

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use rand::Rng;

/// What the link between this namespace and the test host does to packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Clear,
    /// Packets the host sends wait `delay` ± `jitter` (uniform); `loss_pct` % of the packets
    /// either way are dropped.
    Degraded {
        delay: Duration,
        jitter: Duration,
        loss_pct: u64,
    },
    /// Every packet either way is dropped.
    Partitioned,
}

/// What the link did so far.
#[derive(Debug, Default)]
pub struct LinkStats {
    pub passed: AtomicU64,
    pub delayed: AtomicU64,
    pub dropped: AtomicU64,
    /// Packets let go while one that arrived before them was still held.
    pub reordered: AtomicU64,
}

impl LinkStats {
    pub fn line(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "{} packets passed, {} delayed, {} dropped, {} overtook an earlier one",
            get(&self.passed),
            get(&self.delayed),
            get(&self.dropped),
            get(&self.reordered)
        )
    }
}

/// A network namespace with one veth link to this one; removed when dropped.
#[derive(Debug)]
pub struct TestHost {
    pub name: String,
    /// The host's address (this side is `.1` of the same /30).
    pub addr: Ipv4Addr,
    link: Arc<Mutex<Link>>,
    pub stats: Arc<LinkStats>,
    stop: Arc<AtomicBool>,
    queue: Option<JoinHandle<()>>,
}

const QUEUE: u16 = 7;
/// The hook number of locally generated packets (`NF_INET_LOCAL_OUT`).
const LOCAL_OUT: u8 = 3;

fn sh(args: &[&str]) -> Result<()> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .with_context(|| format!("running {} (is it installed?)", args[0]))?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Moves the calling thread into namespace `ns`: sockets it makes from then on live there,
/// whichever thread uses them later.
fn join_namespace(ns: &str) -> Result<()> {
    let file = std::fs::File::open(format!("/run/netns/{ns}"))
        .with_context(|| format!("opening network namespace {ns}"))?;
    rustix::thread::move_into_link_name_space(
        std::os::fd::AsFd::as_fd(&file),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .with_context(|| format!("joining network namespace {ns}"))
}

impl TestHost {
    /// Creates namespace `ork-chaos-<pid>-<index>` with address `10.<n>.<index>.2/30` (`n` from
    /// the pid), this side `.1` of the same /30, its packets queued for the link's verdicts (at first
    /// [`Link::Clear`]).
    ///
    /// # Errors
    /// Without root, `ip` or `iptables-legacy`, or when the kernel has no NFQUEUE.
    pub fn create(index: u8) -> Result<TestHost> {
        // Names and addresses differ between processes (a test run beside a chaos run).
        let pid = std::process::id();
        let name = format!("ork-chaos-{pid}-{index}");
        let (here, there) = (format!("ok{pid:x}h{index}"), format!("ok{pid:x}s{index}"));
        let net = 100 + (pid % 150) as u8;
        let (addr, local) = (
            Ipv4Addr::new(10, net, index, 2),
            Ipv4Addr::new(10, net, index, 1),
        );
        let _ = sh(&["ip", "netns", "del", &name]);
        let _ = sh(&["ip", "link", "del", &here]);
        sh(&["ip", "netns", "add", &name])?;
        let mut host = TestHost {
            name: name.clone(),
            addr,
            link: Arc::new(Mutex::new(Link::Clear)),
            stats: Arc::default(),
            stop: Arc::default(),
            queue: None,
        };
        let queue = QUEUE.to_string();
        let setup: &[&[&str]] = &[
            &[
                "ip", "link", "add", &here, "type", "veth", "peer", "name", &there,
            ],
            &["ip", "link", "set", &there, "netns", &name],
            &["ip", "addr", "add", &format!("{local}/30"), "dev", &here],
            &["ip", "link", "set", &here, "up"],
            &[
                "ip",
                "-n",
                &name,
                "addr",
                "add",
                &format!("{addr}/30"),
                "dev",
                &there,
            ],
            &["ip", "-n", &name, "link", "set", &there, "up"],
            &["ip", "-n", &name, "link", "set", "lo", "up"],
        ];
        for step in setup {
            sh(step)?;
        }
        for chain in ["INPUT", "OUTPUT"] {
            let dev = if chain == "INPUT" { "-i" } else { "-o" };
            sh(&[
                "ip",
                "netns",
                "exec",
                &name,
                "iptables-legacy",
                "-A",
                chain,
                dev,
                &there,
                "-j",
                "NFQUEUE",
                "--queue-num",
                &queue,
                "--queue-bypass",
            ])?;
        }
        host.queue = Some(host.start_queue()?);
        Ok(host)
    }

    /// From now on the link does `link`.
    pub fn set(&self, link: Link) {
        *self
            .link
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = link;
    }

    /// A listening TCP socket on the host's address, port picked by the kernel.
    ///
    /// # Errors
    /// When the namespace cannot be joined or nothing can be bound.
    pub fn listen(&self) -> Result<TcpListener> {
        let (ns, addr) = (self.name.clone(), self.addr);
        let thread = std::thread::Builder::new()
            .name("test-host-bind".into())
            .spawn(move || -> Result<TcpListener> {
                join_namespace(&ns)?;
                let listener = TcpListener::bind(SocketAddr::from((addr, 0)))?;
                listener.set_nonblocking(true)?;
                Ok(listener)
            })?;
        thread
            .join()
            .map_err(|_| anyhow::anyhow!("the bind thread panicked"))?
    }

    fn start_queue(&self) -> Result<JoinHandle<()>> {
        let (ns, link, stats, stop) = (
            self.name.clone(),
            self.link.clone(),
            self.stats.clone(),
            self.stop.clone(),
        );
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        let handle = std::thread::Builder::new()
            .name("test-host-link".into())
            .spawn(move || {
                let opened = join_namespace(&ns).and_then(|()| {
                    let mut q = nfq::Queue::open().context("opening an NFQUEUE socket")?;
                    q.bind(QUEUE).context("binding the NFQUEUE")?;
                    let _ = q.set_copy_range(QUEUE, 64);
                    let _ = q.set_queue_max_len(QUEUE, 65_536);
                    let _ = q.set_fail_open(QUEUE, true);
                    q.set_nonblocking(true);
                    Ok(q)
                });
                match opened {
                    Ok(q) => {
                        let _ = ready_tx.send(Ok(()));
                        verdicts(q, &link, &stats, &stop);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })?;
        ready_rx
            .recv_timeout(Duration::from_secs(10))
            .context("the link thread did not start")??;
        Ok(handle)
    }
}

/// A packet waiting out its delay.
struct Held {
    due: Instant,
    seq: u64,
    msg: nfq::Message,
}

/// The link thread: every queued packet gets its verdict from the link's current setting.
fn verdicts(mut q: nfq::Queue, link: &Mutex<Link>, stats: &LinkStats, stop: &AtomicBool) {
    let mut rng = rand::rng();
    let mut held: Vec<Held> = Vec::new();
    let mut seq = 0u64;
    let give = |q: &mut nfq::Queue, mut msg: nfq::Message, verdict: nfq::Verdict| {
        msg.set_verdict(verdict);
        let _ = q.verdict(msg);
    };
    while !stop.load(Ordering::Relaxed) {
        let now_link = *link
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut got = 0;
        while got < 512 {
            let Ok(msg) = q.recv() else { break };
            got += 1;
            seq += 1;
            match now_link {
                Link::Clear => {
                    stats.passed.fetch_add(1, Ordering::Relaxed);
                    give(&mut q, msg, nfq::Verdict::Accept);
                }
                Link::Partitioned => {
                    stats.dropped.fetch_add(1, Ordering::Relaxed);
                    give(&mut q, msg, nfq::Verdict::Drop);
                }
                Link::Degraded {
                    delay,
                    jitter,
                    loss_pct,
                } => {
                    if rng.random_range(0..100) < loss_pct {
                        stats.dropped.fetch_add(1, Ordering::Relaxed);
                        give(&mut q, msg, nfq::Verdict::Drop);
                    } else if msg.get_hook() == LOCAL_OUT {
                        let j = jitter.as_millis() as u64;
                        let wait = delay.saturating_sub(jitter)
                            + Duration::from_millis(rng.random_range(0..=2 * j));
                        held.push(Held {
                            due: Instant::now() + wait,
                            seq,
                            msg,
                        });
                    } else {
                        stats.passed.fetch_add(1, Ordering::Relaxed);
                        give(&mut q, msg, nfq::Verdict::Accept);
                    }
                }
            }
        }
        // A partition drops what waits; a cleared link lets it all go at once.
        let now = Instant::now();
        let mut i = 0;
        while i < held.len() {
            let due = match now_link {
                Link::Degraded { .. } => held[i].due <= now,
                Link::Clear | Link::Partitioned => true,
            };
            if !due {
                i += 1;
                continue;
            }
            let h = held.swap_remove(i);
            if now_link == Link::Partitioned {
                stats.dropped.fetch_add(1, Ordering::Relaxed);
                give(&mut q, h.msg, nfq::Verdict::Drop);
                continue;
            }
            if held.iter().any(|o| o.seq < h.seq) {
                stats.reordered.fetch_add(1, Ordering::Relaxed);
            }
            stats.delayed.fetch_add(1, Ordering::Relaxed);
            give(&mut q, h.msg, nfq::Verdict::Accept);
        }
        if got == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    for h in held {
        give(&mut q, h.msg, nfq::Verdict::Accept);
    }
    let _ = q.unbind(QUEUE);
}

impl Drop for TestHost {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(q) = self.queue.take() {
            let _ = q.join();
        }
        // The veth pair goes with the namespace.
        let _ = sh(&["ip", "netns", "del", &self.name]);
    }
}
