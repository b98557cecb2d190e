#!/usr/bin/env bash
# The operator in JVM mode as one archive for a GPU machine without Java (local-mode-gpus.sh takes it):
# target/quarkus-app (build it first: ./mvnw -B -q package -DskipTests) and a Java runtime linked from the
# JDK on PATH with the modules native/Containerfile.jvm names, xz-compressed: about 45 MB. The machine it
# goes to must be x86-64 Linux like this one. Prints the archive's path (default target/torchjob-local.tar.xz).
set -euo pipefail
cd "$(dirname "$0")/../.."
archive=${1:-target/torchjob-local.tar.xz}
log() { printf '[gpu-bundle] %s\n' "$*" >&2; }

[ -f target/quarkus-app/quarkus-run.jar ] || { log "no target/quarkus-app: run ./mvnw -B -q package -DskipTests first"; exit 1; }
# The same modules as the JVM image, from its one list.
modules=$(sed -n 's/.*--add-modules \([^ ]*\).*/\1/p' native/Containerfile.jvm)
[ -n "$modules" ] || { log "native/Containerfile.jvm names no --add-modules"; exit 1; }
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
[ -x "$java_home/bin/jlink" ] || { log "no jlink beside $(command -v java): a JDK is needed, not a JRE"; exit 1; }

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
"$java_home/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files \
  --output "$staging/java"
cp -r target/quarkus-app "$staging/quarkus-app"
mkdir -p "$(dirname "$archive")"
tar -C "$staging" -cf - java quarkus-app | xz -T0 -6 > "$archive"
log "$("$staging/java/bin/java" -version 2>&1 | head -1), modules $modules; $(du -h "$archive" | cut -f1)"
echo "$archive"
