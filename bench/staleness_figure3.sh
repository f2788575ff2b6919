#!/usr/bin/env bash
# Figure 3 of the paper: staleness of 1-, 2- and 30-softsync with 30 learners of mini-batch 4.
# Runs `mpiexec rudra dist` (PS, statistics server, 30 learners; under adv and adv* also a leaf
# PS per node of about 8 ranks, bench/adv_ranks.py) on Fashion-MNIST for one epoch of TRAIN_LIMIT
# images per protocol and topology, and prints, from each run's staleness.json, the mean, the
# maximum, the share of gradients with sigma <= 2n and sigma > 60, and the histogram.
# Usage: bench/staleness_figure3.sh [RUDRA] [OUT]
#   env: TRAIN_LIMIT (default 6000), NS (default "1 2 30"), TOPOLOGIES (default "base"; e.g.
#        "base adv*"), DIST_ARGS (more `rudra dist` options)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
out=${2:-$src/runs/figure3}
limit=${TRAIN_LIMIT:-6000}
mkdir -p "$out"
here=$(dirname "$0")
for topology in ${TOPOLOGIES:-base}; do
for n in ${NS:-1 2 30}; do
  name=softsync$n
  layout=(-n 32)
  if [ "$topology" != base ]; then
    read -r ranks per_node < <(python3 "$here/adv_ranks.py" 30)
    layout=(-n "$ranks")
    name=softsync$n-${topology/\*/star}
    topology_args=(--topology "$topology" --ranks-per-node "$per_node")
  else
    topology_args=()
  fi
  OMP_NUM_THREADS=1 mpiexec -disable-auto-cleanup "${layout[@]}" "$rudra" dist "$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt" \
    --protocol softsync --n "$n" --batch 4 --epochs 1 --train-limit "$limit" --test-limit 1000 --base-lr 0.005 \
    "${topology_args[@]}" ${DIST_ARGS:-} -o "$out/$name" >"$out/$name.log" 2>&1
  perl -MJSON::PP -e '
    my ($path, $n, $topology) = @ARGV; local $/; open(my $f, "<", $path) or die "$path: $!";
    my $s = decode_json(<$f>); my @h = @{$s->{histogram}}; my $total = $s->{gradients};
    my ($le, $gt60) = (0, 0);
    for my $i (0 .. $#h) { $le += $h[$i] if $i <= 2 * $n; $gt60 += $h[$i] if $i > 60; }
    printf "%-12s %-5s 30 learners  mean sigma %6.2f  max %4d  sigma<=2n %6.2f%%  sigma>60 %.2e  (%d gradients, %d updates)\n",
      $s->{protocol}, $topology, $s->{mean}, $s->{max}, 100 * $le / $total, $gt60 / $total, $total, $s->{updates};
    my $shown = join(" ", map { "$_:$h[$_]" } grep { $h[$_] } 0 .. $#h);
    print "                   histogram sigma:count  $shown\n";' "$out/$name/staleness.json" "$n" "$topology"
done
done
