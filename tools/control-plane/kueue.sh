#!/usr/bin/env bash
# Provisions the real Kueue for the real-cluster test tier, at the version in versions.env: its
# controller manager built from its Go module (`go install sigs.k8s.io/kueue/cmd/kueue`), cached in
# $CONTROL_PLANE_CACHE next to the control plane, and its module (install manifests, CRDs) from Go's
# module cache; and AppWrapper, which Kueue integrates, at the version Kueue's go.mod names: its module
# (CRD, install manifests) and its controller built from it (KueueIT runs a job an AppWrapper wraps).
# Prints four lines: Kueue's controller manager binary, the Kueue module's directory, the AppWrapper
# module's directory, AppWrapper's controller binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
component=kueue
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"

bin="$cache/kueue-$KUEUE_VERSION/bin"

need_go "to build Kueue $KUEUE_VERSION from its module"
module=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kueue@v$KUEUE_VERSION" | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')
[ -f "$module/config/default/kustomization.yaml" ] || { log "no install manifests in $module"; exit 1; }

if [ ! -f "$bin/.complete" ]; then
  start=$(date +%s)
  log "building Kueue $KUEUE_VERSION's controller manager from its Go module (minutes on a cold machine)"
  mkdir -p "$bin"
  (cd "${TMPDIR:-/tmp}" && CGO_ENABLED=0 GOBIN="$bin" GOFLAGS="-trimpath -buildvcs=false" go install "sigs.k8s.io/kueue/cmd/kueue@v$KUEUE_VERSION")
  touch "$bin/.complete"
  log "built in $(( $(date +%s) - start )) s"
fi
appwrapper_version=$(sed -n 's|^[[:space:]]*github.com/project-codeflare/appwrapper \(v[^ ]*\)$|\1|p' "$module/go.mod")
[ -n "$appwrapper_version" ] || { log "Kueue's go.mod names no AppWrapper module"; exit 1; }
appwrapper=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "github.com/project-codeflare/appwrapper@$appwrapper_version" \
  | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')
[ -f "$appwrapper/config/crd/bases/workload.codeflare.dev_appwrappers.yaml" ] || { log "no AppWrapper CRD in $appwrapper"; exit 1; }

# AppWrapper's controller: its module's package main, built in a module of our own that requires it (a plain
# `go install …@version` asks the proxy for the version list, which it refuses), so its dependencies stay its own.
appwrapper_bin="$cache/appwrapper-${appwrapper_version#v}/bin"
if [ ! -f "$appwrapper_bin/.complete" ]; then
  start=$(date +%s)
  log "building AppWrapper $appwrapper_version's controller from its Go module (minutes on a cold machine)"
  mkdir -p "$appwrapper_bin"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && go mod init torchjob.invalid/control-plane/appwrapper >/dev/null 2>&1 \
    && GOFLAGS=-mod=mod go get "github.com/project-codeflare/appwrapper@$appwrapper_version" >&2 \
    && CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false -mod=mod" go build -ldflags "-s -w" -o "$appwrapper_bin/appwrapper" \
      github.com/project-codeflare/appwrapper/cmd >&2)
  touch "$appwrapper_bin/.complete"
  log "built in $(( $(date +%s) - start )) s"
fi
echo "$bin/kueue"
echo "$module"
echo "$appwrapper"
echo "$appwrapper_bin/appwrapper"
