#!/usr/bin/env bash
# The JPEG input pipeline side by side in one run: `rudra input` (libjpeg-turbo, --decode-threads
# T) against torchvision's DataLoader (PIL, num_workers T), on generated ImageNet-shaped JPEGs
# (tools/data/make_imagenet_like.py: about 500x375, quality 90), each image resized to 256x256,
# randomly cropped to 227, randomly mirrored and mean-subtracted; then the same from an LMDB of
# encoded 256x256 Datums (`rudra convert`), Caffe's own input form. Prints images/s and the ratio.
# Usage: bench/input_pipeline.sh [SET_DIR] (default /tmp/rudra-imagenet-like; made when absent)
#   IMAGES (default 4000), BATCH (64), BATCHES (30), THREADS ("1 2"), RUDRA (build/rudra)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/rudra-imagenet-like}
rudra=${RUDRA:-build/rudra}
images=${IMAGES:-4000}
batch=${BATCH:-64}
batches=${BATCHES:-30}
if [ ! -d "$dir/train" ]; then
  /usr/bin/python3 tools/data/make_imagenet_like.py "$dir" --train "$images" --val 0 --classes 100
fi
[ -d "$dir/lmdb256" ] || "$rudra" convert "$dir/train" "$dir/lmdb256" --resize-height 256 --resize-width 256 --encoded --shuffle
# Warm the page cache: both read the same files, and the LMDB's first timed pass would otherwise
# read it from disk.
cat "$dir"/train/*/* "$dir/lmdb256/data.mdb" >/dev/null
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $images JPEGs in $dir"
common=(--resize-height 256 --resize-width 256 --crop 227 --mirror --mean-value 104,117,123 --batch "$batch" --batches "$batches")
for t in ${THREADS:-1 2}; do
  r=$("$rudra" input "$dir/train" "${common[@]}" --decode-threads "$t" | grep -o '[0-9.]* images/s' | cut -d' ' -f1)
  l=$("$rudra" input "$dir/lmdb256" --crop 227 --mirror --mean-value 104,117,123 --batch "$batch" --batches "$batches" \
    --decode-threads "$t" | grep -o '[0-9.]* images/s' | cut -d' ' -f1)
  v=$(/usr/bin/python3 bench/input_torchvision.py "$dir/train" --workers "$t" --batch "$batch" --batches "$batches" |
    grep -o '[0-9.]* images/s' | cut -d' ' -f1)
  printf 'threads/workers %d: rudra JPEG folders %8.1f img/s, rudra LMDB (encoded 256x256) %8.1f img/s, torchvision %8.1f img/s: JPEG ratio %.2f\n' \
    "$t" "$r" "$l" "$v" "$(echo "$r / $v" | bc -l)"
done
