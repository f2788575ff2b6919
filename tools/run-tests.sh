#!/usr/bin/env bash
# The whole test suite on a fresh machine: set up, build, run every test with ctest (the kernel
# and layer tests once per ISA level and once as an AVX2-only CPU under qemu among them), then
# the Slurm batch script under a one-node Slurm (test/slurm_test.sh) and across the emulated
# cluster's nodes (test/slurm_vcluster_test.sh), the unit tests under
# sanitizers (tools/sanitize.sh; skipped with RUDRA_SKIP_SANITIZE=1), then the POWER build's
# kernel and layer tests under emulation (tools/power-ci.sh; skipped with RUDRA_SKIP_POWER=1).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's time, so that a CI log shows where its 90 minutes went.
stage_start=$SECONDS
stage_took() { echo "run-tests: $1 took $((SECONDS - stage_start)) s"; stage_start=$SECONDS; }
# The tests alone need qemu-user-static (x86-64 code run as an AVX2-only CPU; the POWER tests).
# Installed before configuring, so that CMake adds the emulated tests.
if ! dpkg-query -W -f='${Status}' qemu-user-static 2>/dev/null | grep -q "install ok installed"; then
  echo "run-tests: installing qemu-user-static"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q || echo "run-tests: apt-get update reported errors; trying the install anyway"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends qemu-user-static
fi
bash tools/setup.sh
stage_took "setup and build"
(cd build && ctest --output-on-failure --timeout 1200)
stage_took ctest
# The Slurm batch script's time-limit path (signal, checkpoint, requeue, resume) needs a Slurm:
# a one-node one is started with the workplace's starter where there is one (RUDRA_SLURM_STARTER,
# default ../shared/tools/start-local-slurm.sh), as root.
starter=${RUDRA_SLURM_STARTER:-$(cd .. && pwd)/shared/tools/start-local-slurm.sh}
if [ "${RUDRA_SKIP_SLURM:-0}" != 1 ] && [ -f "$starter" ] && [ "$(id -u)" -eq 0 ]; then
  timeout -k 10 1500 bash test/slurm_test.sh build/rudra "$PWD" "$starter"
  # Slurm across the emulated cluster's nodes (a slurmd in each), with the packages just installed.
  timeout -k 10 600 bash test/slurm_vcluster_test.sh build/rudra "$PWD"
  stage_took "the Slurm tests"
else
  echo "run-tests: the Slurm test was not run (no Slurm starter at $starter, not root, or RUDRA_SKIP_SLURM=1)"
fi
# The unit tests again under AddressSanitizer+UBSan and ThreadSanitizer (tools/sanitize.sh).
if [ "${RUDRA_SKIP_SANITIZE:-0}" != 1 ]; then
  bash tools/sanitize.sh all
  stage_took "the sanitizer builds and runs"
fi
if [ "${RUDRA_SKIP_POWER:-0}" != 1 ]; then
  bash tools/power-ci.sh
  stage_took "the POWER build and its tests under qemu"
fi
