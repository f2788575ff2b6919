#!/usr/bin/env bash
# Fashion-MNIST's real labels through the image paths against the IDX path: the whole set written
# as PNG and as JPEG (quality 90) class folders by tools/data/export_idx.py (PIL), each trained with
# models/cifar10_full_28 for EPOCHS epochs with the same seed as the IDX set, mean computed over
# each training set. Class folders hold the samples in another order than the IDX files, so the
# runs differ by the order of their batches as well as by the bytes (JPEG).
# Usage: bench/image_paths_accuracy.sh [WORK_DIR]   env: EPOCHS (3), SEED (1), RUDRA (build/rudra)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/rudra-image-paths}
rudra=${RUDRA:-build/rudra}
epochs=${EPOCHS:-3}
fm=/usr/share/datasets/fashion-mnist
solver=models/cifar10_full_28/cifar10_full_28_solver.prototxt
[ -d "$work/set/png/train" ] || /usr/bin/python3 tools/data/export_idx.py "$fm" "$work/set" --forms png,jpeg >/dev/null
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $epochs epochs, seed ${SEED:-1}"
for name in idx png jpeg; do
  case $name in idx) data=$fm ;; *) data=$work/set/$name ;; esac
  "$rudra" train "$solver" --data "$data" --epochs "$epochs" --seed "${SEED:-1}" --mean compute --overwrite \
    -o "$work/run-$name" >"$work/$name.log" 2>&1
  printf '%-5s %s\n' "$name" "$(grep -o 'test_accuracy [0-9.]*  test_loss [0-9.]*' "$work/$name.log" | tail -1)"
done
