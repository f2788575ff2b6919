#!/usr/bin/env bash
# Images/s of `rudra train` with Caffe's cifar10_full (32x32x3) at several mini-batch sizes, on
# CIFAR-10-format binary files generated here (random pixels: the speed does not depend on
# them). Prints one line per mini-batch and writes JSON lines to OUT/throughput.jsonl.
# Usage: bench/train_throughput.sh [RUDRA] [OUT] [BATCHES...]   (default batches: 128 4)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
out=${2:-$src/runs/throughput}
shift $(( $# > 2 ? 2 : $# ))
batches=("$@")
[ ${#batches[@]} -gt 0 ] || batches=(128 4)
images=${IMAGES:-6400}   # training images per run
threads=${THREADS:-2}

mkdir -p "$out/data"
perl -e 'srand(1); for my $f (@ARGV) { my ($name, $n) = split /:/, $f;
  open(my $o, ">", $name) or die; binmode $o;
  for (1 .. $n) { print $o chr(int(rand(10))), join("", map { chr(int(rand(256))) } 1 .. 3072) } }' \
  "$out/data/data_batch_1.bin:$images" "$out/data/test_batch.bin:200"
: >"$out/throughput.jsonl"
for mb in "${batches[@]}"; do
  "$rudra" train "$src/models/cifar10_full/cifar10_full_solver.prototxt" --data "$out/data" \
    --batch "$mb" --epochs 1 --threads "$threads" -o "$out/mb$mb" >"$out/mb$mb.log" 2>&1
  ips=$(sed -n 's/.*"images_per_s":\([0-9.]*\).*/\1/p' "$out/mb$mb/metrics.jsonl" | tail -1)
  printf 'cifar10_full 32x32x3  mini-batch %4d  threads %d  %8.1f images/s\n' "$mb" "$threads" "$ips"
  printf '{"bench":"train_throughput","net":"cifar10_full","batch":%d,"threads":%d,"images_per_s":%s}\n' \
    "$mb" "$threads" "$ips" >>"$out/throughput.jsonl"
done
