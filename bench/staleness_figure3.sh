#!/usr/bin/env bash
# Figure 3 of the paper: staleness of 1-, 2- and 30-softsync with 30 learners of mini-batch 4.
# Runs `mpiexec -n 32 rudra dist` (PS, statistics server, 30 learners) on Fashion-MNIST for one
# epoch of TRAIN_LIMIT images per protocol and prints, from each run's staleness.json, the mean,
# the maximum, the share of gradients with sigma <= 2n and sigma > 60, and the histogram.
# Usage: bench/staleness_figure3.sh [RUDRA] [OUT]
#   env: TRAIN_LIMIT (default 6000), NS (default "1 2 30"), DIST_ARGS (more `rudra dist` options)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
out=${2:-$src/runs/figure3}
limit=${TRAIN_LIMIT:-6000}
mkdir -p "$out"
for n in ${NS:-1 2 30}; do
  OMP_NUM_THREADS=1 mpiexec -n 32 "$rudra" dist "$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt" \
    --protocol softsync --n "$n" --batch 4 --epochs 1 --train-limit "$limit" --test-limit 1000 --base-lr 0.005 \
    ${DIST_ARGS:-} -o "$out/softsync$n" >"$out/softsync$n.log" 2>&1
  perl -MJSON::PP -e '
    my ($path, $n) = @ARGV; local $/; open(my $f, "<", $path) or die "$path: $!";
    my $s = decode_json(<$f>); my @h = @{$s->{histogram}}; my $total = $s->{gradients};
    my ($le, $gt60) = (0, 0);
    for my $i (0 .. $#h) { $le += $h[$i] if $i <= 2 * $n; $gt60 += $h[$i] if $i > 60; }
    printf "%-12s 30 learners  mean sigma %6.2f  max %4d  sigma<=2n %6.2f%%  sigma>60 %.2e  (%d gradients, %d updates)\n",
      $s->{protocol}, $s->{mean}, $s->{max}, 100 * $le / $total, $gt60 / $total, $total, $s->{updates};
    my $shown = join(" ", map { "$_:$h[$_]" } grep { $h[$_] } 0 .. $#h);
    print "             histogram sigma:count  $shown\n";' "$out/softsync$n/staleness.json" "$n"
done
