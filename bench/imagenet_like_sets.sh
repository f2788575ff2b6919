#!/usr/bin/env bash
# The ImageNet-shaped sets the AlexNet benchmarks train on, made once in DIR: 4,000 generated
# JPEGs of 100 classes (tools/data/make_imagenet_like.py), an LMDB of encoded 256x256 Datums
# (DIR/alexnet) and one of raw 256x256 Datums (DIR/alexnet_raw), each with the mean file and its
# validation LMDB a link to the training one, as models/alexnet's files name them.
# Usage: bench/imagenet_like_sets.sh DIR [RUDRA_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 rudra=${2:-$PWD/build/rudra}
[ -d "$dir/train" ] || /usr/bin/python3 tools/data/make_imagenet_like.py "$dir" --train 4000 --val 0 --classes 100
sets=$dir/alexnet
mkdir -p "$sets"
[ -d "$sets/ilsvrc12_train_lmdb" ] || "$rudra" convert "$dir/train" "$sets/ilsvrc12_train_lmdb" \
  --resize-height 256 --resize-width 256 --encoded --shuffle >/dev/null
[ -d "$dir/alexnet_raw/ilsvrc12_train_lmdb" ] || "$rudra" convert "$dir/train" "$dir/alexnet_raw/ilsvrc12_train_lmdb" \
  --resize-height 256 --resize-width 256 --shuffle >/dev/null
for d in "$sets" "$dir/alexnet_raw"; do
  [ -e "$d/ilsvrc12_val_lmdb" ] || ln -s ilsvrc12_train_lmdb "$d/ilsvrc12_val_lmdb"
  [ -s "$d/imagenet_mean.binaryproto" ] || "$rudra" mean "$sets/ilsvrc12_train_lmdb" "$d/imagenet_mean.binaryproto" >/dev/null
done
