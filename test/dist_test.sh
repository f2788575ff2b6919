#!/usr/bin/env bash
# MPI runs of `rudra dist` (separate processes under mpiexec, oversubscribed on this machine):
# every protocol and mode trains on a small generated IDX set, ends cleanly within a bound, and
# leaves metrics, staleness and a final snapshot that `rudra test` reads; bad settings fail
# with a clear error instead of hanging.
# Usage: dist_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
data=$work/data
mkdir -p "$data"
mkdata "$data" train 960 1
mkdata "$data" t10k 200 2
solver=$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt
export OMP_NUM_THREADS=1

run() {  # run NAME RANKS ARGS... : a distributed run that must succeed within 180 s
  local name=$1 ranks=$2; shift 2
  local out=$work/$name
  if timeout -k 5 180 mpiexec -n "$ranks" "$rudra" dist "$solver" --data "$data" --epochs 2 --batch 16 -o "$out" "$@" \
      >"$work/$name.log" 2>&1; then pass; else fail "$name: exit $?"; tail -20 "$work/$name.log"; return; fi
  [ "$(grep -c '"event":"epoch"' "$out/metrics.jsonl")" = 2 ] && pass || fail "$name: two epoch lines"
  grep -q '"staleness_mean"' "$out/metrics.jsonl" && grep -q '"overlap_ratio"' "$out/metrics.jsonl" && pass ||
    fail "$name: epoch lines carry staleness and overlap"
  [ -s "$out/staleness.json" ] && pass || fail "$name: staleness.json"
  if timeout 60 "$rudra" test "$solver" "$out/final.rudra" --data "$data" >"$work/$name.test" 2>&1; then pass
  else fail "$name: rudra test reads final.rudra"; cat "$work/$name.test"; fi
}

run hardsync 5 --protocol hardsync
grep -q '"max":0,' "$work/hardsync/staleness.json" && pass || fail "hardsync: staleness always 0"
acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/hardsync.test")
perl -e "exit !($acc > 0.3)" && pass || fail "hardsync learns (test accuracy $acc)"
run softsync1 5 --protocol softsync --n 1
run softsyncL 5 --protocol softsync --n 3 --lr-modulation per-gradient
run async 5 --protocol async --mode overlap
run overlap1 6 --protocol softsync --n 1 --mode overlap
run many 16 --protocol softsync --n 2 --wait-sleep-us 50

# Warm start: 1-softsync from the hardsync run's final weights.
run warm 5 --protocol softsync --n 1 --warm-start "$work/hardsync/final.rudra"

expect_error() {  # expect_error NAME PATTERN RANKS ARGS...
  local name=$1 pattern=$2 ranks=$3; shift 3
  timeout -k 5 60 mpiexec -n "$ranks" "$rudra" dist "$solver" -o "$work/$name" "$@" >"$work/$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$pattern" "$work/$name.log"; then pass
  else fail "$name: exit $rc, wanted an error containing '$pattern'"; tail -5 "$work/$name.log"; fi
}
expect_error bad_n "--n 7 must be in [1, 3]" 5 --data "$data" --protocol softsync --n 7
expect_error too_few "needs at least 3 ranks" 2 --data "$data" --protocol async
expect_error bad_data "data directory does not exist" 4 --protocol async --data "$work/nowhere"

finish
