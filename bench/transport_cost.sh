#!/usr/bin/env bash
# What the fault-safe transport setting costs: the same short async run of `rudra dist` with
# UCX_RNDV_THRESH=inf (rudra's default: every message eager) and with UCX's own rendezvous
# (UCX_RNDV_THRESH=auto), alternated ROUNDS times in one session; prints the mean images/s of
# epochs 2.. of each run and the ratio.
# Usage: bench/transport_cost.sh RUDRA_BINARY DATA_DIR [RANKS=5] [ROUNDS=3] [EPOCHS=4]
set -euo pipefail
rudra=$1 data=$2 ranks=${3:-5} rounds=${4:-3} epochs=${5:-4}
solver=$(cd "$(dirname "$0")/.." && pwd)/models/cifar10_full_28/cifar10_full_28_solver.prototxt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
rate() {  # mean images/s after the first epoch
  grep -o '"images_per_s":[0-9.]*' "$1/metrics.jsonl" | tail -n +2 | cut -d: -f2 |
    awk '{ s += $1; n++ } END { printf "%.1f", n ? s / n : 0 }'
}
printf "%-8s %-22s %s\n" round UCX_RNDV_THRESH images/s
for r in $(seq "$rounds"); do
  for thresh in inf auto; do
    out=$work/$r-$thresh
    UCX_RNDV_THRESH=$thresh timeout -k 5 300 mpiexec -n "$ranks" "$rudra" dist "$solver" --data "$data" --batch 16 \
      --epochs "$epochs" --protocol async -o "$out" >"$out.log" 2>&1
    printf "%-8s %-22s %s\n" "$r" "$thresh" "$(rate "$out")"
    echo "$thresh $(rate "$out")" >>"$work/all"
  done
done
awk '{ s[$1] += $2; n[$1]++ } END { printf "mean: inf %.1f, auto %.1f images/s; inf/auto = %.3f\n",
  s["inf"] / n["inf"], s["auto"] / n["auto"], (s["inf"] / n["inf"]) / (s["auto"] / n["auto"]) }' "$work/all"
