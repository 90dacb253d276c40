//! `cargo xtask docs [--check]`: the book under `docs/`. Writes the reference pages from the
//! code (`ork reference`; with `--check`, fails when they are stale instead), then builds the
//! book with mdBook into `target/book`. mdBook is built once per machine into
//! `~/.cache/ork/mdbook-VERSION` from its crate. Links and snippets are checked by the suite
//! (`crates/cli/src/reference/book.rs`); mdBook itself fails on a page SUMMARY names that is
//! missing.

use std::path::PathBuf;
use std::process::Command;

use crate::tools::{Result, cargo, run, target_dir, workspace_root};

/// The mdBook release the book is built with.
pub const MDBOOK: &str = "0.5.4";

fn cache_dir() -> PathBuf {
    std::env::var_os("ORK_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ork")))
        .unwrap_or_else(|| PathBuf::from("/root/.cache/ork"))
}

/// Builds mdBook unless the cache has it; its path.
fn mdbook() -> Result<PathBuf> {
    let root = cache_dir().join(format!("mdbook-{MDBOOK}"));
    let bin = root.join("bin/mdbook");
    if bin.exists() {
        return Ok(bin);
    }
    eprintln!("docs: building mdBook {MDBOOK} (once per machine)...");
    run(Command::new(cargo())
        .args(["install", "mdbook", "--locked", "--no-default-features"])
        .args(["--features", "search", "--version", MDBOOK, "--root"])
        .arg(&root)
        // Its own target dir: not the workspace's lock or build; gone once installed.
        .env("CARGO_TARGET_DIR", cache_dir().join("mdbook-build")))?;
    let _ = std::fs::remove_dir_all(cache_dir().join("mdbook-build"));
    Ok(bin)
}

pub fn docs(args: &[&str]) -> Result<()> {
    let check = match args {
        [] => false,
        ["--check"] => true,
        other => return Err(format!("docs: unknown arguments {other:?} (docs [--check])").into()),
    };
    let reference = workspace_root().join("docs/reference");
    let mut ork = Command::new(cargo());
    ork.current_dir(workspace_root())
        .args(["run", "-q", "-p", "ork", "--", "reference"])
        .arg(&reference);
    if check {
        ork.arg("--check");
    }
    run(&mut ork)?;
    let out = target_dir().join("book");
    run(Command::new(mdbook()?)
        .arg("build")
        .arg(workspace_root().join("docs"))
        .arg("--dest-dir")
        .arg(&out))?;
    eprintln!("docs: the book is in {}", out.join("index.html").display());
    Ok(())
}
