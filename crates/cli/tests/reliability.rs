//! The reliability suite's short profile (the full one is `cargo xtask chaos`): a few dozen CRs
//! per scenario against the shared local cluster, with the same fault-injecting service and the
//! same invariant check. R2 (API server restart) and R6's second phase are not here: they would
//! stop the API server every other test uses. R5 needs root and `iptables-legacy` (`cargo xtask
//! test` installs Debian's `iptables`). Invariants are asserted; times, CPU and RSS are printed, never asserted.

#[path = "../../test-support/src/chaos/mod.rs"]
#[allow(dead_code)]
mod chaos;

use anyhow::Result;

async fn scenario(which: &str) -> Result<()> {
    let out = std::env::temp_dir().join(format!("ork-reliability-{which}-{}", std::process::id()));
    let cfg = chaos::Config::short(env!("CARGO_BIN_EXE_ork").into(), out);
    let reports = chaos::run(&cfg, &[which]).await?;
    for r in &reports {
        assert!(r.passed(), "{r}");
    }
    Ok(())
}

/// R1: 30 % of calls fail in eight ways (timeout, 500, garbage, truncated, 20 MiB body, reset,
/// an undeclared type, slow drip past the timeout), then the service recovers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_faults_then_recovery_lose_nothing_and_apply_nothing_rejected() -> Result<()> {
    scenario("r1").await
}

/// R3: ork SIGKILLed 5 times while CRs with cross-namespace children and `finalize: true` are
/// created, edited and deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkills_during_create_edit_delete_leave_no_orphan_and_no_stuck_finalizer() -> Result<()> {
    scenario("r3").await
}

/// R4: two `--leader-elect` replicas, the leader SIGKILLed mid-run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_sigkill_hands_over_with_no_object_written_by_both() -> Result<()> {
    scenario("r4").await
}

/// R5: the service on a test host of its own behind a veth pair; its link slow (200 ± 50 ms),
/// lossy (5 %) and reordering, then cut, then healed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_lossy_then_cut_link_to_the_service_loses_nothing() -> Result<()> {
    scenario("r5").await
}

/// R6: a FlowSchema throttles ork's own ServiceAccount (429 with Retry-After), then goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_server_throttling_loses_nothing_and_converges_when_it_ends() -> Result<()> {
    scenario("r6").await
}
