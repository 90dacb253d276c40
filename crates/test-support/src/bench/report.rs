//! The bench's output: one table (system | time to converge | CRs/s | CPU … | calls per CR), the
//! ratios, API writes per CR by verb and resource, the idle cost and the P5 latencies; or the
//! same as JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::phase::{IdleCost, Latencies, PhaseResult, RestartCost, ResyncLatency};
use crate::probe::ApiCounts;

/// Everything one run measured.
#[derive(Debug, Default)]
pub struct Report {
    pub n: usize,
    pub workers: usize,
    pub kopf_version: String,
    /// A phase per system: the only round's, or each figure's median over the rounds.
    pub phases: Vec<PhaseResult>,
    /// Every round's phases, the systems in the same order each round.
    pub rounds: Vec<Vec<PhaseResult>>,
    pub idle: Vec<IdleCost>,
    pub resync: Option<ResyncLatency>,
    /// R: restarts of ork on the converged Widgets, with none and with some edited while down.
    pub restarts: Vec<RestartCost>,
    /// `--diff`: `ork diff` over the converged CRs beside a full pass of ork.
    pub diff: Option<crate::diff::DiffCost>,
    pub notes: Vec<String>,
}

/// The middle value (the mean of the two middle ones for an even count); `None` for none.
fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Each key's median over the maps that have it.
fn median_map<K: Ord + Clone>(maps: &[&BTreeMap<K, f64>]) -> BTreeMap<K, f64> {
    let keys: BTreeSet<&K> = maps.iter().flat_map(|m| m.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let values = maps.iter().filter_map(|m| m.get(k).copied()).collect();
            median(values).map(|v| (k.clone(), v))
        })
        .collect()
}

fn api_to_converge(p: &PhaseResult) -> Option<f64> {
    p.cpu_to_converge.get("kube-apiserver").copied()
}

/// One phase per system from the rounds: each figure the median of its rounds' (the edits'
/// latencies pooled). With one round, that round's phases.
pub fn medians(rounds: &[Vec<PhaseResult>]) -> Vec<PhaseResult> {
    let Some(first) = rounds.first() else {
        return Vec::new();
    };
    if rounds.len() == 1 {
        return first.clone();
    }
    (0..first.len())
        .map(|i| {
            let of: Vec<&PhaseResult> = rounds.iter().filter_map(|r| r.get(i)).collect();
            let f = |get: fn(&PhaseResult) -> Option<f64>| {
                median(of.iter().filter_map(|p| get(p)).collect())
            };
            let maps = |get: fn(&PhaseResult) -> &BTreeMap<String, f64>| {
                median_map(&of.iter().map(|p| get(p)).collect::<Vec<_>>())
            };
            let counts = |get: fn(&PhaseResult) -> Option<&ApiCounts>| {
                let all: Vec<&BTreeMap<_, _>> =
                    of.iter().filter_map(|p| get(p)).map(|c| &c.0).collect();
                (all.len() == of.len()).then(|| ApiCounts(median_map(&all)))
            };
            let edits: Vec<&Latencies> = of.iter().filter_map(|p| p.edit_idle.as_ref()).collect();
            PhaseResult {
                system: of[0].system.clone(),
                n: of[0].n,
                converge_s: f(|p| Some(p.converge_s)).unwrap_or(f64::NAN),
                cpu: maps(|p| &p.cpu),
                cpu_to_converge: maps(|p| &p.cpu_to_converge),
                requests_to_converge: counts(|p| p.requests_to_converge.as_ref()),
                peak_rss_mib: f(|p| p.peak_rss_mib),
                requests: counts(|p| Some(&p.requests)).unwrap_or_default(),
                calls: f(|p| Some(p.calls as f64)).map_or(0, |c| c.round() as u64),
                observer_restarts: of.iter().map(|p| p.observer_restarts).sum(),
                edit_idle: (!edits.is_empty()).then(|| Latencies {
                    samples: edits
                        .iter()
                        .flat_map(|l| l.samples.iter().copied())
                        .collect(),
                    missed: edits.iter().map(|l| l.missed).sum(),
                }),
            }
        })
        .collect()
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.0}", d.as_secs_f64() * 1000.0))
}

fn num(v: Option<f64>, prec: usize) -> String {
    v.filter(|v| v.is_finite())
        .map_or("-".into(), |v| format!("{v:.prec$}"))
}

fn latency_text(l: &Latencies) -> String {
    let missed = if l.missed > 0 {
        format!(", {} not seen", l.missed)
    } else {
        String::new()
    };
    format!(
        "p50 {} ms, p99 {} ms ({} edits{missed})",
        ms(l.percentile(0.5)),
        ms(l.percentile(0.99)),
        l.samples.len() + l.missed
    )
}

impl PhaseResult {
    fn per_cr(&self, v: f64) -> f64 {
        v / self.n as f64
    }
    /// Writes on the job's resources (the others are counted apart: on a shared cluster they
    /// are mostly other clients').
    fn writes_per_cr(&self) -> f64 {
        self.per_cr(self.requests.split_job().0.writes().total())
    }
    fn other_writes_per_cr(&self) -> f64 {
        self.per_cr(self.requests.split_job().1.writes().total())
    }
    fn reads_per_cr(&self) -> f64 {
        let job = self.requests.split_job().0;
        self.per_cr(job.total() - job.writes().total())
    }
    /// The system's own CPU per new CR in milliseconds, from `cpu` (the whole phase or until
    /// convergence).
    fn own_ms_per_cr(&self, cpu: &BTreeMap<String, f64>) -> Option<f64> {
        cpu.get("process").map(|s| 1000.0 * self.per_cr(*s))
    }
    fn columns(&self) -> [Option<f64>; 9] {
        [
            Some(self.converge_s),
            Some(self.n as f64 / self.converge_s),
            self.cpu.get("process").copied(),
            self.cpu.get("service").copied(),
            self.cpu.get("kube-apiserver").copied(),
            self.cpu.get("etcd").copied(),
            self.peak_rss_mib,
            Some(self.writes_per_cr()),
            Some(self.per_cr(self.calls as f64)),
        ]
    }
}

const HEADERS: [&str; 9] = [
    "time to converge s",
    "CRs/s",
    "process CPU s",
    "service CPU s",
    "apiserver CPU s",
    "etcd CPU s",
    "peak RSS MiB",
    "writes per CR",
    "calls per CR",
];
const PRECISION: [usize; 9] = [2, 1, 2, 2, 2, 2, 1, 2, 2];

impl Report {
    /// With several rounds: ork's ratios to each other system round by round, and their median.
    fn round_ratios(&self, o: &mut String) {
        if self.rounds.len() < 2 {
            return;
        }
        let _ = writeln!(
            o,
            "\n{} rounds, the systems taking turns; the table shows each figure's median over the rounds and the median of each round's ratio; round by round:",
            self.rounds.len()
        );
        for other in ["baseline", "baseline-spec", "kopf"] {
            let converge = self.per_round(other, |p| Some(p.converge_s));
            if converge.is_empty() {
                continue;
            }
            let line = |ratios: Vec<Option<f64>>| {
                let each: Vec<String> = ratios.iter().map(|r| num(*r, 2)).collect();
                format!(
                    "{} (median {})",
                    each.join(", "),
                    num(median(ratios.into_iter().flatten().collect()), 2)
                )
            };
            let _ = writeln!(
                o,
                "  ork/{other}: converge {}; kube-apiserver CPU until converged {}",
                line(converge),
                line(self.per_round(other, api_to_converge)),
            );
        }
    }

    /// The width of the longest system name: the column the per-system lines align on.
    fn name_width(&self) -> usize {
        self.phases
            .iter()
            .map(|p| p.system.len())
            .max()
            .unwrap_or(8)
    }

    /// CPU until the last Widget carried its status, by process, and how busy the machine was:
    /// when the cores were busy all along, the cluster, not the system, set the pace.
    fn until_converged(&self, o: &mut String) {
        if self.phases.iter().all(|p| p.cpu_to_converge.is_empty()) {
            return;
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let _ = writeln!(
            o,
            "\nUntil converged (CPU s from the first create to the last status; the table above counts the whole phase, lower-priority writes included), {cores} cores:"
        );
        let w = self.name_width();
        for p in &self.phases {
            let cpu = |k: &str| p.cpu_to_converge.get(k).copied();
            let busy: f64 = p.cpu_to_converge.values().filter(|v| v.is_finite()).sum();
            let writes = p
                .requests_to_converge
                .as_ref()
                .map(|r| p.per_cr(r.split_job().0.writes().total()));
            let _ = writeln!(
                o,
                "  {:<w$} {:>7} s: kube-apiserver {}, etcd {}, own {}, service {}, bench {}; the machine {:.0} % busy; {} writes per CR",
                p.system,
                num(Some(p.converge_s), 2),
                num(cpu("kube-apiserver"), 2),
                num(cpu("etcd"), 2),
                num(cpu("process"), 2),
                num(cpu("service"), 2),
                num(cpu("bench"), 2),
                100.0 * busy / (p.converge_s * cores as f64),
                num(writes, 2),
            );
        }
        if let Some(converge) = self.ratio("baseline", |p| Some(p.converge_s)) {
            let _ = writeln!(
                o,
                "  ork/baseline: converge {}×, kube-apiserver CPU until converged {}×",
                num(Some(converge), 2),
                num(self.ratio("baseline", api_to_converge), 2),
            );
        }
    }

    /// Each system's own CPU per new CR, for the whole phase and until convergence (SPEC §10's P2
    /// asks at most 0.5 ms of ork over the whole phase), and ork's round by round.
    fn cpu_per_cr(&self, o: &mut String) {
        let text = |p: &PhaseResult| {
            format!(
                "{} / {}",
                num(p.own_ms_per_cr(&p.cpu), 2),
                num(p.own_ms_per_cr(&p.cpu_to_converge), 2)
            )
        };
        let _ = writeln!(
            o,
            "\nOwn CPU per new CR, ms, over the whole phase / until converged (P2: ork at most 0.5 over the whole phase):"
        );
        let w = self.name_width();
        for p in &self.phases {
            let _ = writeln!(o, "  {:<w$} {}", p.system, text(p));
        }
        if self.rounds.len() > 1 {
            let each: Vec<String> = self
                .rounds
                .iter()
                .filter_map(|r| r.iter().find(|p| p.system == "ork"))
                .map(text)
                .collect();
            if !each.is_empty() {
                let _ = writeln!(o, "  ork round by round: {}", each.join(", "));
            }
        }
    }

    /// ork's `figure` over `other`'s in each round that has both.
    fn per_round(
        &self,
        other: &str,
        figure: impl Fn(&PhaseResult) -> Option<f64>,
    ) -> Vec<Option<f64>> {
        self.rounds
            .iter()
            .filter_map(|r| {
                let find = |name: &str| r.iter().find(|p| p.system == name);
                let (ork, o) = (find("ork")?, find(other)?);
                Some(figure(ork).zip(figure(o)).map(|(a, b)| a / b))
            })
            .collect()
    }

    /// The median over the rounds of [`Self::per_round`].
    fn ratio(&self, other: &str, figure: impl Fn(&PhaseResult) -> Option<f64>) -> Option<f64> {
        median(
            self.per_round(other, figure)
                .into_iter()
                .flatten()
                .collect(),
        )
    }

    pub fn text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "ork-bench: N = {} Widgets (2 ConfigMaps + status each, one Python service), {} workers / concurrent writers; kopf {}",
            self.n, self.workers, self.kopf_version
        );
        let mut rows: Vec<Vec<String>> = vec![
            std::iter::once("system".to_string())
                .chain(HEADERS.iter().map(|h| h.to_string()))
                .collect(),
        ];
        for p in &self.phases {
            let mut row = vec![p.system.clone()];
            row.extend(
                p.columns()
                    .iter()
                    .zip(PRECISION)
                    .map(|(v, prec)| num(*v, prec)),
            );
            rows.push(row);
        }
        // Each column's ratio, round by round; with several rounds, their median.
        for other in ["baseline", "baseline-spec", "kopf"] {
            if self.per_round(other, |p| Some(p.converge_s)).is_empty() {
                continue;
            }
            let mut row = vec![format!("ork/{other}")];
            for c in 0..HEADERS.len() {
                row.push(num(self.ratio(other, |p| p.columns()[c]), 2));
            }
            rows.push(row);
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
            .collect();
        for (i, r) in rows.iter().enumerate() {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(c, (s, w))| {
                    if c == 0 {
                        format!("{s:<w$}")
                    } else {
                        format!("{s:>w$}")
                    }
                })
                .collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
            if i == 0 {
                let dashes: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
                let _ = writeln!(o, "|-{}-|", dashes.join("-|-"));
            }
        }

        self.round_ratios(&mut o);
        self.until_converged(&mut o);
        self.cpu_per_cr(&mut o);

        let _ = writeln!(
            o,
            "\nAPI writes per CR by verb and resource (apiserver_request_total deltas; incl. the user's create):"
        );
        let keys: BTreeSet<(String, String)> = self
            .phases
            .iter()
            .flat_map(|p| p.requests.split_job().0.writes().0.into_keys())
            .collect();
        // A column per system, wide enough for its name.
        let w = self
            .phases
            .iter()
            .map(|p| p.system.len() + 2)
            .max()
            .unwrap_or(10)
            .max(10);
        let _ = write!(o, "  {:<34}", "");
        for p in &self.phases {
            let _ = write!(o, "{:>w$}", p.system);
        }
        let _ = writeln!(o);
        for (verb, resource) in &keys {
            let _ = write!(o, "  {:<34}", format!("{verb} {resource}"));
            for p in &self.phases {
                let v = p
                    .requests
                    .0
                    .get(&(verb.clone(), resource.clone()))
                    .copied()
                    .unwrap_or(0.0);
                let _ = write!(o, "{:>w$.2}", p.per_cr(v));
            }
            let _ = writeln!(o);
        }
        let _ = write!(o, "  {:<34}", "other writes (DELETEs, other res.)");
        for p in &self.phases {
            let _ = write!(o, "{:>w$.2}", p.other_writes_per_cr());
        }
        let _ = writeln!(o);
        if self.phases.iter().any(|p| p.other_writes_per_cr() > 0.02) {
            let _ = writeln!(
                o,
                "  (other writes are not the bench's job: namespace clean-up or another client busy on the cluster; CPU figures are less reliable)"
            );
        }
        let _ = writeln!(o, "API reads per CR (the job's resources):");
        let reads: BTreeSet<(String, String)> = self
            .phases
            .iter()
            .flat_map(|p| {
                let job = p.requests.split_job().0;
                let writes = job.writes();
                job.0.into_keys().filter(move |k| !writes.0.contains_key(k))
            })
            .collect();
        for (verb, resource) in &reads {
            let _ = write!(o, "  {:<34}", format!("{verb} {resource}"));
            for p in &self.phases {
                let v = p
                    .requests
                    .0
                    .get(&(verb.clone(), resource.clone()))
                    .copied()
                    .unwrap_or(0.0);
                let _ = write!(o, "{:>w$.2}", p.per_cr(v));
            }
            let _ = writeln!(o);
        }

        let _ = writeln!(o, "\nedit → child updated, nothing else going on:");
        for p in &self.phases {
            if let Some(l) = &p.edit_idle {
                let _ = writeln!(o, "  {:<9} {}", p.system, latency_text(l));
            }
        }
        for i in &self.idle {
            let per = |v: f64| v / (i.crs as f64 * i.resyncs);
            let (job, other) = i.writes.split_job();
            let detail: Vec<String> = job
                .0
                .iter()
                .map(|((verb, res), v)| format!("{verb} {res} {:.2}", per(*v)))
                .collect();
            let _ = writeln!(
                o,
                "idle cost per resync ({}: {} CRs left alone {:.0}s, resync {}s): {:.2} calls and {:.2} writes per CR per resync{}",
                i.system,
                i.crs,
                i.resyncs * i.resync_s as f64,
                i.resync_s,
                per(i.calls as f64),
                per(job.total()),
                if detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", detail.join(", "))
                } + &if other.total() > 0.0 {
                    format!("; {:.0} other writes (not the job's)", other.total())
                } else {
                    String::new()
                }
            );
        }
        for r in &self.restarts {
            let (job, _) = r.requests.split_job();
            let writes = job.writes();
            let _ = writeln!(
                o,
                "R (ork restarted on {} converged CRs, resync {}s, {} edited while it was down): ready in {:.2}s{}; then {} calls from the start ({:.0} resyncs due since the start{}) and {:.0} API writes ({}) until {:.0}s after ready; peak RSS {}",
                r.crs,
                r.resync_s,
                r.edited,
                r.ready_s,
                r.reconciled_s
                    .map(|s| format!(", the edited ones called by {s:.2}s"))
                    .unwrap_or_default(),
                r.calls,
                r.due_resyncs,
                r.spread
                    .map(|s| format!("; busiest 10-s window {s:.2}× the mean"))
                    .unwrap_or_default(),
                writes.total(),
                writes
                    .0
                    .iter()
                    .map(|((verb, res), v)| format!("{verb} {res} {v:.0}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                r.window_s,
                r.peak_rss_mib
                    .map(|m| format!("{m:.1} MiB"))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        if let Some(r) = &self.resync {
            let _ = writeln!(
                o,
                "P5 (ork restarted with onStart: call over all {} CRs; start-up pass {:.2}s, the next one {:.2}s): edit → child updated during that pass: {}",
                self.n + 1,
                r.startup_wave_s,
                r.wave_s,
                latency_text(&r.edits)
            );
            let (startup, _) = r.startup_requests.split_job();
            let _ = writeln!(
                o,
                "   the start-up pass of the restarted ork: {} calls, {:.0} API writes ({})",
                r.startup_calls,
                startup.writes().total(),
                startup
                    .writes()
                    .0
                    .iter()
                    .map(|((verb, res), v)| format!("{verb} {res} {v:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let (job, _) = r.requests.split_job();
            let writes: Vec<String> = job
                .writes()
                .0
                .iter()
                .map(|((verb, res), v)| format!("{verb} {res} {v:.0}"))
                .collect();
            let _ = writeln!(
                o,
                "   that pass, edits included: {} calls, {:.0} API writes ({}), {:.0} reads; CPU s: ork {}, service {}, apiserver {}, etcd {}",
                r.calls,
                job.writes().total(),
                writes.join(", "),
                job.total() - job.writes().total(),
                num(r.cpu.get("process").copied(), 2),
                num(r.cpu.get("service").copied(), 2),
                num(r.cpu.get("kube-apiserver").copied(), 2),
                num(r.cpu.get("etcd").copied(), 2),
            );
        }
        for (i, round) in self.rounds.iter().enumerate() {
            for p in round.iter().filter(|p| p.observer_restarts > 0) {
                let _ = writeln!(
                    o,
                    "note: round {}, {}: the bench's watch of the Widgets failed and listed them again {} time(s); that phase's API server figures carry those lists",
                    i + 1,
                    p.system,
                    p.observer_restarts
                );
            }
        }
        if let Some(d) = &self.diff {
            o.push_str(&d.text());
        }
        for n in &self.notes {
            let _ = writeln!(o, "note: {n}");
        }
        o
    }

    pub fn json(&self) -> Value {
        let lat = |l: &Latencies| {
            json!({
                "p50_ms": l.percentile(0.5).map(|d| d.as_secs_f64() * 1000.0),
                "p99_ms": l.percentile(0.99).map(|d| d.as_secs_f64() * 1000.0),
                "samples_ms": l.samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect::<Vec<_>>(),
                "missed": l.missed,
            })
        };
        let counts = |c: &ApiCounts| {
            c.0.iter()
                .map(|((verb, res), v)| (format!("{verb} {res}"), json!(v)))
                .collect::<serde_json::Map<_, _>>()
        };
        let phase = |p: &PhaseResult| {
            json!({
                "system": p.system,
                "converge_s": p.converge_s,
                "crs_per_s": p.n as f64 / p.converge_s,
                "cpu_s": p.cpu,
                "cpu_to_converge_s": p.cpu_to_converge,
                "own_cpu_ms_per_cr": p.own_ms_per_cr(&p.cpu),
                "own_cpu_ms_per_cr_to_converge": p.own_ms_per_cr(&p.cpu_to_converge),
                "requests_to_converge": p.requests_to_converge.as_ref().map(counts),
                "peak_rss_mib": p.peak_rss_mib,
                "writes_per_cr": p.writes_per_cr(),
                "other_writes_per_cr": p.other_writes_per_cr(),
                "reads_per_cr": p.reads_per_cr(),
                "calls_per_cr": p.per_cr(p.calls as f64),
                "requests": counts(&p.requests),
                "edit_idle": p.edit_idle.as_ref().map(lat),
                "observer_restarts": p.observer_restarts,
            })
        };
        json!({
            "n": self.n,
            "workers": self.workers,
            "kopf_version": self.kopf_version,
            "systems": self.phases.iter().map(phase).collect::<Vec<_>>(),
            "rounds": self.rounds.iter().map(|r| r.iter().map(phase).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "idle": self.idle.iter().map(|i| json!({
                "system": i.system, "crs": i.crs, "resync_s": i.resync_s, "resyncs": i.resyncs,
                "calls": i.calls, "writes": counts(&i.writes),
            })).collect::<Vec<_>>(),
            "restarts": self.restarts.iter().map(|r| json!({
                "crs": r.crs, "edited": r.edited, "resync_s": r.resync_s, "ready_s": r.ready_s,
                "reconciled_s": r.reconciled_s, "window_s": r.window_s, "calls": r.calls,
                "due_resyncs": r.due_resyncs, "spread": r.spread, "peak_rss_mib": r.peak_rss_mib,
                "writes": r.requests.split_job().0.writes().total(),
            })).collect::<Vec<_>>(),
            "p5": self.resync.as_ref().map(|r| json!({
                "resync_s": r.resync_s, "startup_pass_s": r.startup_wave_s, "resync_pass_s": r.wave_s,
                "edits": lat(&r.edits),
                "calls": r.calls, "requests": counts(&r.requests), "cpu_s": r.cpu,
                "startup_calls": r.startup_calls, "startup_requests": counts(&r.startup_requests),
            })),
            "notes": self.notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(vec![f64::NAN, 5.0]), Some(5.0));
        assert_eq!(median(vec![]), None);
    }

    fn phase(system: &str, converge_s: f64, api: f64, edit_ms: u64) -> PhaseResult {
        PhaseResult {
            system: system.into(),
            n: 10,
            converge_s,
            cpu: BTreeMap::from([
                ("kube-apiserver".into(), api),
                ("process".into(), api / 1000.0),
            ]),
            cpu_to_converge: BTreeMap::from([("process".into(), api / 2000.0)]),
            calls: 10,
            edit_idle: Some(Latencies {
                samples: vec![Duration::from_millis(edit_ms)],
                missed: 0,
            }),
            ..PhaseResult::default()
        }
    }

    #[test]
    fn rounds_fold_into_each_figures_median_per_system() {
        let rounds = vec![
            vec![phase("baseline", 10.0, 5.0, 1), phase("ork", 12.0, 9.0, 4)],
            vec![phase("baseline", 14.0, 7.0, 2), phase("ork", 11.0, 8.0, 5)],
            vec![phase("baseline", 12.0, 6.0, 3), phase("ork", 15.0, 7.0, 6)],
        ];
        let m = medians(&rounds);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].system.as_str(), m[0].converge_s), ("baseline", 12.0));
        assert_eq!((m[1].system.as_str(), m[1].converge_s), ("ork", 12.0));
        assert_eq!(m[1].cpu["kube-apiserver"], 8.0);
        assert_eq!(m[1].calls, 10);
        // The edits of every round are pooled.
        assert_eq!(m[1].edit_idle.as_ref().map(|l| l.samples.len()), Some(3));
        // One round is that round.
        assert_eq!(medians(&rounds[..1])[1].converge_s, 12.0);

        let report = Report {
            n: 10,
            rounds,
            phases: m,
            ..Report::default()
        };
        let text = report.text();
        assert!(
            text.contains("ork/baseline: converge 1.20, 0.79, 1.25 (median 1.20)"),
            "{text}"
        );
        // The table's ratio row is the median of the rounds' ratios, not the medians' ratio.
        let row = text
            .lines()
            .find(|l| l.starts_with("| ork/baseline"))
            .unwrap_or_default();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells.get(2), Some(&"1.20"), "{text}");
        // P2 reads off the report: own CPU per new CR, whole phase / until converged, in ms.
        assert!(text.contains("  ork      0.80 / 0.40\n"), "{text}");
        assert!(
            text.contains("ork round by round: 0.90 / 0.45, 0.80 / 0.40, 0.70 / 0.35"),
            "{text}"
        );
        assert_eq!(report.json()["systems"][1]["own_cpu_ms_per_cr"], 0.8);
    }
}
