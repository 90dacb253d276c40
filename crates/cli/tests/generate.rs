//! `ork generate` output for the example Katalog, as a reviewer would read it (snapshots).

use std::path::PathBuf;
use std::process::Command;

fn ork(args: &[&str]) -> String {
    let example =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp/katalog.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(args)
        .arg("-k")
        .arg(example)
        .output()
        .expect("ork runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn rbac_for_the_example() {
    insta::assert_snapshot!(ork(&["generate", "rbac"]));
}

#[test]
fn bundle_for_the_example() {
    insta::assert_snapshot!(ork(&[
        "generate",
        "bundle",
        "--namespace",
        "platform",
        "--image",
        "ork:test"
    ]));
}

#[test]
fn output_is_deterministic() {
    assert_eq!(ork(&["generate", "bundle"]), ork(&["generate", "bundle"]));
}
