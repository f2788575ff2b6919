#!/usr/bin/env bash
# Table II's effect: with the same mu * lambda, hardsync, 1-softsync and lambda-softsync reach
# about the test accuracy of one learner of mini-batch mu * lambda. Runs the single-learner
# baseline (`rudra train --batch MU*LAMBDA`) and the three protocols (`mpiexec -n LAMBDA+2 rudra
# dist --batch MU`) on Fashion-MNIST for EPOCHS epochs with the same base rate, and prints the
# test accuracy after every epoch.
# Usage: bench/protocols_table2.sh [RUDRA] [OUT]   env: LAMBDA (4), MU (32), EPOCHS (5)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
out=${2:-$src/runs/table2}
lambda=${LAMBDA:-4}
mu=${MU:-32}
epochs=${EPOCHS:-5}
big=$((lambda * mu))
solver=$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt
mkdir -p "$out"
accs() { sed -n 's/.*"event":"epoch".*"test_accuracy":\([0-9.e-]*\).*/\1/p' "$1" | tr '\n' ' '; }

"$rudra" train "$solver" --batch "$big" --epochs "$epochs" --threads 2 -o "$out/baseline" >"$out/baseline.log" 2>&1
printf '%-26s test accuracy per epoch: %s\n' "baseline mu=$big lambda=1" "$(accs "$out/baseline/metrics.jsonl")"
for run in "hardsync:--protocol hardsync" "1-softsync:--protocol softsync --n 1" \
           "$lambda-softsync:--protocol softsync --n $lambda"; do
  name=${run%%:*}
  # --reference-batch makes the hardsync scale sqrt(lambda*mu/B) 1 and puts the solver's schedule
  # on the baseline's iterations, so every run uses the baseline's rates.
  OMP_NUM_THREADS=1 mpiexec -n $((lambda + 2)) "$rudra" dist "$solver" ${run#*:} --batch "$mu" --epochs "$epochs" \
    --reference-batch "$big" -o "$out/$name" >"$out/$name.log" 2>&1
  stale=$(sed -n 's/.*"staleness_mean":\([0-9.e-]*\).*/\1/p' "$out/$name/metrics.jsonl" | tail -1)
  printf '%-26s test accuracy per epoch: %s (mean staleness %s)\n' "$name mu=$mu lambda=$lambda" \
    "$(accs "$out/$name/metrics.jsonl")" "$stale"
done
