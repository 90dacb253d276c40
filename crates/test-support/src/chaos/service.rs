//! The chaos reconcile service: a real HTTP/1.1 server on 127.0.0.1 that answers like a correct
//! reconciler, except for a chosen share of calls that fail in one of eight ways.
//!
//! Every answer that would do harm if ork accepted it (a 500 with a body, a truncated or oversized
//! body, a slow-drip past the timeout, an answer with one undeclared type) carries *poison*: a
//! `poison` key in the ConfigMap's data, a Secret named `<cr>-rejected` (Secrets are never
//! declared) and `status.poisoned`. The invariant check looks for any of it in the cluster.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The ways a call fails (30 % of calls in R1, spread evenly).
pub const FAULTS: [&str; 8] = [
    "timeout",
    "http-500",
    "garbage",
    "truncated",
    "20MiB-body",
    "conn-reset",
    "undeclared-type",
    "slow-drip-past-timeout",
];

/// The outcome of a request that arrived after its `x-ork-deadline` (a retransmission after a
/// partition, R5): ork had given up on it; the service answers 504 and does nothing.
pub const LATE: &str = "late";

/// One call as the service saw it.
#[derive(Debug, Clone)]
pub struct Call {
    /// `namespace/name` of the CR.
    pub key: String,
    /// The last path segment of the URL: which ork replica called (R4), else "ork".
    pub replica: String,
    pub finalizing: bool,
    /// `spec.rev` of the CR ork sent.
    pub rev: Option<u64>,
    pub at: Instant,
    /// When the answer was written, or the connection given up (None: still in flight).
    pub ended: Option<Instant>,
    /// "ok", "slow-ok", "finalized", or one of [`FAULTS`].
    pub outcome: &'static str,
}

#[derive(Debug, Default)]
struct State {
    calls: Vec<Call>,
    rng: u64,
}

/// A cheap deterministic generator (xorshift64*): no dependency, reproducible with a seed.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// Uniform in `[lo, hi)` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi.saturating_sub(lo).max(1)))
    }
}

#[derive(Debug, Clone)]
pub struct ChaosService {
    /// `http://127.0.0.1:PORT/reconcile`; a replica appends `/<name>`.
    pub url: String,
    fault_pct: Arc<AtomicU32>,
    state: Arc<Mutex<State>>,
    /// Namespace of the cross-namespace child (R3), if any.
    cross_ns: Arc<Mutex<Option<String>>>,
    /// The per-call timeout in ork's Katalog: the hang and the slow-drip outlast it.
    timeout: Duration,
    /// How long every call waits before its answer (R7, R8: long enough for two replicas'
    /// calls of one key to overlap, were both to call it).
    delay: Arc<Mutex<Duration>>,
    /// CRs whose name starts with this get children without the `writer` stamp: the same
    /// answer whoever calls (R7's CRs left alone during the upgrade).
    unstamped: Arc<Mutex<Option<String>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ChaosService {
    /// Binds 127.0.0.1 on a free port and serves until the runtime ends.
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub async fn start(timeout: Duration, seed: u64) -> std::io::Result<ChaosService> {
        Self::serve_on(TcpListener::bind("127.0.0.1:0").await?, timeout, seed)
    }

    /// Serves on `listener` (a test host's socket, R5) until the runtime ends.
    ///
    /// # Errors
    /// When the socket cannot be handed to the runtime.
    pub fn start_on(
        listener: std::net::TcpListener,
        timeout: Duration,
        seed: u64,
    ) -> std::io::Result<ChaosService> {
        listener.set_nonblocking(true)?;
        Self::serve_on(TcpListener::from_std(listener)?, timeout, seed)
    }

    fn serve_on(
        listener: TcpListener,
        timeout: Duration,
        seed: u64,
    ) -> std::io::Result<ChaosService> {
        let svc = ChaosService {
            url: format!("http://{}/reconcile", listener.local_addr()?),
            fault_pct: Arc::default(),
            state: Arc::new(Mutex::new(State {
                calls: Vec::new(),
                rng: seed,
            })),
            cross_ns: Arc::default(),
            timeout,
            delay: Arc::default(),
            unstamped: Arc::default(),
        };
        let s = svc.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let _ = conn.set_nodelay(true);
                tokio::spawn(s.clone().serve(conn));
            }
        });
        Ok(svc)
    }

    /// From now on `pct` % of calls fail.
    pub fn set_fault_rate(&self, pct: u32) {
        self.fault_pct.store(pct.min(100), Ordering::SeqCst);
    }

    /// Answers carry a second ConfigMap `<cr>-x` in `ns` (None: only the same-namespace one).
    pub fn set_cross_namespace(&self, ns: Option<String>) {
        *lock(&self.cross_ns) = ns;
    }

    /// From now on every call waits `delay` before its answer.
    pub fn set_delay(&self, delay: Duration) {
        *lock(&self.delay) = delay;
    }

    /// Children of CRs named `prefix…` carry no `writer` stamp (None: every child carries it).
    pub fn set_unstamped(&self, prefix: Option<String>) {
        *lock(&self.unstamped) = prefix;
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state).calls.clone()
    }

    /// When the last call ork waited for arrived (None: no call yet).
    pub fn last_call_at(&self) -> Option<Instant> {
        let st = lock(&self.state);
        st.calls
            .iter()
            .rev()
            .find(|c| c.outcome != LATE)
            .map(|c| c.at)
    }

    pub fn call_count(&self) -> usize {
        lock(&self.state).calls.len()
    }

    /// Calls per outcome since `since` (an index into [`calls`](Self::calls)).
    pub fn outcomes_since(&self, since: usize) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for c in lock(&self.state).calls.iter().skip(since) {
            *out.entry(c.outcome.to_string()).or_insert(0) += 1;
        }
        out
    }

    fn roll(&self) -> (Option<&'static str>, bool) {
        let pct = u64::from(self.fault_pct.load(Ordering::SeqCst));
        let mut st = lock(&self.state);
        let mut rng = Rng(st.rng);
        let fault = (rng.below(100) < pct).then(|| FAULTS[rng.below(FAULTS.len() as u64) as usize]);
        // One good answer in ten is dripped slowly but within the timeout: it must be accepted.
        let slow_ok = rng.below(10) == 0;
        st.rng = rng.0;
        (fault, slow_ok)
    }

    async fn serve(self, mut conn: TcpStream) {
        let mut buf = Vec::new();
        loop {
            let Some(request) = read_request(&mut conn, &mut buf).await else {
                return;
            };
            let (path, body) = (&request.path, &request.body);
            let replica = path.rsplit('/').next().unwrap_or("ork").to_string();
            let replica = if replica == "reconcile" {
                "ork".to_string()
            } else {
                replica
            };
            let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let key = req["key"].as_str().unwrap_or("?").to_string();
            let finalizing = req["prepared"]["finalizing"] == true;
            let (fault, slow_ok) = self.roll();
            let late = request.late();
            let outcome = match (fault, finalizing) {
                // ork gave up on it before it came: a service does nothing for it.
                _ if late => LATE,
                (Some(f), _) => f,
                (None, true) => "finalized",
                (None, false) if slow_ok => "slow-ok",
                (None, false) => "ok",
            };
            let index = {
                let mut st = lock(&self.state);
                st.calls.push(Call {
                    key,
                    replica: replica.clone(),
                    finalizing,
                    rev: req["object"]["spec"]["rev"].as_u64(),
                    at: Instant::now(),
                    ended: None,
                    outcome,
                });
                st.calls.len() - 1
            };
            let delay = *lock(&self.delay);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let cross = lock(&self.cross_ns).clone();
            let name = req["object"]["metadata"]["name"].as_str().unwrap_or("");
            let stamp = match lock(&self.unstamped).as_deref() {
                Some(prefix) if name.starts_with(prefix) => None,
                _ => Some(replica.as_str()),
            };
            let good = || -> String {
                if finalizing {
                    json!({"result": "ok", "finalized": true}).to_string()
                } else {
                    answer(&req, &replica, stamp, cross.as_deref(), false).to_string()
                }
            };
            let poisoned = || answer(&req, &replica, stamp, cross.as_deref(), true).to_string();
            let keep = match outcome {
                LATE => write_response(&mut conn, 504, b"{}").await,
                "ok" | "finalized" => write_response(&mut conn, 200, good().as_bytes()).await,
                "slow-ok" => {
                    // Eight pieces over ~0.8 s: well within the timeout.
                    let body = good();
                    drip(
                        &mut conn,
                        body.as_bytes(),
                        body.len().div_ceil(8),
                        Duration::from_millis(100),
                    )
                    .await
                }
                "timeout" => {
                    tokio::time::sleep(self.timeout + Duration::from_secs(1)).await;
                    false
                }
                "http-500" => {
                    let mut v: Value = serde_json::from_str(&poisoned()).unwrap_or(Value::Null);
                    v["error"] = json!("chaos: internal error");
                    write_response(&mut conn, 500, v.to_string().as_bytes()).await
                }
                "garbage" => {
                    let mut junk =
                        b"{\"result\": \"ok\", \"resources\": [{\x00\x01\xff garbage <html>"
                            .to_vec();
                    junk.extend_from_slice(poisoned().as_bytes());
                    write_response(&mut conn, 200, &junk).await
                }
                "truncated" => {
                    let body = poisoned();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(head.as_bytes()).await;
                    let _ = conn.write_all(&body.as_bytes()[..body.len() / 2]).await;
                    let _ = conn.shutdown().await;
                    false
                }
                "20MiB-body" => {
                    huge(&mut conn, poisoned().as_bytes()).await;
                    false
                }
                "conn-reset" => {
                    // SO_LINGER 0: closing sends RST instead of FIN.
                    #[allow(deprecated)]
                    let _ = conn.set_linger(Some(Duration::ZERO));
                    false
                }
                "undeclared-type" => write_response(&mut conn, 200, poisoned().as_bytes()).await,
                // "slow-drip-past-timeout": a valid (poisoned) answer, 16 bytes every 250 ms.
                _ => {
                    let body = poisoned();
                    let _ = drip(&mut conn, body.as_bytes(), 16, Duration::from_millis(250)).await;
                    false
                }
            };
            if let Some(call) = lock(&self.state).calls.get_mut(index) {
                call.ended = Some(Instant::now());
            }
            if !keep {
                return;
            }
        }
    }
}

/// The correct answer for the request: ConfigMap `<cr>-cfg` in the CR's namespace (and
/// `<cr>-x` in the cross namespace), data from the spec and the `stamp` of the replica that
/// called (None: none); `poison` adds what must never land. The status names the caller.
pub fn answer(
    req: &Value,
    replica: &str,
    stamp: Option<&str>,
    cross: Option<&str>,
    poison: bool,
) -> Value {
    let name = req["object"]["metadata"]["name"].as_str().unwrap_or("x");
    let ns = req["object"]["metadata"]["namespace"]
        .as_str()
        .unwrap_or("");
    let spec = &req["object"]["spec"];
    let rev = spec["rev"].as_u64().unwrap_or(0);
    let payload = spec["payload"].as_str().unwrap_or("");
    let mut data = json!({"rev": rev.to_string(), "payload": payload});
    if let Some(writer) = stamp {
        data["writer"] = json!(writer);
    }
    if poison {
        data["poison"] = json!("true");
    }
    let mut resources = vec![json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-cfg"), "labels": {"chaos.ork.dev/app": name}},
        "data": data,
    })];
    if let Some(x) = cross {
        let mut data = json!({"rev": rev.to_string(), "owner": format!("{ns}/{name}")});
        if poison {
            data["poison"] = json!("true");
        }
        resources.push(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("{name}-x"), "namespace": x, "labels": {"chaos.ork.dev/app": name}},
            "data": data,
        }));
    }
    let mut status = json!({"seenRev": rev, "writer": replica});
    if poison {
        resources.push(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": format!("{name}-rejected")},
            "stringData": {"poison": "true"},
        }));
        status["poisoned"] = json!(true);
    }
    json!({"result": "ok", "status": status, "resources": resources})
}

/// Reads one request (head and Content-Length body); None when the peer closed.
/// A request as the service read it.
struct Request {
    path: String,
    body: Vec<u8>,
    /// `x-ork-deadline` (Unix milliseconds), when ork sent one.
    deadline_ms: Option<u128>,
}

impl Request {
    /// It arrived after the deadline ork gave it: ork no longer waits for its answer.
    fn late(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        self.deadline_ms.is_some_and(|d| now > d)
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

async fn read_request(conn: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let path = head
                .lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .unwrap_or("/")
                .to_string();
            let len: usize = header(&head, "content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let deadline_ms = header(&head, "x-ork-deadline").and_then(|v| v.parse().ok());
            while buf.len() < end + 4 + len {
                if !read_more(conn, buf).await {
                    return None;
                }
            }
            let body = buf[end + 4..end + 4 + len].to_vec();
            buf.drain(..end + 4 + len);
            return Some(Request {
                path,
                body,
                deadline_ms,
            });
        }
        if !read_more(conn, buf).await {
            return None;
        }
    }
}

async fn read_more(conn: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16384];
    match conn.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

async fn write_response(conn: &mut TcpStream, status: u16, body: &[u8]) -> bool {
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await.is_ok() && conn.write_all(body).await.is_ok()
}

/// Headers at once, then the body in `piece`-byte pieces every `every`; false when ork hung up.
async fn drip(conn: &mut TcpStream, body: &[u8], piece: usize, every: Duration) -> bool {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    if conn.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let started = Instant::now();
    for part in body.chunks(piece.max(1)) {
        tokio::time::sleep(every).await;
        if conn.write_all(part).await.is_err() || started.elapsed() > Duration::from_secs(30) {
            return false;
        }
    }
    true
}

/// A valid JSON answer preceded by 20 MiB of whitespace (ork's limit is 8 MiB).
async fn huge(conn: &mut TcpStream, json: &[u8]) {
    const PAD: usize = 20 << 20;
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        PAD + json.len()
    );
    if conn.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..PAD / spaces.len() {
        if conn.write_all(&spaces).await.is_err() {
            return;
        }
    }
    let _ = conn.write_all(json).await;
}
