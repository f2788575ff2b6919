#!/usr/bin/env bash
# The sweep workflow without Slurm (tools/sweep/sweep.py): a grid of 2 protocols x 2 learner
# counts, one short epoch each, run one after another, each in its own folder with a manifest;
# run again, nothing is redone; a failing run makes the sweep fail and is tried again next time;
# collected into one CSV and drawn as PNG files; grid files with mistakes are refused with the
# file and line; the grid again on the virtual cluster, where a run stopped by a signal goes on
# from its checkpoint. (test/slurm_test.sh runs a sweep as a Slurm job array.)
# Usage: sweep_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
mpi_test_setup
src=$(cd "$src" && pwd)
rudra=$(cd "$(dirname "$rudra")" && pwd)/$(basename "$rudra")
solver=$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt
sweep=(python3 "$src/tools/sweep/sweep.py")
cd "$work"
cat >grid.txt <<GRID
# 2 protocols x 2 learner counts
solver: $solver
all: --data data --batch 16 --epochs 1 --seed 3
--learners 2 --protocol hardsync
--learners 3 --protocol hardsync
--learners 2 --protocol softsync --n 1
--learners 3 --protocol softsync --n 1
GRID
[ "$("${sweep[@]}" list grid.txt | wc -l)" = 4 ] && pass || fail "list: 4 runs"
if timeout 600 "${sweep[@]}" run grid.txt out --rudra "$rudra" >run1.log 2>&1; then pass
else fail "sweep run: exit $?"; cat run1.log; fi
grep -q 'sweep: 4 runs in grid.txt, 0 done, 4 to run' run1.log && pass || fail "sweep run: says what it will run"
done_runs=$(ls out/*/final.rudra 2>/dev/null | wc -l)
[ "$done_runs" = 4 ] && [ "$(ls out/*/manifest.json | wc -l)" = 4 ] && pass || fail "4 folders with final.rudra and manifest.json, got $done_runs"
m=$(ls out/learners_3_protocol_softsync_n_1-*/manifest.json 2>/dev/null | head -1)
[ -n "$m" ] && grep -q '"ranks": 5' "$m" && grep -q '"grid_line": "--learners 3 --protocol softsync --n 1"' "$m" &&
  grep -qF "\"$work/data\"" "$m" && pass || { fail "the manifest of learners 3, softsync: ranks, line, absolute --data"; cat "$m"; }
# Again: every run is done, nothing runs.
before=$(cat out/*/run.log | wc -c)
timeout 60 "${sweep[@]}" run grid.txt out --rudra "$rudra" >run2.log 2>&1 && grep -q '4 done, 0 to run' run2.log &&
  [ "$(cat out/*/run.log | wc -c)" = "$before" ] && pass || { fail "a second sweep redoes nothing"; cat run2.log; }
# A run that fails: the sweep says which and exits 1; the next sweep tries it again.
cp grid.txt bad.txt
echo "--learners 2 --protocol softsync --n 1 --momentum 1.5" >>bad.txt
timeout 120 "${sweep[@]}" run bad.txt out --rudra "$rudra" >bad1.log 2>&1
rc=$?
[ $rc = 1 ] && grep -q '4 done, 1 to run' bad1.log && grep -q '1 of 1 runs did not finish' bad1.log && pass ||
  { fail "a failing run: exit $rc"; cat bad1.log; }
timeout 120 "${sweep[@]}" run bad.txt out --rudra "$rudra" >bad2.log 2>&1
grep -q '4 done, 1 to run' bad2.log && pass || fail "the failed run is tried again"
rm -rf out/*momentum_1.5*
# A sweep killed with its run (kill -9 of the whole process group) goes on from the run's checkpoint.
printf '%s\n' "solver: $solver" "all: --data data --batch 16 --epochs 4 --checkpoint-every 5" \
  "--learners 2 --protocol softsync --n 1" >resume.txt
setsid timeout 120 "${sweep[@]}" run resume.txt resumed --rudra "$rudra" >resume1.log 2>&1 &
sweeper=$!
wait_for_epoch() { for _ in $(seq 600); do grep -q '"epoch":2,' resumed/*/metrics.jsonl 2>/dev/null && return 0; sleep 0.1; done; return 1; }
wait_for_epoch || fail "resume: no epoch 2"
kill -9 -- "-$sweeper"
wait 2>/dev/null
pkill -9 -x rudra
[ -s resumed/*/checkpoint.rudra ] && [ ! -e resumed/*/final.rudra ] && pass || fail "resume: a checkpoint and no final.rudra after the kill"
timeout 120 "${sweep[@]}" run resume.txt resumed --rudra "$rudra" >resume2.log 2>&1 && grep -q '(4 ranks, resumed)' resume2.log &&
  [ -s resumed/*/final.rudra ] && pass || { fail "resume: the next sweep goes on with --resume"; cat resume2.log; }
[ "$(grep '"event":"epoch"' resumed/*/metrics.jsonl | grep -o '"epoch":[0-9]*' | sed 's/.*://' | tr '\n' ' ')" = "1 2 3 4 " ] && pass ||
  { fail "resume: epochs 1-4 once each"; cat resumed/*/metrics.jsonl; }

# A warm start (the paper's Figure 8): a labelled run's final model starts a later run, which
# waits for it (a stage later under Slurm) and whose clock goes on from it when collected.
printf '%s\n' "solver: $solver" "all: --data data --batch 16 --seed 3" \
  "[first] --learners 2 --protocol hardsync --epochs 1" \
  "--learners 2 --protocol softsync --n 1 --epochs 2 --warm-start @first" >warm.txt
[ "$("${sweep[@]}" list --stages warm.txt | tr '\n' ' ')" = "0 1 " ] && pass || fail "list --stages: 0, then 1"
"${sweep[@]}" command warm.txt warm --index 1 >warm0.log 2>&1
rc=$?
[ $rc = 2 ] && grep -q 'run 1 warm-starts from run 0 (\[first\]' warm0.log && pass ||
  { fail "command: a run whose source is not done is refused, exit $rc"; cat warm0.log; }
if timeout 300 "${sweep[@]}" run warm.txt warm --rudra "$rudra" >warm1.log 2>&1; then pass
else fail "warm sweep: exit $?"; cat warm1.log; fi
dep=$(ls -d warm/learners_2_protocol_softsync_*warm-start* 2>/dev/null | head -1)
first=$(ls -d warm/first_learners_2_protocol_hardsync_* 2>/dev/null | head -1)
[ -n "$dep" ] && [ -n "$first" ] && grep -qF "\"warm_start_from\": \"$(basename "$first")\"" "$dep/manifest.json" &&
  grep -qF "\"warm_start\":\"$work/$first/final.rudra\"" "$dep/metrics.jsonl" && pass ||
  { fail "the dependent run starts from its source's final.rudra"; cat "$dep/manifest.json"; }
[ "$(grep '"event":"epoch"' "$dep/metrics.jsonl" | grep -o '"epoch":[0-9]*' | tr '\n' ' ')" = '"epoch":2 ' ] && pass ||
  fail "the dependent run trains epoch 2 only"
timeout 60 "${sweep[@]}" collect warm >warmc.log 2>&1 && pass || { fail "collect warm: exit $?"; cat warmc.log; }
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $c["warm_start_from"] == "" { t0 = $c["elapsed_s"] } $c["warm_start_from"] != "" { t1 = $c["elapsed_s"] }
  END { exit !(t0 > 0 && t1 > t0) }' warm/runs.csv && pass ||
  { fail "collect: the warm-started run's time goes on from its source's"; cat warm/runs.csv; }

# Collect: one row per run and epoch, the settings from each run's metrics.
timeout 60 "${sweep[@]}" collect out >collect.log 2>&1 && pass || { fail "collect: exit $?"; cat collect.log; }
[ "$(wc -l <out/runs.csv)" = 5 ] && pass || { fail "runs.csv: a header and 4 rows"; cat out/runs.csv; }
head -1 out/runs.csv | grep -q '^run,protocol,n,learners,batch,mu_lambda,' && pass || fail "runs.csv header"
grep -q ',1-softsync,1,3,16,48,' out/runs.csv && grep -q ',hardsync,[0-9]*,2,16,32,' out/runs.csv && pass ||
  { fail "runs.csv: protocol, learners, batch and mu*lambda of each run"; cat out/runs.csv; }
awk -F, 'NR > 1 && ($20 == "" || $20 < 0 || $20 > 1) { bad = 1 } END { exit bad }' out/runs.csv && pass ||
  fail "runs.csv: a test error in [0, 1] on every row"
grep -q '^learners_2_protocol_softsync_n_1-[0-9a-f]*,1-softsync,2,1,[0-9]*,[0-9]*$' out/staleness.csv && pass ||
  { fail "staleness.csv: the histogram of a softsync run"; cat out/staleness.csv; }
# Plot: the four figures, as PNG.
timeout 120 "${sweep[@]}" plot out >plot.log 2>&1 && pass || { fail "plot: exit $?"; cat plot.log; }
for f in error_vs_time accuracy_vs_epoch error_vs_mulambda staleness; do
  [ "$(head -c 4 "out/figures/$f.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e47 ] && pass || fail "plot: $f.png"
done
# Grid files with mistakes: the file, the line, the problem; exit 2.
bad_grid() {  # bad_grid MESSAGE LINE...
  local message=$1; shift
  printf '%s\n' "solver: $solver" "$@" >g.txt
  "${sweep[@]}" list g.txt >g.log 2>&1
  local rc=$?
  [ $rc = 2 ] && grep -qF -- "$message" g.log && pass || { fail "grid error '$message': exit $rc"; cat g.log; }
}
bad_grid "g.txt:2: give --learners L (L + 2 ranks) or --ranks K" "--protocol async"
bad_grid "g.txt:2: -o is the sweep's to set" "--learners 2 -o here"
bad_grid "g.txt:3: the same run as line 2" "--learners 2" "--learners 2"
bad_grid "g.txt:2: --learners needs a positive number, got 'two'" "--learners two"
bad_grid "g.txt:2: a run line holds \`rudra dist\` options" "learners 2"
bad_grid "g.txt:2: --warm-start @w: no earlier line is labelled [w]" "--learners 2 --warm-start @w" "[w] --learners 3"
bad_grid "g.txt:3: the label [w] is already line 2's" "[w] --learners 2" "[w] --learners 3"
printf '%s\n' "solver: $solver" "--learners 2" >g.txt
"${sweep[@]}" run g.txt out --index 7 >g.log 2>&1
grep -q -- "--index 7: the grid has runs 0 to 0" g.log && pass || fail "--index out of range"
# The same grid on the virtual cluster (--virtual): one process per run, the runs' folders
# collected as the real runs' are.
if timeout 600 "${sweep[@]}" run grid.txt vout --rudra "$rudra" --virtual "--compute-ms 6.5 --model-bytes 334032" \
    >virtual.log 2>&1; then pass
else fail "sweep run --virtual: exit $?"; cat virtual.log; fi
[ "$(ls vout/*/final.rudra vout/*/schedule.txt 2>/dev/null | wc -l)" = 8 ] && pass || fail "--virtual: 4 runs' final.rudra and schedule.txt"
grep -q '"simulated"' vout/learners_3_protocol_softsync_n_1-*/schedule.txt && pass || fail "--virtual: a simulated schedule"
"${sweep[@]}" collect vout >vcollect.log 2>&1 && grep -q "^collect: 4 runs, 4 epoch rows" vcollect.log && pass ||
  { fail "--virtual: collect"; cat vcollect.log; }
# A virtual run stopped by a signal goes on from its checkpoint when the sweep runs again, to the
# bytes of one never stopped; one that left a folder without a checkpoint starts again.
cat >vgrid.txt <<GRID
solver: $solver
all: --data data --batch 16 --epochs 3 --seed 3
--learners 4 --protocol async --base-lr 0.01
GRID
vsweep() {  # vsweep OUT LOG
  timeout 600 "${sweep[@]}" run vgrid.txt "$1" --rudra "$rudra" --virtual "--compute-ms 6.5 --model-bytes 334032" >"$2" 2>&1
}
vsweep vref vref.log && pass || { fail "--virtual, 3 epochs: exit $?"; cat vref.log; }
name=$("${sweep[@]}" list vgrid.txt | cut -f3)
mkdir -p "vstop/$name" && echo '{"event":"start"}' >"vstop/$name/metrics.jsonl"
nice -n 10 timeout 600 "${sweep[@]}" run vgrid.txt vstop --rudra "$rudra" --virtual "--compute-ms 6.5 --model-bytes 334032" \
  >vstop1.log 2>&1 &
for _ in $(seq 1200); do grep -q '"epoch":1,' "vstop/$name/metrics.jsonl" 2>/dev/null && break; sleep 0.05; done
pkill -TERM -f "dist --replay $work/vstop/$name"
wait
grep -q "exit 130" vstop1.log && [ -s "vstop/$name/checkpoint.rudra" ] && pass ||
  { fail "--virtual: the run stopped with a checkpoint"; cat vstop1.log; }
vsweep vstop vstop2.log && grep -q "run 0 (6 ranks, resumed)" vstop2.log && pass || { fail "--virtual: resumed"; cat vstop2.log; }
cmp -s "vref/$name/final.rudra" "vstop/$name/final.rudra" && pass || fail "--virtual: the resumed run's final.rudra differs"
[ "$(grep -c '"event":"epoch"' "vstop/$name/metrics.jsonl")" = 3 ] && pass || fail "--virtual: 3 epoch lines after the resume"
finish
