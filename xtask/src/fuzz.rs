//! `cargo xtask fuzz [ork-fuzz options]`: a release build of `ork-fuzz`, then the run.
//!
//! Every argument goes to `ork-fuzz` (`--cases N`, `--seed S`, `--target T`, `--case I`,
//! `--jobs J`, `--max-secs S`, `--known`, `--strict`, `--list`…; `--help` lists them). A short
//! run of every target is part of `cargo xtask test` through `crates/fuzz/tests/short.rs`.

use std::process::Command;

use crate::tools::{Result, cargo, run, target_dir, workspace_root};

pub fn fuzz(args: &[&str]) -> Result<()> {
    run(Command::new(cargo()).current_dir(workspace_root()).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "ork-fuzz",
        "--bin",
        "ork-fuzz",
    ]))?;
    run(Command::new(target_dir().join("release/ork-fuzz")).args(args))
}
