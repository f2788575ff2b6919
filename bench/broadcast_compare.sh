#!/usr/bin/env bash
# adv*'s two ways of broadcasting the weights, point-to-point forwarding and MPI_Ibcast, side by
# side (bench/src/broadcast_bench.cpp) for a few message sizes and learner counts.
# Usage: bench/broadcast_compare.sh [BUILD_DIR]
#   env: SIZES (bytes, default "1048576 16777216 67108864"), LEARNERS ("8 16"), VERSIONS (20),
#        FANOUT (2), ROUNDS (3)
set -euo pipefail
build=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
for learners in ${LEARNERS:-8 16}; do
  for bytes in ${SIZES:-1048576 16777216 67108864}; do
    OMP_NUM_THREADS=1 timeout -k 5 600 mpiexec -n $((learners + 1)) "$build/bench/broadcast_bench" "$bytes" \
      "${VERSIONS:-20}" "${FANOUT:-2}" "${ROUNDS:-3}"
  done
done
