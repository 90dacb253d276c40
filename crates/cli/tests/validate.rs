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
