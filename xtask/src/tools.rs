//! What every task uses: the workspace's folders, cargo, and running a tool to completion.

use std::path::PathBuf;
use std::process::Command;

pub(crate) type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The cargo that runs this task (`$CARGO`), else the one on PATH.
pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Where cargo puts binaries: `$CARGO_TARGET_DIR`, else `target/` in the workspace.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

pub(crate) fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Whether `tool` is on PATH.
pub(crate) fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

/// Runs a command to completion; non-zero exit is an error naming the command.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().map_err(|e| format!("{cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{:?} failed: {status}", cmd.get_program()).into())
    }
}
