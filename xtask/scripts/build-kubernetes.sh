#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager of Kubernetes VERSION (e.g. 1.37.2) from the
# official Go modules, and the etcd that release is tested with, once per machine:
#
#   $ORK_CACHE/kubernetes-VERSION/bin/{kube-apiserver,kube-controller-manager}
#   $ORK_CACHE/etcd-ETCD_VERSION/bin/etcd
#   $ORK_CACHE/kubernetes-VERSION/etcd-version      (which etcd goes with this release)
#
# ($ORK_CACHE defaults to ~/.cache/ork.) `k8s.io/kubernetes` requires its staging modules
# (k8s.io/api, k8s.io/apiserver, …) at v0.0.0 and replaces them with ./staging/…; a dependent
# module's replaces are ignored, so a small build module of our own requires the release and pins
# each staging module to the published v0.MINOR.PATCH. The staging list is read from the release's
# own go.mod, so a new release needs no edit here. etcd is built the same way from
# go.etcd.io/etcd/server/v3 at the version in the release's build/dependencies.yaml. See
# ../shared/docs/LOCAL-CLUSTER.md.
set -euo pipefail

version="${1:?usage: build-kubernetes.sh VERSION (e.g. 1.37.2)}"
version="${version#v}"
cache="${ORK_CACHE:-$HOME/.cache/ork}"
home="$cache/kubernetes-$version"
out="$home/bin"

# Go as the machine installs it (its own folder, not always on a service's PATH).
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "build-kubernetes: Go is needed (go 1.26 or newer)" >&2; exit 1; }
for tool in openssl curl; do
  if ! command -v "$tool" >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$tool"
  fi
done

# GOTOOLCHAIN=local: build with the machine's Go, never download another toolchain. The Go build
# cache is the machine's own (~/.cache/go-build): a second release reuses much of the first's.
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

started=$SECONDS
if [[ ! -x "$out/kube-apiserver" || ! -x "$out/kube-controller-manager" || ! -s "$home/etcd-version" ]]; then
  rel_json=$(go mod download -json "k8s.io/kubernetes@v$version")
  rel_dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$rel_json")
  rel_mod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p' <<<"$rel_json")
  [[ -d "$rel_dir" && -f "$rel_mod" ]] || { echo "build-kubernetes: k8s.io/kubernetes@v$version is not served" >&2; exit 1; }

  go_directive=$(awk '$1 == "go" {print $2; exit}' "$rel_mod")
  etcd_version=$(awk '/name: "etcd"$/ {getline; print $2; exit}' "$rel_dir/build/dependencies.yaml")
  [[ -n "$etcd_version" ]] || { echo "build-kubernetes: no etcd version in $rel_dir/build/dependencies.yaml" >&2; exit 1; }

  src="$home/src"
  rm -rf "$src"
  mkdir -p "$src" "$out"
  staging="0.${version#*.}"
  {
    echo "module ork.local/kubernetes-build"
    echo
    echo "go $go_directive"
    echo
    echo "require k8s.io/kubernetes v$version"
    echo
    # One replace per staging module the proxy serves at the matching version; the two samples
    # (sample-controller, sample-cli-plugin) are not published and nothing we build needs them.
    for m in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$rel_mod"); do
      if go mod download "$m@v$staging" 2>/dev/null; then
        echo "replace $m => $m v$staging"
      fi
    done
  } >"$src/go.mod"
  cat >"$src/tools.go" <<'EOF'
//go:build tools

// Package tools names what this module builds, so `go mod tidy` keeps their dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
EOF
  # Stamp the version as the release's own build does (hack/lib/version.sh): /version, the
  # binary's emulation version and `kubectl version` read these.
  commit=$(sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)",\{0,1\}$/\1/p' <<<"$rel_json" | head -n1)
  minor="${version#*.}"
  minor="${minor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=v$version -X $pkg.gitMajor=${version%%.*} -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitCommit=${commit:-unknown} -X $pkg.gitTreeState=clean"
    ldflags+=" -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  echo "build-kubernetes: building kube-apiserver and kube-controller-manager v$version (go $go_directive module, $(go env GOVERSION))"
  (cd "$src" && go mod tidy && go build -trimpath -ldflags="$ldflags" -o "$out/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager)
  echo "$etcd_version" >"$home/etcd-version"
  rm -rf "$src"
fi

etcd_version=$(cat "$home/etcd-version")
etcd_out="$cache/etcd-$etcd_version/bin"
if [[ ! -x "$etcd_out/etcd" ]]; then
  src="$cache/etcd-$etcd_version/src"
  rm -rf "$src"
  mkdir -p "$src" "$etcd_out"
  etcd_mod=$(go mod download -json "go.etcd.io/etcd/server/v3@v$etcd_version" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "module ork.local/etcd-build"
    echo
    echo "go $(awk '$1 == "go" {print $2; exit}' "$etcd_mod")"
    echo
    echo "require go.etcd.io/etcd/server/v3 v$etcd_version"
  } >"$src/go.mod"
  cat >"$src/tools.go" <<'EOF'
//go:build tools

// Package tools names what this module builds, so `go mod tidy` keeps its dependencies.
package tools

import _ "go.etcd.io/etcd/server/v3"
EOF
  echo "build-kubernetes: building etcd v$etcd_version"
  (cd "$src" && go mod tidy && go build -trimpath -ldflags="-s -w" -o "$etcd_out/etcd" go.etcd.io/etcd/server/v3)
  rm -rf "$src"
fi

if (( SECONDS - started > 5 )); then
  echo "build-kubernetes: Kubernetes v$version with etcd v$etcd_version ready in $((SECONDS - started)) s ($out)"
fi
