#!/usr/bin/env bash
# The Prometheus Operator's CRDs for the real-cluster test tier, at the version in versions.env:
# its Go module (the project's own CRD files under example/prometheus-operator-crd/) from Go's module
# cache, downloaded through the Go module proxy on first use. Prints that folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
component=prometheus-operator
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"

need_go "to download the Prometheus Operator's module"
module=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json \
  "github.com/prometheus-operator/prometheus-operator@v$PROMETHEUS_OPERATOR_VERSION" | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')
crds="$module/example/prometheus-operator-crd"
[ -f "$crds/monitoring.coreos.com_servicemonitors.yaml" ] || { log "no CRDs in $crds"; exit 1; }
echo "$crds"
