//! The `ork diff` phase (`--diff`, SPEC §19): on the Widgets ork converged, with ork stopped,
//! a full pass of ork over them (restarted with `onStart: call`: every CR called again and its
//! writes made) is timed against `ork diff` of the same entry and endpoint (every CR's request
//! and answer, every write a server-side dry run). Both against the same service and API
//! server, one after the other; the API requests the diff made are counted by verb, dry runs
//! apart.

use std::time::Instant;

use anyhow::{Context, Result};

use crate::phase::{Bench, STOP_LIMIT};
use crate::probe::ApiCounts;
use crate::systems;

/// What the diff cost beside a full pass.
#[derive(Debug)]
pub struct DiffCost {
    pub crs: usize,
    /// ork restarted with `onStart: call` until every CR was called again.
    pub pass_s: f64,
    pub diff_s: f64,
    /// Service calls the diff made.
    pub diff_calls: u64,
    /// `ork diff`'s exit code (0: nothing would be refused or lose a child).
    pub exit: i32,
    /// API requests during the diff, by verb (a dry run's verb marked so) and resource.
    pub requests: ApiCounts,
}

impl Bench {
    /// Times a full pass and `ork diff` over the converged Widgets of `ns` (ork stopped).
    ///
    /// # Errors
    /// ork, `ork diff` or the API server failing.
    pub async fn diff_cost(&mut self, ns: &str) -> Result<DiffCost> {
        let crs = self.n + 1;
        let before = self.service.calls().await?;
        let started = Instant::now();
        let ork = self.start_ork(
            ns,
            &systems::OrkRun {
                resync: "10m",
                on_start_call: true,
                http: None,
            },
        )?;
        self.wait_calls(before + crs as u64, self.limit()).await?;
        let pass_s = started.elapsed().as_secs_f64();
        let _ = ork.stop(STOP_LIMIT).await;
        self.settle().await?;
        // The Katalog of the ork that converged them: the same entry, endpoint and args.
        let katalog = self.work.join(format!("katalog-{ns}-10m-false.yaml"));
        let requests_before = ApiCounts::read(&self.client).await?;
        let calls_before = self.service.calls().await?;
        let started = Instant::now();
        let (ork_binary, kubeconfig) = (self.ork.clone(), self.kubeconfig.clone());
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(ork_binary)
                .args(["diff", "-k"])
                .arg(&katalog)
                .args(["--entry", "widget"])
                .env("KUBECONFIG", kubeconfig)
                .env("RUST_LOG", "warn")
                .output()
        })
        .await?
        .context("running ork diff")?;
        let diff_s = started.elapsed().as_secs_f64();
        let requests = ApiCounts::read(&self.client).await?.since(&requests_before);
        let diff_calls = self.service.calls().await? - calls_before;
        let exit = out.status.code().unwrap_or(-1);
        if exit != 0 {
            eprintln!(
                "ork-bench: ork diff exited {exit}: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            );
        }
        Ok(DiffCost {
            crs,
            pass_s,
            diff_s,
            diff_calls,
            exit,
            requests,
        })
    }
}

impl DiffCost {
    /// The phase as a few lines of the report.
    pub fn text(&self) -> String {
        let mut o = format!(
            "ork diff over {} CRs: {:.1} s (exit {}, {} service calls); a full pass of ork over the same CRs (onStart: call): {:.1} s; diff / pass = {:.2}\n  API requests during the diff:",
            self.crs,
            self.diff_s,
            self.exit,
            self.diff_calls,
            self.pass_s,
            self.diff_s / self.pass_s.max(f64::MIN_POSITIVE)
        );
        let mut by_verb: std::collections::BTreeMap<&str, f64> = Default::default();
        for ((verb, _), n) in &self.requests.0 {
            *by_verb.entry(verb.as_str()).or_default() += n;
        }
        for (verb, n) in by_verb.iter().filter(|(_, n)| **n >= 1.0) {
            o.push_str(&format!(" {verb} {n:.0};"));
        }
        o.push('\n');
        o
    }
}
