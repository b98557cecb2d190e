#!/usr/bin/env bash
# Provisions the gang schedulers of the real-cluster test tier, at the versions in versions.env (why Volcano
# is not the newest: there), built
# from their Go modules and cached in $CONTROL_PLANE_CACHE next to the control plane: Volcano's scheduler
# and controller manager, and scheduler-plugins' kube-scheduler (with the coscheduling plugin). Both
# modules pin Kubernetes' modules with replace directives, which `go install module@version` refuses:
# each is built inside a writable copy of its module. Prints four lines: the Volcano binaries' folder,
# Volcano's module (its CRDs), the scheduler-plugins binary, scheduler-plugins' module (its CRDs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
component=gang-schedulers
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"

need_go "to build the gang schedulers from their modules"

# module_dir MODULE VERSION: the module's folder in Go's module cache, downloaded when missing.
module_dir() {
  (cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "$1@v$2" | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p')
}

# build NAME MODULE_DIR OUT REPLACES PACKAGE...: go build of each package (./cmd/X -> OUT/X) in a writable
# copy of the module, REPLACES (go mod edit -replace arguments, space-separated, or "") applied first.
build() {
  local name=$1 module=$2 out=$3 replaces=$4 work pkg start r
  shift 4
  [ -f "$out/.complete" ] && return 0
  start=$(date +%s)
  log "building $name from its Go module (minutes on a cold machine)"
  work=$(mktemp -d "${TMPDIR:-/tmp}/gang-build.XXXXXX")
  cp -r "$module/." "$work/" && chmod -R u+w "$work"
  for r in $replaces; do (cd "$work" && go mod edit -replace="$r"); done
  mkdir -p "$out"
  for pkg in "$@"; do
    (cd "$work" && CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath -buildvcs=false" go build -ldflags="-s -w" -o "$out/$(basename "$pkg")" "$pkg")
  done
  rm -rf "$work"
  touch "$out/.complete"
  log "$name built in $(( $(date +%s) - start )) s"
}

volcano=$(module_dir volcano.sh/volcano "$VOLCANO_VERSION")
[ -f "$volcano/config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml" ] || { log "no PodGroup CRD in $volcano"; exit 1; }
volcano_bin="$cache/volcano-$VOLCANO_VERSION/bin"
# Its API module is a staging folder the module zip leaves out: the published one instead.
build "Volcano $VOLCANO_VERSION" "$volcano" "$volcano_bin" "volcano.sh/apis=volcano.sh/apis@v$VOLCANO_APIS_VERSION" \
  ./cmd/scheduler ./cmd/controller-manager

plugins=$(module_dir sigs.k8s.io/scheduler-plugins "$SCHEDULER_PLUGINS_VERSION")
[ -f "$plugins/manifests/coscheduling/crd.yaml" ] || { log "no PodGroup CRD in $plugins"; exit 1; }
plugins_bin="$cache/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION/bin"
# It pins k8s.io/csi-translation-lib at v0.34.7, which the proxy does not serve: the served patch before it.
build "scheduler-plugins $SCHEDULER_PLUGINS_VERSION" "$plugins" "$plugins_bin" "k8s.io/csi-translation-lib=k8s.io/csi-translation-lib@v0.34.5" \
  ./cmd/scheduler

echo "$volcano_bin"
echo "$volcano"
echo "$plugins_bin/scheduler"
echo "$plugins"
