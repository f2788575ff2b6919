#!/usr/bin/env bash
# What the PS's receiving thread buys (`--ps-receive-ahead on`: the next gradient is taken out of
# MPI while the PS applies the last one) against the PS receiving each message itself (off): the
# same short async run of `rudra dist` on a large model (bench/wide_model.sh, WIDE outputs after
# pool3) with a small mini-batch, so that the PS is busy, alternated ROUNDS times in one session;
# prints the mean images/s of epochs 2.. of each run and the ratio on/off.
# Usage: bench/ps_receive_ahead.sh RUDRA_BINARY DATA_DIR [RANKS=6] [ROUNDS=3] [EPOCHS=3]
#   env: WIDE (4096), MU (8), TRAIN_LIMIT (1024), DIST_ARGS (more `rudra dist` options)
set -euo pipefail
rudra=$1 data=$2 ranks=${3:-6} rounds=${4:-3} epochs=${5:-3}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/alternating_runs.sh"
. "$here/wide_model.sh"
wide_model "$work" "${WIDE:-4096}"
run_one() {
  timeout -k 5 600 mpiexec -disable-auto-cleanup -n "$ranks" "$rudra" dist "$solver" --data "$data" --batch "${MU:-8}" \
    --train-limit "${TRAIN_LIMIT:-1024}" --test-limit 100 --epochs "$epochs" --protocol async \
    --ps-receive-ahead "$1" ${DIST_ARGS:-} -o "$2" >"$2.log" 2>&1
}
alternate "$rounds" --ps-receive-ahead off on
