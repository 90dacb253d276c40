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

/// R5's faults on a test host's link need iptables' legacy backend (its NFQUEUE target works
/// where the kernel has no `nft_queue`).
pub const IPTABLES: &str = "/usr/sbin/iptables-legacy";

/// Installs Debian's `package` when `path` is not there (`why` says who needs it).
pub fn ensure_debian(path: &str, package: &str, why: &str) -> Result<()> {
    if std::path::Path::new(path).exists() {
        return Ok(());
    }
    eprintln!("installing Debian's {package} for {why}");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        run(Command::new("apt-get").args(["update", "-q"]))?;
        if !install() {
            return Err(format!("apt-get could not install {package}").into());
        }
    }
    Ok(())
}
