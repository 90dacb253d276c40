//! Helm, for the chart's tests (`helm lint`, `helm template`, an install into the local cluster):
//! built once per machine from the Go module proxy's `helm.sh/helm/v3` into
//! `~/.cache/ork/helm-VERSION/bin/helm`, the way the Kubernetes binaries are.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use crate::tools::{Result, on_path, run};

/// The Helm release the chart is tested with.
pub const VERSION: &str = "3.22.0";

fn cache_dir() -> PathBuf {
    std::env::var_os("ORK_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ork")))
        .unwrap_or_else(|| PathBuf::from("/root/.cache/ork"))
}

/// Where the built `helm` is.
pub fn binary() -> PathBuf {
    cache_dir().join(format!("helm-{VERSION}/bin/helm"))
}

/// Builds `helm` unless the cache has it.
pub fn ensure() -> Result<()> {
    let bin = binary();
    if bin.exists() {
        return Ok(());
    }
    eprintln!("helm: building helm {VERSION} from the Go module proxy (once per machine)...");
    let home = cache_dir().join(format!("helm-{VERSION}"));
    let src = home.join("src");
    let _ = fs::remove_dir_all(&src);
    fs::create_dir_all(&src)?;
    fs::write(
        src.join("go.mod"),
        format!("module ork.local/helm-build\n\ngo 1.25\n\nrequire helm.sh/helm/v3 v{VERSION}\n"),
    )?;
    fs::write(
        src.join("tools.go"),
        "//go:build tools\n\n// Package tools names what this module builds.\npackage tools\n\nimport _ \"helm.sh/helm/v3/cmd/helm\"\n",
    )?;
    // Go as the machine installs it, when it is not on PATH.
    let go_bin = if on_path("go") {
        PathBuf::from("go")
    } else {
        PathBuf::from("/usr/local/go/bin/go")
    };
    let go = |args: &[&str]| {
        let mut cmd = Command::new(&go_bin);
        cmd.current_dir(&src)
            .env("CGO_ENABLED", "0")
            .env("GOFLAGS", "-mod=mod")
            .env("GOTOOLCHAIN", "local")
            .args(args);
        cmd
    };
    run(&mut go(&["mod", "tidy"]))?;
    let out = bin.parent().ok_or("helm binary path has no folder")?;
    fs::create_dir_all(out)?;
    // Stamped as Helm's own release build does (its Makefile), so `helm version` names the
    // release and `helm template` / `helm lint` assume the Kubernetes minor of the client-go it
    // was built with (unstamped, they assume 1.20 and refuse the chart's kubeVersion).
    let go_mod = fs::read_to_string(src.join("go.mod"))?;
    let k8s_minor = go_mod
        .lines()
        .find_map(|l| l.trim().strip_prefix("k8s.io/client-go v0."))
        .and_then(|v| v.split('.').next())
        .ok_or("helm's module graph names no k8s.io/client-go")?;
    let mut ldflags = format!(
        "-s -w -X helm.sh/helm/v3/internal/version.version=v{VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    );
    for pkg in ["pkg/lint/rules", "pkg/chartutil"] {
        ldflags.push_str(&format!(
            " -X helm.sh/helm/v3/{pkg}.k8sVersionMajor=1 -X helm.sh/helm/v3/{pkg}.k8sVersionMinor={k8s_minor}"
        ));
    }
    run(&mut go(&[
        "build",
        "-trimpath",
        &format!("-ldflags={ldflags}"),
        "-o",
        &bin.to_string_lossy(),
        "helm.sh/helm/v3/cmd/helm",
    ]))?;
    let _ = fs::remove_dir_all(&src);
    Ok(())
}
