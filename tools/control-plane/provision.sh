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
component=control-plane
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"
# shellcheck source=kubernetes-module.sh
source "$here/kubernetes-module.sh"

bin="$cache/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION/bin"
stamp="$bin/.complete"
components=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)

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
  need_go "to build the control plane from modules"
  go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
  [ "${go_minor:-0}" -ge 26 ] || { log "$(go env GOVERSION) is too old: Kubernetes $KUBERNETES_VERSION and kwok $KWOK_VERSION need Go >= 1.26"; exit 1; }
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT

  kubernetes_module "$work/k8s" kube-apiserver kube-controller-manager kube-scheduler kubectl
  log "building Kubernetes v$KUBERNETES_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)"
  go build -ldflags "$KUBERNETES_LDFLAGS" -o "$bin/" \
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
