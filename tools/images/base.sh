#!/usr/bin/env bash
# The operator images' base, docker.io/library/debian:bookworm-slim, for podman (docs/decisions.md).
# Where a registry is reachable, podman pulls the real one and this script is not needed. Where none
# is (CI, these development machines), it makes a local stand-in under the same name from Debian's
# own packages, as Debian's image is made: the minbase package set of bookworm, with the same dpkg
# filters as the slim variant (no manuals, no docs), so a Containerfile meets what it meets upstream.
# Prints the image's name. Needs podman, runc and mmdebstrap (Debian packages).
set -euo pipefail
image=docker.io/library/debian:bookworm-slim
if ! podman image exists "$image"; then
  start=$(date +%s)
  mmdebstrap --quiet --variant=minbase \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --aptopt='Acquire::Languages "none"' \
    bookworm - \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" \
    | podman import --quiet \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["bash"]' - "$image" >/dev/null
  echo "stand-in for $image made from Debian's packages in $(( $(date +%s) - start )) s" >&2
fi
echo "$image"
