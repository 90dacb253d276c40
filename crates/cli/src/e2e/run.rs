//! One E2E file run against the cluster, in Orkestra's order: CRDs, setup (apply, waits), then
//! each expectation after its lifecycle event (`setup-complete`, `cr-applied` applies the CRs
//! once, `cr-deleted` deletes them once), polled until it holds or its timeout passes; the
//! `onFailure` diagnostics of a failed expectation and of the spec are printed. What ork cannot
//! do (create a kind cluster, install Orkestra or a Helm chart, exec into pods, …) becomes a
//! skipped case that says why.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use serde_json::Value;

use super::assert::Mismatch;
use super::cluster::{Cluster, DEFAULT_NAMESPACE, field};
use super::spec::{E2e, Expectation, Kubectl, OnFailure, ResourceCheck, Rollout, Wait};
pub use crate::junit::{Case, Outcome, SpecReport};
use crate::output::say;

const POLL: Duration = Duration::from_secs(2);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an `onFailure` command may run.
const DIAGNOSTIC_TIMEOUT: Duration = Duration::from_secs(30);

/// Where commands run and what they inherit.
pub struct Shell {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// Run the spec's Katalog with a child `ork run` (not with `--no-operator`).
    pub operator: bool,
}

/// Runs one loaded file.
pub async fn run_spec(cluster: &Cluster, shell: &Shell, e2e: &E2e, path: &Path) -> SpecReport {
    let dir = crate::args::folder_of(path);
    let name = if e2e.metadata.name.is_empty() {
        path.display().to_string()
    } else {
        e2e.metadata.name.clone()
    };
    say!("E2E {name} ({})", path.display());
    if let Some(d) = &e2e.metadata.description {
        say!("  {}", d.trim());
    }
    let mut r = Recorder {
        cases: Vec::new(),
        operator: None,
    };
    let spec = &e2e.spec;
    if spec.init.is_some() {
        r.skip(
            "init",
            "example packs (`init`) are Orkestra's own; name the files with katalog, crd and cr",
        );
        return r.report(name, path);
    }
    if let Some(c) = &spec.cluster {
        let what = format!(
            "creating a {} cluster{}",
            c.provider.as_deref().unwrap_or("kind"),
            c.name
                .as_deref()
                .map(|n| format!(" {n}"))
                .unwrap_or_default()
        );
        r.skip(
            &format!("cluster: {what}"),
            "ork e2e runs against the kubeconfig's cluster",
        );
    }
    let custom = spec.custom_operator || spec.custom.is_some();
    let katalog = spec.katalog.as_deref().filter(|_| !custom);
    if let Some(katalog) = katalog
        && !shell.operator
    {
        r.skip(
            "run the operator",
            &format!("--no-operator: `ork run -k {katalog}` is expected to run alongside"),
        );
    }
    for f in &spec.values_files {
        r.skip(
            &format!("valuesFiles: {f}"),
            "Helm values for Orkestra's chart; ork is not installed by ork e2e",
        );
    }

    let mut ready = set_up(cluster, spec, &dir, &mut r).await;
    // After the setup, whose Secrets and ConfigMaps the Katalog may read.
    if ready
        && shell.operator
        && let Some(katalog) = katalog
    {
        let started = Instant::now();
        let step = format!("run the operator: ork run -k {katalog}");
        let res = Operator::start(shell, &dir, katalog)
            .await
            .map(|op| r.operator = Some(op));
        ready = r.result(&step, started, res);
    }
    if ready {
        expectations(cluster, shell, spec, &dir, &mut r).await;
    } else {
        // Every expectation is reported: not run, and why.
        let why = r
            .cases
            .iter()
            .rev()
            .find(|c| matches!(c.outcome, Outcome::Failed(_)))
            .map_or_else(
                || "an earlier step failed".to_string(),
                |c| format!("{} failed", c.name),
            );
        for exp in &spec.expect {
            r.skip(&exp.name, &format!("not run: {why}"));
        }
    }
    finish(
        cluster,
        shell,
        spec.on_failure.as_ref(),
        &dir,
        r,
        name,
        path,
    )
    .await
}

/// The CRDs, the setup files and the setup's waits; `false` when a step failed and the
/// expectations are not run.
async fn set_up(cluster: &Cluster, spec: &super::spec::Spec, dir: &Path, r: &mut Recorder) -> bool {
    for crd in spec.crd_paths() {
        let started = Instant::now();
        let res = ork_kube::install::install_crd(&cluster.client, &dir.join(crd)).await;
        if !r.result(
            &format!("install CRD {crd}"),
            started,
            res.map_err(Into::into),
        ) {
            return false;
        }
    }
    let Some(setup) = &spec.setup else {
        return true;
    };
    for entry in &setup.apply {
        let started = Instant::now();
        let res = async {
            cluster.apply_file(&dir.join(&entry.path), None).await?;
            wait_all(cluster, &entry.wait).await
        }
        .await;
        if !r.result(&format!("setup: apply {}", entry.path), started, res) {
            return false;
        }
    }
    for h in &setup.helm {
        let chart = h.get("chart").and_then(Value::as_str).unwrap_or("?");
        r.skip(
            &format!("setup: helm install {chart}"),
            "ork e2e installs no Helm charts; install it before the run",
        );
    }
    if !setup.wait.is_empty() {
        let started = Instant::now();
        let res = wait_all(cluster, &setup.wait).await;
        if !r.result("setup: wait", started, res) {
            return false;
        }
    }
    true
}

/// Each expectation in order, the CRs applied before the first `after: cr-applied` and
/// deleted before the first `after: cr-deleted`.
async fn expectations(
    cluster: &Cluster,
    shell: &Shell,
    spec: &super::spec::Spec,
    dir: &Path,
    r: &mut Recorder,
) {
    let (mut applied, mut deleted) = (false, false);
    for exp in &spec.expect {
        let after = exp.after.as_deref().unwrap_or("setup-complete");
        match after {
            "setup-complete" => {}
            "cr-applied" | "cr-deleted" => {
                let apply = after == "cr-applied";
                let done = if apply { &mut applied } else { &mut deleted };
                if !*done {
                    *done = true;
                    let started = Instant::now();
                    let res = async {
                        for cr in spec.cr_paths() {
                            let file = dir.join(cr);
                            if apply {
                                cluster.apply_file(&file, None).await?;
                            } else {
                                cluster.delete_file(&file, true).await?;
                            }
                        }
                        Ok(())
                    }
                    .await;
                    let step = if apply {
                        "apply the CRs"
                    } else {
                        "delete the CRs"
                    };
                    if !r.result(step, started, res) {
                        // What comes after it is reported, not silently dropped.
                        let at = spec
                            .expect
                            .iter()
                            .position(|e| std::ptr::eq(e, exp))
                            .unwrap_or(0);
                        for rest in &spec.expect[at..] {
                            r.skip(&rest.name, &format!("not run: {step} failed"));
                        }
                        break;
                    }
                }
            }
            other => {
                r.push(Case {
                    name: exp.name.clone(),
                    outcome: Outcome::Failed(format!(
                        "after: {other:?}: expected setup-complete, cr-applied or cr-deleted"
                    )),
                    notes: vec![],
                    diagnostics: String::new(),
                    time: Duration::ZERO,
                });
                continue;
            }
        }
        let mut case = expectation(cluster, shell, exp).await;
        if matches!(case.outcome, Outcome::Failed(_))
            && let Some(of) = &exp.on_failure
        {
            case.diagnostics = diagnostics(cluster, shell, of, &exp.dir).await;
            say!("{}", indent(&case.diagnostics, "    "));
        }
        r.push(case);
    }
}

async fn finish(
    cluster: &Cluster,
    shell: &Shell,
    on_failure: Option<&OnFailure>,
    dir: &Path,
    mut r: Recorder,
    name: String,
    path: &Path,
) -> SpecReport {
    let failed = r
        .cases
        .iter()
        .any(|c| matches!(c.outcome, Outcome::Failed(_)));
    if failed && let Some(log) = r.operator.as_ref().map(Operator::log_tail) {
        say!("  the operator's log (last lines):");
        say!("{}", indent(&log, "    "));
    }
    if failed && let Some(of) = on_failure {
        say!("  onFailure diagnostics:");
        let text = diagnostics(cluster, shell, of, dir).await;
        say!("{}", indent(&text, "    "));
        if let Some(last) = r
            .cases
            .iter_mut()
            .rev()
            .find(|c| matches!(c.outcome, Outcome::Failed(_)))
        {
            last.diagnostics.push_str(&text);
        }
    }
    r.report(name, path)
}

struct Recorder {
    cases: Vec<Case>,
    /// The `ork run` this spec started, stopped when the spec's run ends.
    operator: Option<Operator>,
}

/// A child `ork run -k KATALOG` for one spec's run, killed when dropped.
struct Operator {
    child: std::process::Child,
    log: PathBuf,
}

impl Operator {
    /// Starts `ork run` of `katalog` (relative to the spec's folder) on loopback ports of its
    /// own and waits (up to a minute) until it says it is ready.
    async fn start(shell: &Shell, dir: &Path, katalog: &str) -> Result<Operator> {
        let exe = std::env::current_exe().map_err(|e| anyhow!("finding ork itself: {e}"))?;
        let log = std::env::temp_dir().join(format!(
            "ork-e2e-operator-{}-{}.log",
            std::process::id(),
            INLINE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["run", "-k", katalog])
            .args(["--http-addr", "127.0.0.1:0", "--probe-addr", "127.0.0.1:0"])
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        if let Some(k) = &shell.kubeconfig {
            cmd.arg("--kubeconfig").arg(k);
        }
        if let Some(c) = &shell.context {
            cmd.args(["--context", c]);
        }
        let child = cmd
            .spawn()
            .map_err(|e| anyhow!("starting ork run -k {katalog}: {e}"))?;
        let mut op = Operator { child, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        let http = reqwest::Client::new();
        loop {
            if let Some(status) = op.child.try_wait()? {
                bail!("ork run -k {katalog} exited ({status}):\n{}", op.log_tail());
            }
            if let Some(addr) = op.probe_addr()
                && ready(&http, &addr).await
            {
                return Ok(op);
            }
            if Instant::now() >= deadline {
                bail!(
                    "ork run -k {katalog} was not ready within 60s:\n{}",
                    op.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Where it serves `/readyz`, as its log says.
    fn probe_addr(&self) -> Option<String> {
        let log = std::fs::read_to_string(&self.log).ok()?;
        let line = log.lines().find(|l| l.contains("serving /healthz"))?;
        let at = line.find("addr=")? + "addr=".len();
        Some(line[at..].split_whitespace().next()?.to_string())
    }

    /// The last 40 lines of its log.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Whether `GET http://ADDR/readyz` answers 200.
async fn ready(http: &reqwest::Client, addr: &str) -> bool {
    let url = format!("http://{addr}/readyz");
    match http.get(&url).timeout(Duration::from_secs(2)).send().await {
        Ok(r) => r.status().is_success(),
        Err(_) => false,
    }
}

impl Recorder {
    fn push(&mut self, case: Case) {
        match &case.outcome {
            Outcome::Passed => say!("  ✓ {} ({:.1}s)", case.name, case.time.as_secs_f64()),
            Outcome::Failed(why) => {
                say!("  ✗ {}: {}", case.name, indent(why, "      ").trim_start())
            }
            Outcome::Skipped(why) => say!("  - skipped: {}: {why}", case.name),
        }
        for n in &case.notes {
            say!("      not run: {n}");
        }
        self.cases.push(case);
    }

    fn skip(&mut self, name: &str, why: &str) {
        self.push(Case {
            name: name.to_string(),
            outcome: Outcome::Skipped(why.to_string()),
            notes: vec![],
            diagnostics: String::new(),
            time: Duration::ZERO,
        });
    }

    /// Records a step; true when it passed.
    fn result(&mut self, name: &str, started: Instant, res: Result<()>) -> bool {
        let ok = res.is_ok();
        self.push(Case {
            name: name.to_string(),
            outcome: match res {
                Ok(()) => Outcome::Passed,
                Err(e) => Outcome::Failed(format!("{e:#}")),
            },
            notes: vec![],
            diagnostics: String::new(),
            time: started.elapsed(),
        });
        ok
    }

    fn report(self, name: String, path: &Path) -> SpecReport {
        SpecReport {
            name,
            file: path.display().to_string(),
            cases: self.cases,
        }
    }
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|l| format!("{by}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn duration(text: Option<&str>, default: Duration) -> Result<Duration> {
    match text {
        None => Ok(default),
        Some(t) => humantime::parse_duration(t).map_err(|e| anyhow!("duration {t:?}: {e}")),
    }
}

async fn wait_all(cluster: &Cluster, waits: &[Wait]) -> Result<()> {
    for w in waits {
        let limit = duration(w.timeout.as_deref(), Duration::from_secs(30))?;
        let check = ResourceCheck {
            kind: w.kind.clone(),
            name: Some(w.name.clone()),
            namespace: w.namespace.clone(),
            count: None,
            ready: w.ready,
        };
        let started = Instant::now();
        loop {
            match resource(cluster, &check).await {
                Ok(()) => break,
                Err(e) if started.elapsed() >= limit => {
                    bail!(
                        "waiting {}s for {} {}: {e:#}",
                        limit.as_secs(),
                        w.kind,
                        w.name
                    )
                }
                Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    }
    Ok(())
}

/// What of an expectation ork does not run, each with the reason.
fn not_run(exp: &Expectation) -> Vec<String> {
    let mut out = Vec::new();
    let Some(k) = &exp.kubectl else { return out };
    let mut name = |what: &str, n: usize, why: &str| {
        if n > 0 {
            out.push(format!("kubectl.{what} ({n}): {why}"));
        }
    };
    name(
        "exec",
        k.exec.len(),
        "running a command in a pod is not implemented by ork e2e",
    );
    name(
        "port-forward",
        k.port_forward.len(),
        "port-forwarding is not implemented by ork e2e",
    );
    name(
        "cp",
        k.cp.len(),
        "copying from a pod is not implemented by ork e2e",
    );
    name(
        "top",
        k.top.len(),
        "needs metrics-server, which ork e2e does not install",
    );
    let leader = k
        .logs
        .iter()
        .filter(|l| l.leader_election.is_some())
        .count()
        + k.delete
            .iter()
            .filter(|d| d.leader_election.is_some())
            .count();
    name(
        "logs/delete with leaderElection",
        leader,
        "resolving a Lease holder's pod is not implemented by ork e2e",
    );
    let jq = k
        .get
        .iter()
        .filter(|g| g.jq.is_some() || g.yq.is_some())
        .count()
        + k.logs.iter().filter(|l| l.jq.is_some()).count();
    name(
        "get/logs with jq or yq",
        jq,
        "jq and yq expressions are not evaluated by ork e2e",
    );
    out
}

/// True when the expectation has a check ork runs.
fn runs_something(exp: &Expectation) -> bool {
    let k = exp.kubectl.clone().unwrap_or_default();
    !exp.resources.is_empty()
        || !exp.commands.is_empty()
        || k.get.iter().any(|g| g.jq.is_none() && g.yq.is_none())
        || k.logs
            .iter()
            .any(|l| l.leader_election.is_none() && l.jq.is_none())
        || !k.describe.is_empty()
        || !k.apply.is_empty()
        || !k.patch.is_empty()
        || !k.events.is_empty()
        || !k.auth.is_empty()
        || !k.restart.is_empty()
        || !k.scale.is_empty()
        || k.delete.iter().any(|d| d.leader_election.is_none())
}

async fn expectation(cluster: &Cluster, shell: &Shell, exp: &Expectation) -> Case {
    let started = Instant::now();
    let mut case = Case {
        name: exp.name.clone(),
        outcome: Outcome::Passed,
        notes: not_run(exp),
        diagnostics: String::new(),
        time: Duration::ZERO,
    };
    if !exp.when.is_empty() || !exp.or.is_empty() {
        case.outcome = Outcome::Skipped("when/or conditions are not evaluated by ork e2e".into());
        return case;
    }
    if !runs_something(exp) {
        case.outcome =
            Outcome::Skipped(format!("nothing in it ork runs: {}", case.notes.join("; ")));
        case.notes.clear();
        return case;
    }
    let outcome = async {
        if let Some(w) = exp.wait.as_deref() {
            tokio::time::sleep(duration(Some(w), Duration::ZERO)?).await;
        }
        let limit = duration(exp.timeout.as_deref(), DEFAULT_TIMEOUT)?;
        let deadline = Instant::now() + limit;
        let mut mutated = false;
        let mut last: Option<anyhow::Error> = None;
        loop {
            let res = async {
                if !mutated && let Some(k) = &exp.kubectl {
                    mutate(cluster, k, &exp.dir).await?;
                    mutated = true;
                }
                checks(cluster, shell, exp, deadline).await
            };
            // The timeout bounds everything the expectation does, a hung command too; what
            // the last whole attempt found is the failure, unless none ended.
            let still_so =
                |e: anyhow::Error| anyhow!("{e:#}\n(still so after {}s)", limit.as_secs());
            match tokio::time::timeout_at(deadline.into(), res).await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) if Instant::now() >= deadline => return Err(still_so(e)),
                Ok(Err(e)) => {
                    last = Some(e);
                    tokio::time::sleep(POLL).await;
                }
                Err(_) => {
                    return Err(last.map(still_so).unwrap_or_else(|| {
                        anyhow!(
                            "still running when its timeout ({}s) passed; stopped",
                            limit.as_secs()
                        )
                    }));
                }
            }
        }
    }
    .await;
    case.time = started.elapsed();
    if let Err(e) = outcome {
        case.outcome = Outcome::Failed(format!("{e:#}"));
    }
    case
}

/// The actions of a `kubectl:` block, once: apply, patch, restart, scale, delete.
async fn mutate(cluster: &Cluster, k: &Kubectl, dir: &Path) -> Result<()> {
    for a in &k.apply {
        let (code, out) = match apply(cluster, a, dir).await {
            Ok(n) => (0, format!("{n} applied")),
            Err(e) => (1, format!("{e:#}")),
        };
        if code != a.exit_code {
            bail!(
                "kubectl.apply {}: expected exit code {}, found {code}: {out}",
                apply_name(a),
                a.exit_code
            );
        }
        a.assertions()
            .check(&out)
            .map_err(|m| anyhow!("kubectl.apply {}: output {m}", apply_name(a)))?;
    }
    for p in &k.patch {
        cluster
            .patch(
                &p.kind,
                &p.name,
                p.namespace.as_deref(),
                p.r#type.as_deref(),
                &p.patch,
            )
            .await?;
    }
    for r in &k.restart {
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let patch = serde_json::json!({"spec": {"template": {"metadata": {"annotations": {
            "kubectl.kubernetes.io/restartedAt": now}}}}});
        cluster
            .patch(
                &r.kind,
                &r.name,
                r.namespace.as_deref(),
                Some("merge"),
                &patch.to_string(),
            )
            .await?;
    }
    for s in &k.scale {
        let replicas = s
            .replicas
            .ok_or_else(|| anyhow!("kubectl.scale {}: replicas is required", s.name))?;
        let patch = serde_json::json!({"spec": {"replicas": replicas}});
        cluster
            .patch(
                &s.kind,
                &s.name,
                s.namespace.as_deref(),
                Some("merge"),
                &patch.to_string(),
            )
            .await?;
    }
    for d in k.delete.iter().filter(|d| d.leader_election.is_none()) {
        match (&d.file, &d.kind, &d.name) {
            (Some(f), _, _) => {
                cluster
                    .delete_file(&dir.join(f), d.ignore_not_found)
                    .await?
            }
            (None, Some(kind), Some(name)) => {
                cluster
                    .delete(kind, name, d.namespace.as_deref(), d.ignore_not_found)
                    .await?
            }
            _ => bail!("kubectl.delete: give file, or kind and name"),
        }
    }
    Ok(())
}

fn apply_name(a: &super::spec::Apply) -> String {
    a.file.clone().unwrap_or_else(|| "(inline)".into())
}

async fn apply(cluster: &Cluster, a: &super::spec::Apply, dir: &Path) -> Result<usize> {
    match (&a.file, &a.inline) {
        (Some(f), _) => {
            cluster
                .apply_file(&dir.join(f), a.namespace.as_deref())
                .await
        }
        (None, Some(text)) => {
            let tmp = private_temp_file(text)?;
            let res = cluster.apply_file(&tmp, a.namespace.as_deref()).await;
            let _ = std::fs::remove_file(&tmp);
            res
        }
        (None, None) => bail!("kubectl.apply: give file or inline"),
    }
}

static INLINE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `text` in a new file of the temp folder that only this user can read, made under a name no
/// one can plant beforehand: created new (never an existing file), never through a symbolic
/// link (finding L4: a predictable name was written through a planted symlink).
fn private_temp_file(text: &str) -> Result<std::path::PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    for _ in 0..16 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "ork-e2e-inline-{}-{}-{nanos:08x}.yaml",
            std::process::id(),
            INLINE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(text.as_bytes())?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(anyhow!("writing {}: {e}", path.display())),
        }
    }
    bail!(
        "no new private file could be made in {}",
        std::env::temp_dir().display()
    )
}

/// Every assertion of an expectation, in Orkestra's order: commands, kubectl, resources.
async fn checks(
    cluster: &Cluster,
    shell: &Shell,
    exp: &Expectation,
    deadline: Instant,
) -> Result<()> {
    for c in &exp.commands {
        let (code, out) = command(shell, &c.run, &exp.dir, deadline).await?;
        if code != c.exit_code {
            bail!(
                "command {:?}: expected exit code {}, found {code}\noutput: {}",
                c.run,
                c.exit_code,
                out.trim()
            );
        }
        c.assertions()
            .check(&out)
            .map_err(|m| anyhow!("command {:?}: output {m}", c.run))?;
    }
    if let Some(k) = &exp.kubectl {
        for g in k.get.iter().filter(|g| g.jq.is_none() && g.yq.is_none()) {
            let ns = g.namespace.as_deref();
            let object = format!("{} {}", g.kind, shown(ns, &g.name));
            let obj = cluster
                .get(&g.kind, &g.name, ns)
                .await?
                .ok_or_else(|| anyhow!("{object}: not found"))?;
            let (what, text) = match (&g.field, g.format.as_deref()) {
                (Some(f), _) => (f.clone(), field(&obj, f).unwrap_or_default()),
                (None, Some("json")) => {
                    ("(as JSON)".to_string(), serde_json::to_string_pretty(&obj)?)
                }
                (None, _) => (
                    "(as YAML)".to_string(),
                    serde_saphyr::to_string(&obj).unwrap_or_default(),
                ),
            };
            g.assertions()
                .check(&text)
                .map_err(|m| mismatch(&object, &what, &m))?;
        }
        for l in k
            .logs
            .iter()
            .filter(|l| l.leader_election.is_none() && l.jq.is_none())
        {
            let since = l
                .since
                .as_deref()
                .map(|s| duration(Some(s), Duration::ZERO))
                .transpose()?;
            let text = cluster
                .logs(
                    l.name.as_deref(),
                    l.label_selector.as_deref(),
                    l.namespace.as_deref(),
                    l.container.as_deref(),
                    since,
                )
                .await?;
            let who = l
                .name
                .clone()
                .or(l.label_selector.clone())
                .unwrap_or_default();
            l.assertions().check(&text).map_err(|m| {
                anyhow!(
                    "logs of {who} in {}: {m}",
                    l.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE)
                )
            })?;
        }
        for d in &k.describe {
            let text = cluster
                .describe(
                    &d.kind,
                    d.name.as_deref(),
                    d.label_selector.as_deref(),
                    d.namespace.as_deref(),
                )
                .await?;
            let object = format!(
                "{} {}",
                d.kind,
                shown(d.namespace.as_deref(), d.name.as_deref().unwrap_or(""))
            );
            d.assertions()
                .check(&text)
                .map_err(|m| mismatch(&object, "(describe)", &m))?;
        }
        for e in &k.events {
            let text = cluster
                .events(&e.kind, &e.name, e.namespace.as_deref())
                .await?;
            let object = format!("{} {}", e.kind, shown(e.namespace.as_deref(), &e.name));
            e.assertions()
                .check(&text)
                .map_err(|m| mismatch(&object, "(events)", &m))?;
        }
        for a in &k.auth {
            let text = cluster
                .can_i(
                    &a.verb,
                    &a.resource,
                    a.namespace.as_deref(),
                    a.r#as.as_deref(),
                )
                .await?;
            let who = a.r#as.as_deref().unwrap_or("the current identity");
            a.assertions()
                .check(&text)
                .map_err(|m| anyhow!("may {who} {} {}: {m}", a.verb, a.resource))?;
        }
        for r in k
            .restart
            .iter()
            .chain(&k.scale)
            .filter(|r| r.ready != Some(false))
        {
            rolled_out(cluster, r).await?;
        }
    }
    for r in &exp.resources {
        resource(cluster, r).await?;
    }
    Ok(())
}

fn shown(ns: Option<&str>, name: &str) -> String {
    format!("{}/{name}", ns.unwrap_or(DEFAULT_NAMESPACE))
}

fn mismatch(object: &str, path: &str, m: &Mismatch) -> anyhow::Error {
    anyhow!("{object} {path}: {m}")
}

/// A workload's rollout is complete: observed, updated and available replicas as wanted.
async fn rolled_out(cluster: &Cluster, r: &Rollout) -> Result<()> {
    let ns = r.namespace.as_deref();
    let obj = cluster
        .get(&r.kind, &r.name, ns)
        .await?
        .ok_or_else(|| anyhow!("{} {}: not found", r.kind, shown(ns, &r.name)))?;
    let n = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let want = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    if n("/status/observedGeneration") < n("/metadata/generation")
        || n("/status/updatedReplicas") < want
        || n("/status/availableReplicas") < want
    {
        bail!(
            "{} {}: rollout not complete: {} of {want} replicas available",
            r.kind,
            shown(ns, &r.name),
            n("/status/availableReplicas")
        );
    }
    Ok(())
}

/// `resources:` — exists (or exactly `count`, 0 for gone) and, with `ready`, has available
/// replicas (as Orkestra: a kind without `status.availableReplicas` counts as ready).
async fn resource(cluster: &Cluster, r: &ResourceCheck) -> Result<()> {
    let ns = r.namespace.as_deref();
    let place = ns.unwrap_or(DEFAULT_NAMESPACE);
    let found: Vec<Value> = match &r.name {
        Some(n) => match cluster.get(&r.kind, n, ns).await {
            Ok(o) => o.into_iter().collect(),
            // A kind the API server no longer serves (its CRD deleted) has no objects.
            Err(_) if r.count == Some(0) => vec![],
            Err(e) => return Err(e),
        },
        None => match cluster.list(&r.kind, ns, None).await {
            Ok(v) => v,
            Err(_) if r.count == Some(0) => vec![],
            Err(e) => return Err(e),
        },
    };
    let object = format!(
        "{} {}",
        r.kind,
        r.name
            .as_deref()
            .map_or_else(|| format!("in {place}"), |n| shown(ns, n))
    );
    match r.count {
        Some(want) if found.len() != want => {
            bail!("{object}: expected count {want}, found {}", found.len())
        }
        None if found.is_empty() => bail!("{object}: expected to exist, found none"),
        _ => {}
    }
    // A workload (it has spec.replicas) is ready with an available replica; the API server
    // leaves out availableReplicas while it is 0.
    if r.ready
        && let Some(first) = found.first()
        && first.pointer("/spec/replicas").is_some()
    {
        let available = first
            .pointer("/status/availableReplicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if available < 1 {
            bail!(
                "{object} .status.availableReplicas: expected at least 1 (ready), found {available}"
            );
        }
    }
    Ok(())
}

/// `sh -c RUN` in `dir`, in a process group of its own, until `deadline`; exit code and
/// combined output. When it ends, or the deadline passes, or the run is dropped, the whole
/// group is killed: nothing it started outlives it (finding L4: only `sh` was killed).
async fn command(shell: &Shell, run: &str, dir: &Path, deadline: Instant) -> Result<(i32, String)> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(run)
        .current_dir(dir)
        .kill_on_drop(true)
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(k) = &shell.kubeconfig {
        cmd.env("KUBECONFIG", k);
    }
    let child = cmd.spawn().map_err(|e| anyhow!("running {run:?}: {e}"))?;
    let _group = child.id().map(ProcessGroup);
    let out = tokio::time::timeout_at(deadline.into(), child.wait_with_output())
        .await
        .map_err(|_| {
            anyhow!(
                "command {run:?}: still running at the expectation's timeout; it and everything it started were killed"
            )
        })?
        .map_err(|e| anyhow!("running {run:?}: {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.code().unwrap_or(-1), text))
}

/// A command's process group, killed when dropped.
struct ProcessGroup(u32);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(pid) = i32::try_from(self.0)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            // Gone already (ESRCH) is what it should be.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// `onFailure`: every get, describe, events and logs it names, and its commands, as text;
/// assertions are never evaluated, a step that cannot run says why.
async fn diagnostics(cluster: &Cluster, shell: &Shell, of: &OnFailure, dir: &Path) -> String {
    let mut out = String::new();
    let mut section = |title: String, body: Result<String>| {
        out.push_str(&format!("--- {title}\n"));
        match body {
            Ok(b) => out.push_str(b.trim_end()),
            Err(e) => out.push_str(&format!("(could not: {e:#})")),
        }
        out.push('\n');
    };
    if let Some(k) = &of.kubectl {
        for g in &k.get {
            let ns = g.namespace.as_deref();
            let body = match cluster.get(&g.kind, &g.name, ns).await {
                Ok(Some(mut o)) => {
                    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("managedFields");
                    }
                    Ok(match &g.field {
                        Some(f) => field(&o, f).unwrap_or_default(),
                        None => serde_saphyr::to_string(&o).unwrap_or_default(),
                    })
                }
                Ok(None) => Ok("(not found)".into()),
                Err(e) => Err(e),
            };
            section(format!("get {} {}", g.kind, shown(ns, &g.name)), body);
        }
        for d in &k.describe {
            let body = cluster
                .describe(
                    &d.kind,
                    d.name.as_deref(),
                    d.label_selector.as_deref(),
                    d.namespace.as_deref(),
                )
                .await;
            let target = d
                .name
                .as_deref()
                .or(d.label_selector.as_deref())
                .unwrap_or("");
            section(
                format!(
                    "describe {} {}",
                    d.kind,
                    shown(d.namespace.as_deref(), target)
                ),
                body,
            );
        }
        for e in &k.events {
            let body = cluster
                .events(&e.kind, &e.name, e.namespace.as_deref())
                .await;
            section(
                format!(
                    "events of {} {}",
                    e.kind,
                    shown(e.namespace.as_deref(), &e.name)
                ),
                body,
            );
        }
        for l in &k.logs {
            let since = l
                .since
                .as_deref()
                .and_then(|s| humantime::parse_duration(s).ok());
            let body = if l.leader_election.is_some() {
                Err(anyhow!(
                    "logs by leaderElection are not implemented by ork e2e"
                ))
            } else {
                cluster
                    .logs(
                        l.name.as_deref(),
                        l.label_selector.as_deref(),
                        l.namespace.as_deref(),
                        l.container.as_deref(),
                        since,
                    )
                    .await
            };
            let who = l
                .name
                .clone()
                .or(l.label_selector.clone())
                .unwrap_or_default();
            section(
                format!(
                    "logs {} in {}",
                    who,
                    l.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE)
                ),
                body,
            );
        }
        for (what, n) in [
            ("exec", k.exec.len()),
            ("cp", k.cp.len()),
            ("top", k.top.len()),
            ("port-forward", k.port_forward.len()),
        ] {
            if n > 0 {
                section(
                    format!("kubectl.{what} ({n})"),
                    Err(anyhow!("not implemented by ork e2e")),
                );
            }
        }
    }
    for c in &of.commands {
        let body = command(shell, c, dir, Instant::now() + DIAGNOSTIC_TIMEOUT)
            .await
            .map(|(code, text)| {
                if code == 0 {
                    text
                } else {
                    format!("{text}(exit code {code})")
                }
            });
        section(format!("$ {c}"), body);
    }
    out
}
