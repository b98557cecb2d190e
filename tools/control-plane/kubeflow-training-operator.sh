#!/usr/bin/env bash
# Provisions Kubeflow's training-operator (v1, the PyTorchJob this operator also serves) for the
# real-cluster test tier, at the version in versions.env: built from its Go module
# (`go install .../cmd/training-operator.v1`) and cached in $CONTROL_PLANE_CACHE next to the control
# plane. The tests run it beside the same manifests to compare with Kubeflow first-hand
# (KubeflowSideBySideIT). Prints one line: the binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

cache=${CONTROL_PLANE_CACHE:-$HOME/.cache/torchjob-control-plane}
bin="$cache/training-operator-$KUBEFLOW_TRAINING_OPERATOR_VERSION/bin"
log() { printf '[kubeflow-training-operator] %s\n' "$*" >&2; }

command -v go >/dev/null || { log "no 'go' on PATH: Go >= 1.26 is needed to build Kubeflow's training-operator from its module"; exit 1; }
export GOTOOLCHAIN=local

if [ ! -f "$bin/.complete" ]; then
  start=$(date +%s)
  log "building Kubeflow's training-operator $KUBEFLOW_TRAINING_OPERATOR_VERSION from its Go module (minutes on a cold machine)"
  mkdir -p "$bin"
  (cd "${TMPDIR:-/tmp}" && CGO_ENABLED=0 GOBIN="$bin" GOFLAGS="-trimpath -buildvcs=false" go install -ldflags="-s -w" \
    "github.com/kubeflow/training-operator/cmd/training-operator.v1@v$KUBEFLOW_TRAINING_OPERATOR_VERSION")
  touch "$bin/.complete"
  log "built in $(( $(date +%s) - start )) s"
fi
echo "$bin/training-operator.v1"
