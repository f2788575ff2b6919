#!/usr/bin/env bash
# The test suite under sanitizers: the "asan" preset (AddressSanitizer + UndefinedBehaviorSanitizer)
# runs every doctest executable at the CPU's own ISA level and replays the fuzz corpora; the
# "tsan" preset (ThreadSanitizer)
# runs those with threads of their own: the distributed roles on the in-process transport
# (communication threads, heartbeats) and the prefetching data thread.
# Usage: tools/sanitize.sh [asan|tsan|all]   (default all)
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
# The presets compile at -O1 -g1 (line tables for the reports): at RelWithDebInfo's -O2 -g, GCC
# took 3.6x longer over test_dist.cpp with ASan+UBSan, and the two builds dominated CI's time.
# The programs are built as one target (sanitize_programs, from RUDRA_SANITIZE_TARGETS): CMake's
# Makefiles build the goals of `--target A B ...` one after another, each test's one file on one core.
run_preset() {  # run_preset PRESET TESTS...
  local preset=$1; shift
  cmake --preset "$preset" -DRUDRA_SANITIZE_TARGETS="$(IFS=';'; echo "$*")" >/dev/null
  cmake --build "build-$preset" -j2 --target sanitize_programs
  local t
  for t in "$@"; do
    echo "sanitize: $preset $t"
    case $t in
      # A fuzz target's replay runs over its saved corpus (test/fuzz/corpus/NAME).
      fuzz_*_replay) name=${t#fuzz_}; "build-$preset/test/$t" "test/fuzz/corpus/${name%_replay}" ;;
      *) OMP_NUM_THREADS=${omp_threads:-2} "build-$preset/test/$t" ;;
    esac
  done
}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# OpenMP's runtime (libgomp) is not built with TSan: its barriers look like races. The tests run
# by TSan set one OpenMP thread. test_dist_run links MPI, whose UCX memory hooks (libucm's madvise)
# crash in TSan's runtime as a thread exits: it runs under ASan only.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
case $which in
  asan | all) run_preset asan test_parser test_data test_image_data test_solver test_session test_single_node_run \
                test_dist test_decentralized test_dist_run test_topology test_comm_threads test_isa test_placement \
                fuzz_prototxt_replay fuzz_idx_replay fuzz_cifar_replay fuzz_snapshot_replay fuzz_net_replay \
                fuzz_checkpoint_replay fuzz_bench_replay fuzz_autotune_cache_replay fuzz_options_replay \
                fuzz_messages_replay fuzz_gzip_replay ;;&
  tsan | all) omp_threads=1 run_preset tsan test_dist test_decentralized test_topology test_comm_threads test_data test_image_data \
                test_single_node_run ;;
  asan) ;;
  *) echo "usage: tools/sanitize.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
echo "sanitize: passed"
