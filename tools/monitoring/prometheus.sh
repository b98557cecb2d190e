#!/usr/bin/env bash
# Prometheus with Kubernetes service discovery, for the real-cluster tier's test of docs/metrics.md's
# scrape configuration (OperatorInClusterIT): Debian's prometheus (2.42) is built without the
# Kubernetes discoverer. Built from Prometheus's Go module at the version in versions.env, with only
# that discoverer (its remove_all_sd / enable_kubernetes_sd build tags); the web UI is not needed.
# Cached in $CONTROL_PLANE_CACHE; prints the binary's path on its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
component=prometheus
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"
bin="$cache/prometheus-$PROMETHEUS_VERSION/bin"

if [ -x "$bin/prometheus" ]; then
  log "warm: Prometheus $PROMETHEUS_VERSION in $bin"
  echo "$bin/prometheus"; exit 0
fi
need_go "to build Prometheus from its module"
start=$(date +%s)
mkdir -p "$bin"
# Prometheus 3.x's Go module versions are v0.3MM.P for v3.MM.P.
IFS=. read -r major minor patch <<<"$PROMETHEUS_VERSION"
module_version="v0.$((major * 100 + minor)).$patch"
log "building Prometheus $PROMETHEUS_VERSION (module $module_version) with Kubernetes service discovery only"
(cd "${TMPDIR:-/tmp}" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" GOBIN="$bin" \
  go install -tags remove_all_sd,enable_kubernetes_sd \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" \
  "github.com/prometheus/prometheus/cmd/prometheus@$module_version") >&2
"$bin/prometheus" --version >&2
log "cold: built in $(( $(date +%s) - start )) s"
echo "$bin/prometheus"
