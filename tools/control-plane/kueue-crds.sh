#!/usr/bin/env bash
# Fetches Kueue's CRDs (the version in versions.env) from the Go module proxy, where Kueue's module
# carries them, and prints the directory that holds them. Cached by Go's module cache: a warm run
# costs nothing. The tests install only what they need (Workload at v1beta2, ResourceFlavor,
# WorkloadPriorityClass).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
command -v go >/dev/null || { echo "[kueue] no 'go' on PATH: Go is needed to fetch Kueue's CRDs from the module proxy" >&2; exit 1; }
dir=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kueue@v$KUEUE_VERSION" | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')
crds="$dir/config/components/crd/bases"
[ -f "$crds/kueue.x-k8s.io_workloads.yaml" ] || { echo "[kueue] no CRDs in $dir" >&2; exit 1; }
echo "$crds"
