#!/usr/bin/env bash
# Accuracy does not depend on the topology: 1-softsync with LAMBDA learners of mini-batch MU on
# Fashion-MNIST under base, adv and adv* (nodes of about 8 ranks, bench/adv_ranks.py), EPOCHS
# epochs, for each seed in SEEDS, topologies alternating within a seed; prints every run's test
# accuracy per epoch, then each topology's mean final accuracy and the spread over the seeds.
# Usage: bench/topology_accuracy.sh [RUDRA] [OUT]
#   env: LAMBDA (8), MU (16), EPOCHS (3), SEEDS ("1 2"), TOPOLOGIES ("base adv adv*"),
#        PROTOCOL_ARGS ("--protocol softsync --n 1"), DIST_ARGS (more `rudra dist` options)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
here=$src/bench
rudra=${1:-$src/build/rudra}
out=${2:-$src/runs/topology-accuracy}
lambda=${LAMBDA:-8}
mu=${MU:-16}
epochs=${EPOCHS:-3}
mkdir -p "$out"
solver=$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt
accs() { sed -n 's/.*"event":"epoch".*"test_accuracy":\([0-9.e-]*\).*/\1/p' "$1" | tr '\n' ' '; }
: >"$out/finals.txt"
for seed in ${SEEDS:-1 2}; do
  for topology in ${TOPOLOGIES:-base adv adv*}; do
    if [ "$topology" = base ]; then
      ranks=$((lambda + 2)) args=()
    else
      read -r ranks per_node < <(python3 "$here/adv_ranks.py" "$lambda")
      args=(--topology "$topology" --ranks-per-node "$per_node")
    fi
    name=${topology/\*/star}-seed$seed
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=1 mpiexec -disable-auto-cleanup -n "$ranks" "$rudra" dist "$solver" ${PROTOCOL_ARGS:---protocol softsync --n 1} \
      --batch "$mu" --epochs "$epochs" --seed "$seed" "${args[@]}" ${DIST_ARGS:-} -o "$out/$name" >"$out/$name.log" 2>&1
    a=$(accs "$out/$name/metrics.jsonl")
    printf '%-5s seed %-3s %3d ranks  test accuracy per epoch: %s\n' "$topology" "$seed" "$ranks" "$a"
    echo "$topology $a" | awk '{print $1, $NF}' >>"$out/finals.txt"
  done
done
awk '{ n[$1]++; s[$1] += $2; if (!($1 in lo) || $2 < lo[$1]) lo[$1] = $2; if ($2 > hi[$1]) hi[$1] = $2 }
     END { for (t in n) printf "%-5s final test accuracy: mean %.4f over %d seeds (%.4f to %.4f)\n", t, s[t] / n[t], n[t], lo[t], hi[t] }' \
  "$out/finals.txt"
