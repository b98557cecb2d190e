#!/usr/bin/env bash
# Provisions the oldest Kubernetes docs/install.md claims (OLDEST_KUBERNETES_VERSION in versions.env):
# its kube-apiserver and kubectl, built from the Go module proxy like provision.sh does for the
# current version and cached next to it. OldestKubernetesIT runs the CRD, CEL and install checks
# against this API server (with the tier's etcd) and this kubectl. Prints the binaries' folder last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
component=oldest-kubernetes
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"
# shellcheck source=kubernetes-module.sh
source "$here/kubernetes-module.sh"
KUBERNETES_VERSION=$OLDEST_KUBERNETES_VERSION

bin="$cache/k8s-$KUBERNETES_VERSION-apiserver-kubectl/bin"

if [ -f "$bin/.complete" ]; then
  log "warm: kube-apiserver and kubectl $KUBERNETES_VERSION in $bin"
  echo "$bin"; exit 0
fi
need_go "to build Kubernetes from modules"
mkdir -p "$bin"
start=$(date +%s)
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kubernetes_module "$work/k8s" kube-apiserver kubectl
log "building Kubernetes v$KUBERNETES_VERSION (kube-apiserver, kubectl)"
go build -ldflags "$KUBERNETES_LDFLAGS" -o "$bin/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl >&2
"$bin/kube-apiserver" --version >&2
touch "$bin/.complete"
log "cold: built in $(( $(date +%s) - start )) s"
echo "$bin"
