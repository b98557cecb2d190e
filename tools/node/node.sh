#!/usr/bin/env bash
# Provisions the real node of the real-cluster test tier (docs/testing.md) at the versions in
# versions.env: the kubelet and kube-proxy (the ClusterIP Services of the node's pods), built from the
# same wrapper module as the control plane; containerd
# with its runc shim and ctr, from containerd's Go module (2.x: the kubelet drops containerd 1.x in
# 1.37); CoreDNS with only the plugins the tier uses (coredns/main.go); the sandboxes' pause program
# (pause/main.go); a stand-in for systemd-logind, for the kubelet's graceful node shutdown (logind/main.go).
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

# The logind stand-in joined later, keyed on its own: a change to it builds only it.
logind_key=$(cat "$here/logind/main.go" "$here/logind/go.mod" "$here/logind/go.sum" | sha256sum | cut -c1-8)
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
build_logind() {
  log "building the logind stand-in"
  rm -f "$bin"/.logind-*
  cp -r "$here/logind" "$work/logind"
  (cd "$work/logind" && go build -ldflags "-s -w" -o "$bin/logind" .) >&2
  touch "$bin/.logind-$logind_key"
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -f "$bin/.complete" ]; then
  if [ ! -f "$bin/.logind-$logind_key" ]; then
    need_go "to build the logind stand-in"
    build_logind
  fi
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

build_logind

for c in $components logind; do
  [ -x "$bin/$c" ] || { log "missing $bin/$c after provisioning"; exit 1; }
done
"$bin/kubelet" --version >&2
touch "$bin/.complete"
log "cold: provisioned in $(( $(date +%s) - start )) s"
echo "$bin"
