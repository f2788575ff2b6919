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
. "$(dirname "$0")/alternating_runs.sh"
run_one() {
  local extra=()
  [ "$1" = on ] && extra=(--timeline "$2.json")
  timeout -k 5 600 mpiexec -disable-auto-cleanup -n "$ranks" "$rudra" dist "$solver" --data "$data" --epochs "$epochs" "${opts[@]}" \
    "${extra[@]}" -o "$2" >"$2.log" 2>&1
}
alternate "$rounds" timeline off on
echo "trace of the last run: $(wc -c <"$work/$rounds-on.json") bytes, $(grep -c '"ph":"X"' "$work/$rounds-on.json") spans"
