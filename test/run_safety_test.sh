#!/usr/bin/env bash
# What a run must never lose, each case bounded by `timeout` (a hang is a failure):
#   the README's example through tools/rudra-launch survives a killed learner under 1-softsync;
#   a second run into a folder that holds a run is refused and leaves its files byte for byte;
#   a second live job on one folder is refused;
#   a full disk during a checkpoint stops every rank with exit 5, the old checkpoint whole;
#   a --timeline that cannot be written is refused before training;
#   kill -9 of a learner during start-up (launched by tools/rudra-launch) ends the job within the
#   bound, nothing left in /dev/shm;
#   a dead job's data-set file is removed at the next start on the node;
#   SIGHUP and SIGUSR2 stop the run with a checkpoint (exit 130);
#   rudra train refuses an occupied folder too.
# Usage: run_safety_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
mpi_test_setup
common=(--data "$data" --batch 16 --peer-timeout 3)
. "$(dirname "$0")/fault_harness.sh"
launch=$src/tools/rudra-launch
shm_leftovers() { ls /dev/shm 2>/dev/null | grep -E '^(rudra-data-|mpich_shar_tmp)' || true; }

# 1. The README's example, launched as the README says (tools/rudra-launch), one learner killed
# after epoch 1: the others finish every epoch.
for try in 1 2; do
  rm -rf "$work/readme"
  ( RUDRA="$rudra" timeout -k 5 150 nice -n 5 "$launch" -n 6 "$solver" --protocol softsync --n 1 --batch 16 --epochs 6 \
      --data "$data" --peer-timeout 3 -o "$work/readme" >"$work/readme.log" 2>&1
    echo $? >"$work/readme.rc" ) &
  wait_for "$work/readme/metrics.jsonl" '"epoch":1,' || fail "readme: no epoch 1"
  kill -9 "$(rank_pid 3)"
  wait
  rc=$(cat "$work/readme.rc")
  met_blocked_queue readme $try || break
done
[ "$rc" = 0 ] && [ "$(epochs_logged "$work/readme")" = 6 ] && [ -s "$work/readme/final.rudra" ] && pass ||
  { fail "readme: exit $rc, 6 epochs and final.rudra wanted"; tail -20 "$work/readme.log"; }
grep -q '"event":"learner_lost","rank":3,' "$work/readme/metrics.jsonl" && pass || fail "readme: the lost learner logged"
grep -q 'without -disable-auto-cleanup' "$work/readme.log" && fail "readme: warned about the launch" || pass
no_leftovers readme

# 2. A second run into that folder is refused, naming what is there and the ways on; the first
# run's files are byte for byte as they were. Under plain mpiexec rank 0 warns about the launch.
( cd "$work/readme" && md5sum metrics.jsonl final.rudra checkpoint.rudra staleness.json schedule.txt ) >"$work/before.md5"
timeout -k 5 60 mpiexec -n 4 "$rudra" dist "$solver" "${common[@]}" --epochs 1 -o "$work/readme" >"$work/again.log" 2>&1
rc=$?
[ "$rc" = 1 ] && pass || fail "again: exit $rc, wanted 1"
grep -qF "$work/readme: the output folder holds another run's files (checkpoint.rudra, final.rudra, metrics.jsonl, schedule.txt, staleness.json)" \
  "$work/again.log" && grep -qF -- "--resume $work/readme" "$work/again.log" && grep -qF -- "--overwrite" "$work/again.log" &&
  pass || { fail "again: the refusal names the files and the ways on"; cat "$work/again.log"; }
( cd "$work/readme" && md5sum -c --quiet "$work/before.md5" ) && pass || fail "again: the first run's files changed"
grep -q 'warning: started by mpiexec without -disable-auto-cleanup' "$work/again.log" && pass ||
  fail "again: no warning about the launch without -disable-auto-cleanup"
# --overwrite replaces it.
timeout -k 5 120 mpiexec -disable-auto-cleanup -n 4 "$rudra" dist "$solver" "${common[@]}" --epochs 1 --train-limit 320 \
  -o "$work/readme" --overwrite >"$work/overwrite.log" 2>&1 && [ "$(epochs_logged "$work/readme")" = 1 ] && pass ||
  { fail "overwrite: one epoch in the replaced folder"; tail "$work/overwrite.log"; }

# 3. Two live jobs on one folder: the second is refused while the first runs, and the first ends well.
start live 4 --protocol async --epochs 30
wait_for "$work/live/metrics.jsonl" '"epoch":1,' || fail "live: no epoch 1"
timeout -k 5 60 mpiexec -disable-auto-cleanup -n 4 "$rudra" dist "$solver" "${common[@]}" --epochs 1 -o "$work/live" \
  --overwrite >"$work/second.log" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "$work/live: the output folder is in use by another live run (pid [0-9]* on " "$work/second.log" && pass ||
  { fail "second: exit $rc, wanted 1 and the live run named"; cat "$work/second.log"; }
term_ranks live
finish_run live
[ "$rc" = 130 ] && [ -s "$work/live/checkpoint.rudra" ] && pass || { fail "live: exit $rc after SIGTERM"; tail "$work/live.log"; }

# 4. A full disk during a checkpoint: every rank stops with exit 5 (not 1, no peer blamed), the
# error names the file and the OS's reason, and the old checkpoint is whole. A small tmpfs; where
# mounting is not allowed, a file-size limit on the ranks (the same error path, EFBIG).
small=$work/small
mkdir -p "$small"
if mount -t tmpfs -o size=3m tmpfs "$small" 2>/dev/null; then limit=() how="a 3 MiB tmpfs"
else limit=(prlimit --fsize=1000000) how="a 1 MB file-size limit"; fi
( timeout -k 5 150 nice -n 5 ${limit[@]+"${limit[@]}"} mpiexec -disable-auto-cleanup -n 4 "$rudra" dist "$solver" "${common[@]}" \
    --epochs 400 --checkpoint-every 10 -o "$small/out" >"$work/full.log" 2>&1
  echo $? >"$work/full.rc" ) &
for _ in $(seq 300); do [ -s "$small/out/checkpoint.rudra" ] && break; sleep 0.1; done
[ ${#limit[@]} = 0 ] && dd if=/dev/zero of="$small/filler" bs=16k >/dev/null 2>&1
wait
rc=$(cat "$work/full.rc")
echo "full: $how, exit $rc"
[ "$rc" = 5 ] && pass || { fail "full: exit $rc, wanted 5"; tail "$work/full.log"; }
grep -qE "error: a file could not be written: $small/out/[a-z.]+\.tmp: write failed after [0-9]+ of [0-9]+ bytes: (No space left on device|File too large)" \
  "$work/full.log" && grep -q "the newest checkpoint written, $small/out/checkpoint.rudra, is whole" "$work/full.log" && pass ||
  { fail "full: the file and the reason named"; tail "$work/full.log"; }
grep -q "message (tag" "$work/full.log" && fail "full: a peer's message blamed" || pass
timeout 60 "$rudra" checkpoint "$small/out" >/dev/null 2>&1 && timeout 60 "$rudra" test "$solver" "$small/out/checkpoint.rudra" \
  --data "$data" >/dev/null 2>&1 && pass || fail "full: the old checkpoint is whole"
ls "$small/out"/*.tmp >/dev/null 2>&1 && fail "full: a temporary file left" || pass
umount "$small" 2>/dev/null
no_leftovers full

# 5. A --timeline into a folder that does not exist is refused before training: exit 5, no epoch.
timeout -k 5 60 mpiexec -disable-auto-cleanup -n 4 "$rudra" dist "$solver" "${common[@]}" --epochs 1 \
  --timeline "$work/none/trace.json" -o "$work/badtrace" >"$work/badtrace.log" 2>&1
rc=$?
[ "$rc" = 5 ] && grep -q "the --timeline trace cannot be written: the folder $work/none does not exist" "$work/badtrace.log" &&
  grep -q "nothing was trained" "$work/badtrace.log" && [ ! -e "$work/badtrace/metrics.jsonl" ] && pass ||
  { fail "badtrace: exit $rc, wanted 5 before training"; cat "$work/badtrace.log"; }
# A trace that can be written: its parts carry the run's identity, in the run's folder, merged and removed.
timeout -k 5 120 mpiexec -disable-auto-cleanup -n 4 "$rudra" dist "$solver" "${common[@]}" --epochs 1 --train-limit 320 \
  --timeline "$work/trace.json" -o "$work/traced" >"$work/traced.log" 2>&1 &&
  grep -q '"traceEvents"' "$work/trace.json" && grep -q 'timeline: .* (4 of 4 ranks' "$work/traced.log" &&
  [ -z "$(ls "$work/traced/timeline-parts")" ] && pass || { fail "traced: the trace merged from 4 parts"; tail "$work/traced.log"; }

# 6. kill -9 of a learner during start-up: in MPI_Init (0.1 s after the launch), and in the set-up
# (as soon as it has mapped the node's copy of the data set; the first learner then measures
# --conv-backend auto for seconds while the others wait for its choices): the job ends within
# the peer timeout plus the start-up allowance, a rank says why, and nothing of the job is left
# in /dev/shm.
before_shm=$(shm_leftovers)
for when in mpi_init setup; do
  rm -rf "$work/early"
  ( RUDRA="$rudra" timeout -k 5 120 "$launch" -n 6 "$solver" "${common[@]}" --epochs 2 \
      --conv-backend auto --auto-cache '' --startup-timeout 20 -o "$work/early" >"$work/early.log" 2>&1
    echo $? >"$work/early.rc" ) &
  if [ "$when" = mpi_init ]; then
    sleep 0.1
    for _ in $(seq 50); do p=$(rank_pid 3); [ -n "$p" ] && break; sleep 0.02; done
  else
    for _ in $(seq 1000); do
      p=$(rank_pid 3)
      [ -n "$p" ] && grep -q rudra-data- "/proc/$p/maps" 2>/dev/null && break
      sleep 0.01
    done
  fi
  t0=$(date +%s)
  kill -9 "$p"
  wait
  took=$(($(date +%s) - t0))
  echo "early ($when): the job ended $took s after the kill, exit $(cat "$work/early.rc")"
  grep -h 'error: ' "$work/early.log" | head -1 | cut -c1-160 | sed "s/^/early ($when): /"
  [ "$took" -le 35 ] && pass || fail "early ($when): ended $took s after the kill"
  # Killed inside MPI_Init's PMI exchange, MPICH's process manager may fail at once and end the
  # job itself: then rank 3's guard is what says why, or, when the manager's cleanup ends the
  # guard before it can write, the manager's own report of the failure.
  why="error: (rank 3 was lost during start-up|the ranks did not all (start MPI|set up) )"
  [ "$when" = mpi_init ] && why="$why|\\[rank 3\\]: the rank's process \\(pid [0-9]+\\) was killed by signal 9"
  [ "$when" = mpi_init ] && why="$why|\\[mpiexec@[^]]*\\] .*process manager error"
  grep -qE "$why" "$work/early.log" &&
    ! grep -q '"event":"epoch"' "$work/early/metrics.jsonl" 2>/dev/null && pass ||
    { fail "early ($when): ended in start-up, saying why"; cat "$work/early.log"; }
  # The launcher's watcher removes what MPICH left within a second of the job's end.
  for _ in $(seq 30); do [ "$(shm_leftovers)" = "$before_shm" ] && break; sleep 0.1; done
  [ "$(shm_leftovers)" = "$before_shm" ] && pass || { fail "early ($when): left in /dev/shm: $(shm_leftovers)"; }
  no_leftovers "early $when"
done
grep -q 'error: rank 3 was lost during start-up' "$work/early.log" && pass || fail "early (setup): rank 3 named"

# 7. A data-set file of a job that died (no writer claims it) is removed at the next start.
mkdir -p "$work/shm"
echo leftover >"$work/shm/rudra-data-dead01"
touch -d '1 hour ago' "$work/shm/rudra-data-dead01"
timeout -k 5 120 mpiexec -disable-auto-cleanup -n 4 "$rudra" dist "$solver" "${common[@]}" --epochs 1 --train-limit 320 \
  --node-data-dir "$work/shm" -o "$work/stale" >"$work/stale.log" 2>&1 &&
  grep -q "removed 1 data-set file(s) of jobs that died from $work/shm" "$work/stale.log" && [ -z "$(ls "$work/shm")" ] &&
  pass || { fail "stale: the dead job's file removed, the run's own gone at its end"; ls "$work/shm"; tail "$work/stale.log"; }

# 8. SIGHUP and SIGUSR2 (a closed terminal, LSF's warning action) stop the run with a checkpoint.
for sig in HUP USR2; do
  start "sig$sig" 4 --protocol async --epochs 30
  wait_for "$work/sig$sig/metrics.jsonl" '"epoch":1,' || fail "sig$sig: no epoch 1"
  proxy=$(pgrep -P "$(pgrep -P "$(cat "$work/sig$sig.pid")" -x mpiexec)" -x hydra_pmi_proxy)
  pkill "-$sig" -P "$proxy" -x rudra
  finish_run "sig$sig"
  [ "$rc" = 130 ] && grep -q 'PS: checkpoint (signal)' "$work/sig$sig.log" && pass ||
    { fail "sig$sig: exit $rc, wanted 130 with a checkpoint"; tail "$work/sig$sig.log"; }
  no_leftovers "sig$sig"
done

# 9. rudra train refuses an occupied folder too, and keeps its files.
timeout -k 5 120 "$rudra" train "$solver" --data "$data" --epochs 1 -o "$work/train" >"$work/train1.log" 2>&1 || fail "train: first run"
( cd "$work/train" && md5sum * ) >"$work/train.md5"
timeout -k 5 120 "$rudra" train "$solver" --data "$data" --epochs 1 -o "$work/train" >"$work/train2.log" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "the output folder holds another run's files" "$work/train2.log" &&
  ( cd "$work/train" && md5sum -c --quiet "$work/train.md5" ) && pass || { fail "train: exit $rc, refused and unchanged"; cat "$work/train2.log"; }
finish
