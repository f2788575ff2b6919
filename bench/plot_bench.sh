#!/usr/bin/env bash
# GFLOP/s against mini-batch from a `rudra bench --format csv` file, as small multiples (one panel
# per layer and pass, one line per backend, % of peak on the right axis): bench/plot_bench.py.
# Usage: bench/plot_bench.sh BENCH.csv OUT.png|OUT.svg
#   e.g. rudra bench --batch-file bench/cifar10_full_conv.txt --mb 1,2,4,8,16,32,64,128,256 \
#          --format csv -o conv.csv && bench/plot_bench.sh conv.csv conv.png
exec python3 "$(dirname "$0")/plot_bench.py" "$@"
