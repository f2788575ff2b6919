#!/usr/bin/env bash
# The main job on a fresh machine: set up, then train the 28x28 cifar10_full network on
# Fashion-MNIST for 10 epochs, printing test accuracy every epoch. Extra arguments go to
# `rudra train` (for example --epochs 2 or -o DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
exec build/rudra train models/cifar10_full_28/cifar10_full_28_solver.prototxt \
  --data /usr/share/datasets/fashion-mnist -o runs/fashion-mnist "$@"
