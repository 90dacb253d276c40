//! The short run of every fuzz target, part of `cargo test --workspace` (and so of
//! `cargo xtask test`): small inputs, a fixed seed (`ORK_FUZZ_SEED` to change it), a few
//! seconds in a debug build. The long run is `cargo xtask fuzz`.

use std::time::Duration;

use ork_fuzz::{Profile, RunConfig, run_target, targets};

fn seed() -> u64 {
    std::env::var("ORK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_250_601)
}

/// Runs `cases` cases of `name` on a 2 MiB stack (tokio's) and fails on any new failure.
fn short(name: &'static str, cases: u64) {
    let target = targets::by_name(name).expect("a target of that name");
    let cfg = RunConfig {
        seed: seed(),
        cases,
        profile: Profile::Short,
        // A debug build is many times slower than the release build of a long run.
        time_budget: Duration::from_secs(10),
        rss_budget_kib: 1024 * 1024,
        ..RunConfig::default()
    };
    let report = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || run_target(target, &cfg, |_| {}, |_| {}))
        .expect("thread")
        .join()
        .expect("the runner itself does not panic");
    let mut message = String::new();
    for f in &report.failures {
        message.push_str(&format!(
            "\n{} case {} ({}): {}\n  reproduce: cargo xtask fuzz --seed {} --target {name} --case {} --short\n  input: {}\n",
            f.target,
            f.index,
            f.failure.property,
            f.failure.message,
            seed(),
            f.index,
            ork_fuzz::runner::cut(&f.input, 1500)
        ));
    }
    assert_eq!(report.cases, cases);
    assert_eq!(
        report.failure_count, 0,
        "{name}: {} failures{message}",
        report.failure_count
    );
}

#[test]
fn katalog() {
    short("katalog", 120);
}

#[test]
fn katalog_mutate() {
    short("katalog-mutate", 300);
}

#[test]
fn template() {
    short("template", 200);
}

#[test]
fn duration() {
    short("duration", 3000);
}

#[test]
fn url() {
    short("url", 1500);
}

#[test]
fn answer() {
    short("answer", 250);
}

#[test]
fn text() {
    short("text", 1500);
}

#[test]
fn list() {
    short("list", 1000);
}

#[test]
fn inspector() {
    short("inspector", 3000);
}

#[test]
fn every_target_has_a_short_run() {
    let here = include_str!("short.rs");
    for t in targets::ALL {
        assert!(
            here.contains(&format!("short(\"{}\"", t.name())),
            "target {} has no short run here",
            t.name()
        );
    }
}
