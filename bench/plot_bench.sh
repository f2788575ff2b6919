#!/usr/bin/env bash
# GFLOP/s against mini-batch from a `rudra bench --format csv` file, one line per
# (layer, backend, pass), drawn with gnuplot into an SVG.
# Usage: bench/plot_bench.sh BENCH.csv OUT.svg
#   e.g. rudra bench --batch-file bench/cifar10_full_conv.txt --mb 1,2,4,8,16,32,64,128,256 \
#          --format csv -o conv.csv && bench/plot_bench.sh conv.csv conv.svg
set -euo pipefail
csv=${1:?usage: plot_bench.sh BENCH.csv OUT.svg}
out=${2:?usage: plot_bench.sh BENCH.csv OUT.svg}
command -v gnuplot >/dev/null || { echo "plot_bench: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 1; }
[ -s "$csv" ] || { echo "plot_bench: $csv is empty or missing" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One data file per series: name,backend,pass -> "mb gflops" rows sorted by mb.
awk -F, -v dir="$tmp" 'NR > 1 && $6 > 0 && $8 > 0 {
  name = ($2 != "" ? $2 : $1); gsub(/"/, "", name); key = name " " $3 " " $4
  gsub(/[^A-Za-z0-9_.:-]/, "_", key); print $6, $8 > (dir "/" key ".dat") }' "$csv"
plots=""
for f in "$tmp"/*.dat; do
  sort -n -o "$f" "$f"
  title=$(basename "$f" .dat | tr '_' ' ')
  plots+="${plots:+, }'$f' using 1:2 with linespoints title '$title'"
done
[ -n "$plots" ] || { echo "plot_bench: no convolution rows (mb > 0) in $csv" >&2; exit 1; }
gnuplot <<GP
set terminal svg size 1000,640 dynamic
set output '$out'
set logscale x 2
set xlabel 'mini-batch'
set ylabel 'GFLOP/s'
set key outside right
set grid
plot $plots
GP
echo "plot_bench: wrote $out"
