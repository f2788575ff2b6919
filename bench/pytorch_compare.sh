#!/usr/bin/env bash
# Caffe's cifar10_full trained in PyTorch and in rudra at the same mini-batch and thread count,
# alternating in one run (ROUNDS rounds, the best of each kept), printing images/s of both and
# the ratio. rudra runs `rudra time` (forward + backward per layer; the SGD step of 89,578
# parameters is negligible) with the given convolution backend.
# Needs python3-torch (an optional dependency of this benchmark only: apt-get install python3-torch).
# Usage: bench/pytorch_compare.sh [RUDRA]   env: BATCHES ("1 4 16 128"), THREADS (2), ROUNDS (3),
#        CONV_BACKENDS ("own onednn auto")
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
iters() { if [ "$1" -ge 64 ]; then echo 5; elif [ "$1" -ge 16 ]; then echo 20; else echo 100; fi; }
best() { sort -g | tail -1; }
printf '%-6s %-10s %14s %14s %8s\n' "batch" "rudra conv" "PyTorch img/s" "rudra img/s" "ratio"
for mb in ${BATCHES:-1 4 16 128}; do
  for be in ${CONV_BACKENDS:-own onednn auto}; do
    : >"$tmp/torch" ; : >"$tmp/rudra"
    for ((r = 0; r < rounds; r++)); do
      OMP_NUM_THREADS=$threads "$python" "$src/bench/pytorch_cifar10_full.py" --batch "$mb" --threads "$threads" \
        --iterations "$(iters "$mb")" | sed 's/.*"images_per_s": \([0-9.]*\).*/\1/' >>"$tmp/torch"
      OMP_NUM_THREADS=$threads "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" --batch "$mb" \
        --iterations "$(iters "$mb")" --conv-backend "$be" --json "$tmp/r.json" >/dev/null
      sed 's/.*"images_per_s":\([0-9.e+]*\).*/\1/' "$tmp/r.json" >>"$tmp/rudra"
    done
    t=$(best <"$tmp/torch"); m=$(best <"$tmp/rudra")
    printf '%-6s %-10s %14.0f %14.0f %8.2f\n' "$mb" "$be" "$t" "$m" "$(awk -v a="$m" -v b="$t" 'BEGIN { print a / b }')"
  done
done
