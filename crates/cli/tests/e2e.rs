//! `ork e2e` and `ork simulate` on Orkestra's test files: the example `examples/orkestra-remote`
//! carries an E2E spec and a Simulate spec in Orkestra's format. Its E2E spec passes against
//! the local cluster while `ork run` runs the example; a wrong expectation fails naming the
//! object, field, expected and found value, and prints the spec's `onFailure` diagnostics.
//!
//! The cluster test uses the example's fixed names (namespace `orkestra-remote`, the CRD
//! `webapps.migrate.ork.dev`) as `orkestra.rs` does, but its service on a port of its own.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Result, ensure};
use common::example::{ExampleCleanup, PORT, Reconciler, example, offline_katalog};
use ork_test_support::{TestNamespace, client};

/// A copy of the example in a fresh folder (its test/ files included), so that its Katalog can
/// call the service on another port.
fn copy_example(tag: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ork-e2e-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("test"))?;
    for file in [
        "crd.yaml",
        "setup.yaml",
        "cr.yaml",
        "reconciler.py",
        "katalog.yaml",
        "test/e2e.yaml",
        "test/simulate.yaml",
    ] {
        std::fs::copy(example().join(file), dir.join(file))?;
    }
    Ok(dir)
}

fn ork(dir: &Path, args: &[&str]) -> Result<(Output, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(args)
        .current_dir(dir)
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        .env("RECONCILER_TOKEN", "ork-demo-token")
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out, text))
}

#[test]
fn the_examples_simulate_spec_holds_offline_and_a_wrong_one_fails_clearly() -> Result<()> {
    let dir = copy_example("sim")?;
    let service = Reconciler::start(&dir, 0, dir.join("reconciler.log"))?;
    std::fs::write(dir.join("katalog.yaml"), offline_katalog(service.port)?)?;

    // No arguments: the Katalog next to test/simulate.yaml runs that file, as Orkestra does.
    let (out, text) = ork(&dir, &["simulate"])?;
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("+ Deployment orkestra-remote/my-webapp ("),
        "{text}"
    );
    assert!(text.contains("✓ steady"), "{text}");
    assert!(
        text.contains("✓ apply deployments/my-webapp (cycle 1)"),
        "{text}"
    );
    assert!(text.contains("PASS"), "{text}");

    let wrong = std::fs::read_to_string(dir.join("test/simulate.yaml"))?
        .replace("name: my-webapp-svc", "name: my-webapp-service");
    std::fs::write(dir.join("test/wrong.yaml"), wrong)?;
    let (out, text) = ork(&dir, &["simulate", "test/wrong.yaml"])?;
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("✗ apply services/my-webapp-service (cycle 1): no such op in cycle 1"),
        "{text}"
    );
    assert!(text.contains("FAIL"), "{text}");
    drop(service);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_examples_e2e_spec_passes_with_the_operator_ork_e2e_runs_itself() -> Result<()> {
    let admin = client().await?;
    ExampleCleanup::now(&admin).await?;
    let _cleanup = ExampleCleanup;
    let dir = copy_example("run")?;
    let service = Reconciler::start(&dir, 0, dir.join("reconciler.log"))?;
    let katalog = std::fs::read_to_string(dir.join("katalog.yaml"))?;
    ensure!(
        katalog.contains(&PORT.to_string()),
        "the example's port changed"
    );
    std::fs::write(
        dir.join("katalog.yaml"),
        katalog.replace(&PORT.to_string(), &service.port.to_string()),
    )?;
    // Issue 50 (3): no `ork run` started by hand; the spec names its Katalog and ork e2e runs it.
    let (out, text) = ork(&dir, &["e2e", "test/e2e.yaml", "--junit", "junit.xml"])?;
    assert!(out.status.success(), "{text}");
    for line in [
        "  - skipped: cluster: creating a kind cluster ork-e2e: ork e2e runs against the kubeconfig's cluster\n",
        "  ✓ install CRD ../crd.yaml",
        "  ✓ setup: apply ../setup.yaml",
        "  ✓ run the operator: ork run -k ../katalog.yaml",
        "  ✓ Status written by the service",
        "  ✓ Drift correction — Deployment restored after manual edit",
        "  ✓ Garbage collection on CR delete",
        " 0 failed, 1 skipped\n",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
    let junit = std::fs::read_to_string(dir.join("junit.xml"))?;
    assert!(junit.contains("failures=\"0\" skipped=\"1\""), "{junit}");
    assert!(
        junit.contains("name=\"Service created and selects the pods\""),
        "{junit}"
    );
    drop(service);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Issue 50 (3): when a setup step fails, every expectation after it is still reported, as
/// skipped with why (before, none was run nor reported, in the console or JUnit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_setup_reports_every_expectation_as_not_run_and_why() -> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let dir = std::env::temp_dir().join(format!("ork-e2e-setup-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let spec = format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: E2E
metadata: {{name: setup-fails}}
spec:
  setup:
    wait:
      - {{kind: ConfigMap, name: never-there, namespace: {ns}, timeout: 1s}}
  expect:
    - name: first expectation
      commands: [{{run: "true"}}]
    - name: second expectation
      commands: [{{run: "true"}}]
"#,
        ns = ns.name
    );
    std::fs::write(dir.join("e2e.yaml"), spec)?;
    let (out, text) = ork(&dir, &["e2e", "--junit", "junit.xml", "--no-operator"])?;
    assert!(!out.status.success(), "{text}");
    for name in ["first expectation", "second expectation"] {
        assert!(
            text.contains(&format!("  - skipped: {name}: not run: setup: wait failed")),
            "{name} in:\n{text}"
        );
    }
    let junit = std::fs::read_to_string(dir.join("junit.xml"))?;
    assert!(junit.contains("name=\"second expectation\""), "{junit}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_expectation_fails_naming_field_expected_and_found_and_runs_on_failure()
-> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let dir = std::env::temp_dir().join(format!("ork-e2e-wrong-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let spec = format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: E2E
metadata: {{name: wrong}}
spec:
  expect:
    - name: The paint is blue
      timeout: 2s
      kubectl:
        apply:
          - inline: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {{name: paint, namespace: {ns}}}
              data: {{color: red}}
        get:
          - {{kind: ConfigMap, name: paint, namespace: {ns}, field: .data.color, equals: blue}}
        exec:
          - {{name: some-pod, namespace: {ns}, command: [ls]}}
  onFailure:
    kubectl:
      get:
        - {{kind: ConfigMap, name: paint, namespace: {ns}}}
    commands:
      - echo onfailure-command-ran
"#,
        ns = ns.name
    );
    std::fs::write(dir.join("e2e.yaml"), spec)?;
    let (out, text) = ork(&dir, &["e2e", "--junit", "junit.xml"])?;
    assert!(!out.status.success(), "{text}");
    let n = &ns.name;
    assert!(
        text.contains(&format!(
            "✗ The paint is blue: ConfigMap {n}/paint .data.color: expected \"blue\", found \"red\""
        )),
        "{text}"
    );
    assert!(
        text.contains("not run: kubectl.exec (1): running a command in a pod is not implemented"),
        "{text}"
    );
    assert!(
        text.contains(&format!("--- get ConfigMap {n}/paint")),
        "{text}"
    );
    assert!(text.contains("color: red"), "{text}");
    assert!(
        text.contains("--- $ echo onfailure-command-ran\n    onfailure-command-ran"),
        "{text}"
    );
    let junit = std::fs::read_to_string(dir.join("junit.xml"))?;
    assert!(junit.contains("<failure message=\"ConfigMap"), "{junit}");
    assert!(junit.contains("onfailure-command-ran"), "{junit}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Finding L4 of issue 47: an expectation's `timeout` did not bound its command (5 s passed
/// after 40 s), and only the direct child was killed.
#[test]
fn a_command_is_bounded_by_its_expectations_timeout_with_everything_it_started() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("ork-e2e-hang-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let pidfile = dir.join("background.pid");
    let _ = std::fs::remove_file(&pidfile);
    let spec = format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: E2E
metadata: {{name: hang}}
spec:
  expect:
    - name: A command that hangs
      timeout: 2s
      commands:
        - run: "sleep 300 & echo $! > {pid}; sleep 300"
"#,
        pid = pidfile.display()
    );
    std::fs::write(dir.join("e2e.yaml"), spec)?;
    let (out, text) = ork(&dir, &["e2e"])?;
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("still running at the expectation's timeout"),
        "{text}"
    );
    let pid = std::fs::read_to_string(&pidfile)?;
    let pid = pid.trim();
    ensure!(!pid.is_empty(), "the command wrote its background pid");
    // Killed with its group; reaped by whoever adopted it, or a zombie for a moment.
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
    };
    let mut tries = 0;
    while alive() && tries < 50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        tries += 1;
    }
    ensure!(!alive(), "the command's background sleep {pid} outlived it");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
