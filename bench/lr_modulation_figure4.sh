#!/usr/bin/env bash
# Figure 4 of the paper: 30-softsync with 30 learners of mini-batch 4, once with the plain
# learning rate alpha0 and once with alpha0 / <sigma>, on Fashion-MNIST. Prints the test
# accuracy after each epoch of TRAIN_LIMIT images for both runs.
# Usage: bench/lr_modulation_figure4.sh [RUDRA] [OUT]
#   env: TRAIN_LIMIT (default 12000), EPOCHS (3), BASE_LR (alpha0, 0.005: a rate suited to mu = 4),
#        DIST_ARGS (more `rudra dist` options, e.g. --wait-sleep-us 200)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
out=${2:-$src/runs/figure4}
mkdir -p "$out"
for mod in none average; do
  OMP_NUM_THREADS=1 mpiexec -disable-auto-cleanup -n 32 "$rudra" dist "$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt" \
    --protocol softsync --n 30 --batch 4 --epochs "${EPOCHS:-3}" --train-limit "${TRAIN_LIMIT:-12000}" \
    --base-lr "${BASE_LR:-0.005}" --lr-modulation "$mod" ${DIST_ARGS:-} -o "$out/$mod" >"$out/$mod.log" 2>&1
  label=$([ "$mod" = none ] && echo "alpha0         " || echo "alpha0/<sigma> ")
  accs=$(sed -n 's/.*"event":"epoch".*"test_accuracy":\([0-9.e-]*\).*/\1/p' "$out/$mod/metrics.jsonl" | tr '\n' ' ')
  stale=$(sed -n 's/.*"staleness_mean":\([0-9.e-]*\).*/\1/p' "$out/$mod/metrics.jsonl" | tail -1)
  echo "30-softsync, 30 learners, mu 4, $label test accuracy per epoch: $accs (mean staleness $stale)"
done
