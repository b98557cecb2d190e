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
  log=$(mktemp)
  trap 'echo "making the stand-in for $image failed:" >&2; cat "$log" >&2' ERR
  # merged /usr made by mmdebstrap itself, as debuerreotype does, not by the usrmerge package (and its perl)
  mmdebstrap --quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --aptopt='Acquire::Languages "none"' \
    bookworm - \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" 2>"$log" \
    | podman import --quiet \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["bash"]' - "$image" >/dev/null
  rm -f "$log"
  echo "stand-in for $image made from Debian's packages in $(( $(date +%s) - start )) s" >&2
fi
echo "$image"
