//! `ork validate` as a user runs it: exit codes, one line per entry, problems with file:line.

use std::path::PathBuf;
use std::process::Command;

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp/katalog.yaml")
}

fn ork(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(args)
        .output()
        .expect("ork runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn valid_katalog_prints_one_line_per_entry_and_exits_zero() {
    let path = example();
    let (ok, stdout, _) = ork(&["validate", "-k", path.to_str().expect("utf-8 path")]);
    assert!(ok);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0]
            .starts_with("webapp: WebApp.demo.ork.dev/v1 -> POST http://127.0.0.1:8025/reconcile")
    );
    assert!(lines[1].ends_with("valid (1 entry)"));
}

#[test]
fn broken_katalog_prints_file_line_field_and_hint_and_exits_non_zero() {
    let dir = std::env::temp_dir().join(format!("ork-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("broken.yaml");
    let text = std::fs::read_to_string(example())
        .expect("example")
        .replace("timeout: 10s", "timout: 10s")
        .replace("          default: false\n", "");
    std::fs::write(&file, &text).expect("write");
    let (ok, _, stderr) = ork(&["validate", "-k", file.to_str().expect("utf-8 path")]);
    assert!(!ok);
    let line = text
        .lines()
        .position(|l| l.contains("timout"))
        .expect("line")
        + 1;
    assert!(
        stderr.contains(&format!(
            "broken.yaml:{line}: spec.crds.webapp.operatorBox.reconcile.remote.timout: unknown field \"timout\"\n    hint: did you mean \"timeout\"?"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("`default: false` is required next to `remote`"),
        "{stderr}"
    );
    assert!(stderr.contains("2 problems found"), "{stderr}");
}

#[test]
fn metadata_and_notices_are_shown_and_a_notice_does_not_fail() {
    let dir = std::env::temp_dir().join(format!("ork-validate-meta-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = std::fs::read_to_string(example())
        .expect("example")
        .replace(
            "metadata:\n  name: demo\n",
            "metadata:\n  name: demo\n  version: 1.2.0\n  author: platform team\n  license: MIT\n  namespace: web\n  description: >\n    WebApps for every team.\n  tags: [web, remote]\n",
        )
        .replace(
            "              - {group: \"\", version: v1, plural: services, kind: Service}\n",
            "              - {group: \"\", version: v1, plural: services, kind: Service}\n              - {group: rbac.authorization.k8s.io, version: v1, plural: roles}\n",
        );
    let file = dir.join("katalog.yaml");
    std::fs::write(&file, &text).expect("write");
    let (ok, stdout, stderr) = ork(&["validate", "-k", file.to_str().expect("utf-8 path")]);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "Katalog demo 1.2.0 by platform team (license MIT, namespace web)",
            "  WebApps for every team.",
            "  tags: web, remote",
        ],
        "{stdout}"
    );
    assert!(
        lines[3].starts_with("webapp: WebApp.demo.ork.dev/v1"),
        "{stdout}"
    );
    assert!(
        lines[4].starts_with(&format!("note: {}:", file.display()))
            && lines[4].ends_with(
                "spec.crds.webapp.operatorBox.reconcile.remote.managedResources[2]: managing rbac.authorization.k8s.io/roles lets the service grant anyone what ork itself holds (ork has no `escalate`: nothing beyond that)"
            ),
        "{stdout}"
    );
    assert!(lines[5].trim_start().starts_with("hint: "), "{stdout}");
    assert!(lines[6].ends_with("valid (1 entry, 1 note)"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_k_the_katalog_yaml_of_the_current_folder_is_validated() {
    let folder = example().parent().expect("folder").to_path_buf();
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .arg("validate")
        .current_dir(&folder)
        .output()
        .expect("ork runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.ends_with("./katalog.yaml: valid (1 entry)\n"),
        "{stdout}"
    );

    let empty = std::env::temp_dir().join(format!("ork-validate-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("temp dir");
    for args in [
        &["validate"][..],
        &["generate", "rbac"],
        &["simulate", "--cr", "cr.yaml"],
        &["run"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ork"))
            .args(args)
            .current_dir(&empty)
            .output()
            .expect("ork runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no Katalog: there is no ./katalog.yaml here")
                && stderr.contains("give the file with -k FILE"),
            "{args:?}: {stderr}"
        );
    }
    // Issue 49: Metacontroller's controllers alone need no Katalog (`ork run
    // --metacontroller`, the migration guide's first command, exited 2 here).
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args([
            "run",
            "--metacontroller",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ])
        .current_dir(&empty)
        .output()
        .expect("ork runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("no Katalog"), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/kubeconfig"),
        "it got as far as the kubeconfig: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&empty);
}

#[test]
fn a_template_field_the_crd_schema_lacks_is_a_warning_with_the_field_meant() {
    let dir = std::env::temp_dir().join(format!("ork-validate-fields-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let crd = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/faulty-service/crd.yaml");
    let file = dir.join("katalog.yaml");
    let text = format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: fields}}
spec:
  crds:
    gadget:
      crdFile: {crd}
      labels:
        size: "{{{{ .spec.size }}}}"
      operatorBox:
        preReconcile:
          reconcileGate:
            when: [{{field: spec.colur, operator: exists}}]
        reconcile:
          default: false
          remote:
            endpoint: "http://127.0.0.1:8025/reconcile"
            args:
              colour: "{{{{ .spec.colour }}}}"
              note: "{{{{ .spec.noet | default \"none\" }}}}"
            managedResources:
              - {{group: "", version: v1, plural: configmaps, kind: ConfigMap}}
"#,
        crd = crd.display()
    );
    std::fs::write(&file, &text).expect("write");
    let (ok, stdout, stderr) = ork(&["validate", "-k", file.to_str().expect("utf-8 path")]);
    assert!(ok, "warnings do not fail validation: {stdout}{stderr}");
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).expect("line") + 1;
    let shown = file.display();
    assert!(
        stdout.contains(&format!(
            "warning: {shown}:{}: spec.crds.gadget.operatorBox.reconcile.remote.args.note: \"{{{{ .spec.noet | default \\\"none\\\" }}}}\" reads .spec.noet, which the CRD's schema does not have: it renders empty\n    hint: did you mean .spec.note?",
            line_of("noet")
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "warning: {shown}:{}: spec.crds.gadget.operatorBox.preReconcile.reconcileGate.when[0].field: the condition reads .spec.colur, which the CRD's schema does not have: it never has a value\n    hint: did you mean .spec.colour?",
            line_of("colur")
        )),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("warning: ").count(),
        2,
        "the known fields are not warned about: {stdout}"
    );
    assert!(
        stdout.ends_with("valid (1 entry, 2 warnings)\n"),
        "{stdout}"
    );
}
