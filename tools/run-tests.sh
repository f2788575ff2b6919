#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up, build, run every test with ctest, then the
# POWER9/POWER10 build's kernel and layer tests under emulation (tools/power-ci.sh; skipped
# with RUDRA_SKIP_POWER=1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
(cd build && ctest --output-on-failure --timeout 1200)
if [ "${RUDRA_SKIP_POWER:-0}" != 1 ]; then
  bash tools/power-ci.sh
fi
