#!/usr/bin/env bash
# AlexNet training (models/alexnet, Caffe's single-column net) side by side in one run, at each
# mini-batch: `rudra train` fed by the JPEG pipeline (an LMDB of encoded 256x256 Datums, random
# crop 227, mirror, mean file), `rudra train` fed by raw 256x256 Datums of the same images (no
# decoding: the "in-memory" reference, its pages in the page cache), and PyTorch 1.13 training
# the same net on tensors in memory (bench/pytorch_alexnet.py). Each figure is images/s over the
# timed iterations; the fraction of the FLOP limit takes 4.1 GFLOP per image for a training step
# (1.45 forward) against the peak `rudra bench` measures on this machine.
# Usage: bench/alexnet_train.sh [SET_DIR]   (default /tmp/rudra-imagenet-like; made when absent)
#   BATCHES ("32 64 128"), ITERATIONS (6), THREADS (2), DECODE_THREADS (1), RUDRA (build/rudra),
#   CONV_BACKEND (own; auto: each layer's fastest of own, BLIS and oneDNN, measured once)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/rudra-imagenet-like}
rudra=${RUDRA:-$PWD/build/rudra}
threads=${THREADS:-2}
iterations=${ITERATIONS:-6}
bench/imagenet_like_sets.sh "$dir" "$rudra"
sets=$dir/alexnet
cat "$sets/ilsvrc12_train_lmdb/data.mdb" "$dir/alexnet_raw/ilsvrc12_train_lmdb/data.mdb" >/dev/null
peak=$(bench/fma_peak.sh "$rudra" "$threads")
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads threads; measured peak $(printf %.0f "$peak") GFLOP/s"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# images/s of a `rudra train` epoch of ITERATIONS iterations (its first iteration excluded: the
# epoch line's rate counts from the start, so two runs are subtracted: N+1 and 1 iterations).
# With --conv-backend auto a first 1-iteration run measures the layers (cached) and is not counted.
rudra_ips() {  # rudra_ips DATA_DIR BATCH
  local t=() n backend=${CONV_BACKEND:-own}
  for n in $([ "$backend" = own ] || echo 0) 1 $((iterations + 1)); do
    OMP_NUM_THREADS=$threads "$rudra" train models/alexnet/alexnet_paper_solver.prototxt --data "$1" --batch "$2" \
      --train-limit $(($2 * (n > 0 ? n : 1))) --test-limit 1 --epochs 1 --decode-threads "${DECODE_THREADS:-1}" \
      --conv-backend "$backend" --overwrite -o "$tmp/run" >"$tmp/log" 2>&1 || { tail -3 "$tmp/log" >&2; return 1; }
    [ "$n" -gt 0 ] && t+=("$(grep '"event":"epoch"' "$tmp/run/metrics.jsonl" | /usr/bin/python3 -c 'import json,sys; e=json.loads(sys.stdin.read()); print(e["elapsed_s"])')")
  done
  echo "$iterations * $2 / (${t[1]} - ${t[0]})" | bc -l
}
for b in ${BATCHES:-32 64 128}; do
  jpeg=$(rudra_ips "$sets" "$b")
  raw=$(rudra_ips "$dir/alexnet_raw" "$b")
  torch=$(/usr/bin/python3 bench/pytorch_alexnet.py --batch "$b" --threads "$threads" --iterations "$iterations" |
    /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["images_per_s"])')
  printf 'mb %3d: rudra JPEG pipeline %6.1f img/s (%4.1f%% of the FLOP limit), rudra raw input %6.1f (JPEG/raw %.3f), PyTorch %6.1f: rudra/PyTorch %.2f\n' \
    "$b" "$jpeg" "$(echo "$jpeg * 4.1 * 100 / $peak" | bc -l)" "$raw" "$(echo "$jpeg / $raw" | bc -l)" "$torch" \
    "$(echo "$jpeg / $torch" | bc -l)"
done
