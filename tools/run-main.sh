#!/usr/bin/env bash
# The main job on a fresh machine: set up, then train the 28x28 cifar10_full network on
# Fashion-MNIST with the parameter-server system on this machine: `tools/rudra-launch -n 6`
# (mpiexec -disable-auto-cleanup ... rudra dist), rank 0 the parameter server, rank 1 the
# statistics server, 4 learners of mini-batch 32 under hardsync (mu * lambda = 128), 10 epochs;
# the statistics server prints test accuracy every epoch and the final model lands in
# runs/fashion-mnist-dist/final.rudra (runs/fashion-mnist-dist-2, -3... when an earlier run is
# there: a run never replaces another's files).
#   bash tools/run-main.sh --single     the single-node job instead (`rudra train`, mini-batch 64)
# Other arguments go to `rudra dist` (or `rudra train`), e.g. --epochs 2 or -o DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
data=/usr/share/datasets/fashion-mnist
# The first of NAME, NAME-2, NAME-3... that holds no run (no metrics.jsonl, no .rudra file).
free_folder() {
  local name=$1 k=1 dir=$1
  while [ -e "$dir/metrics.jsonl" ] || compgen -G "$dir/*.rudra" >/dev/null; do
    k=$((k + 1)); dir=$name-$k
  done
  echo "$dir"
}
if [ "${1:-}" = --single ]; then
  shift
  exec build/rudra train models/cifar10_full_28/cifar10_full_28_solver.prototxt --data "$data" \
    -o "$(free_folder runs/fashion-mnist)" "$@"
fi
if [ ! -x build/rudra ] || ! build/rudra dist --help >/dev/null 2>&1; then
  echo "run-main: this build has no MPI (apt-get install mpich libmpich-dev); use --single" >&2
  exit 1
fi
# One OpenMP thread per rank: six ranks share this machine's cores. The ranks' output reaches the
# terminal through mpiexec's pipes, so the progress bar is asked for when this script has one.
progress=lines
[ -t 2 ] && progress=bar
OMP_NUM_THREADS=1 exec tools/rudra-launch -n 6 --progress "$progress" \
  models/cifar10_full_28/cifar10_full_28_b128_solver.prototxt --protocol hardsync --batch 32 --epochs 10 \
  --reference-batch 128 --data "$data" -o "$(free_folder runs/fashion-mnist-dist)" "$@"
