# Sourced by provision.sh and node.sh. kubernetes_module DIR COMMAND...: makes DIR a Go module that
# builds k8s.io/kubernetes/cmd/COMMAND at $KUBERNETES_VERSION, and sets KUBERNETES_LDFLAGS to the
# version stamps of the official binaries. k8s.io/kubernetes requires its staging modules at v0.0.0,
# which no proxy serves: each one points at its published tag v0.<minor>.<patch>, read from the
# module's own go.mod.
kubernetes_module() {
  local dir=$1 staging minor upstream_gomod godebug m c p
  shift
  staging="v0.${KUBERNETES_VERSION#1.}"
  minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
  mkdir -p "$dir" && cd "$dir"
  go mod init torchjob.invalid/control-plane/kubernetes >/dev/null 2>&1
  upstream_gomod=$(go mod download -json "k8s.io/kubernetes@v$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\([^"]*\)".*/\1/p')
  for m in $(grep -E '^[[:space:]]+k8s\.io/[a-z0-9-]+ v0\.0\.0([[:space:]]|$)' "$upstream_gomod" | awk '{print $1}'); do
    go mod edit -replace="$m=$m@$staging"
  done
  # Same run-time GODEBUG defaults as the official binaries.
  godebug=$(grep -E '^godebug ' "$upstream_gomod" || true)
  [ -z "$godebug" ] || echo "$godebug" >> go.mod
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
    printf ')\n'
  } > tools.go
  go get "k8s.io/kubernetes@v$KUBERNETES_VERSION" >&2
  go mod tidy >&2
  KUBERNETES_LDFLAGS="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    KUBERNETES_LDFLAGS="$KUBERNETES_LDFLAGS -X $p.gitVersion=v$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
}
