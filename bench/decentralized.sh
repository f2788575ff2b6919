#!/usr/bin/env bash
# The decentralized study of "How to scale distributed deep learning?" on this machine: all-reduce,
# EASGD, gossip-pull, gossip-push and 1-softsync, at each learner count P and step size (base_lr),
# the same samples for every method; then, at the first P and step size, the same with one learner
# 3 times slower (--straggler). Writes OUT/runs/... (each run's metrics.jsonl and log),
# OUT/table.md (final test accuracy and time of each run, images/s with the straggler) and
# OUT/accuracy.png (test accuracy against epochs and against wall time; Debian's python3-matplotlib).
# Usage: bench/decentralized.sh RUDRA_BINARY DATA_DIR OUT [EPOCHS=10] [TRAIN_LIMIT=0 (all)]
#        environment: PS="8 16" (learner counts), LRS="0.05 0.005", TAU=4 (easgd, gossip), BATCH=16,
#        TEST_LIMIT=0 (test images per epoch; 0: all)
set -uo pipefail
rudra=$(readlink -f "$1") data=$2 out=$3 epochs=${4:-10} limit=${5:-0}
ps=${PS:-8 16} lrs=${LRS:-0.05 0.005} tau=${TAU:-4} batch=${BATCH:-16}
here=$(cd "$(dirname "$0")" && pwd)
solver=$here/../models/cifar10_full_28/cifar10_full_28_solver.prototxt
methods="allreduce easgd gossip-pull gossip-push softsync"
mkdir -p "$out/runs"
export OMP_NUM_THREADS=1
run() {  # run DIR METHOD P LR [ARGS...]: one run; ranks: P learners + the statistics server (+ a PS)
  local dir=$1 method=$2 p=$3 lr=$4; shift 4
  local ranks=$((p + 1)) extra=()
  case $method in
    softsync) ranks=$((p + 2)); extra=(--n 1) ;;
    easgd) ranks=$((p + 2)); extra=(--tau "$tau") ;;
    gossip-*) extra=(--tau "$tau") ;;
  esac
  rm -rf "$dir"
  timeout -k 10 3600 mpiexec -disable-auto-cleanup -n "$ranks" "$rudra" dist "$solver" --data "$data" --train-limit "$limit" \
    --test-limit "${TEST_LIMIT:-0}" --protocol "$method" "${extra[@]}" --base-lr "$lr" --batch "$batch" --epochs "$epochs" --wait-sleep-us 2000 \
    -o "$dir" "$@" >"$dir.log" 2>&1 || echo "decentralized: $dir failed (exit $?), see $dir.log" >&2
}
last() {  # last DIR FIELD: the field of the last epoch line
  grep '"event":"epoch"' "$1/metrics.jsonl" 2>/dev/null | tail -1 | grep -o "\"$2\":[-0-9.e]*" | cut -d: -f2
}
rate() {  # mean images/s of the epochs after the first
  grep -o '"images_per_s":[0-9.]*' "$1/metrics.jsonl" 2>/dev/null | tail -n +2 | cut -d: -f2 |
    awk '{ s += $1; n++ } END { printf "%.0f", n ? s / n : 0 }'
}
{
  echo "| method | P | base_lr | test accuracy | test loss | time (s) | images/s | spread |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$out/table.md"
for p in $ps; do
  for lr in $lrs; do
    for m in $methods; do
      dir=$out/runs/p$p-lr$lr-$m
      run "$dir" "$m" "$p" "$lr"
      echo "| $m | $p | $lr | $(last "$dir" test_accuracy) | $(last "$dir" test_loss) | $(last "$dir" elapsed_s) | $(rate "$dir") | $(last "$dir" spread) |" |
        tee -a "$out/table.md"
    done
  done
done
p=${ps%% *} lr=${lrs%% *}
{
  echo
  echo "With learner rank 2 computing 3 times slower (--straggler 2:3), P = $p, base_lr $lr:"
  echo
  echo "| method | images/s | without the straggler | ratio |"
  echo "|---|---|---|---|"
} >>"$out/table.md"
for m in allreduce gossip-push softsync; do
  dir=$out/runs/straggler-p$p-lr$lr-$m
  run "$dir" "$m" "$p" "$lr" --straggler 2:3
  with=$(rate "$dir") without=$(rate "$out/runs/p$p-lr$lr-$m")
  echo "| $m | $with | $without | $(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.2f", b ? a / b : 0 }') |" |
    tee -a "$out/table.md"
done
/usr/bin/python3 "$here/plot_decentralized.py" "$out" || echo "decentralized: no plot (apt-get install python3-matplotlib)" >&2
