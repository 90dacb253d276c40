//! `ork-fuzz`: runs the property/fuzz targets of `ork-fuzz` (see the library docs).
//!
//! Each target runs in a worker process (this binary with `--worker`) under an address-space
//! limit; the worker tells the supervisor the index of every case before it runs it, so a crash
//! (abort, stack overflow, allocation failure) or a hang is pinned on its case, and the run goes
//! on from the next one. Every failure is printed with the command that reproduces it alone.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use ork_fuzz::runner::{CaseFailure, cut};
use ork_fuzz::{Profile, RunConfig, Target, TargetReport, known, run_target, targets};

const USAGE: &str = "\
usage: ork-fuzz [options]

  --cases N            cases per target (default 100000)
  --seed S             the run's seed (default: from the clock; printed)
  --target T           a target to run (repeatable; default: all)
  --case I             run case I alone (with --target): reproduces a failure
  --start I            the first case index (default 0)
  --jobs J             targets run in parallel (default 1)
  --short              small inputs (the profile of the run inside `cargo test`)
  --known              also generate inputs that trigger known crash bugs
  --strict             known bugs fail the run too
  --time-budget-ms MS  a case slower than this fails bounded-time (default 1000)
  --rss-budget-mb MB   peak RSS over this fails bounded-memory (default 1024)
  --memory-limit-mb MB address-space limit of a worker (default 4096; 0: none)
  --hang-secs S        a case running this long is killed as a hang (default 120)
  --max-secs S         stop each target after S seconds (reports how many cases ran)
  --no-fork            run in this process (a crash ends the run)
  --dump FILE          run the cases here and write their whole inputs to FILE
  --list               list the targets and the known bugs";

#[derive(Clone)]
struct Options {
    cases: u64,
    seed: u64,
    targets: Vec<&'static dyn Target>,
    start: u64,
    jobs: usize,
    profile: Profile,
    known: bool,
    strict: bool,
    time_budget: Duration,
    rss_budget_kib: u64,
    memory_limit_mb: u64,
    hang: Duration,
    max_secs: Option<u64>,
    fork: bool,
    worker: bool,
    dump: Option<String>,
}

fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        cases: 100_000,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_007),
        targets: Vec::new(),
        start: 0,
        jobs: 1,
        profile: Profile::Full,
        known: false,
        strict: false,
        time_budget: Duration::from_millis(1000),
        rss_budget_kib: 1024 * 1024,
        memory_limit_mb: 4096,
        hang: Duration::from_secs(120),
        max_secs: None,
        fork: true,
        worker: false,
        dump: None,
    };
    let mut it = args.iter();
    let number = |v: Option<&String>, name: &str| -> Result<u64, String> {
        v.ok_or_else(|| format!("{name} needs a value"))?
            .replace('_', "")
            .parse()
            .map_err(|_| format!("{name} needs a number"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--cases" => o.cases = number(it.next(), a)?,
            "--seed" => o.seed = number(it.next(), a)?,
            "--start" => o.start = number(it.next(), a)?,
            "--case" => {
                o.start = number(it.next(), a)?;
                o.cases = 1;
            }
            "--jobs" => o.jobs = number(it.next(), a)?.max(1) as usize,
            "--time-budget-ms" => o.time_budget = Duration::from_millis(number(it.next(), a)?),
            "--rss-budget-mb" => o.rss_budget_kib = number(it.next(), a)? * 1024,
            "--memory-limit-mb" => o.memory_limit_mb = number(it.next(), a)?,
            "--hang-secs" => o.hang = Duration::from_secs(number(it.next(), a)?),
            "--max-secs" => o.max_secs = Some(number(it.next(), a)?),
            "--target" => {
                let name = it.next().ok_or("--target needs a name")?;
                let t = targets::by_name(name).ok_or_else(|| {
                    let names: Vec<&str> = targets::ALL.iter().map(|t| t.name()).collect();
                    format!("no target {name:?} (targets: {})", names.join(", "))
                })?;
                o.targets.push(t);
            }
            "--short" => o.profile = Profile::Short,
            "--known" => o.known = true,
            "--strict" => o.strict = true,
            "--no-fork" => o.fork = false,
            "--dump" => o.dump = Some(it.next().ok_or("--dump needs a file")?.clone()),
            "--worker" => o.worker = true,
            "--list" => {
                println!("targets:");
                for t in targets::ALL {
                    println!("  {:<16} {}", t.name(), t.about());
                }
                println!("known bugs (not fixed yet):");
                for k in known::ALL {
                    println!("  {:<26} {}", k.id, k.summary);
                }
                return Ok(None);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    if o.targets.is_empty() {
        o.targets = targets::ALL.to_vec();
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(Some(o)) => o,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ork-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    if o.worker {
        return worker(&o);
    }
    if let Some(file) = &o.dump {
        return dump(&o, file);
    }
    supervise(&o)
}

fn config(o: &Options, start: u64, cases: u64) -> RunConfig {
    RunConfig {
        seed: o.seed,
        start,
        cases,
        profile: o.profile,
        known: o.known,
        time_budget: o.time_budget,
        rss_budget_kib: o.rss_budget_kib,
        time_limit: o.max_secs.map(Duration::from_secs),
        ..RunConfig::default()
    }
}

/// Runs `f` on a thread with tokio's default worker stack (2 MiB): ork renders templates and
/// checks answers on such threads, so a recursion that fits 8 MiB but not 2 MiB is a bug.
fn on_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match std::thread::Builder::new()
        .name("fuzz-case".into())
        .stack_size(2 << 20)
        .spawn(f)
        .map(std::thread::JoinHandle::join)
    {
        Ok(Ok(v)) => v,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => panic!("cannot start the case thread: {e}"),
    }
}

/// Runs the cases in this process and writes each one's whole input and verdict to `file`.
fn dump(o: &Options, file: &str) -> ExitCode {
    let mut text = String::new();
    for &t in &o.targets {
        for i in o.start..o.start.saturating_add(o.cases) {
            let cfg = config(o, i, 1);
            let (case, took) = on_worker_stack(move || ork_fuzz::runner::run_case(t, &cfg, i));
            text.push_str(&format!(
                "=== {} case {i}: {} ms, {:?}\n{}\n",
                t.name(),
                took.as_millis(),
                case.failures,
                case.input
            ));
        }
    }
    match std::fs::write(file, text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ork-fuzz: {file}: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The worker: one target, cases reported on stdout as they start.

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
        .replace('\r', "\\r")
}

fn unesc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

fn worker(o: &Options) -> ExitCode {
    let Some(&target) = o.targets.first() else {
        return ExitCode::from(2);
    };
    let cfg = config(o, o.start, o.cases);
    let report = on_worker_stack(move || {
        let out = std::io::stdout();
        run_target(
            target,
            &cfg,
            |i| {
                let _ = writeln!(out.lock(), "S\t{i}");
            },
            |f| {
                let _ = writeln!(
                    out.lock(),
                    "F\t{}\t{}\t{}\t{}",
                    f.index,
                    f.failure.property,
                    esc(&f.failure.message),
                    esc(&f.input)
                );
            },
        )
    });
    let mut out = std::io::stdout().lock();
    for (id, (count, first, example)) in &report.known {
        let _ = writeln!(out, "K\t{id}\t{count}\t{first}\t{}", esc(example));
    }
    let (slow_i, slow) = report.slowest.unwrap_or((0, Duration::ZERO));
    let _ = writeln!(
        out,
        "D\t{}\t{}\t{}\t{}\t{}\t{}",
        report.cases,
        report.elapsed.as_micros(),
        slow_i,
        slow.as_micros(),
        report.failure_count,
        report.peak_rss_kib
    );
    let _ = out.flush();
    ExitCode::SUCCESS
}

// ---------------------------------------------------------------------------------------------
// The supervisor.

/// What the supervisor knows of one target, across worker restarts.
#[derive(Default)]
struct Totals {
    cases: u64,
    elapsed: Duration,
    slowest: Option<(u64, Duration)>,
    failures: u64,
    known: BTreeMap<String, (u64, u64, String)>,
    peak_kib: u64,
    crashes: u64,
}

impl Totals {
    fn add(&mut self, r: &TargetReport) {
        self.cases += r.cases;
        self.elapsed += r.elapsed;
        if let Some((i, t)) = r.slowest
            && self.slowest.is_none_or(|(_, s)| t > s)
        {
            self.slowest = Some((i, t));
        }
        self.failures += r.failure_count;
        for (id, (n, first, ex)) in &r.known {
            let e = self
                .known
                .entry((*id).to_string())
                .or_insert((0, *first, ex.clone()));
            e.0 += n;
        }
        self.peak_kib = self.peak_kib.max(r.peak_rss_kib);
    }
}

fn reproduce(o: &Options, target: &str, index: u64) -> String {
    let mut cmd = format!(
        "cargo xtask fuzz --seed {} --target {target} --case {index}",
        o.seed
    );
    if o.profile == Profile::Short {
        cmd.push_str(" --short");
    }
    if o.known {
        cmd.push_str(" --known");
    }
    cmd
}

fn print_failure(o: &Options, f: &CaseFailure, printed: &Mutex<BTreeMap<(String, String), u64>>) {
    let key = (f.target.to_string(), f.failure.property.to_string());
    let mut seen = printed
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let n = seen.entry(key).or_insert(0);
    *n += 1;
    if *n > 3 {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "\nFAIL {} case {}: {}\n  {}\n  reproduce: {}\n  input:\n{}",
        f.target,
        f.index,
        f.failure.property,
        f.failure.message.replace('\n', "\n  "),
        reproduce(o, f.target, f.index),
        indent(&cut(&f.input, 3000), "    ")
    );
}

fn indent(s: &str, by: &str) -> String {
    s.lines()
        .map(|l| format!("{by}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn supervise(o: &Options) -> ExitCode {
    println!(
        "ork-fuzz: seed {} · {} cases per target · {} target(s) · {} profile{}",
        o.seed,
        o.cases,
        o.targets.len(),
        if o.profile == Profile::Short {
            "short"
        } else {
            "full"
        },
        if o.known {
            " · known crash bugs included"
        } else {
            ""
        }
    );
    let started = Instant::now();
    let queue: Mutex<VecDeque<&'static dyn Target>> =
        Mutex::new(o.targets.iter().copied().collect());
    let results: Mutex<Vec<(&'static str, Totals)>> = Mutex::new(Vec::new());
    let printed = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..o.jobs.min(o.targets.len()) {
            s.spawn(|| {
                loop {
                    let next = queue
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .pop_front();
                    let Some(t) = next else { break };
                    let totals = if o.fork {
                        run_forked(o, t, &printed)
                    } else {
                        run_here(o, t, &printed)
                    };
                    print_target(t.name(), &totals);
                    results
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((t.name(), totals));
                }
            });
        }
    });
    let mut results = results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let order: Vec<&str> = o.targets.iter().map(|t| t.name()).collect();
    results.sort_by_key(|(name, _)| order.iter().position(|n| n == name));
    summary(o, &results, started.elapsed())
}

fn print_target(name: &str, t: &Totals) {
    let (si, st) = t.slowest.unwrap_or((0, Duration::ZERO));
    let rate = t.cases as f64 / t.elapsed.as_secs_f64().max(1e-9);
    println!(
        "{name:<15} {:>9} cases {:>8.1}s {:>9.0}/s  slowest {:>7.1} ms (case {si})  peak RSS {:>6} MiB  failures {}{}",
        t.cases,
        t.elapsed.as_secs_f64(),
        rate,
        st.as_secs_f64() * 1000.0,
        t.peak_kib / 1024,
        t.failures,
        if t.known.is_empty() {
            String::new()
        } else {
            format!(
                "  known: {}",
                t.known
                    .iter()
                    .map(|(id, (n, _, _))| format!("{id} ×{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
}

fn summary(o: &Options, results: &[(&str, Totals)], took: Duration) -> ExitCode {
    let cases: u64 = results.iter().map(|(_, t)| t.cases).sum();
    let failures: u64 = results.iter().map(|(_, t)| t.failures).sum();
    let peak = results.iter().map(|(_, t)| t.peak_kib).max().unwrap_or(0);
    let known: u64 = results
        .iter()
        .flat_map(|(_, t)| t.known.values())
        .map(|(n, _, _)| n)
        .sum();
    println!(
        "\n{cases} cases in {:.1}s (wall), peak RSS {} MiB, seed {}",
        took.as_secs_f64(),
        peak / 1024,
        o.seed
    );
    for (name, t) in results {
        for (id, (n, first, example)) in &t.known {
            println!(
                "known bug {id} ({name}): {n} cases, first case {first} ({})\n  {}",
                reproduce(o, name, *first),
                cut(example, 400)
            );
        }
    }
    if failures == 0 && (known == 0 || !o.strict) {
        println!(
            "no new failures{}",
            if known > 0 { " (known bugs above)" } else { "" }
        );
        ExitCode::SUCCESS
    } else {
        println!("{failures} new failures, {known} known-bug cases");
        ExitCode::FAILURE
    }
}

/// Runs a target in this process, on a worker-sized stack.
fn run_here(
    o: &Options,
    t: &'static dyn Target,
    printed: &Mutex<BTreeMap<(String, String), u64>>,
) -> Totals {
    let cfg = config(o, o.start, o.cases);
    let failures: Arc<Mutex<Vec<CaseFailure>>> = Arc::default();
    let sink = Arc::clone(&failures);
    let report = on_worker_stack(move || {
        run_target(
            t,
            &cfg,
            |_| {},
            |f| {
                sink.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(f.clone());
            },
        )
    });
    for f in failures
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        print_failure(o, f, printed);
    }
    let mut totals = Totals::default();
    totals.add(&report);
    totals
}

enum Line {
    Failure(CaseFailure),
    Known(String, u64, u64, String),
    Done(TargetReport),
}

/// Runs a target in worker processes, restarting after a crash or a hang at the next case.
fn run_forked(
    o: &Options,
    t: &'static dyn Target,
    printed: &Mutex<BTreeMap<(String, String), u64>>,
) -> Totals {
    let mut totals = Totals::default();
    let end = o.start.saturating_add(o.cases);
    let mut next = o.start;
    let began = Instant::now();
    while next < end {
        let remaining = o
            .max_secs
            .map(|s| s.saturating_sub(began.elapsed().as_secs()));
        if remaining == Some(0) {
            break;
        }
        let spawned = Instant::now();
        let (outcome, last) = run_worker(o, t, next, end - next, remaining, printed, &mut totals);
        match outcome {
            WorkerEnd::Done => break,
            WorkerEnd::Crashed(why) | WorkerEnd::Hung(why) => {
                totals.crashes += 1;
                totals.failures += 1;
                let f = CaseFailure {
                    target: t.name(),
                    index: last,
                    failure: ork_fuzz::Failure {
                        property: if why.starts_with("hang") {
                            "bounded-time"
                        } else {
                            "no-crash"
                        },
                        message: why,
                        known: None,
                    },
                    input: reproduce_input(o, t, last),
                };
                print_failure(o, &f, printed);
                // The cases this worker finished, and the one it died in.
                totals.cases += last - next + 1;
                totals.elapsed += spawned.elapsed();
                next = last + 1;
                if totals.crashes >= 50 {
                    println!("{}: 50 crashes, giving up on this target", t.name());
                    break;
                }
            }
        }
    }
    totals
}

/// The input of a case that crashed, regenerated in this process without running ork on it
/// is not possible (generation and checks interleave), so say how to get it.
fn reproduce_input(o: &Options, t: &'static dyn Target, index: u64) -> String {
    format!(
        "(the case crashed the worker; run `{} --no-fork` to see it fail in place)",
        reproduce(o, t.name(), index)
    )
}

enum WorkerEnd {
    Done,
    Crashed(String),
    Hung(String),
}

#[allow(clippy::too_many_arguments)]
fn run_worker(
    o: &Options,
    t: &'static dyn Target,
    start: u64,
    cases: u64,
    max_secs: Option<u64>,
    printed: &Mutex<BTreeMap<(String, String), u64>>,
    totals: &mut Totals,
) -> (WorkerEnd, u64) {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            return (
                WorkerEnd::Crashed(format!("cannot find this binary: {e}")),
                start,
            );
        }
    };
    let mut args: Vec<String> = vec![
        "--worker".into(),
        "--target".into(),
        t.name().into(),
        "--seed".into(),
        o.seed.to_string(),
        "--start".into(),
        start.to_string(),
        "--cases".into(),
        cases.to_string(),
        "--time-budget-ms".into(),
        o.time_budget.as_millis().to_string(),
        "--rss-budget-mb".into(),
        (o.rss_budget_kib / 1024).to_string(),
    ];
    if o.profile == Profile::Short {
        args.push("--short".into());
    }
    if o.known {
        args.push("--known".into());
    }
    if let Some(secs) = max_secs {
        args.extend(["--max-secs".into(), secs.to_string()]);
    }
    let prlimit = o.memory_limit_mb > 0 && std::path::Path::new("/usr/bin/prlimit").exists();
    let mut cmd = if prlimit {
        let mut c = Command::new("/usr/bin/prlimit");
        c.arg(format!("--as={}", o.memory_limit_mb * 1024 * 1024))
            .arg("--")
            .arg(&exe)
            .args(&args);
        c
    } else {
        let mut c = Command::new(&exe);
        c.args(&args);
        c
    };
    let mut child = match cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return (
                WorkerEnd::Crashed(format!("cannot start a worker: {e}")),
                start,
            );
        }
    };
    let last = Arc::new(AtomicU64::new(start));
    let progress = Arc::new(AtomicU64::new(0));
    let clock = Instant::now();
    let (tx, rx) = mpsc::channel::<Line>();
    let stdout = child.stdout.take();
    let reader = {
        let last = Arc::clone(&last);
        let progress = Arc::clone(&progress);
        let target = t.name();
        std::thread::spawn(move || {
            let Some(stdout) = stdout else { return };
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let parts: Vec<&str> = line.split('\t').collect();
                match parts.as_slice() {
                    ["S", i] => {
                        if let Ok(i) = i.parse() {
                            last.store(i, Ordering::Relaxed);
                            progress.store(clock.elapsed().as_millis() as u64, Ordering::Relaxed);
                        }
                    }
                    ["F", i, property, message, input] => {
                        let property: &'static str =
                            Box::leak(property.to_string().into_boxed_str());
                        let _ = tx.send(Line::Failure(CaseFailure {
                            target,
                            index: i.parse().unwrap_or(0),
                            failure: ork_fuzz::Failure {
                                property,
                                message: unesc(message),
                                known: None,
                            },
                            input: unesc(input),
                        }));
                    }
                    ["K", id, n, first, example] => {
                        let _ = tx.send(Line::Known(
                            (*id).to_string(),
                            n.parse().unwrap_or(0),
                            first.parse().unwrap_or(0),
                            unesc(example),
                        ));
                    }
                    ["D", cases, micros, si, smicros, failures, peak] => {
                        let n = |s: &str| s.parse::<u64>().unwrap_or(0);
                        let _ = tx.send(Line::Done(TargetReport {
                            target,
                            cases: n(cases),
                            elapsed: Duration::from_micros(n(micros)),
                            slowest: Some((n(si), Duration::from_micros(n(smicros)))),
                            failures: Vec::new(),
                            failure_count: n(failures),
                            known: BTreeMap::new(),
                            peak_rss_kib: n(peak),
                        }));
                    }
                    _ => {}
                }
            }
        })
    };
    let stderr_tail = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take();
    let err_reader = {
        let tail = Arc::clone(&stderr_tail);
        std::thread::spawn(move || {
            let Some(mut stderr) = stderr else { return };
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut t = tail
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                t.push_str(&String::from_utf8_lossy(&buf[..n]));
                if t.len() > 8192 {
                    let cut = t.len() - 4096;
                    let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(0);
                    t.drain(..cut);
                }
            }
        })
    };
    let mut done = false;
    let mut hung = None;
    let mut known: Vec<(String, u64, u64, String)> = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(Line::Failure(f)) => print_failure(o, &f, printed),
            Ok(Line::Known(id, n, first, ex)) => known.push((id, n, first, ex)),
            Ok(Line::Done(mut r)) => {
                for (id, n, first, ex) in known.drain(..) {
                    let id: &'static str = Box::leak(id.into_boxed_str());
                    r.known.insert(id, (n, first, ex));
                }
                totals.add(&r);
                done = true;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let since = clock.elapsed().as_millis() as u64 - progress.load(Ordering::Relaxed);
                if since > o.hang.as_millis() as u64 {
                    hung = Some(since);
                    let _ = child.kill();
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = reader.join();
    let status = child.wait();
    let _ = err_reader.join();
    let last = last.load(Ordering::Relaxed);
    if done {
        return (WorkerEnd::Done, last);
    }
    let tail = stderr_tail
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .trim()
        .to_string();
    let tail = cut(&tail, 1500);
    if let Some(ms) = hung {
        return (
            WorkerEnd::Hung(format!(
                "hang: case {last} still running after {ms} ms; the worker was killed"
            )),
            last,
        );
    }
    let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
    (
        WorkerEnd::Crashed(format!("the worker died in case {last} ({status}): {tail}")),
        last,
    )
}
