#!/usr/bin/env bash
# `rudra dist --replay`: softsync, async and the protocols that drop gradients, whose weights
# depend on the order the PS happened to take the gradients in, are computed again in one
# process from the schedule their PS recorded, and end with the run's weights and staleness
# statistics, bit for bit; an altered schedule does not; a record that cannot be replayed is
# refused with the file, the line and the reason. A replay stopped by a signal goes on from its
# checkpoint to the same bytes, dropout masks included. Each run is bounded by `timeout`.
# Usage: replay_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
mpi_test_setup

run_and_replay_run() {  # run_and_replay_run NAME RANKS ARGS...: the run, which names its schedule
  local name=$1 ranks=$2; shift 2
  if ! timeout -k 5 180 mpiexec -n "$ranks" "$rudra" dist "$solver" --data "$data" --epochs 3 --batch 16 \
      -o "$work/$name" "$@" >"$work/$name.log" 2>&1; then
    fail "$name: the run failed"; tail -10 "$work/$name.log"; return 1
  fi
  grep -q "^PS: the schedule of the run's [0-9]* gradients is in $work/$name/schedule.txt" "$work/$name.log" && pass ||
    fail "$name: the PS names its schedule"
}
run_and_replay() {  # run_and_replay NAME RANKS ARGS...: a run, its replay, both files compared
  local name=$1
  run_and_replay_run "$@" || return
  if timeout 300 "$rudra" dist --replay "$work/$name" >"$work/$name.replay" 2>&1; then pass
  else fail "$name: the replay failed"; tail -10 "$work/$name.replay"; return; fi
  cmp -s "$work/$name/final.rudra" "$work/$name/replay/final.rudra" && pass || fail "$name: final.rudra differs"
  cmp -s "$work/$name/staleness.json" "$work/$name/replay/staleness.json" && pass || fail "$name: staleness.json differs"
  # The replay's epoch lines: the test accuracies of the run's, epoch for epoch.
  [ "$(grep -o '"test_accuracy":[0-9.]*' "$work/$name/metrics.jsonl")" = \
    "$(grep -o '"test_accuracy":[0-9.]*' "$work/$name/replay/metrics.jsonl")" ] && pass ||
    fail "$name: the replay's test accuracies differ from the run's"
  grep -q "^replay: identical to the run's $work/$name/final.rudra, bit for bit$" "$work/$name.replay" && pass ||
    fail "$name: the replay says it matched"
}

refused() {  # refused NAME PATTERN ARGS...: rudra exits 1 and says PATTERN
  local name=$1 pattern=$2; shift 2
  timeout 60 "$rudra" "$@" >"$work/$name.out" 2>&1
  local rc=$?
  [ $rc = 1 ] && grep -q -- "$pattern" "$work/$name.out" && pass || { fail "$name: exit $rc"; cat "$work/$name.out"; }
}

# 4 learners each: 1-softsync (Rudra-base), async with overlap and 2 threads per rank, a staleness
# bound with a slow learner (gradients dropped), hardsync with a backup and a slow learner (late ones dropped).
run_and_replay softsync 6 --protocol softsync --n 1
run_and_replay async 6 --protocol async --mode overlap --threads-per-rank 2
run_and_replay bound 6 --protocol async --max-staleness 1 --straggler 3:3
run_and_replay backup 6 --protocol hardsync --backup 1 --straggler 4:3
max=$(grep -o '"max":[0-9]*' "$work/async/staleness.json" | head -1 | cut -d: -f2)
[ "${max:-0}" -ge 2 ] && pass || fail "async: staleness up to $max only: nothing for the replay to reproduce"
for name in bound backup; do
  dropped=$(grep -o '"dropped":[0-9]*' "$work/$name/staleness.json" | head -1 | cut -d: -f2)
  [ "${dropped:-0}" -gt 0 ] && pass || fail "$name: no gradient dropped"
done

# A replay stopped by a signal checkpoints (exit 130) and --resume goes on to the run's bytes, on a
# net with dropout: each learner takes up its sample stream and its dropout masks where it was.
drop=$work/dropnet
dropout_net "$drop" && pass || fail "dropnet: no dropout layer"
solver=$drop/cifar10_full_28_solver.prototxt run_and_replay_run dropout 6 --protocol softsync --n 1 --base-lr 0.01
nice -n 10 "$rudra" dist --replay "$work/dropout" >"$work/dropout.stopped" 2>&1 &
pid=$!
for _ in $(seq 1200); do grep -q "^epoch 1/3" "$work/dropout.stopped" && break; sleep 0.05; done
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 130 ] && grep -q "^replay: stopped at update [0-9]* .*; go on with: rudra dist --replay $work/dropout --resume $work/dropout/replay$" "$work/dropout.stopped" &&
  pass || { fail "dropout: the stopped replay: exit $rc"; tail -3 "$work/dropout.stopped"; }
if timeout 300 "$rudra" dist --replay "$work/dropout" --resume "$work/dropout/replay" >"$work/dropout.resumed" 2>&1; then pass
else fail "dropout: the resumed replay: exit $?"; tail -5 "$work/dropout.resumed"; fi
grep -q "^replay: identical to the run's $work/dropout/final.rudra, bit for bit$" "$work/dropout.resumed" && pass ||
  fail "dropout: the resumed replay ends with the run's weights"
cmp -s "$work/dropout/staleness.json" "$work/dropout/replay/staleness.json" && pass || fail "dropout: staleness.json differs"
[ "$(grep -c '"event":"epoch"' "$work/dropout/replay/metrics.jsonl")" = 3 ] && pass || fail "dropout: 3 epoch lines"
# Only a replay's own checkpoint goes on: a run's lacks the weights its learners held.
refused run_checkpoint "a run's checkpoint, not a replay's" dist --replay "$work/dropout" --resume "$work/dropout"

# Two gradients of different learners taken in the other order: other weights, and exit 1.
rec=$work/async/schedule.txt
altered=$work/altered
mkdir -p "$altered"
perl -e 'my @l = <STDIN>; for my $i (1 .. $#l - 1) {
    my @a = split " ", $l[$i]; my @b = split " ", $l[$i + 1];
    if ($a[0] eq "g" && $b[0] eq "g" && $a[1] != $b[1] && $b[3] <= $a[3]) { @l[$i, $i + 1] = @l[$i + 1, $i]; last } }
  print @l' <"$rec" >"$altered/schedule.txt"
cmp -s "$rec" "$altered/schedule.txt" && fail "altered: no pair of lines to swap"
cp "$work/async/final.rudra" "$altered/"
timeout 300 "$rudra" dist --replay "$altered" >"$work/altered.log" 2>&1
rc=$?
[ $rc = 1 ] && pass || fail "altered: exit $rc (expected 1)"
grep -q "error: $altered/replay/final.rudra differs from the run's $altered/final.rudra" "$work/altered.log" && pass ||
  { fail "altered: the difference is said"; cat "$work/altered.log"; }

head -40 "$rec" >"$work/cut.txt"
refused cut "cut.txt:40: the record ends after 39 of its [0-9]* lines: cut short or altered" dist --replay "$work/cut.txt"
{ head -1 "$rec"; echo "g 7 0 0"; } >"$work/learner.txt"
refused learner "learner.txt:2: learner 7 is not one of the 4" dist --replay "$work/learner.txt"
{ head -1 "$rec"; echo "g 0 0 0"; echo "g 0 2 1"; } >"$work/position.txt"
refused position "position.txt:3: learner 0's gradient at position 2 where its next is 1" dist --replay "$work/position.txt"
{ head -1 "$rec"; echo "g 0 0 0"; echo "g 1 0 3"; } | sed '1s/"events":[0-9]*/"events":2/' >"$work/ahead.txt"
refused ahead "ahead.txt:3: a gradient on weights version 3, which the replay's update rule did not make" \
  dist --replay "$work/ahead.txt"
{ head -1 "$rec"; echo "sum 2"; echo "g 0 0 0"; echo "live 3"; } | sed '1s/"events":[0-9]*/"events":3/' >"$work/sum.txt"
refused sum_open "sum.txt:4: 'live' inside the sum of line 2, whose 1 more gradient line(s) must come first" \
  dist --replay "$work/sum.txt"
{ head -1 "$rec"; echo "g 0 0 0"; echo "sum 2"; echo "g 1 0 0"; } | sed '1s/"events":[0-9]*/"events":3/' >"$work/sum_end.txt"
refused sum_end "sum_end.txt:4: the record ends inside the sum of line 3, 1 gradient line(s) short" \
  dist --replay "$work/sum_end.txt"
{ head -1 "$rec"; echo "sum 0"; } | sed '1s/"events":[0-9]*/"events":1/' >"$work/sum_zero.txt"
refused sum_zero "sum_zero.txt:2: 'sum 0' is not \"sum N\" with N of at least 1" dist --replay "$work/sum_zero.txt"
echo "not a record" >"$work/junk.txt"
refused junk "junk.txt:1: not a schedule record" dist --replay "$work/junk.txt"
refused option "--epochs does not go with --replay" dist --replay "$work/async" --epochs 5
# The first replay's files are in its output folder: a second one replaces them only when told.
refused again "async/replay: the output folder holds another run's files (final.rudra, metrics.jsonl, staleness.json); a new run does not replace them. Replace it (--overwrite)" \
  dist --replay "$work/async"
rudra_path=$(realpath "$rudra")
(cd / && timeout 60 "$rudra_path" dist --replay "$work/async" --overwrite) >"$work/elsewhere.log" 2>&1 && pass ||
  { fail "a replay from another folder (the run's paths are absolute), over the first replay's files"; tail -5 "$work/elsewhere.log"; }
finish
