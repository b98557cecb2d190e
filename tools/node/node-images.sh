#!/usr/bin/env bash
# The images the real node runs, made on this machine from Debian's packages (no registry is
# reachable here) and saved as archives the node's containerd imports (docs/testing.md):
#   - the sandboxes' pause image, localhost/torchjob-pause:1, from node.sh's pause program;
#   - the PyTorch base, localhost/torchjob-pytorch-debian:bookworm: Debian's python3-torch (1.13, gloo)
#     on bookworm's minbase, with `python` (python-is-python3) as the official image has it;
#   - the cluster examples' image, built by kubernetes/examples/Containerfile on that base as the README
#     tells users (--build-arg BASE=...), under the name the examples use: torchjob-examples:0.1.0.
# Cached in $CONTROL_PLANE_CACHE/images (the examples' image keyed by its Containerfile and train.py).
# Usage: node-images.sh NODE_BIN_DIR; prints one archive per line. Needs podman and mmdebstrap.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
component=node-images
# shellcheck source=../provisioning.sh
source "$here/../provisioning.sh"
repo=$(cd "$here/../.." && pwd)
node_bin=$1
cache=$cache/images
mkdir -p "$cache"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$repo/tools/images/containers.conf}

pause="$cache/pause-$(sha256sum "$node_bin/pause" | cut -c1-12).tar"
if [ ! -f "$pause" ]; then
  root=$(mktemp -d)
  cp "$node_bin/pause" "$root/pause"
  tar -C "$root" -c pause | podman import --quiet --change 'ENTRYPOINT ["/pause"]' - localhost/torchjob-pause:1 >/dev/null
  podman save --quiet --format docker-archive -o "$pause.part" localhost/torchjob-pause:1
  mv "$pause.part" "$pause"
  rm -rf "$root"
fi

base_image=localhost/torchjob-pytorch-debian:bookworm
# Debian's PyTorch 1.13 lacks two fixes PyTorch made later that torchrun needs here (torch-backports.py
# says which); the base carries them, so the torchrun jobs run as on the official image.
backports="$here/torch-backports.py"
base_key=$( (cat "$backports"; echo python3-torch python-is-python3) | sha256sum | cut -c1-12)
base="$cache/pytorch-debian-bookworm-$base_key.tar"
if [ ! -f "$base" ] || ! podman image exists "$base_image"; then
  if [ -f "$base" ]; then
    podman load --quiet -i "$base" >/dev/null
  else
    start=$(date +%s)
    log "making $base_image from Debian's packages (python3-torch: minutes, once)"
    mmdebstrap --quiet --variant=minbase --include=python3-torch,python-is-python3 \
      --customize-hook="python3 '$backports' \"\$1\"" \
      --customize-hook="chroot \"\$1\" python3 -c 'from torch.distributed.elastic.multiprocessing.api import Std; assert Std.from_str(\"0\") is Std.NONE'" \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --aptopt='Acquire::Languages "none"' \
      bookworm - "deb http://deb.debian.org/debian bookworm main" \
      | podman import --quiet --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
          --change 'CMD ["python"]' - "$base_image" >/dev/null
    podman save --quiet --format docker-archive -o "$base.part" "$base_image"
    mv "$base.part" "$base"
    log "made in $(( $(date +%s) - start )) s"
  fi
fi

examples_key=$( (echo "$base_key"; cat "$repo/kubernetes/examples/Containerfile" "$repo/kubernetes/examples/local/train.py") | sha256sum | cut -c1-12)
examples="$cache/torchjob-examples-$examples_key.tar"
if [ ! -f "$examples" ]; then
  podman build --quiet --build-arg "BASE=$base_image" -t docker.io/library/torchjob-examples:0.1.0 \
    -f "$repo/kubernetes/examples/Containerfile" "$repo/kubernetes/examples" >/dev/null
  podman save --quiet --format docker-archive -o "$examples.part" docker.io/library/torchjob-examples:0.1.0
  mv "$examples.part" "$examples"
fi
echo "$pause"
echo "$examples"
