//! The JUnit XML of a run of `ork e2e` or `ork test`: a testsuite per file, a testcase per step,
//! expectation or case; skipped cases as `<skipped/>` with the reason, failures with the message
//! and diagnostics.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::output::say;

/// How one case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

/// A step, expectation or case of a file, as the output and the JUnit report show it.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub outcome: Outcome,
    /// Parts of a case that ran only in part: what was not run, and why.
    pub notes: Vec<String>,
    /// The diagnostics printed for a failure.
    pub diagnostics: String,
    pub time: Duration,
}

/// Every case of one file.
#[derive(Debug, Clone)]
pub struct SpecReport {
    pub name: String,
    pub file: String,
    pub cases: Vec<Case>,
}

impl SpecReport {
    /// A file that could not be run: one failed case, `step`, saying why.
    pub fn failed_file(path: &Path, step: &str, why: String) -> SpecReport {
        SpecReport {
            name: path.display().to_string(),
            file: path.display().to_string(),
            cases: vec![Case {
                name: step.to_string(),
                outcome: Outcome::Failed(why),
                notes: vec![],
                diagnostics: String::new(),
                time: Duration::ZERO,
            }],
        }
    }
}

/// The end of a run of `command` (`ork e2e`): the count of passed, failed and skipped cases,
/// the JUnit XML written to `junit` if asked for; success only when no case failed.
pub fn finish(command: &str, reports: &[SpecReport], junit: Option<&Path>) -> ExitCode {
    let count = |f: fn(&Outcome) -> bool| {
        reports
            .iter()
            .flat_map(|r| &r.cases)
            .filter(|c| f(&c.outcome))
            .count()
    };
    let failed = count(|o| matches!(o, Outcome::Failed(_)));
    say!(
        "{} passed, {failed} failed, {} skipped",
        count(|o| *o == Outcome::Passed),
        count(|o| matches!(o, Outcome::Skipped(_)))
    );
    if let Some(path) = junit
        && let Err(e) = std::fs::write(path, render(command, reports))
    {
        eprintln!("{command}: writing {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The reports as JUnit XML, under the name `title` (`ork e2e`).
pub fn render(title: &str, reports: &[SpecReport]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let all: usize = reports.iter().map(|r| r.cases.len()).sum();
    let failed = |r: &SpecReport| {
        r.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Failed(_)))
            .count()
    };
    let skipped = |r: &SpecReport| {
        r.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Skipped(_)))
            .count()
    };
    out.push_str(&format!(
        "<testsuites name=\"{}\" tests=\"{all}\" failures=\"{}\" skipped=\"{}\">\n",
        escape(title),
        reports.iter().map(failed).sum::<usize>(),
        reports.iter().map(skipped).sum::<usize>()
    ));
    for r in reports {
        let time: f64 = r.cases.iter().map(|c| c.time.as_secs_f64()).sum();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" file=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{time:.3}\">\n",
            escape(&r.name),
            escape(&r.file),
            r.cases.len(),
            failed(r),
            skipped(r)
        ));
        for c in &r.cases {
            let head = format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                escape(&r.name),
                escape(&c.name),
                c.time.as_secs_f64()
            );
            let mut body = String::new();
            match &c.outcome {
                Outcome::Passed => {}
                Outcome::Skipped(why) => {
                    body.push_str(&format!("      <skipped message=\"{}\"/>\n", escape(why)))
                }
                Outcome::Failed(why) => body.push_str(&format!(
                    "      <failure message=\"{}\">{}</failure>\n",
                    escape(why.lines().next().unwrap_or_default()),
                    escape(&format!("{why}\n{}", c.diagnostics))
                )),
            }
            if !c.notes.is_empty() {
                body.push_str(&format!(
                    "      <system-out>{}</system-out>\n",
                    escape(
                        &c.notes
                            .iter()
                            .map(|n| format!("not run: {n}"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    )
                ));
            }
            if body.is_empty() {
                out.push_str(&format!("{head}/>\n"));
            } else {
                out.push_str(&format!("{head}>\n{body}    </testcase>\n"));
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no place for other control characters.
            c if c.is_control() && !matches!(c, '\n' | '\t' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, outcome: Outcome) -> Case {
        Case {
            name: name.into(),
            outcome,
            notes: vec![],
            diagnostics: String::new(),
            time: Duration::from_millis(1500),
        }
    }

    #[test]
    fn skipped_and_failed_cases_are_marked_and_text_is_escaped() {
        let report = SpecReport {
            name: "web<app>".into(),
            file: "test/e2e.yaml".into(),
            cases: vec![
                case("install CRD", Outcome::Passed),
                case(
                    "cluster: creating a kind cluster",
                    Outcome::Skipped("uses the kubeconfig's".into()),
                ),
                case(
                    "Status",
                    Outcome::Failed(
                        "WebApp a/b .status.phase: expected \"Running\", found \"\"".into(),
                    ),
                ),
            ],
        };
        let xml = render("ork e2e", &[report]);
        assert!(
            xml.contains("<testsuites name=\"ork e2e\" tests=\"3\" failures=\"1\" skipped=\"1\">"),
            "{xml}"
        );
        assert!(xml.contains("<testsuite name=\"web&lt;app&gt;\""), "{xml}");
        assert!(
            xml.contains(
                "<testcase classname=\"web&lt;app&gt;\" name=\"install CRD\" time=\"1.500\"/>"
            ),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"uses the kubeconfig&apos;s\"/>"),
            "{xml}"
        );
        assert!(
            xml.contains("<failure message=\"WebApp a/b .status.phase: expected &quot;Running&quot;, found &quot;&quot;\">"),
            "{xml}"
        );
    }
}
