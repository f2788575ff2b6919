#!/usr/bin/env bash
# Table II's effect: with the same mu * lambda, hardsync, 1-softsync and lambda-softsync reach
# about the test accuracy of one learner of mini-batch mu * lambda. Runs the single-learner
# baseline (`rudra train --batch MU*LAMBDA`) and the three protocols (`mpiexec -disable-auto-cleanup -n LAMBDA+2 rudra
# dist --batch MU`) on Fashion-MNIST with the same rates and schedule (the b128 solver: 10 epochs,
# the rate divided by 10 after epochs 6 and 8), and prints the test accuracy after every epoch.
# Usage: bench/protocols_table2.sh [RUDRA] [OUT]   env: LAMBDA (4), MU (32), EPOCHS (10), RUNS
# (which runs, default "baseline hardsync 1-softsync lambda-softsync"), DIST_ARGS (extra dist
# options), SOLVER (default the b128 solver; cifar10_full_28_b128_e20_solver.prototxt runs 20
# epochs), WARM=1 (the softsync runs go on from one epoch of hardsync, as in the paper)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
out=${2:-$src/runs/table2}
lambda=${LAMBDA:-4}
mu=${MU:-32}
epochs=${EPOCHS:-10}
runs=${RUNS:-baseline hardsync 1-softsync lambda-softsync}
big=$((lambda * mu))
solver=${SOLVER:-$src/models/cifar10_full_28/cifar10_full_28_b128_solver.prototxt}
mkdir -p "$out"
accs() { sed -n 's/.*"event":"epoch".*"test_accuracy":\([0-9.e-]*\).*/\1/p' "$1" | tr '\n' ' '; }

want() { case " $runs " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

if want baseline; then
  "$rudra" train "$solver" --batch "$big" --epochs "$epochs" --threads 2 -o "$out/baseline" >"$out/baseline.log" 2>&1
  printf '%-26s test accuracy per epoch: %s\n' "baseline mu=$big lambda=1" "$(accs "$out/baseline/metrics.jsonl")"
fi
for run in "hardsync:hardsync:--protocol hardsync" "1-softsync:1-softsync:--protocol softsync --n 1" \
           "lambda-softsync:$lambda-softsync:--protocol softsync --n $lambda"; do
  key=${run%%:*}; rest=${run#*:}; name=${rest%%:*}; args=${rest#*:}
  want "$key" || continue
  warm=()
  if [ "${WARM:-0}" = 1 ] && [ "$key" != hardsync ]; then
    if [ ! -s "$out/hardsync-1epoch/final.rudra" ]; then
      # shellcheck disable=SC2086
      OMP_NUM_THREADS=1 mpiexec -disable-auto-cleanup -n $((lambda + 2)) "$rudra" dist "$solver" --protocol hardsync --batch "$mu" --epochs 1 \
        --reference-batch "$big" -o "$out/hardsync-1epoch" >"$out/hardsync-1epoch.log" 2>&1
    fi
    warm=(--warm-start "$out/hardsync-1epoch/final.rudra")
  fi
  # --reference-batch makes the hardsync scale sqrt(lambda*mu/B) 1 and puts the solver's schedule
  # on the baseline's iterations, so every run uses the baseline's rates.
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 mpiexec -disable-auto-cleanup -n $((lambda + 2)) "$rudra" dist "$solver" $args --batch "$mu" --epochs "$epochs" \
    --reference-batch "$big" ${DIST_ARGS:-} "${warm[@]}" -o "$out/$name" >"$out/$name.log" 2>&1
  stale=$(sed -n 's/.*"staleness_mean":\([0-9.e-]*\).*/\1/p' "$out/$name/metrics.jsonl" | tail -1)
  printf '%-26s test accuracy per epoch: %s (mean staleness %s)\n' "$name mu=$mu lambda=$lambda" \
    "$(accs "$out/$name/metrics.jsonl")" "$stale"
done
