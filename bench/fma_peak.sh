#!/usr/bin/env bash
# The FMA loop's peak in GFLOP/s, as `rudra bench` measures it before its problems: the best of
# RUNS runs (a shared machine's neighbours pull single runs down).
# Usage: bench/fma_peak.sh RUDRA THREADS [RUNS (1)]
set -euo pipefail
for _ in $(seq "${3:-1}"); do
  OMP_NUM_THREADS=$2 "$1" bench mb1ic16ih8oc16oh8kh3ph1 --threads "$2" --backends own --passes fwd 2>&1 |
    sed -n 's/^peak (FMA loop.*): \([0-9.]*\) GFLOP\/s.*/\1/p' | head -1
done | sort -g | tail -1
