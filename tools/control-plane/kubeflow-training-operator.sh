#!/usr/bin/env bash
# Provisions Kubeflow's training-operator (v1, the PyTorchJob this operator also serves) for the
# real-cluster test tier, at the version in versions.env: built from its Go module
# (`go install .../cmd/training-operator.v1`) and cached in $CONTROL_PLANE_CACHE next to the control
# plane. The tests run it beside the same manifests to compare with Kubeflow first-hand
# (KubeflowSideBySideIT). Prints one line: the binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
component=kubeflow-training-operator
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"

bin="$cache/training-operator-$KUBEFLOW_TRAINING_OPERATOR_VERSION/bin"

need_go "to build Kubeflow's training-operator from its module"

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
