#!/usr/bin/env bash
# Faults injected into `rudra dist` runs (separate MPI processes under mpiexec, oversubscribed on
# this machine), each bounded by `timeout`: a hang is a failure.
#   kill -9 of a learner under 1-softsync: the run completes and logs the lost rank; its replay matches
#   SIGSTOP of a learner under async: the run completes and writes final.rudra
#   kill -9 of the whole job under hardsync, then --resume: final weights identical to a straight run
#   kill -9 of a learner under hardsync: the run stops within 30 s naming it; --resume with fewer learners
#   SIGTERM to the ranks: a checkpoint, exit 130, and --resume finishes the run; Ctrl-C: a checkpoint
#   kill -9 of the PS: every rank gone within 30 s with a message
#   adv: kill -9 of a learner below a leaf PS, and of a leaf PS; adv*: of a forwarding learner
# Usage: fault_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
mpi_test_setup
common=(--data "$data" --batch 16 --peer-timeout 3)

. "$(dirname "$0")/fault_harness.sh"

# 1. kill -9 of a learner under 1-softsync: the others finish all epochs; the loss is an event.
for try in 1 2; do
  start soft_kill 6 --protocol softsync --n 1 --epochs 12
  wait_for "$work/soft_kill/metrics.jsonl" '"epoch":2,' || fail "soft_kill: no epoch 2"
  kill -9 "$(rank_pid 3)"
  finish_run soft_kill
  met_blocked_queue soft_kill $try || break
done
[ "$rc" = 0 ] && pass || { fail "soft_kill: exit $rc"; tail -20 "$work/soft_kill.log"; }
[ "$(epochs_logged "$work/soft_kill")" = 12 ] && pass || fail "soft_kill: 12 epoch lines"
grep -q '"event":"learner_lost","rank":3,' "$work/soft_kill/metrics.jsonl" && pass || fail "soft_kill: the lost rank in metrics.jsonl"
grep -h '"event":"learner_lost"' "$work/soft_kill/metrics.jsonl" | sed 's/^/soft_kill: /'
grep -h 'ending the job\|PS: [0-9]* updates' "$work/soft_kill.log" | sed 's/^/soft_kill: /'
grep -q 'rank 3\]: the rank.s process .* was killed by signal 9' "$work/soft_kill.log" && pass ||
  fail "soft_kill: the guard names the killed rank"
timeout 60 "$rudra" test "$solver" "$work/soft_kill/final.rudra" --data "$data" >/dev/null 2>&1 && pass ||
  fail "soft_kill: final.rudra readable"
no_leftovers soft_kill
# The PS's schedule holds the loss (3 learners live from then on), and the run computed again in
# one process from it ends with the same weights, bit for bit.
grep -qx 'live 3' "$work/soft_kill/schedule.txt" && pass || fail "soft_kill: the schedule records the lost learner"
if timeout 300 "$rudra" dist --replay "$work/soft_kill" >"$work/soft_kill.replay" 2>&1 &&
  cmp -s "$work/soft_kill/final.rudra" "$work/soft_kill/replay/final.rudra"; then pass
else fail "soft_kill: the replay differs"; tail -5 "$work/soft_kill.replay"; fi

# 2. SIGSTOP of a learner under async: the run completes without it and writes its files.
for try in 1 2; do
  start async_stop 5 --protocol async --epochs 10
  wait_for "$work/async_stop/metrics.jsonl" '"epoch":2,' || fail "async_stop: no epoch 2"
  kill -STOP "$(rank_pid 2)"
  finish_run async_stop
  met_blocked_queue async_stop $try || break
done
[ "$rc" = 0 ] && pass || { fail "async_stop: exit $rc"; tail -20 "$work/async_stop.log"; }
[ -s "$work/async_stop/final.rudra" ] && [ -s "$work/async_stop/staleness.json" ] && pass ||
  fail "async_stop: final.rudra and staleness.json"
[ "$(epochs_logged "$work/async_stop")" = 10 ] && pass || fail "async_stop: 10 epoch lines"
grep -q '"event":"learner_lost","rank":2,' "$work/async_stop/metrics.jsonl" && pass || fail "async_stop: lost rank 2 logged"
no_leftovers async_stop

# 3. Hardsync is deterministic: a straight run, and a run killed with kill -9 (every process)
# after a mid-epoch checkpoint and resumed, end with the same weights, byte for byte.
hs=(--protocol hardsync --epochs 4 --checkpoint-every 7)
start hs_straight 5 "${hs[@]}"
finish_run hs_straight
[ "$rc" = 0 ] && pass || { fail "hs_straight: exit $rc"; tail -20 "$work/hs_straight.log"; }
start hs_killed 5 "${hs[@]}"
wait_for "$work/hs_killed/metrics.jsonl" '"epoch":2,' || fail "hs_killed: no epoch 2"
sleep 0.3
kill_job hs_killed
finish_run hs_killed
[ -s "$work/hs_killed/checkpoint.rudra" ] && pass || fail "hs_killed: a checkpoint survives kill -9"
[ -e "$work/hs_killed/final.rudra" ] && fail "hs_killed: killed before the end, yet final.rudra exists" || pass
if timeout -k 5 150 mpiexec -n 5 "$rudra" dist --resume "$work/hs_killed" >"$work/hs_resumed.log" 2>&1; then pass
else fail "hs_resumed: exit $?"; tail -20 "$work/hs_resumed.log"; fi
grep -q 'PS: resuming from .*hs_killed/checkpoint.rudra' "$work/hs_resumed.log" && pass || fail "hs_resumed: says where it resumes"
cmp -s "$work/hs_straight/final.rudra" "$work/hs_killed/final.rudra" && pass ||
  fail "hardsync: killed and resumed run differs from the straight one"
# metrics.jsonl goes on: epochs 1..4, each once. (An epoch whose checkpoint the PS wrote before
# the kill but whose line the statistics server had not is written on resume, marked
# "replayed":true.)
[ "$(grep '"event":"epoch"' "$work/hs_killed/metrics.jsonl" | grep -o '"epoch":[0-9]*' | sed 's/.*://' | tr '\n' ' ')" = "1 2 3 4 " ] &&
  pass || { fail "hs_resumed: epochs 1-4 once each"; grep -o '"epoch":[0-9]*' "$work/hs_killed/metrics.jsonl"; }
grep -q '"event":"resume"' "$work/hs_killed/metrics.jsonl" && pass || fail "hs_resumed: a resume line"

# 4. kill -9 of a learner under hardsync: the run stops within 30 s, names the rank, keeps its
# checkpoint (exit 3); --resume with one learner fewer finishes the run.
for try in 1 2; do
  start hs_lost 5 --protocol hardsync --epochs 4
  wait_for "$work/hs_lost/metrics.jsonl" '"epoch":1,' || fail "hs_lost: no epoch 1"
  kill_rank hs_lost 4
  met_blocked_queue hs_lost $try || break
done
ended_for_lost_learner hs_lost
grep -q 'learner rank 4 lost' "$work/hs_lost.log" && grep -q 'hardsync cannot go on without it' "$work/hs_lost.log" && pass ||
  fail "hs_lost: the message names rank 4"
grep -q '"event":"stopped","reason":"learner lost"' "$work/hs_lost/metrics.jsonl" && pass || fail "hs_lost: stopped event"
no_leftovers hs_lost
if timeout -k 5 150 mpiexec -n 4 "$rudra" dist --resume "$work/hs_lost" >"$work/hs_lost_resumed.log" 2>&1; then pass
else fail "hs_lost resumed: exit $?"; tail -20 "$work/hs_lost_resumed.log"; fi
grep -q 'with 2 learners instead of 3' "$work/hs_lost_resumed.log" && pass || fail "hs_lost resumed: the new learner count logged"
[ "$(epochs_logged "$work/hs_lost")" = 4 ] && [ -s "$work/hs_lost/final.rudra" ] && pass ||
  fail "hs_lost resumed: 4 epochs and final.rudra"

# 5. SIGTERM to every rank (what a batch system sends at a time limit: Slurm signals each task
# of the step): a checkpoint, exit 130; --resume finishes.
start term 5 --protocol softsync --n 1 --epochs 8
wait_for "$work/term/metrics.jsonl" '"epoch":2,' || fail "term: no epoch 2"
term_ranks term
t0=$(date +%s%N)
finish_run term
echo "term: the job ended $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
[ "$rc" = 130 ] && pass || { fail "term: exit $rc, wanted 130"; tail -20 "$work/term.log"; }
grep -q 'PS: checkpoint (signal)' "$work/term.log" && pass || fail "term: checkpoint on SIGTERM"
grep -q '"event":"stopped","reason":"signal"' "$work/term/metrics.jsonl" && pass || fail "term: stopped event"
no_leftovers term
if timeout -k 5 150 mpiexec -n 5 "$rudra" dist --resume "$work/term" >"$work/term_resumed.log" 2>&1; then pass
else fail "term resumed: exit $?"; tail -20 "$work/term_resumed.log"; fi
[ "$(grep -oE '"event":"epoch",("replayed":true,)?"protocol":"1-softsync","epoch":[0-9]+' "$work/term/metrics.jsonl" | sed 's/.*://' | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 " ] &&
  pass || fail "term resumed: epochs 1-8 once each"

# 5b. Ctrl-C (SIGINT to mpiexec, which passes it on): a checkpoint and a stopped event. The exit
# code is 130 or 0: once mpiexec is signalled, hydra reports 0 for every rank that exits after
# its cleanup began.
start ctrl_c 5 --protocol async --epochs 8
wait_for "$work/ctrl_c/metrics.jsonl" '"epoch":1,' || fail "ctrl_c: no epoch 1"
pkill -INT -P "$(cat "$work/ctrl_c.pid")" -x mpiexec
finish_run ctrl_c
[ "$rc" = 130 ] || [ "$rc" = 0 ] && pass || fail "ctrl_c: exit $rc"
grep -q 'PS: checkpoint (signal)' "$work/ctrl_c.log" && grep -q '"event":"stopped","reason":"signal"' "$work/ctrl_c/metrics.jsonl" &&
  pass || { fail "ctrl_c: checkpoint and stopped event"; tail "$work/ctrl_c.log"; }
no_leftovers ctrl_c

# 6. kill -9 of the PS: every other rank ends within 30 s and says why.
start ps_kill 5 --protocol async --epochs 30
wait_for "$work/ps_kill/metrics.jsonl" '"epoch":1,' || fail "ps_kill: no epoch 1"
kill_rank ps_kill 0
[ "$rc" != 0 ] && [ "$took" -le 30 ] && pass || fail "ps_kill: exit $rc after $took s"
echo "ps_kill: every rank gone $took s after the kill (peer timeout 3 s), exit $rc"
[ "$(grep -c 'the parameter server (rank 0) has not been heard from' "$work/ps_kill.log")" = 4 ] && pass ||
  { fail "ps_kill: each of the 4 other ranks says the PS is gone"; tail "$work/ps_kill.log"; }
no_leftovers ps_kill

# 7. The tree (adv, nodes of 4 ranks: leaves 2, 4, 8; learners 3, 5-7, 9-11). kill -9 of a
# learner below leaf 4 under 1-softsync: the root loses it, the others finish every epoch.
for try in 1 2; do
  start adv_learner 12 --protocol softsync --n 1 --epochs 30 --topology adv --ranks-per-node 4
  wait_for "$work/adv_learner/metrics.jsonl" '"epoch":2,' || fail "adv_learner: no epoch 2"
  kill -9 "$(rank_pid 6)"
  finish_run adv_learner
  met_blocked_queue adv_learner $try || break
done
[ "$rc" = 0 ] && [ "$(epochs_logged "$work/adv_learner")" = 30 ] && pass ||
  { fail "adv_learner: exit $rc, $(epochs_logged "$work/adv_learner") epochs"; tail -20 "$work/adv_learner.log"; }
grep -q '"event":"learner_lost","rank":6,.*"live_learners":6' "$work/adv_learner/metrics.jsonl" && pass ||
  fail "adv_learner: rank 6 lost, 6 learners go on"
no_leftovers adv_learner

# 8. kill -9 of leaf PS 8 under async: its learners (9-11) are lost with it; the others finish.
for try in 1 2; do
  start adv_leaf 12 --protocol async --epochs 30 --topology adv --ranks-per-node 4
  wait_for "$work/adv_leaf/metrics.jsonl" '"epoch":2,' || fail "adv_leaf: no epoch 2"
  kill -9 "$(rank_pid 8)"
  finish_run adv_leaf
  met_blocked_queue adv_leaf $try || break
done
[ "$(epochs_logged "$work/adv_leaf")" = 30 ] && [ -s "$work/adv_leaf/final.rudra" ] && pass ||
  { fail "adv_leaf: exit $rc, $(epochs_logged "$work/adv_leaf") epochs"; tail -20 "$work/adv_leaf.log"; }
grep -q 'leaf parameter server rank 8 lost' "$work/adv_leaf.log" && grep -q '"event":"learner_lost","rank":11,' "$work/adv_leaf/metrics.jsonl" &&
  grep -q '"event":"learner_lost","rank":8,' "$work/adv_leaf/metrics.jsonl" && pass || fail "adv_leaf: leaf 8 and its learners lost"
no_leftovers adv_leaf

# 9. adv*: kill -9 of a learner that forwards the weights (rank 3, the broadcast's first): the run
# stops with its checkpoint (exit 3), since the learners below it would get no more weights.
for try in 1 2; do
  start advstar_lost 12 --protocol async --epochs 60 --topology 'adv*' --ranks-per-node 4
  wait_for "$work/advstar_lost/metrics.jsonl" '"epoch":1,' || fail "advstar_lost: no epoch 1"
  kill_rank advstar_lost 3
  met_blocked_queue advstar_lost $try || break
done
ended_for_lost_learner advstar_lost
grep -q 'learner rank 3 lost.*the learners below it in the broadcast tree would get no more weights' "$work/advstar_lost.log" &&
  grep -q '"event":"stopped","reason":"learner lost"' "$work/advstar_lost/metrics.jsonl" && pass ||
  { fail "advstar_lost: the loss named and the run stopped"; tail "$work/advstar_lost.log"; }
no_leftovers advstar_lost

# Bad resumes: a missing checkpoint, a plain snapshot, a setting that defines the run.
expect_error() {  # expect_error NAME PATTERN ARGS...
  local name=$1 pattern=$2; shift 2
  timeout -k 5 60 mpiexec -n 3 "$rudra" dist "$@" >"$work/$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$pattern" "$work/$name.log"; then pass
  else fail "$name: exit $rc, wanted an error containing '$pattern'"; tail -5 "$work/$name.log"; fi
}
expect_error no_ck "no checkpoint there" --resume "$work"
expect_error plain_ck "a plain snapshot, not a distributed run's checkpoint" --resume "$work/soft_kill/final.rudra"
expect_error other_protocol "--protocol \"async\" differs from the checkpoint's \"hardsync\"" --resume "$work/hs_killed" --protocol async
expect_error done_ck "raise --epochs" --resume "$work/hs_killed"
expect_error bad_every "--checkpoint-every must be N (updates, at most 1e15), Ns (seconds, at most 1e9), Nm (minutes, at most 1e7) or 0, got '5x'" "$solver" --data "$data" --checkpoint-every 5x
expect_error every_inf "got 'inf'" "$solver" --data "$data" --checkpoint-every inf
expect_error every_huge "got '1e30s'" "$solver" --data "$data" --checkpoint-every 1e30s
expect_error fan_out_huge "--broadcast-fan-out: must be a positive integer of at most 2147483647, got '99999999999'" \
  "$solver" --data "$data" --topology 'adv*' --broadcast-fan-out 99999999999
expect_error sleep_huge "--wait-sleep-us: must be a number of microseconds of at most 1000000, got '1000001'" \
  "$solver" --data "$data" --wait-sleep-us 1000001
expect_error peer_timeout_huge "--peer-timeout: must be a number of seconds above 0 and at most 86400, got '1e300'" \
  "$solver" --data "$data" --peer-timeout 1e300
finish
