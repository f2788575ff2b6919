#!/usr/bin/env bash
# Installs what rudra needs from Debian's archive (only what is missing), then configures and
# builds into build/. Safe to run again: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake make pkg-config perl
  libblis-openmp-dev libdnnl-dev mpich libmpich-dev libhwloc-dev hwloc
  doctest-dev libcli11-dev nlohmann-json3-dev zlib1g-dev liblmdb-dev libjpeg62-turbo-dev libpng-dev
  dataset-fashion-mnist
  python3 python3-matplotlib python3-pil python3-lmdb
  iproute2
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q || echo "setup: apt-get update reported errors; trying the install anyway"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
