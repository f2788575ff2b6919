#!/usr/bin/env bash
# Caffe's cifar10_full trained in PyTorch and in rudra at the same mini-batch and thread count,
# alternating in one run (ROUNDS rounds, the best of each kept), printing images/s of both and
# the ratio. MODE=time: rudra runs `rudra time` (forward + backward per layer; the SGD step of
# 89,578 parameters is negligible). MODE=train: rudra runs `rudra train` for one epoch of a
# generated CIFAR-10-format set (mini-batch x 2 x the iterations below, random pixels), so that
# the data reader, its prefetching thread and the solver are in the figure; images/s is its epoch
# line's. PyTorch runs the same step on tensors already in memory either way.
# To measure an AVX2-only machine on an AVX-512 one: RUDRA_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2
# ATEN_CPU_CAPABILITY=avx2 (exported, they reach both).
# Needs python3-torch (an optional dependency of this benchmark only: apt-get install python3-torch).
# Usage: bench/pytorch_compare.sh [RUDRA]   env: MODE (time or train), BATCHES ("1 4 16 128"),
#        THREADS (2), ROUNDS (3), CONV_BACKENDS ("own onednn auto")
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
python=${PYTHON:-/usr/bin/python3}  # Debian's python3-torch is for the system Python
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "pytorch_compare: python3-torch is not installed for $python (apt-get install python3-torch)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mode=${MODE:-time}
case "$mode" in time | train) ;; *) echo "pytorch_compare: MODE must be time or train, not '$mode'" >&2; exit 2 ;; esac
iters() { if [ "$1" -ge 64 ]; then echo 5; elif [ "$1" -ge 16 ]; then echo 20; else echo 100; fi; }
# A CIFAR-10 binary set of $1 training images and 100 test images, in directory $2.
make_cifar() {
  mkdir -p "$2"
  "$python" - "$1" "$2" <<'PY'
import os, sys
n, d = int(sys.argv[1]), sys.argv[2]
for name, count in (("data_batch_1.bin", n), ("test_batch.bin", 100)):
    with open(os.path.join(d, name), "wb") as f:
        for i in range(count):
            f.write(bytes([i % 10]) + os.urandom(3072))
PY
}
rudra_images_per_s() {  # mb backend
  if [ "$mode" = time ]; then
    OMP_NUM_THREADS=$threads "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" --batch "$1" \
      --iterations "$(iters "$1")" --conv-backend "$2" --json "$tmp/r.json" >/dev/null
    sed 's/.*"images_per_s":\([0-9.e+]*\).*/\1/' "$tmp/r.json"
  else
    rm -rf "$tmp/out"
    "$rudra" train "$src/models/cifar10_full/cifar10_full_solver.prototxt" --data "$tmp/cifar$1" --batch "$1" \
      --epochs 1 --threads "$threads" --conv-backend "$2" -o "$tmp/out" --overwrite >/dev/null
    grep '"event":"epoch"' "$tmp/out/metrics.jsonl" | tail -1 | sed 's/.*"images_per_s":\([0-9.e+]*\).*/\1/'
  fi
}
best() { sort -g | tail -1; }
echo "mode $mode, $threads threads"
printf '%-6s %-10s %14s %14s %8s\n' "batch" "rudra conv" "PyTorch img/s" "rudra img/s" "ratio"
for mb in ${BATCHES:-1 4 16 128}; do
  [ "$mode" = train ] && make_cifar $((mb * 2 * $(iters "$mb"))) "$tmp/cifar$mb"
  for be in ${CONV_BACKENDS:-own onednn auto}; do
    : >"$tmp/torch" ; : >"$tmp/rudra"
    for ((r = 0; r < rounds; r++)); do
      OMP_NUM_THREADS=$threads "$python" "$src/bench/pytorch_cifar10_full.py" --batch "$mb" --threads "$threads" \
        --iterations "$(iters "$mb")" | sed 's/.*"images_per_s": \([0-9.]*\).*/\1/' >>"$tmp/torch"
      rudra_images_per_s "$mb" "$be" >>"$tmp/rudra"
    done
    t=$(best <"$tmp/torch"); m=$(best <"$tmp/rudra")
    printf '%-6s %-10s %14.0f %14.0f %8.2f\n' "$mb" "$be" "$t" "$m" "$(awk -v a="$m" -v b="$t" 'BEGIN { print a / b }')"
  done
done
