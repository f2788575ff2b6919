#!/usr/bin/env bash
# Runs the libFuzzer targets (test/fuzz) for a while each, built by the "fuzz" preset (clang,
# ASan+UBSan). Each starts from its saved corpus, test/fuzz/corpus/TARGET, which ctest replays
# in every build. Inputs that reach new code are merged into that corpus (minimised), and
# every finding is copied there too, so that it stays a regression test once fixed.
# Usage: tools/fuzz.sh [SECONDS_EACH] [TARGET...]   (default 600 s; every target)
# Exits 1 when a target found something; its input and report are named at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(prototxt idx cifar snapshot net checkpoint bench autotune_cache options messages gzip)
command -v clang++-14 >/dev/null || { echo "fuzz.sh: clang++-14 is needed (apt-get install clang-14 libclang-rt-14-dev libomp-14-dev)" >&2; exit 2; }
cmake --preset fuzz >/dev/null || exit 2
cmake --build build-fuzz -j2 --target "${targets[@]/#/fuzz_}" >/dev/null || exit 2
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
found=0
for t in "${targets[@]}"; do
  corpus=test/fuzz/corpus/$t
  run=build-fuzz/fuzz-runs/$t
  rm -rf "$run" && mkdir -p "$run/new" "$run/findings"
  echo "fuzz: $t for $seconds s (corpus $corpus: $(ls "$corpus" | wc -l) inputs)"
  # Inputs up to 16 KiB: a few CIFAR-10 records, nets of a few dozen layers.
  build-fuzz/test/fuzz_$t -max_total_time="$seconds" -max_len=16384 -rss_limit_mb=4096 -timeout=10 \
    -artifact_prefix="$run/findings/" -print_final_stats=1 "$run/new" "$corpus" >"$run/log" 2>&1
  rc=$?
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$run/log" | sed "s/^/fuzz: $t /"
  if [ $rc -ne 0 ] || [ -n "$(ls "$run/findings")" ]; then
    found=1
    for f in "$run"/findings/*; do
      cp "$f" "$corpus/finding-$(basename "$f")"
      echo "fuzz: $t FOUND $(basename "$f") (kept as $corpus/finding-$(basename "$f")); report: $run/log"
    done
    grep -m3 -E 'runtime error|ERROR|fuzz:' "$run/log" | sed "s/^/fuzz: $t   /"
  else
    # Keep only what adds coverage to the saved corpus.
    build-fuzz/test/fuzz_$t -merge=1 -max_len=16384 "$corpus" "$run/new" >"$run/merge.log" 2>&1
    echo "fuzz: $t no finding; corpus now $(ls "$corpus" | wc -l) inputs"
  fi
done
exit $found
