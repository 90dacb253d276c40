//! `ork test` as a service author runs it, without a cluster: the examples' case files against
//! their real services (the bash script; the Python service, its token given with `--secret`),
//! a case that fails on purpose, and `--secret` for `ork simulate` and `ork check`. Nothing
//! here reads a kubeconfig: every command runs with `KUBECONFIG` unset and an empty `HOME`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::Result;
use common::example::{Reconciler, example, katalog_on_port};

fn webapp(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/webapp")
        .join(file)
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ork-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("home")).expect("temp dir");
    dir
}

/// `ork ARGS` with no kubeconfig to be found.
fn ork(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", dir.join("home"))
        .output()
        .expect("ork runs")
}

use common::output_text as text;

/// The orkestra-remote example's service on a free port, a Katalog calling it and the demo
/// token in a file, as `--secret` takes it.
struct Remote {
    service: Reconciler,
    katalog: PathBuf,
    secret: String,
}

impl Remote {
    fn start(dir: &Path) -> Result<Remote> {
        let service = Reconciler::start(&example(), 0, dir.join("service.log"))?;
        let katalog = dir.join("katalog.yaml");
        std::fs::write(&katalog, katalog_on_port(service.port)?)?;
        for f in ["crd.yaml", "cr.yaml", "setup.yaml"] {
            std::fs::copy(example().join(f), dir.join(f))?;
        }
        let token = dir.join("token");
        std::fs::write(&token, "ork-demo-token\n")?;
        Ok(Remote {
            service,
            katalog,
            secret: format!("webapp-reconciler-token/token={}", token.display()),
        })
    }
}

#[test]
fn the_bash_examples_cases_pass_and_the_junit_report_counts_them() -> Result<()> {
    let dir = temp("bash");
    let junit = dir.join("junit.xml");
    let cases = webapp("test/cases.yaml");
    let out = ork(
        &dir,
        &[
            "test",
            &cases.to_string_lossy(),
            "--junit",
            &junit.to_string_lossy(),
        ],
    );
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("✓ a Deployment someone else created is not taken over"),
        "{shown}"
    );
    assert!(shown.contains("4 passed, 0 failed, 0 skipped"), "{shown}");
    let xml = std::fs::read_to_string(&junit)?;
    assert!(
        xml.contains("<testsuites name=\"ork test\" tests=\"4\" failures=\"0\" skipped=\"0\">"),
        "{xml}"
    );
    Ok(())
}

#[test]
fn the_remote_examples_cases_pass_against_its_service_with_the_token_given() -> Result<()> {
    let dir = temp("remote");
    let remote = Remote::start(&dir)?;
    let cases = example().join("test/cases.yaml");
    let out = ork(
        &dir,
        &[
            "test",
            &cases.to_string_lossy(),
            "-k",
            &remote.katalog.to_string_lossy(),
            "--secret",
            &remote.secret,
        ],
    );
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("4 passed, 0 failed, 0 skipped"), "{shown}");
    let calls = remote.service.calls();
    assert!(!calls.is_empty(), "the service was called");
    assert!(
        calls.iter().all(|c| c["authorized"] == true),
        "every call carried the Secret's token: {calls:?}"
    );
    assert!(
        !shown.contains("ork-demo-token"),
        "the value is never printed: {shown}"
    );
    Ok(())
}

#[test]
fn a_failing_case_names_the_case_the_object_the_field_the_expected_and_the_found_value()
-> Result<()> {
    let dir = temp("failing");
    let katalog = webapp("katalog-exec.yaml");
    let cases = dir.join("cases.yaml");
    std::fs::write(
        &cases,
        format!(
            "kind: Test\nkatalog: {}\ncases:\n  - name: three replicas\n    given:\n      crs:\n        - {{apiVersion: demo.ork.dev/v1, kind: WebApp, metadata: {{name: hello}}, spec: {{image: nginx, replicas: 2}}}}\n    expect:\n      children:\n        - {{apiVersion: apps/v1, kind: Deployment, metadata: {{name: hello}}, spec: {{replicas: 3}}}}\n      conditions:\n        Ready: {{status: \"False\"}}\n      error: AnswerRejected\n",
            katalog.display()
        ),
    )?;
    let junit = dir.join("junit.xml");
    let out = ork(
        &dir,
        &[
            "test",
            &cases.to_string_lossy(),
            "--junit",
            &junit.to_string_lossy(),
        ],
    );
    let shown = text(&out);
    assert!(
        !out.status.success(),
        "a failed case fails the run: {shown}"
    );
    assert!(shown.contains("✗ three replicas"), "{shown}");
    assert!(
        shown.contains("Deployment bash-demo/hello spec.replicas: expected 3, found 2"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "WebApp bash-demo/hello condition Ready status: expected \"False\", found \"True\""
        ),
        "{shown}"
    );
    assert!(
        shown.contains(
            "reconcile: expected error \"AnswerRejected\", found every reconcile succeeded"
        ),
        "{shown}"
    );
    assert!(shown.contains("0 passed, 1 failed, 0 skipped"), "{shown}");
    let xml = std::fs::read_to_string(&junit)?;
    assert!(
        xml.contains(
            "<failure message=\"Deployment bash-demo/hello spec.replicas: expected 3, found 2\">"
        ),
        "{xml}"
    );
    Ok(())
}

#[test]
fn without_the_secret_or_a_kubeconfig_every_command_says_how_to_give_it() -> Result<()> {
    let dir = temp("nosecret");
    let remote = Remote::start(&dir)?;
    // Nor in the Katalog's setup files, where ork would find it as Orkestra does.
    let setup = std::fs::read_to_string(dir.join("setup.yaml"))?;
    let without: Vec<&str> = setup
        .split("\n---")
        .filter(|d| !d.contains("kind: Secret"))
        .collect();
    assert!(
        without.len() < setup.split("\n---").count(),
        "the setup held the Secret"
    );
    std::fs::write(dir.join("setup.yaml"), without.join("\n---"))?;
    let katalog = remote.katalog.to_string_lossy().into_owned();
    let cr = dir.join("cr.yaml").to_string_lossy().into_owned();
    let cases = example()
        .join("test/cases.yaml")
        .to_string_lossy()
        .into_owned();
    for args in [
        vec!["simulate", "-k", &katalog, "--cr", &cr],
        vec!["check", "-k", &katalog, "--entry", "webapp", "--cr", &cr],
        vec!["test", &cases, "-k", &katalog],
    ] {
        let out = ork(&dir, &args);
        let shown = text(&out);
        assert!(!out.status.success(), "{args:?}: {shown}");
        assert!(
            shown.contains("Secret orkestra-remote/webapp-reconciler-token (key token) cannot be read without a cluster; pass --secret webapp-reconciler-token/token=FILE"),
            "{args:?}: {shown}"
        );
    }
    assert!(
        remote.service.calls().is_empty(),
        "nothing was sent without the token"
    );
    Ok(())
}

#[test]
fn simulate_and_check_send_the_token_given_with_secret() -> Result<()> {
    let dir = temp("simcheck");
    let remote = Remote::start(&dir)?;
    let katalog = remote.katalog.to_string_lossy().into_owned();
    let cr = dir.join("cr.yaml").to_string_lossy().into_owned();
    let simulated = ork(
        &dir,
        &[
            "simulate",
            "-k",
            &katalog,
            "--cr",
            &cr,
            "--secret",
            &remote.secret,
        ],
    );
    let shown = text(&simulated);
    assert!(simulated.status.success(), "{shown}");
    assert!(shown.contains("steady after 3 cycles"), "{shown}");
    let checked = ork(
        &dir,
        &[
            "check",
            "-k",
            &katalog,
            "--entry",
            "webapp",
            "--cr",
            &cr,
            "--secret",
            &remote.secret,
        ],
    );
    let shown = text(&checked);
    assert!(checked.status.success(), "{shown}");
    assert!(
        shown.contains("orkestra-remote/my-webapp: the answer follows protocol v1"),
        "{shown}"
    );
    let calls = remote.service.calls();
    assert_eq!(calls.len(), 4, "three cycles and one check: {calls:?}");
    assert!(calls.iter().all(|c| c["authorized"] == true), "{calls:?}");
    Ok(())
}

#[test]
fn a_malformed_secret_argument_is_refused_with_its_shape() {
    let dir = temp("badarg");
    let out = ork(&dir, &["test", "x.yaml", "--secret", "token=./t"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("expected NAME/KEY=FILE"),
        "{}",
        text(&out)
    );
}

/// Metacontroller's controllers run offline too (SPEC §15, §18): the example's case file
/// passes through `ork test --controllers` against its hooks, with no cluster, and every
/// offline command takes `--controllers`.
#[test]
fn the_metacontroller_examples_cases_pass_offline_with_its_controllers() -> Result<()> {
    use std::io::{BufRead, BufReader};

    let dir = temp("metacontroller");
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/metacontroller");
    let mut hooks = Command::new("python3")
        .arg(examples.join("hooks.py"))
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(hooks.stdout.take().expect("stdout")).read_line(&mut line)?;
    let at = line
        .trim()
        .rsplit_once("127.0.0.1:")
        .map(|(_, p)| format!("http://127.0.0.1:{p}"))
        .ok_or_else(|| anyhow::anyhow!("hooks.py did not say its port: {line:?}"))?;
    let mut args: Vec<String> = vec![
        "test".into(),
        examples.join("test/cases.yaml").display().to_string(),
    ];
    for file in ["controllers.yaml", "decorator.yaml"] {
        let text = std::fs::read_to_string(examples.join(file))?.replace("HOOKS", &at);
        assert!(!text.contains("HOOKS"), "{file}: every hook URL filled in");
        let path = dir.join(file);
        std::fs::write(&path, text)?;
        args.extend(["--controllers".into(), path.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ork(&dir, &args);
    let _ = hooks.kill();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("2 passed, 0 failed"), "{said}");
    for command in ["simulate", "check", "test", "conform"] {
        let help = text(&ork(&dir, &[command, "--help"]));
        assert!(
            help.contains("--controllers <FILE>"),
            "ork {command} --help:\n{help}"
        );
    }
    Ok(())
}

/// Cases of writes through the entry's admission webhooks, answered by a real HTTP service:
/// a denial with its message, a default the mutation adds (the validation judging the mutated
/// object), and an expectation that does not hold, named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_cases_run_the_mutation_then_the_validation_offline() -> Result<()> {
    use ork_test_support::fake_service::{FakeService, Reply};
    use serde_json::json;
    let svc = FakeService::start(|req| {
        let spec = &req["object"]["spec"];
        match req["phase"].as_str() {
            Some("mutate") if spec["replicas"].is_null() => Reply::ok(json!({"allowed": true,
                "patch": [{"op": "add", "path": "/spec/replicas", "value": 3}]})),
            Some("validate") if spec["replicas"] != 3 => Reply::ok(json!({"allowed": false,
                "message": format!("replicas must be 3, not {}", spec["replicas"])})),
            _ => Reply::ok(json!({"allowed": true, "warnings": ["checked by the test service"]})),
        }
    })
    .await?;
    let dir = temp("admission");
    let katalog = dir.join("katalog.yaml");
    std::fs::write(
        &katalog,
        format!(
            r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: t}}
spec:
  crds:
    webapp:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
      operatorBox:
        reconcile:
          default: false
          remote:
            endpoint: "{}"
            admission: {{mutate: true}}
"#,
            svc.url
        ),
    )?;
    let cases = dir.join("cases.yaml");
    std::fs::write(
        &cases,
        r#"kind: Test
metadata: {name: admission}
katalog: katalog.yaml
cases:
  - name: a missing replicas is defaulted
    admission:
      object: {apiVersion: demo.ork.dev/v1, kind: WebApp, metadata: {name: a, namespace: shop}, spec: {image: nginx}}
    expect:
      admission: {allowed: true, warnings: [checked by the test service], object: {spec: {replicas: 3}}}
  - name: two replicas are refused
    admission:
      operation: UPDATE
      object: {apiVersion: demo.ork.dev/v1, kind: WebApp, metadata: {name: a, namespace: shop}, spec: {image: nginx, replicas: 2}}
      oldObject: {apiVersion: demo.ork.dev/v1, kind: WebApp, metadata: {name: a, namespace: shop}, spec: {image: nginx, replicas: 3}}
    expect:
      admission: {allowed: false, message: "replicas must be 3, not 2"}
  - name: this expectation does not hold
    admission:
      object: {apiVersion: demo.ork.dev/v1, kind: WebApp, metadata: {name: b}, spec: {image: nginx, replicas: 5}}
    expect:
      admission: {allowed: true}
"#,
    )?;
    let out =
        tokio::task::spawn_blocking(move || ork(&dir, &["test", &cases.to_string_lossy()])).await?;
    let shown = text(&out);
    assert!(!out.status.success(), "one case fails: {shown}");
    assert!(
        shown.contains("✓ a missing replicas is defaulted"),
        "{shown}"
    );
    assert!(shown.contains("✓ two replicas are refused"), "{shown}");
    assert!(
        shown.contains("expected allowed: true, found false (replicas must be 3, not 5)"),
        "{shown}"
    );
    assert!(shown.contains("2 passed, 1 failed"), "{shown}");
    let asked: Vec<String> = svc
        .received()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.body["phase"].as_str().unwrap_or(""),
                r.body["operation"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        asked[..4],
        [
            "mutate CREATE",
            "validate CREATE",
            "mutate UPDATE",
            "validate UPDATE"
        ],
        "the mutation first, then the validation, as the API server calls them"
    );
    Ok(())
}
