#!/usr/bin/env bash
# What the fault-safe transport setting costs: the same short async run of `rudra dist` with
# UCX's own rendezvous (UCX_RNDV_THRESH=auto) and with UCX_RNDV_THRESH=inf (rudra's default:
# every message eager), alternated ROUNDS times in one session; prints the mean images/s of
# epochs 2.. of each run and the ratio inf/auto.
# Usage: bench/transport_cost.sh RUDRA_BINARY DATA_DIR [RANKS=5] [ROUNDS=3] [EPOCHS=4]
set -euo pipefail
rudra=$1 data=$2 ranks=${3:-5} rounds=${4:-3} epochs=${5:-4}
. "$(dirname "$0")/alternating_runs.sh"
run_one() {
  UCX_RNDV_THRESH=$1 timeout -k 5 300 mpiexec -disable-auto-cleanup -n "$ranks" "$rudra" dist "$solver" --data "$data" --batch 16 \
    --epochs "$epochs" --protocol async -o "$2" >"$2.log" 2>&1
}
alternate "$rounds" UCX_RNDV_THRESH auto inf
