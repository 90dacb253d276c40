#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager 1.20.2 from Debian's source package, once per
# machine, into $ORK_CACHE/kubernetes-1.20.2/bin (default ~/.cache/ork). See
# ../shared/docs/LOCAL-CLUSTER.md for why each step is there.
set -euo pipefail

cache="${ORK_CACHE:-$HOME/.cache/ork}"
out="$cache/kubernetes-1.20.2/bin"
if [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" ]]; then
  echo "kubernetes 1.20.2 already built in $out"
  exit 0
fi

need_pkgs=()
command -v go >/dev/null || need_pkgs+=(golang-go)
command -v etcd >/dev/null || need_pkgs+=(etcd-server)
command -v rsync >/dev/null || need_pkgs+=(rsync)
command -v openssl >/dev/null || need_pkgs+=(openssl)
[[ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ]] || need_pkgs+=(golang-github-modern-go-reflect2-dev)

src_list=/etc/apt/sources.list.d/ork-deb-src.sources
if [[ ! -f "$src_list" ]]; then
  # Mirror the machine's first deb entry as deb-src, main suite only.
  awk 'BEGIN{RS="";ORS="\n\n"} NR==1 {print}' /etc/apt/sources.list.d/debian.sources \
    | sed -e 's/^Types: deb$/Types: deb-src/' \
          -e 's/^Suites: \([^ ]*\).*/Suites: \1/' >"$src_list"
  apt_update=1
fi
if [[ ${#need_pkgs[@]} -gt 0 || -n "${apt_update:-}" ]]; then
  apt-get update -qq
fi
if [[ ${#need_pkgs[@]} -gt 0 ]]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}"
fi

work="$cache/build"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
apt-get source --download-only kubernetes >/dev/null
orig=$(ls kubernetes_*.orig.tar.gz | head -n1)
tar xzf "$orig"
cd kubernetes-1.20.2

# The vendored reflect2 v1.0.1 crashes the API server under Go >= 1.18; use Debian's v1.0.2.
rm -rf vendor/github.com/modern-go/reflect2
cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 vendor/github.com/modern-go/reflect2
rm -f vendor/github.com/modern-go/reflect2/go.mod

mkdir -p .go/src/k8s.io
ln -s ../../.. .go/src/k8s.io/kubernetes
mkdir -p "$work/home"
GOPATH="$PWD/.go" GO111MODULE=off CGO_ENABLED=0 HOME="$work/home" GOFLAGS= \
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager"

mkdir -p "$out"
cp _output/local/bin/linux/amd64/kube-apiserver _output/local/bin/linux/amd64/kube-controller-manager "$out/"
cd "$cache"
rm -rf "$work"
echo "built kubernetes 1.20.2 into $out"
