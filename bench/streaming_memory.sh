#!/usr/bin/env bash
# A reader's memory against its data set's size: Fashion-MNIST's first 15,000 and all 60,000
# training images as LMDBs of raw Datums and as PNG class folders (tools/data/export_idx.py), each
# read through once by `rudra input` (every sample decoded, batches of 64). Private memory
# (RssAnon) must not grow with the set; an LMDB's mapped pages (RssFile) are the page cache's, shared
# by the node's ranks. The IDX set, held in memory, for contrast.
# Usage: bench/streaming_memory.sh [WORK_DIR]   (default /tmp/rudra-streaming-memory)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/rudra-streaming-memory}
rudra=${RUDRA:-build/rudra}
fm=/usr/share/datasets/fashion-mnist
for n in 15000 60000; do
  [ -d "$work/$n/lmdb/train_raw" ] || /usr/bin/python3 tools/data/export_idx.py "$fm" "$work/$n" --limit-train "$n" \
    --limit-test 10 --forms png,lmdb >/dev/null
done
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for form in lmdb/train_raw png/train; do
  for n in 15000 60000; do
    printf '%-16s %6d images: %s\n' "$form" "$n" \
      "$("$rudra" input "$work/$n/$form" --batch 64 --batches $((n / 64)) | sed -n 's/^input: memory: //p')"
  done
done
printf '%-16s %6d images: %s\n' "IDX (in memory)" 60000 \
  "$("$rudra" input "$fm" --batch 64 --batches 937 | sed -n 's/^input: memory: //p')"
