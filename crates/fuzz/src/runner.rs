//! Running cases of one target: each case from its own seed, panics caught, time measured,
//! memory watched.
//!
//! Memory: the kernel's high-water mark of the process (`VmHWM`) is read after every window of
//! cases and reset (`/proc/self/clear_refs`), so a window over the budget is known; its cases
//! are then run again one by one to name the case.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;
use std::time::{Duration, Instant};

use crate::generate::{Gen, Profile, case_seed};
use crate::known::Known;

/// A property that did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Short name of the property (`decide-lint-agree`, `no-panic`, `bounded-time`…).
    pub property: &'static str,
    pub message: String,
    /// The known bug this is an instance of, if any.
    pub known: Option<&'static str>,
}

/// One case in progress: what it fed in (for the report) and what failed.
#[derive(Debug, Default)]
pub struct Case {
    /// The input, as text, for the failure report. Targets set it before calling ork's code.
    pub input: String,
    pub failures: Vec<Failure>,
    /// When this case may be slow because of a known bug, that bug: a `bounded-time` failure
    /// is then counted under it.
    pub slow_known: Option<Known>,
    /// When the target started running ork's code (after generating the input): the case's
    /// time is measured from here, so a slow generator is not blamed on ork.
    pub began: Option<Instant>,
    /// Time spent generating after [`Case::begin`], taken off the case's time.
    pub untimed: Duration,
    /// The thread's CPU time when the case started, and the CPU time spent generating.
    pub cpu_start: Option<Duration>,
    pub generation_cpu: Duration,
}

impl Case {
    pub fn fail(&mut self, property: &'static str, message: impl Into<String>) {
        self.failures.push(Failure {
            property,
            message: message.into(),
            known: None,
        });
    }

    pub fn known(&mut self, bug: Known, property: &'static str, message: impl Into<String>) {
        self.failures.push(Failure {
            property,
            message: message.into(),
            known: Some(bug.id),
        });
    }

    /// Fails `property` with `message()` unless `ok`.
    pub fn check(&mut self, ok: bool, property: &'static str, message: impl FnOnce() -> String) {
        if !ok {
            self.fail(property, message());
        }
    }

    /// Marks the end of generation: the case's time counts from here.
    pub fn begin(&mut self) {
        self.began = Some(Instant::now());
        if let (Some(start), Some(now)) = (self.cpu_start, thread_cpu()) {
            self.generation_cpu += now.saturating_sub(start);
        }
    }

    /// Runs `f` (more generation) off the case's clock.
    pub fn untimed<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let cpu = thread_cpu();
        let out = f();
        self.untimed += started.elapsed();
        if let (Some(a), Some(b)) = (cpu, thread_cpu()) {
            self.generation_cpu += b.saturating_sub(a);
        }
        out
    }

    /// Records an input part (appended on its own line).
    pub fn note(&mut self, label: &str, text: &str) {
        if !self.input.is_empty() {
            self.input.push('\n');
        }
        self.input.push_str(label);
        self.input.push_str(": ");
        self.input.push_str(text);
    }
}

/// A fuzz target: generates one input from `g` and runs it through ork's code.
pub trait Target: Sync + Send {
    fn name(&self) -> &'static str;
    /// One line: what it feeds and what it checks.
    fn about(&self) -> &'static str;
    fn run(&self, g: &mut Gen, case: &mut Case);
}

/// How to run a target.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub seed: u64,
    /// The first case's index.
    pub start: u64,
    pub cases: u64,
    pub profile: Profile,
    /// Also generate inputs of known crash bugs.
    pub known: bool,
    /// A case taking longer fails `bounded-time`.
    pub time_budget: Duration,
    /// The process's peak RSS over a window of cases above this fails `bounded-memory`.
    pub rss_budget_kib: u64,
    /// Cases per memory check.
    pub window: u64,
    /// Stop starting cases after this long (the report says how many ran).
    pub time_limit: Option<Duration>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            seed: 0,
            start: 0,
            cases: 1000,
            profile: Profile::Full,
            known: false,
            time_budget: Duration::from_secs(1),
            rss_budget_kib: 1024 * 1024,
            window: 512,
            time_limit: None,
        }
    }
}

/// A failure with its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFailure {
    pub target: &'static str,
    pub index: u64,
    pub failure: Failure,
    /// The input, cut to a few KiB.
    pub input: String,
}

/// What a run of one target found.
#[derive(Clone, Debug, Default)]
pub struct TargetReport {
    pub target: &'static str,
    pub cases: u64,
    pub elapsed: Duration,
    /// The slowest case and its time.
    pub slowest: Option<(u64, Duration)>,
    /// New failures: the first few of each property (all are counted in `failure_count`).
    pub failures: Vec<CaseFailure>,
    pub failure_count: u64,
    /// Known bugs hit: id → (count, first case, first example).
    pub known: BTreeMap<&'static str, (u64, u64, String)>,
    /// Peak resident set size seen, KiB (0 when /proc is not readable).
    pub peak_rss_kib: u64,
}

/// Examples kept per property.
const EXAMPLES: usize = 3;
/// Input text kept per example.
const INPUT_CHARS: usize = 4000;

impl TargetReport {
    fn record(&mut self, index: u64, failure: Failure, input: &str) {
        if let Some(id) = failure.known {
            let slot = self
                .known
                .entry(id)
                .or_insert_with(|| (0, index, failure.message.clone()));
            slot.0 += 1;
            return;
        }
        self.failure_count += 1;
        let same = self
            .failures
            .iter()
            .filter(|f| f.failure.property == failure.property)
            .count();
        if same < EXAMPLES {
            self.failures.push(CaseFailure {
                target: self.target,
                index,
                failure,
                input: cut(input, INPUT_CHARS),
            });
        }
    }
}

/// `s` cut to `max` characters, control characters escaped so a report stays readable.
pub fn cut(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push_str(&format!("… ({} bytes in all)", s.len()));
            break;
        }
        if c.is_control() && c != '\n' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

thread_local! {
    /// Set while a case runs on this thread: the panic hook stores the message here instead
    /// of printing it.
    static CAUGHT: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs (once) a panic hook that is silent for panics inside fuzz cases and keeps their
/// message and location; other panics go to the previous hook.
fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let handled = CAUGHT.with(|c| {
                let mut c = c.borrow_mut();
                match c.as_mut() {
                    Some(slot) => {
                        let payload = info
                            .payload()
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_string())
                            .or_else(|| info.payload().downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "a non-text panic".into());
                        let at = info
                            .location()
                            .map(|l| format!(" at {}:{}", l.file(), l.line()))
                            .unwrap_or_default();
                        *slot = Some(format!("{payload}{at}"));
                        true
                    }
                    None => false,
                }
            });
            if !handled {
                previous(info);
            }
        }));
    });
}

/// Runs case `index` of `target`: its failures (a panic is one) and its time.
pub fn run_case(target: &dyn Target, cfg: &RunConfig, index: u64) -> (Case, Duration) {
    install_hook();
    let mut g = Gen::new(
        case_seed(cfg.seed, target.name(), index),
        cfg.profile,
        cfg.known,
    );
    let mut case = Case {
        cpu_start: thread_cpu(),
        ..Case::default()
    };
    CAUGHT.with(|c| *c.borrow_mut() = Some(None));
    let started = Instant::now();
    let cpu_started = case.cpu_start;
    let result = catch_unwind(AssertUnwindSafe(|| target.run(&mut g, &mut case)));
    let wall = case
        .began
        .unwrap_or(started)
        .elapsed()
        .saturating_sub(case.untimed);
    // On a shared machine the wall clock also counts other processes' turns: a case is as slow
    // as the CPU time it used (when the kernel tells it), at most its wall time.
    let took = match (cpu_started, thread_cpu()) {
        (Some(a), Some(b)) => wall.min(b.saturating_sub(a).saturating_sub(case.generation_cpu)),
        _ => wall,
    };
    let message = CAUGHT.with(|c| c.borrow_mut().take().flatten());
    if result.is_err() {
        case.fail(
            "no-panic",
            message.unwrap_or_else(|| "panicked".to_string()),
        );
    }
    (case, took)
}

/// Runs `cfg.cases` cases of `target` from `cfg.start`. `on_start` is told each case's index
/// before it runs (a supervisor uses it to name the case of a crash); `on_failure` each new
/// failure as it happens.
pub fn run_target(
    target: &dyn Target,
    cfg: &RunConfig,
    mut on_start: impl FnMut(u64),
    mut on_failure: impl FnMut(&CaseFailure),
) -> TargetReport {
    let mut report = TargetReport {
        target: target.name(),
        ..TargetReport::default()
    };
    let started = Instant::now();
    let memory = Memory::new();
    let end = cfg.start.saturating_add(cfg.cases);
    let mut window_start = cfg.start;
    let mut index = cfg.start;
    while index < end {
        if cfg
            .time_limit
            .is_some_and(|limit| started.elapsed() > limit)
        {
            break;
        }
        on_start(index);
        let (case, took) = run_case(target, cfg, index);
        report.cases += 1;
        if report.slowest.is_none_or(|(_, t)| took > t) {
            report.slowest = Some((index, took));
        }
        let mut failures = case.failures;
        if took > cfg.time_budget {
            failures.push(Failure {
                property: "bounded-time",
                message: format!(
                    "the case took {} ms of CPU, over the budget of {} ms",
                    took.as_millis(),
                    cfg.time_budget.as_millis()
                ),
                known: case.slow_known.map(|k| k.id),
            });
        }
        for f in failures {
            let new = f.known.is_none();
            report.record(index, f, &case.input);
            if new && let Some(last) = report.failures.last().filter(|l| l.index == index) {
                on_failure(last);
            }
        }
        index += 1;
        let window_done = index - window_start >= cfg.window || index == end;
        if window_done || took > Duration::from_millis(50) {
            let peak = memory.peak_and_reset();
            report.peak_rss_kib = report.peak_rss_kib.max(peak);
            if peak > cfg.rss_budget_kib {
                let culprit = memory.find(target, cfg, window_start, index);
                let (at, input) = match culprit {
                    Some((i, kib)) => (i, format!("(case {i} alone peaked at {kib} KiB)")),
                    None => (window_start, String::new()),
                };
                let failure = Failure {
                    property: "bounded-memory",
                    message: format!(
                        "peak RSS {peak} KiB over the budget of {} KiB in cases {window_start}..{index}",
                        cfg.rss_budget_kib
                    ),
                    known: None,
                };
                report.record(at, failure, &input);
                if let Some(last) = report.failures.last() {
                    on_failure(last);
                }
            }
            window_start = index;
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// The process's peak RSS from /proc, with a reset when the kernel allows it.
struct Memory {
    resettable: bool,
}

impl Memory {
    fn new() -> Memory {
        let resettable = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        Memory { resettable }
    }

    /// The peak since the last reset (or since start), then a reset.
    fn peak_and_reset(&self) -> u64 {
        let peak = status_kib("VmHWM:").unwrap_or(0);
        if self.resettable {
            let _ = std::fs::write("/proc/self/clear_refs", "5");
        }
        peak
    }

    /// Runs cases `from..to` one by one; the first whose own peak is over the budget.
    fn find(&self, target: &dyn Target, cfg: &RunConfig, from: u64, to: u64) -> Option<(u64, u64)> {
        if !self.resettable {
            return None;
        }
        for i in from..to {
            let _ = std::fs::write("/proc/self/clear_refs", "5");
            let _ = run_case(target, cfg, i);
            let peak = status_kib("VmHWM:").unwrap_or(0);
            if peak > cfg.rss_budget_kib {
                let _ = std::fs::write("/proc/self/clear_refs", "5");
                return Some((i, peak));
            }
        }
        None
    }
}

/// CPU time this thread has used (`/proc/thread-self/schedstat`, nanoseconds).
pub fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// A `kB` field of /proc/self/status.
pub fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Panics;

    impl Target for Panics {
        fn name(&self) -> &'static str {
            "panics"
        }
        fn about(&self) -> &'static str {
            "panics on every third case"
        }
        fn run(&self, g: &mut Gen, case: &mut Case) {
            case.note("n", "x");
            if g.one_in(3) {
                panic!("boom");
            }
        }
    }

    #[test]
    fn panics_are_caught_counted_and_placed() {
        let cfg = RunConfig {
            cases: 60,
            ..RunConfig::default()
        };
        let mut seen = Vec::new();
        let report = run_target(&Panics, &cfg, |_| {}, |f| seen.push(f.index));
        assert_eq!(report.cases, 60);
        assert!(report.failure_count > 5, "{report:?}");
        assert_eq!(report.failures.len(), 3, "three examples kept");
        assert!(report.failures[0].failure.message.starts_with("boom at "));
        assert_eq!(seen.len(), 3);
        let again = run_case(&Panics, &cfg, report.failures[0].index).0;
        assert_eq!(
            again.failures[0].property, "no-panic",
            "a case reproduces alone"
        );
    }
}
