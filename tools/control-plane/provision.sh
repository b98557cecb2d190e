#!/usr/bin/env bash
# Provisions the real-cluster test tier's binaries: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl (Kubernetes), etcd and kwok, at the versions in versions.env.
#
# Official release binaries are used when they are already present (KUBE_BINARIES_DIR pointing at a
# folder holding them); otherwise everything is built from the Go module proxy with two small wrapper
# modules of our own. The result is cached in $CONTROL_PLANE_CACHE (default ~/.cache/torchjob-control-plane)
# so a warm run only checks versions. Prints the directory holding the binaries on its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

cache=${CONTROL_PLANE_CACHE:-$HOME/.cache/torchjob-control-plane}
bin="$cache/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION/bin"
stamp="$bin/.complete"
components=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)

log() { printf '[control-plane] %s\n' "$*" >&2; }

if [ -f "$stamp" ]; then
  log "warm: binaries for Kubernetes $KUBERNETES_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION in $bin"
  echo "$bin"; exit 0
fi

mkdir -p "$bin"
start=$(date +%s)

if [ -n "${KUBE_BINARIES_DIR:-}" ]; then
  # Release binaries supplied by the caller (e.g. downloaded where the network allows it).
  for c in "${components[@]}"; do
    [ -x "$KUBE_BINARIES_DIR/$c" ] || { log "KUBE_BINARIES_DIR=$KUBE_BINARIES_DIR has no executable $c"; exit 1; }
    cp "$KUBE_BINARIES_DIR/$c" "$bin/$c"
  done
else
  command -v go >/dev/null || { log "no 'go' on PATH: Go >= 1.26 is needed to build the control plane from modules"; exit 1; }
  go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
  [ "${go_minor:-0}" -ge 26 ] || { log "$(go env GOVERSION) is too old: Kubernetes $KUBERNETES_VERSION and kwok $KWOK_VERSION need Go >= 1.26"; exit 1; }
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT

  # Kubernetes: k8s.io/kubernetes requires its staging modules at v0.0.0, which no proxy serves.
  # Point each one at its published tag v0.<minor>.<patch>, read from the module's own go.mod.
  staging="v0.${KUBERNETES_VERSION#1.}"
  minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
  mkdir -p "$work/k8s" && cd "$work/k8s"
  go mod init torchjob.invalid/control-plane/kubernetes >/dev/null 2>&1
  upstream_gomod=$(go mod download -json "k8s.io/kubernetes@v$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\([^"]*\)".*/\1/p')
  for m in $(grep -E '^[[:space:]]+k8s\.io/[a-z0-9-]+ v0\.0\.0([[:space:]]|$)' "$upstream_gomod" | awk '{print $1}'); do
    go mod edit -replace="$m=$m@$staging"
  done
  # Same run-time GODEBUG defaults as the official binaries.
  godebug=$(grep -E '^godebug ' "$upstream_gomod" || true)
  [ -z "$godebug" ] || echo "$godebug" >> go.mod
  cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  go get "k8s.io/kubernetes@v$KUBERNETES_VERSION" >&2
  go mod tidy >&2
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $p.gitVersion=v$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  log "building Kubernetes v$KUBERNETES_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)"
  go build -ldflags "$ldflags" -o "$bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl >&2

  # etcd: its server module's package main; built in its own module so its dependency versions stay its own.
  mkdir -p "$work/etcd" && cd "$work/etcd"
  go mod init torchjob.invalid/control-plane/etcd >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
  log "building etcd v$ETCD_VERSION"
  go build -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3 >&2

  # kwok has no replace directives: a plain install.
  log "building kwok v$KWOK_VERSION"
  GOBIN="$bin" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION" >&2
fi

for c in "${components[@]}"; do
  [ -x "$bin/$c" ] || { log "missing $bin/$c after provisioning"; exit 1; }
done
"$bin/kube-apiserver" --version >&2
"$bin/etcd" --version | head -1 >&2
touch "$stamp"
log "cold: provisioned in $(( $(date +%s) - start )) s"
echo "$bin"
