#!/usr/bin/env bash
# What --timeline costs: the same short run of `rudra dist` without and with --timeline,
# alternated ROUNDS times in one session; prints the mean images/s of epochs 2.. of each run, the
# ratio, and the size of the trace. Off, a span is one null-pointer test.
# Usage: bench/timeline_cost.sh RUDRA_BINARY DATA_DIR [RANKS=5] [ROUNDS=3] [EPOCHS=4] [rudra dist options...]
#        (default options: --protocol softsync --n 1 --mode overlap --batch 16)
set -euo pipefail
rudra=$1 data=$2 ranks=${3:-5} rounds=${4:-3} epochs=${5:-4}
shift $(($# < 5 ? $# : 5))
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(--protocol softsync --n 1 --mode overlap --batch 16)
solver=$(cd "$(dirname "$0")/.." && pwd)/models/cifar10_full_28/cifar10_full_28_solver.prototxt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
rate() {  # mean images/s after the first epoch
  grep -o '"images_per_s":[0-9.]*' "$1/metrics.jsonl" | tail -n +2 | cut -d: -f2 |
    awk '{ s += $1; n++ } END { printf "%.1f", n ? s / n : 0 }'
}
printf "%-8s %-10s %s\n" round timeline images/s
for r in $(seq "$rounds"); do
  for mode in off on; do
    out=$work/$r-$mode extra=()
    [ "$mode" = on ] && extra=(--timeline "$out.json")
    timeout -k 5 600 mpiexec -n "$ranks" "$rudra" dist "$solver" --data "$data" --epochs "$epochs" "${opts[@]}" \
      "${extra[@]}" -o "$out" >"$out.log" 2>&1
    printf "%-8s %-10s %s\n" "$r" "$mode" "$(rate "$out")"
    echo "$mode $(rate "$out")" >>"$work/all"
  done
done
awk '{ s[$1] += $2; n[$1]++ } END { printf "mean: off %.1f, on %.1f images/s; on/off = %.3f\n",
  s["off"] / n["off"], s["on"] / n["on"], (s["on"] / n["on"]) / (s["off"] / n["off"]) }' "$work/all"
echo "trace of the last run: $(wc -c <"$work/$rounds-on.json") bytes, $(grep -c '"ph":"X"' "$work/$rounds-on.json") spans"
