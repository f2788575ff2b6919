#!/usr/bin/env bash
# Faults in the decentralized runs (all-reduce, gossip, EASGD; separate MPI processes under
# mpiexec), each bounded by `timeout`: a hang is a failure.
#   all-reduce: kill -9 of the whole job after a periodic checkpoint, and SIGTERM to the ranks
#     (exit 130, a checkpoint): --resume ends with the weights of a straight run, byte for byte
#   gossip-push and gossip-pull: SIGTERM stops at the next epoch boundary with a checkpoint of the
#     learners' average; --resume finishes; kill -9 of a learner ends the job within 30 s (exit 3)
#     naming it, and --resume with one learner fewer finishes
#   EASGD: SIGTERM, then --resume finishes; a resume cannot change --tau
# Usage: decentralized_fault_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
mpi_test_setup
common=(--data "$data" --batch 16 --peer-timeout 3)
. "$(dirname "$0")/fault_harness.sh"

resume() {  # resume NAME RANKS [ARGS...]: --resume of run NAME must succeed
  local name=$1 ranks=$2; shift 2
  if timeout -k 5 150 mpiexec -n "$ranks" "$rudra" dist --resume "$work/$name" "$@" >"$work/$name.resumed.log" 2>&1; then pass
  else fail "$name resumed: exit $?"; tail -20 "$work/$name.resumed.log"; fi
}
# Epoch numbers in NAME's metrics.jsonl, in order ("1 2 3 "). A resume from an epoch's checkpoint
# whose line a kill kept from the log writes that line then, marked "replayed".
epoch_numbers() { grep -oE '"event":"epoch",("replayed":true,)?"protocol":"[^"]*","epoch":[0-9]+' "$work/$1/metrics.jsonl" | sed 's/.*://' | tr '\n' ' '; }
stopped_by_signal() {  # stopped_by_signal NAME PROTOCOL: exit 130, a checkpoint, a stopped event, nothing left
  [ "$rc" = 130 ] && pass || { fail "$1: exit $rc, wanted 130"; tail -20 "$work/$1.log"; }
  grep -q "$2: checkpoint (signal)" "$work/$1.log" && [ -s "$work/$1/checkpoint.rudra" ] && pass ||
    fail "$1: a checkpoint on SIGTERM"
  grep -q '"event":"stopped","reason":"signal"' "$work/$1/metrics.jsonl" && pass || fail "$1: stopped event"
  grep -q "go on with: rudra dist --resume $work/$1" "$work/$1.log" && pass || fail "$1: says how to go on"
  [ -e "$work/$1/final.rudra" ] && fail "$1: stopped early, yet final.rudra exists" || pass
  no_leftovers "$1"
}

# 1. All-reduce is deterministic: a straight run; a run killed with kill -9 after a periodic
# checkpoint (every 7 steps); a run stopped by SIGTERM. Both resumed end as the straight one.
ar=(--protocol allreduce --epochs 5 --checkpoint-every 7)
start ar_straight 4 "${ar[@]}"
finish_run ar_straight
[ "$rc" = 0 ] && pass || { fail "ar_straight: exit $rc"; tail -20 "$work/ar_straight.log"; }
start ar_killed 4 "${ar[@]}"
wait_for "$work/ar_killed/metrics.jsonl" '"epoch":2,' || fail "ar_killed: no epoch 2"
sleep 0.2
kill_job ar_killed
finish_run ar_killed
[ -s "$work/ar_killed/checkpoint.rudra" ] && pass || fail "ar_killed: a checkpoint survives kill -9"
resume ar_killed 4
grep -q 'resuming from .*ar_killed/checkpoint.rudra' "$work/ar_killed.resumed.log" && pass || fail "ar_killed: says where it resumes"
cmp -s "$work/ar_straight/final.rudra" "$work/ar_killed/final.rudra" && pass ||
  fail "allreduce: killed and resumed run differs from the straight one"
[ "$(epoch_numbers ar_killed)" = "1 2 3 4 5 " ] && pass || fail "ar_killed: epochs 1-5 once each, got $(epoch_numbers ar_killed)"
start ar_term 4 "${ar[@]}"
wait_for "$work/ar_term/metrics.jsonl" '"epoch":2,' || fail "ar_term: no epoch 2"
term_ranks ar_term
t0=$(date +%s%N)
finish_run ar_term
echo "ar_term: the job ended $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
stopped_by_signal ar_term allreduce
resume ar_term 4
cmp -s "$work/ar_straight/final.rudra" "$work/ar_term/final.rudra" && pass ||
  fail "allreduce: stopped and resumed run differs from the straight one"
[ "$(epoch_numbers ar_term)" = "1 2 3 4 5 " ] && pass || fail "ar_term: epochs 1-5 once each, got $(epoch_numbers ar_term)"
# The epoch lines count steps from the run's start, across the resume: 20 steps an epoch.
grep -q '"epoch":5,.*"updates":100,' "$work/ar_term/metrics.jsonl" && pass || fail "ar_term: 100 updates at epoch 5"

# 2. Gossip: SIGTERM stops at the next epoch boundary; --resume goes on from the average.
for mode in push pull; do
  name=gossip_${mode}_term
  start "$name" 4 --protocol gossip-$mode --tau 2 --epochs 6
  wait_for "$work/$name/metrics.jsonl" '"epoch":2,' || fail "$name: no epoch 2"
  term_ranks "$name"
  t0=$(date +%s%N)
  finish_run "$name"
  echo "$name: the job ended $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
  stopped_by_signal "$name" gossip-$mode
  resume "$name" 4
  [ "$(epoch_numbers "$name")" = "1 2 3 4 5 6 " ] && pass || fail "$name: epochs 1-6 once each, got $(epoch_numbers "$name")"
  [ -s "$work/$name/final.rudra" ] && pass || fail "$name: final.rudra"
  # Each learner's peer record runs on without a gap or a repeat: one line every 2 steps.
  awk -v tau=2 '$1 != NR * tau { bad = 1 } END { exit bad || NR != 60 }' "$work/$name/gossip-peers/rank-2.txt" && pass ||
    fail "$name: rank 2's peers, one line every 2 steps to step 120"
done

# 3. kill -9 of a gossip learner: the first learner notices it within the peer timeout, the
# statistics server logs it, the job ends with exit 3; --resume with 3 learners finishes.
start gossip_lost 5 --protocol gossip-push --epochs 30  # ended early by the loss
wait_for "$work/gossip_lost/metrics.jsonl" '"epoch":2,' || fail "gossip_lost: no epoch 2"
kill_rank gossip_lost 3
ended_for_lost_learner gossip_lost
grep -q 'gossip-push: rank 3 lost' "$work/gossip_lost.log" && pass || { fail "gossip_lost: the message names rank 3"; tail "$work/gossip_lost.log"; }
grep -q '"event":"learner_lost","rank":3,' "$work/gossip_lost/metrics.jsonl" &&
  grep -q '"event":"stopped","reason":"learner lost"' "$work/gossip_lost/metrics.jsonl" && pass ||
  { fail "gossip_lost: learner_lost and stopped events"; tail -3 "$work/gossip_lost/metrics.jsonl"; }
no_leftovers gossip_lost
last=$(epoch_numbers gossip_lost | awk '{ print $NF }')  # the checkpoint's epoch
resume gossip_lost 4 --epochs $((last + 2))
grep -q 'with 3 learners instead of 4' "$work/gossip_lost.resumed.log" && pass || fail "gossip_lost resumed: the new learner count"
[ -s "$work/gossip_lost/final.rudra" ] && pass || fail "gossip_lost resumed: final.rudra"

# 4. EASGD (a centre on the PS): SIGTERM, then --resume finishes; --tau is the run's.
start easgd_term 5 --protocol easgd --tau 2 --beta 0.3 --epochs 6
wait_for "$work/easgd_term/metrics.jsonl" '"epoch":2,' || fail "easgd_term: no epoch 2"
term_ranks easgd_term
t0=$(date +%s%N)
finish_run easgd_term
echo "easgd_term: the job ended $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
stopped_by_signal easgd_term PS
timeout -k 5 60 mpiexec -n 5 "$rudra" dist --resume "$work/easgd_term" --tau 3 >"$work/easgd_tau.log" 2>&1
rc=$?
[ "$rc" != 0 ] && grep -qF -- "--tau 3 differs from the checkpoint's 2" "$work/easgd_tau.log" && pass ||
  { fail "easgd_tau: exit $rc, wanted an error about --tau"; tail -5 "$work/easgd_tau.log"; }
resume easgd_term 5
[ "$(epoch_numbers easgd_term)" = "1 2 3 4 5 6 " ] && pass || fail "easgd_term: epochs 1-6 once each, got $(epoch_numbers easgd_term)"
if timeout 60 "$rudra" test "$solver" "$work/easgd_term/final.rudra" --data "$data" >"$work/easgd_term.test" 2>&1; then pass
else fail "easgd_term: rudra test reads final.rudra"; cat "$work/easgd_term.test"; fi
finish
