#!/usr/bin/env bash
# The include graph's floors: kernels/ knows nothing of nn/ or above, nn/ nothing of MPI or dist/,
# session/ nothing of MPI or dist/, and dist/ stands on floors (transport/, then ps/, then
# methods/, then run/), each including only the ones below it, and of session/ only the run loop
# below ps/ (the methods are strategies on it); tools/ is the command line on top.
# And x86 intrinsics appear only in the vector traits (kernels/simd/). Prints every upward include
# and fails on any.
# Usage: test/layering_test.sh [SOURCE_DIR]
set -uo pipefail
cd "${1:-$(dirname "$0")/..}"
bad=0
# forbid DIR PATTERN WHY: no file under DIR may include a header matching PATTERN.
forbid() {
  local hits
  hits=$(grep -rnE --include='*.h' --include='*.cpp' "^#include [\"<]($2)" "$1" || true)
  if [ -n "$hits" ]; then
    echo "upward include ($3):"
    echo "$hits"
    bad=1
  fi
}
forbid kernels 'nn/|data/|session/|dist/|tools/|placement/' "kernels/ is the lowest floor"
forbid nn 'session/|dist/|tools/|mpi\.h' "nn/ knows nothing of runs, MPI or the distributed runtime"
forbid data 'nn/|session/|dist/|tools/|mpi\.h' "data/ comes before nn/"
forbid session 'dist/|tools/|mpi\.h' "session/ is one process's training, below the distributed runtime"
forbid dist/transport 'dist/ps/|dist/methods/|dist/run/|session/|tools/' "dist/transport/ is the distributed runtime's lowest floor"
forbid dist/ps 'dist/methods/|dist/run/|session/([^r]|r[^u]|ru[^n]|run[^_]|run_[^l])|tools/' "dist/ps/ stands on dist/transport/ and the run loop"
forbid dist/methods 'dist/run/|session/([^r]|r[^u]|ru[^n]|run[^_]|run_[^l])|tools/' "dist/methods/ stands on dist/ps/, dist/transport/ and the run loop"
forbid dist/run 'tools/' "dist/run/ is a library: the command line (tools/) stands on it"
# x86 intrinsics only in the vector traits: every other kernel is written on them.
raw=$(grep -rlE --include='*.h' --include='*.cpp' '^[^/]*_mm(256|512)?_[a-z]' kernels base nn data session dist tools placement |
      grep -v '^kernels/simd/' || true)
if [ -n "$raw" ]; then
  echo "x86 intrinsics outside kernels/simd/ (write them on the vector traits):"
  echo "$raw"
  bad=1
fi
# Every dist/ source sits on a floor.
loose=$(find dist -maxdepth 1 -name '*.h' -o -maxdepth 1 -name '*.cpp')
if [ -n "$loose" ]; then
  echo "dist/ files on no floor: $loose"
  bad=1
fi
[ "$bad" = 0 ] && echo "layering: no upward include"
exit "$bad"
