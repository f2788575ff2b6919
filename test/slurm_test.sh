#!/usr/bin/env bash
# The Slurm batch script's time-limit path on a one-node Slurm: Slurm signals the script before
# the limit, the run stops with a checkpoint (exit 130), the job requeues itself, and the
# requeued job goes on from the checkpoint. Bounded: a hang is a failure.
# Usage (as root): slurm_test.sh RUDRA_BINARY SOURCE_DIR SLURM_STARTER
#   SLURM_STARTER: a script that `start DIR` / `stop DIR` a one-node Slurm and writes DIR/env.sh
#   (the workplace's start-local-slurm.sh).
. "$(dirname "$0")/harness.sh" "$1" "$2"
starter=$(readlink -f "$3")
rudra=$(readlink -f "$rudra")
src=$(readlink -f "$src")
mpi_test_setup
slurm=$work/slurm
trap 'bash "$starter" stop "$slurm" >/dev/null 2>&1; rm -rf "$work"' EXIT
# 8 CPUs advertised, so that 5 tasks fit on a 2-core machine. Slurm holds a requeued job for the
# credential lifetime (cred_expire, 120 s by default) before starting it again: 30 s here, which
# saves six minutes of waiting over the four requeues below. The line replaces the starter's
# AuthInfo (its munge socket in the folder it is given).
auth="AuthInfo=socket=$(readlink -f "$slurm")/munge/munge.socket.2,cred_expire=30"
if ! SLURM_LOCAL_CPUS=8 SLURM_LOCAL_EXTRA_CONF=$auth timeout -k 10 900 bash "$starter" start "$slurm" \
    >"$work/slurm-start.log" 2>&1; then
  fail "the local Slurm did not start"; tail -20 "$work/slurm-start.log"; finish; exit
fi
. "$slurm/env.sh"

# A limit of one minute, and the signal 45 s before it; enough epochs that the run cannot end first.
cd "$work"
jid=$(RUDRA="$rudra" OMP_NUM_THREADS=1 timeout 60 sbatch --parsable --ntasks=5 --overcommit --time=1 \
  --signal=B:USR1@45 "$src/tools/slurm/rudra-dist.sbatch" "$solver" --data "$data" --batch 16 --epochs 400 \
  --protocol softsync --n 1 -o "$work/out")
[ -n "$jid" ] && pass || { fail "sbatch gave no job id"; finish; exit; }
log=$work/rudra-dist-$jid.out
# The requeued job starts again once its hold (cred_expire, above) is over.
for _ in $(seq 480); do
  grep -q 'PS: resuming from' "$log" 2>/dev/null && break
  sleep 0.5
done
# The statistics server writes its "resume" line once its own net is set up, a moment after the
# PS says it resumes.
for _ in $(seq 120); do
  grep -q '"event":"resume"' "$work/out/metrics.jsonl" 2>/dev/null && break
  sleep 0.5
done
timeout 30 scancel "$jid"
grep -q 'the time limit is near: stopping with a checkpoint' "$log" && pass || fail "the script took the signal"
grep -q 'PS: checkpoint (signal) at update' "$log" && pass || fail "the PS wrote a checkpoint"
grep -q 'task 0: Exited with exit code 130' "$log" && pass || fail "the PS ended with 130"
grep -q "requeueing job $jid" "$log" && pass || fail "the job requeued itself"
grep -q "job $jid (restart 1): going on from $work/out/checkpoint.rudra" "$log" && pass || fail "the requeued job found the checkpoint"
grep -q 'PS: resuming from .*(signal checkpoint of' "$log" && pass || fail "the requeued run resumed"
grep -q '"event":"stopped","reason":"signal"' "$work/out/metrics.jsonl" && grep -q '"event":"resume"' "$work/out/metrics.jsonl" &&
  pass || fail "metrics.jsonl: a stopped line, then a resume line"
[ $failures = 0 ] || cat "$log"

# The user's --resume, honoured across requeues: a hardsync run stopped after epoch 2 (a
# checkpoint), submitted with --resume given explicitly (no -o: the checkpoint's folder) and
# stopped twice by the script's signal as Slurm sends it at a time limit. Each requeued slot goes
# on from the job's own newest checkpoint, never from the one the options named; the run ends
# with the straight run's weights and every epoch once.
hs=(--data "$data" --batch 16 --protocol hardsync --epochs 24)
timeout -k 5 300 mpiexec -disable-auto-cleanup -n 5 "$rudra" dist "$solver" "${hs[@]}" -o "$work/hs-straight" \
  >"$work/hs-straight.log" 2>&1 || fail "hs-straight: exit $?"
( timeout -k 5 300 mpiexec -disable-auto-cleanup -n 5 "$rudra" dist "$solver" "${hs[@]}" -o "$work/hs" >"$work/hs-first.log" 2>&1 ) &
for _ in $(seq 600); do grep -q '"epoch":2,' "$work/hs/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
pkill -TERM -P "$(pgrep -n -x hydra_pmi_proxy)" -x rudra
wait
grep -q 'PS: checkpoint (signal)' "$work/hs-first.log" && pass || { fail "hs: the first run's checkpoint"; tail "$work/hs-first.log"; }
epochs() { grep -c '"event":"epoch"' "$work/hs/metrics.jsonl"; }
jid=$(RUDRA="$rudra" OMP_NUM_THREADS=1 timeout 60 sbatch --parsable --ntasks=5 --overcommit --output="$work/hs.out" \
  "$src/tools/slurm/rudra-dist.sbatch" --resume "$work/hs")
for stop in 1 2; do
  # Two epochs of this slot, then the signal; then the requeue.
  at=$(epochs)
  for _ in $(seq 3600); do [ "$(epochs)" -ge $((at + 2)) ] && break; sleep 0.1; done
  timeout 30 scancel --batch --signal=USR1 "$jid"
  for _ in $(seq 600); do [ "$(grep -c "requeueing job $jid" "$work/hs.out")" = $stop ] && break; sleep 0.1; done
done
for _ in $(seq 1200); do [ -s "$work/hs/final.rudra" ] && ! squeue -h -j "$jid" 2>/dev/null | grep -q . && break; sleep 0.5; done
timeout 30 scancel "$jid" 2>/dev/null
[ "$(grep -c "requeueing job $jid" "$work/hs.out")" = 2 ] && grep -q "job $jid (restart 2): going on from $work/hs/checkpoint.rudra" \
  "$work/hs.out" && pass || { fail "hs: requeued twice, each slot going on from the job's checkpoint"; cat "$work/hs.out"; }
grep -o 'PS: resuming from [^ ]*.*epoch [0-9]*' "$work/hs.out" | sed 's/^/hs: /'
cmp -s "$work/hs-straight/final.rudra" "$work/hs/final.rudra" && pass || fail "hs: the final weights differ from the straight run's"
[ "$(grep '"event":"epoch"' "$work/hs/metrics.jsonl" | grep -o '"epoch":[0-9]*' | sed 's/.*://' | tr '\n' ' ')" = \
  "$(seq -s ' ' 1 24) " ] && pass || { fail "hs: epochs 1-24 once each"; grep -o '"epoch":[0-9]*' "$work/hs/metrics.jsonl" | tr '\n' ' '; }

# A time limit shorter than the start-up: the signal comes before training does (here sent as
# soon as the script runs). The script stops after that one slot, saying why, and does not requeue.
jid=$(RUDRA="$rudra" OMP_NUM_THREADS=1 timeout 60 sbatch --parsable --ntasks=5 --overcommit --output="$work/short.out" \
  "$src/tools/slurm/rudra-dist.sbatch" "$solver" --data "$data" --batch 16 --epochs 400 --conv-backend auto --auto-cache '' \
  -o "$work/short")
for _ in $(seq 1200); do grep -q "rudra-dist: job $jid," "$work/short.out" 2>/dev/null && break; sleep 0.05; done
timeout 30 scancel --batch --signal=USR1 "$jid"
for _ in $(seq 600); do squeue -h -j "$jid" 2>/dev/null | grep -q . || break; sleep 0.5; done
grep -qE "rudra-dist: (the time limit's signal came before the run started|this slot moved the checkpoint no further|the run did not stop with a checkpoint)" \
  "$work/short.out" && ! grep -q "requeueing job" "$work/short.out" && ! squeue -h -j "$jid" 2>/dev/null | grep -q . && pass ||
  { fail "short: one slot, no requeue, a message"; cat "$work/short.out"; }
grep -h 'rudra-dist: \(the time\|this slot\|the run did\)' "$work/short.out" | sed 's/^/short: /'
timeout 30 scancel "$jid" 2>/dev/null

# The decentralized modes under the same script: one short epoch each, waited for (sbatch --wait
# gives the job's exit code). Gossip-push's job asks for 2 CPUs per task, which must reach the
# ranks as 2 threads each, and names its output folder relative to the submission directory.
for mode in allreduce easgd gossip-pull gossip-push; do
  cpus=1
  [ "$mode" = gossip-push ] && cpus=2
  if RUDRA="$rudra" OMP_NUM_THREADS=1 timeout 300 sbatch --wait --quiet --ntasks=4 --cpus-per-task=$cpus --overcommit \
      --output="$work/$mode.out" "$src/tools/slurm/rudra-dist.sbatch" "$solver" --data "$data" --batch 16 --epochs 1 \
      --protocol "$mode" -o "$mode"; then pass
  else fail "$mode under Slurm: exit $?"; tail -20 "$work/$mode.out"; fi
  [ -s "$work/$mode/final.rudra" ] && [ "$(grep -c '"event":"epoch"' "$work/$mode/metrics.jsonl")" = 1 ] && pass ||
    fail "$mode under Slurm: final.rudra and one epoch line"
done
# Rudra-adv and adv* under the same script with every protocol: 8 tasks in two emulated nodes
# of 4 (a leaf PS on each, 4 learners).
for topology in adv 'adv*'; do
  for protocol in hardsync softsync async; do
    name=${topology/\*/star}-$protocol
    if RUDRA="$rudra" OMP_NUM_THREADS=1 timeout 300 sbatch --wait --quiet --ntasks=8 --overcommit \
        --output="$work/$name.out" "$src/tools/slurm/rudra-dist.sbatch" "$solver" --data "$data" --batch 16 --epochs 1 \
        --protocol "$protocol" --topology "$topology" --ranks-per-node 4 -o "$name"; then pass
    else fail "$name under Slurm: exit $?"; tail -20 "$work/$name.out"; fi
    [ -s "$work/$name/final.rudra" ] && [ "$(grep -c '"event":"epoch"' "$work/$name/metrics.jsonl")" = 1 ] &&
      grep -qF "layout ($topology): rank 0 root parameter server, rank 1 statistics server, 4 learners, 2 leaf parameter servers" \
        "$work/$name.out" && pass || { fail "$name under Slurm: the layout, final.rudra and one epoch line"; tail -20 "$work/$name.out"; }
  done
done
grep -q "rudra-dist: job .*, 2 threads per rank; output $work/gossip-push" "$work/gossip-push.out" &&
  grep -q '4 rank(s) x 2 thread(s)' "$work/gossip-push.out" && pass ||
  { fail "gossip-push under Slurm: 2 threads per rank, the output folder absolute"; cat "$work/gossip-push.out"; }
# An all-reduce run stopped the way the time limit stops it (the script's USR1): every learner
# stops after the same step, the first one writes a checkpoint and ends with 130, the job requeues.
jid=$(RUDRA="$rudra" OMP_NUM_THREADS=1 timeout 60 sbatch --parsable --ntasks=4 --overcommit \
  --output="$work/ar-stop.out" "$src/tools/slurm/rudra-dist.sbatch" "$solver" --data "$data" --batch 16 --epochs 400 \
  --protocol allreduce -o "$work/ar-stop")
for _ in $(seq 240); do grep -q '"epoch":1,' "$work/ar-stop/metrics.jsonl" 2>/dev/null && break; sleep 0.5; done
timeout 30 scancel --batch --signal=USR1 "$jid"
for _ in $(seq 240); do grep -q "requeueing job $jid" "$work/ar-stop.out" 2>/dev/null && break; sleep 0.5; done
timeout 30 scancel "$jid"
grep -q 'allreduce: checkpoint (signal) at step' "$work/ar-stop.out" && grep -q 'task 0: Exited with exit code 130' "$work/ar-stop.out" &&
  grep -q "requeueing job $jid" "$work/ar-stop.out" && pass || { fail "allreduce under Slurm: stop, checkpoint, requeue"; cat "$work/ar-stop.out"; }

# A sweep as a job array (tools/slurm/rudra-sweep.sbatch): 2 protocols x 2 learner counts, one
# short epoch each, every task sized for the largest run; then collected and drawn. Submitted
# again, every task finds its run done.
cat >"$work/sweep-grid.txt" <<GRID
solver: $solver
all: --data $data --batch 16 --epochs 1
--learners 2 --protocol hardsync
--learners 3 --protocol hardsync
--learners 2 --protocol async
--learners 3 --protocol async
GRID
n=$(python3 "$src/tools/sweep/sweep.py" list "$work/sweep-grid.txt" | wc -l)
[ "$n" = 4 ] && pass || fail "sweep: 4 runs listed, got $n"
sweep_array() {  # sweep_array OUTPUT_PREFIX
  RUDRA="$rudra" RUDRA_SOURCE="$src" OMP_NUM_THREADS=1 timeout 600 sbatch --wait --quiet --array=0-$((n - 1)) --ntasks=5 \
    --overcommit --output="$work/$1-%a.out" "$src/tools/slurm/rudra-sweep.sbatch" "$work/sweep-grid.txt" "$work/sweep"
}
if sweep_array sweep; then pass
else fail "sweep array: exit $?"; tail -5 "$work"/sweep-*.out; fi
[ "$(ls "$work"/sweep/*/final.rudra 2>/dev/null | wc -l)" = 4 ] && [ "$(ls "$work"/sweep/*/manifest.json | wc -l)" = 4 ] &&
  pass || { fail "sweep array: 4 runs with final.rudra and manifest.json"; tail -5 "$work"/sweep-*.out; }
grep -q 'rudra-sweep: task 3, 5 ranks: ' "$work/sweep-3.out" && grep -q 'rudra-sweep: task 0, 4 ranks: ' "$work/sweep-0.out" &&
  pass || fail "sweep array: each task runs its own line's rank count"
python3 "$src/tools/sweep/sweep.py" collect "$work/sweep" >"$work/collect.log" 2>&1 && [ "$(wc -l <"$work/sweep/runs.csv")" = 5 ] &&
  pass || { fail "sweep array: collected, a header and 4 rows"; cat "$work/collect.log"; }
python3 "$src/tools/sweep/sweep.py" plot "$work/sweep" >"$work/plot.log" 2>&1 && [ -s "$work/sweep/figures/error_vs_time.png" ] &&
  [ -s "$work/sweep/figures/error_vs_mulambda.png" ] && pass || { fail "sweep array: the figures"; cat "$work/plot.log"; }
if sweep_array again; then pass; else fail "sweep array again: exit $?"; fi
[ "$(cat "$work"/again-*.out | grep -c 'is done')" = 4 ] && pass || { fail "sweep array again: every task done already"; cat "$work"/again-*.out; }

# A grid on the virtual cluster (RUDRA_VIRTUAL), a process per task. Task 2, signalled after its
# first epoch as at a time limit, stops with a checkpoint, requeues itself and goes on from it.
cat >"$work/virtual-grid.txt" <<GRID
solver: $solver
all: --data $data --batch 16 --base-lr 0.01
--learners 2 --protocol hardsync --epochs 1
--learners 3 --protocol async --epochs 1
--learners 4 --protocol softsync --n 1 --epochs 30
GRID
vjid=$(RUDRA="$rudra" RUDRA_SOURCE="$src" RUDRA_VIRTUAL="--compute-ms 6.5 --model-bytes 334032" timeout 30 sbatch \
  --parsable --array=0-2 --ntasks=1 --overcommit --output="$work/virtual-%a.out" "$src/tools/slurm/rudra-sweep.sbatch" \
  "$work/virtual-grid.txt" "$work/virtual")
long=''
for _ in $(seq 1200); do
  long=$(ls -d "$work"/virtual/*epochs_30* 2>/dev/null | head -1)
  grep -q '"epoch":1,' "$long/metrics.jsonl" 2>/dev/null && break
  sleep 0.1
done
timeout 30 scancel --signal=USR1 --batch "${vjid}_2"
# Slurm holds a requeued job for cred_expire (30 s here).
for _ in $(seq 720); do [ "$(ls "$work"/virtual/*/final.rudra 2>/dev/null | wc -l)" = 3 ] && break; sleep 0.5; done
[ "$(ls "$work"/virtual/*/final.rudra 2>/dev/null | wc -l)" = 3 ] && pass ||
  { fail "virtual sweep: 3 runs with final.rudra"; tail -5 "$work"/virtual-*.out; }
grep -q "rudra-sweep: checkpoint at [0-9]* samples (from -1); requeueing" "$work/virtual-2.out" &&
  grep -q "going on from $long/checkpoint.rudra" "$work/virtual-2.out" && pass ||
  { fail "virtual sweep: task 2 stopped, requeued and resumed"; cat "$work/virtual-2.out"; }
[ "$(grep -c '"event":"epoch"' "$long/metrics.jsonl")" = 30 ] && grep -q '"event":"resume"' "$long/metrics.jsonl" &&
  pass || fail "virtual sweep: task 2's 30 epoch lines, each once, and its resume line"
python3 "$src/tools/sweep/sweep.py" collect "$work/virtual" >"$work/vcollect.log" 2>&1 &&
  grep -q "^collect: 3 runs, 32 epoch rows" "$work/vcollect.log" && pass || { fail "virtual sweep: collected"; cat "$work/vcollect.log"; }

# A grid with a warm start, in stages as rudra-sweep.sbatch shows: one hardsync epoch, then two
# runs that go on from its final model, an array that waits for the first (afterok).
cat >"$work/warm-grid.txt" <<GRID
solver: $solver
all: --data $data --batch 16
[first] --learners 2 --protocol hardsync --epochs 1
--learners 2 --protocol softsync --n 1 --epochs 2 --warm-start @first
--learners 2 --protocol softsync --n 1 --mode overlap --epochs 2 --warm-start @first
GRID
stages=$(python3 "$src/tools/sweep/sweep.py" list --stages "$work/warm-grid.txt" | tr '\n' ' ')
[ "$stages" = "0 1,2 " ] && pass || fail "warm sweep: stages '0 1,2', got '$stages'"
prev=
for tasks in $stages; do
  prev=$(RUDRA="$rudra" RUDRA_SOURCE="$src" OMP_NUM_THREADS=1 timeout 30 sbatch --parsable ${prev:+--dependency=afterok:$prev} \
    --array="$tasks" --ntasks=4 --overcommit --output="$work/warm-%a.out" "$src/tools/slurm/rudra-sweep.sbatch" \
    "$work/warm-grid.txt" "$work/warm")
done
for _ in $(seq 600); do [ "$(ls "$work"/warm/*/final.rudra 2>/dev/null | wc -l)" = 3 ] && break; sleep 0.5; done
[ "$(ls "$work"/warm/*/final.rudra 2>/dev/null | wc -l)" = 3 ] && pass || { fail "warm sweep: 3 runs with final.rudra"; tail -5 "$work"/warm-*.out; }
[ "$(grep -l '"warm_start":".*first_learners_2_protocol_hardsync.*final.rudra"' "$work"/warm/*/metrics.jsonl | wc -l)" = 2 ] &&
  pass || fail "warm sweep: stage 2's runs start from stage 1's final model"
finish
