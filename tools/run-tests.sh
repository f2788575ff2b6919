#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up, build, run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cd build
ctest --output-on-failure --timeout 1200
