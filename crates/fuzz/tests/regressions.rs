//! Bugs the fuzz suite found in other crates, one minimal reproducer each (see
//! `src/known.rs`). They are `#[ignore]`d while the bug stands: un-ignore a test with its fix,
//! and drop the bug's entry from `known.rs`. Run them with
//! `cargo test -p ork-fuzz --test regressions -- --ignored`.

use std::path::Path;
use std::time::{Duration, Instant};

use ork_katalog::Template;
use serde_json::json;

/// K1 (fixed): SPEC §1 wants one duration parser with Go's results; the Katalog's used to
/// compute fractions exactly where Go (and `ork_protocol`) multiplies in floating point.
#[test]
fn k1_one_duration_grammar_one_value() {
    for input in ["0.3333333333333333333h", "0.830103483285477580700h"] {
        let katalog = ork_katalog::Duration::parse_unbounded(input)
            .map(|d| d.get().as_nanos())
            .ok();
        let protocol = ork_protocol::parse_go_duration(input)
            .map(|d| u128::from(d.as_nanos().unsigned_abs()))
            .ok();
        let go = ork_fuzz::targets::go_parse_duration(input).map(|n| u128::from(n.unsigned_abs()));
        assert_eq!(protocol, go, "{input}: the protocol parser is Go's");
        assert_eq!(katalog, go, "{input}: the Katalog parser is Go's");
    }
}

/// Peak RSS growth (KiB) while `f` runs, when the kernel lets the peak be reset.
fn peak_growth(f: impl FnOnce()) -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    let before = ork_fuzz::runner::status_kib("VmRSS:")?;
    f();
    let peak = ork_fuzz::runner::status_kib("VmHWM:")?;
    Some(peak.saturating_sub(before))
}

/// K2 (fixed): `range N` used to build all N items before the first iteration, so a range that
/// stopped at once still allocated N × 64 bytes; N from the CR made this a CR author's lever (at
/// 10^9 the process aborted on a failed allocation).
#[test]
fn k2_a_range_that_breaks_at_once_allocates_nothing_much() {
    let t = Template::parse("{{ range .spec.n }}{{ break }}{{ end }}done").expect("parses");
    let cr = json!({"spec": {"n": 5_000_000}});
    let Some(growth) = peak_growth(|| {
        assert_eq!(t.render(&cr).as_deref(), Ok("done"));
    }) else {
        return;
    };
    assert!(
        growth < 64 * 1024,
        "one iteration of a range took {growth} KiB"
    );
}

/// K3 (fixed): every bidi control character is dropped from service text, U+061C too.
#[test]
fn k3_remote_clean_text_drops_the_arabic_letter_mark() {
    // One cleaning rule now serves both crates.
    assert_eq!(ork_protocol::clean_text("a\u{61c}b", 10), "ab");
}

fn render_time(template: &Template, cr: &serde_json::Value) -> Duration {
    let started = Instant::now();
    let _ = template.render(cr);
    started.elapsed()
}

/// K4 (fixed): the same template, the same number of steps, over a small and a large CR: render
/// time does not grow with the CR (each `$` used to copy it whole).
#[test]
fn k4_render_time_does_not_grow_with_the_cr_for_the_same_steps() {
    let t = Template::parse("{{ range 2000 }}{{ if $ }}{{ end }}{{ end }}").expect("parses");
    let small = json!({"spec": {"list": vec!["x"; 10]}});
    let large = json!({"spec": {"list": vec!["x".repeat(100); 10_000]}});
    let _ = render_time(&t, &small);
    let a = render_time(&t, &small).max(Duration::from_millis(1));
    let b = render_time(&t, &large);
    assert!(
        b < a * 20,
        "2,000 steps took {a:?} over a 100-byte CR and {b:?} over a 1 MB CR"
    );
}

fn katalog_with_unknown_dependencies(entries: usize, per_entry: usize) -> String {
    let mut out = String::from(
        "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {name: x}\nspec:\n  crds:\n",
    );
    for i in 0..entries {
        let deps: Vec<String> = (0..per_entry)
            .map(|j| format!("x{}", (i + j + 1) % entries))
            .collect();
        out.push_str(&format!(
            "    e{i}:\n      apiTypes: {{group: g{i}.io, version: v1, kind: K{i}, plural: k{i}s}}\n      dependsOn: [{}]\n      operatorBox: {{reconcile: {{default: false, remote: {{endpoint: 'http://127.0.0.1:1/'}}}}}}\n",
            deps.join(", ")
        ));
    }
    out
}

/// K5 (fixed): four times the entries (each naming 20 dependencies that do not exist) cost
/// about four times the time, not sixteen.
#[test]
fn k5_katalog_load_time_is_linear_in_its_size() {
    let time = |n: usize| {
        let text = katalog_with_unknown_dependencies(n, 20);
        let started = Instant::now();
        let loaded = ork_katalog::load_str(&text, Path::new("/nonexistent/k.yaml"));
        assert!(loaded.is_err());
        started.elapsed()
    };
    let _ = time(100);
    let small = time(250).max(Duration::from_millis(1));
    let large = time(1000);
    assert!(
        large < small * 8,
        "250 entries load in {small:?}, 1,000 in {large:?}"
    );
}

/// K6 (fixed): a `service` intent's `selector` is checked like `labels`, so the API server
/// never refuses the Service after the other children were applied.
#[test]
fn k6_a_service_intent_selector_is_checked_like_labels() {
    let policy = ork_protocol::Policy::new(
        ork_protocol::OwnerRef {
            api_version: "demo.ork.dev/v1".into(),
            kind: "WebApp".into(),
            name: "hello".into(),
            namespace: Some("team".into()),
        },
        vec![ork_protocol::ManagedType {
            group: String::new(),
            version: "v1".into(),
            served_versions: vec!["v1".into()],
            kind: "Service".into(),
            plural: "services".into(),
            namespaced: true,
            namespaces: Vec::new(),
            cluster_scoped: false,
            bind_roles: Vec::new(),
            service_account_tokens: false,
            role_aggregation: false,
        }],
        "ork-system",
    );
    let body = br#"{"resources":[{"type":"service","fields":{"name":"web","port":80,"selector":{"not a key!":"not a value!"}}}]}"#;
    assert!(
        ork_protocol::decide(body, &policy).is_err(),
        "decide accepts a Service selector the API server refuses"
    );
    assert!(!ork_protocol::lint(body, &policy).errors.is_empty());
}
