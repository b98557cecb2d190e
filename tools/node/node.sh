#!/usr/bin/env bash
# Provisions the real node of the real-cluster test tier (docs/testing.md) at the versions in
# versions.env: the kubelet and kube-proxy (the ClusterIP Services of the node's pods), built from the
# same wrapper module as the control plane; containerd
# with its runc shim and ctr, from containerd's Go module (2.x: the kubelet drops containerd 1.x in
# 1.37); CoreDNS with only the plugins the tier uses (coredns/main.go); the sandboxes' pause program
# (pause/main.go); a stand-in for systemd-logind, for the kubelet's graceful node shutdown (logind/main.go); a
# stand-in for a GPU vendor's device plugin (gpus/main.go) and one for its DRA driver (dra/main.go).
# runc and the CNI plugins are Debian's (`runc`, `containernetworking-plugins`), dbus-daemon too.
# Cached in $CONTROL_PLANE_CACHE; prints the directory holding the binaries on its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
component=node
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"
# shellcheck source=../control-plane/kubernetes-module.sh
source "$tools/control-plane/kubernetes-module.sh"

# Our own sources are part of the key: a change to them builds anew.
# kube-proxy joined the node's binaries later: the list of them is part of the key too.
components="kubelet kube-proxy containerd containerd-shim-runc-v2 ctr coredns pause"
sources=$( (echo "$components"; cat "$here/coredns/main.go" "$here/pause/main.go") | sha256sum | cut -c1-8)
bin="$cache/node-k8s-$KUBERNETES_VERSION-containerd-$CONTAINERD_VERSION-coredns-$COREDNS_VERSION-$sources/bin"

# The stand-ins joined later, each keyed on its own sources: a change to one builds only it.
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
stand_ins="logind gpus dra"
stand_in_key() {
  cat "$here/$1/main.go" "$here/$1/go.mod" "$here/$1/go.sum" | sha256sum | cut -c1-8
}
build_stand_in() {
  log "building the $1 stand-in"
  rm -f "$bin/.$1-"*
  cp -r "$here/$1" "$work/$1"
  (cd "$work/$1" && go build -ldflags "-s -w" -o "$bin/$1" .) >&2
  touch "$bin/.$1-$(stand_in_key "$1")"
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -f "$bin/.complete" ]; then
  for s in $stand_ins; do
    if [ ! -f "$bin/.$s-$(stand_in_key "$s")" ]; then
      need_go "to build the $s stand-in"
      build_stand_in "$s"
    fi
  done
  log "warm: kubelet $KUBERNETES_VERSION, containerd $CONTAINERD_VERSION, CoreDNS $COREDNS_VERSION in $bin"
  echo "$bin"; exit 0
fi
need_go "to build the node from modules"
start=$(date +%s)
mkdir -p "$bin"

kubernetes_module "$work/k8s" kubelet kube-proxy
log "building the kubelet and kube-proxy v$KUBERNETES_VERSION"
go build -ldflags "$KUBERNETES_LDFLAGS" -o "$bin/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy >&2

log "building containerd v$CONTAINERD_VERSION"
(cd "$work" && GOBIN="$bin" go install -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=v$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/containerd@v$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@v$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/ctr@v$CONTAINERD_VERSION") >&2

log "building CoreDNS v$COREDNS_VERSION"
mkdir -p "$work/coredns" && cp "$here/coredns/main.go" "$work/coredns/" && cd "$work/coredns"
go mod init torchjob.invalid/control-plane/coredns >/dev/null 2>&1
go get "github.com/coredns/coredns@v$COREDNS_VERSION" >&2
go mod tidy >&2
go build -ldflags "-s -w" -o "$bin/coredns" . >&2

log "building the pause program"
cp -r "$here/pause" "$work/pause" && cd "$work/pause"
go build -ldflags "-s -w" -o "$bin/pause" . >&2

for s in $stand_ins; do
  build_stand_in "$s"
done

for c in $components $stand_ins; do
  [ -x "$bin/$c" ] || { log "missing $bin/$c after provisioning"; exit 1; }
done
"$bin/kubelet" --version >&2
touch "$bin/.complete"
log "cold: provisioned in $(( $(date +%s) - start )) s"
echo "$bin"
