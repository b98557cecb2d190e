# Sourced by every provisioning script under tools/ after it sets `component` (its log tag): the
# versions, the cache every build goes to, a log line on stderr (stdout carries only the paths a
# script prints for its caller), and the Go check of the scripts that build from a Go module.
tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$tools/versions.env"
cache=${CONTROL_PLANE_CACHE:-$HOME/.cache/torchjob-control-plane}
log() { printf '[%s] %s\n' "$component" "$*" >&2; }
# need_go WHY: stops with one line when Go is missing; builds use the Go on PATH, never a download.
need_go() {
  command -v go >/dev/null || { log "no 'go' on PATH: Go >= 1.26 is needed $1"; exit 1; }
  export GOTOOLCHAIN=local
}
