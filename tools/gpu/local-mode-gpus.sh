#!/usr/bin/env bash
# The local mode on real NVIDIA GPUs (docs/local-mode.md, "GPUs"): the checks CI cannot run, since its
# machines have no GPU (there LocalGpusIT proves the same with a stand-in nvidia-smi). For a Linux machine
# with one NVIDIA GPU or more, nvidia-smi, and a python3 whose PyTorch has CUDA; from the repository root:
#
#   tools/gpu/local-mode-gpus.sh [ARCHIVE]
#
# runs the operator from target/quarkus-app with the java on PATH ($TORCHJOB_RUNNER: another jar, or the native
# executable), or, on a machine without Java, from the archive tools/gpu/bundle.sh makes (a linked Java
# runtime and the application). Each check runs
# kubernetes/examples/local/gpu-job.yaml (master and worker, 1 GPU each, NCCL) or a cut of it, in a folder
# of its own:
#   one          the example's master alone (1 replica x 1 GPU, NCCL)          Succeeded
#   example      the example as written (2 replicas x 1 GPU)                     refused in one line, exit 2,
#                                                                                on 1 GPU; Succeeded on 2 or more
#   share-gloo   the example, --share-gpus, gloo on the GPU (BACKEND=gloo, DEVICE=cuda)   Succeeded
#   share-nccl   the example, --share-gpus, NCCL (1-GPU machines only)           Failed: NCCL refuses two ranks
#                                                                                on one GPU (Duplicate GPU)
#   dry-run      --dry-run --share-gpus of the example                           each replica's GPU, exit 0
#   torchrun     T9k torchrunConfig, procPerNode gpu, 1 worker x 1 GPU, NCCL      Succeeded, world size 1
#                (skipped when no torchrun is on PATH)
# then prints the machine (GPUs, driver, PyTorch, CUDA, NCCL) and a table of each check's exit code, seconds
# and verdict. Exit 0 when every check went as expected. Each check's whole output is kept in
# $GPU_CHECK_LOGS (default: a new temporary folder) as NAME.log; a check that went otherwise is printed whole.
set -uo pipefail
archive=${1:+$(realpath "$1")}  # before the cd: a path given from anywhere
cd "$(dirname "$0")/../.." || exit 2
repo=$(pwd)
logs=${GPU_CHECK_LOGS:-$(mktemp -d)}
mkdir -p "$logs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { printf '[gpu-check] %s\n' "$*"; }

# The operator: the archive's, else $TORCHJOB_RUNNER (a jar, or the native executable), else the build's jar.
runner=${TORCHJOB_RUNNER:-$repo/target/quarkus-app/quarkus-run.jar}
java=$(command -v java)
if [ -n "$archive" ]; then
  # Python's tarfile where the machine has no xz (its lzma module reads the archive).
  if command -v xz >/dev/null; then tar -C "$work" -xJf "$archive"; else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$archive" "$work"; fi \
    || { say "cannot unpack $archive"; exit 2; }
  java=$work/java/bin/java
  runner=$work/quarkus-app/quarkus-run.jar
fi
[ -f "$runner" ] || { say "no $runner: run ./mvnw -B -q package -DskipTests first"; exit 2; }
case $runner in
  *.jar) [ -n "$java" ] || { say "no java on PATH: give the archive tools/gpu/bundle.sh makes"; exit 2; }
         operator=("$java" -jar "$runner")
         about=$("$java" -version 2>&1 | head -1) ;;
  *) operator=("$runner")
     about=native ;;
esac
command -v nvidia-smi >/dev/null || { say "no nvidia-smi on PATH: this check is for a machine with NVIDIA GPUs"; exit 2; }

# The machine, as the figures in docs/local-mode.md give it.
gpus=$(nvidia-smi -L | grep -c '^GPU ')
say "machine: $(uname -m), $(nproc) CPUs; $gpus GPU(s):"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | sed 's/^/[gpu-check]   /'
say "python3: $(command -v python3), $(python3 -c '
import platform, torch
nccl = ".".join(str(part) for part in torch.cuda.nccl.version()) if torch.cuda.is_available() else "none"
print("Python", platform.python_version() + ", torch", torch.__version__ + ", CUDA", str(torch.version.cuda) + ", NCCL", nccl
      + ", cuda available:", torch.cuda.is_available())' 2>&1 | tail -1)"
say "operator: ${operator[*]} ($about)"
[ "$gpus" -ge 1 ] || { say "nvidia-smi lists no GPU"; exit 2; }

example=$repo/kubernetes/examples/local/gpu-job.yaml
# A folder of its own for each check, the job's working folder (train.py resumes from a checkpoint
# there), with the example's script and the check's job.yaml, the example's unless given on stdin.
folder() {
  mkdir -p "$work/$1"
  cp "$repo/kubernetes/examples/local/train.py" "$work/$1/"
  if [ "${2:-}" = - ]; then cat >"$work/$1/job.yaml"; else cp "$example" "$work/$1/job.yaml"; fi
}
# The example cut to its master, renamed.
only_master() { sed -e '/^  - type: worker/,$d' -e "s/^  name: ddp-gpu\$/  name: $1/" "$example"; }
# The example with gloo on the GPU, renamed.
gloo_on_gpu() {
  sed -e 's/{name: BACKEND, value: nccl}/{name: BACKEND, value: gloo}\n          - {name: DEVICE, value: cuda}/' \
      -e "s/^  name: ddp-gpu\$/  name: $1/" "$example"
}
# The master alone made the one worker of a torchrun job, one process per GPU it is given.
torchrun_job() {
  only_master "$1" | sed -e 's/^  - type: master$/  - type: worker/' \
    -e 's/^spec:$/spec:\n  torchrunConfig: {enabled: true, maxRestarts: 0, procPerNode: gpu}/'
}
# The cuts follow the example's text: say so at once if it has changed under them.
if ! only_master cut | grep -q '^  name: cut$' || only_master cut | grep -q 'type: worker' \
  || [ "$(gloo_on_gpu cut | grep -c -e '{name: BACKEND, value: gloo}' -e '{name: DEVICE, value: cuda}')" != 4 ] \
  || [ "$(torchrun_job cut | grep -c -e '^  - type: worker$' -e '^  torchrunConfig: ')" != 2 ]; then
  say "$example no longer reads as this script cuts it (name ddp-gpu, master then worker, BACKEND nccl)"
  exit 2
fi

rows=()
failed=0
# check NAME EXPECTED_EXIT PATTERNS WHAT -- ARGS...: runs job.yaml in the check's folder; PATTERNS are
# extended regular expressions, one a line, that the output must each hold.
check() {
  local name=$1 expected=$2 patterns=$3 what=$4
  shift 5
  local start end code seconds verdict outcome held=yes pattern
  say "$name: $what"
  start=$(date +%s.%N)
  (cd "$work/$name" && timeout 300 "${operator[@]}" run job.yaml --metrics-port 0 "$@") >"$logs/$name.log" 2>&1
  code=$?
  end=$(date +%s.%N)
  seconds=$(awk "BEGIN { printf \"%.1f\", $end - $start }")
  outcome=$(grep -E '^\[local\] .* (Succeeded|Failed) in |^error: ' "$logs/$name.log" | tail -1 | cut -c1-160)
  while IFS= read -r pattern; do
    grep -qE -- "$pattern" "$logs/$name.log" || held="no /$pattern/"
  done <<<"$patterns"
  if [ "$code" = "$expected" ] && [ "$held" = yes ]; then
    verdict=as-expected
  else
    verdict="NOT as expected (exit $expected expected; $held)"
    failed=1
    say "$name went otherwise; its whole output:"
    cat "$logs/$name.log"
  fi
  rows+=("| $name | $what | $code | $seconds | $verdict | ${outcome//|/\\|} |")
}

only_master ddp-gpu-one | folder one -
check one 0 $'ddp-gpu-one Succeeded in \nall-reduce check: rank 0 of 1 got 1\n\\[ddp-gpu-one-master-0\\] given GPU 0 ' \
  "the example's master alone, 1 GPU, NCCL" --

folder example
if [ "$gpus" -eq 1 ]; then
  check example 2 '^error: .*/job.yaml: the job asks for 2 GPUs \(nvidia.com/gpu: ddp-gpu-master-0 1, ddp-gpu-worker-0 1\) and this machine has 1 GPU' \
    "the example as written, 2 replicas x 1 GPU, on 1 GPU" --
else
  check example 0 $'ddp-gpu Succeeded in \nall-reduce check: rank 1 of 2 got 3' "the example as written, 2 replicas x 1 GPU, NCCL" --
fi

gloo_on_gpu ddp-gpu-gloo | folder share-gloo -
check share-gloo 0 $'ddp-gpu-gloo Succeeded in \nall-reduce check: rank 1 of 2 got 3\ntraining on ' \
  "the example, --share-gpus, gloo on the GPU" -- --share-gpus

if [ "$gpus" -eq 1 ]; then
  folder share-nccl
  check share-nccl 1 $'ddp-gpu Failed in \nDuplicate GPU' "the example, --share-gpus, NCCL on 1 GPU" -- --share-gpus
fi

folder dry-run
check dry-run 0 $'ddp-gpu-master-0: GPU 0 .*CUDA_VISIBLE_DEVICES=GPU-\nddp-gpu-worker-0: GPU [0-9]+ .*CUDA_VISIBLE_DEVICES=GPU-' \
  "--dry-run --share-gpus of the example" -- --dry-run --share-gpus

if command -v torchrun >/dev/null; then
  torchrun_job ddp-gpu-torchrun | folder torchrun -
  check torchrun 0 $'ddp-gpu-torchrun Succeeded in \nall-reduce check: rank 0 of 1 got 1' \
    "torchrun, procPerNode gpu, 1 worker x 1 GPU, NCCL" --
else
  rows+=("| torchrun | torchrun, procPerNode gpu | - | - | skipped: no torchrun on PATH | |")
fi

grep -hE 'given GPU|training on|all-reduce check' "$logs/one.log" | sed 's/^/[gpu-check]   one: /'
echo
echo "| check | what | exit | s | verdict | the run's last line |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
say "logs: $logs"
exit $failed
