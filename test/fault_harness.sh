# Sourced by the fault tests (fault_test.sh, decentralized_fault_test.sh) after harness.sh and
# mpi_test_setup, with `common` set to the options of every run: runs in the background, the
# process of one rank, waits on metrics.jsonl, and the check that a run left nothing behind.

# The process of rank R (the child of its rank guard) among this test's runs. One grep reads every
# rudra's environment and the parents come from /proc without a fork: with a dozen busy ranks on
# 2 cores, a `ps` per process took this shell 6-9 s, and the kill came epochs too late.
rank_pid() {
  local f p ppid comm rest pids
  pids=$(pgrep -x rudra | sed 's|.*|/proc/&/environ|')
  [ -n "$pids" ] || return 0
  for f in $(grep -lzx "PMI_RANK=$1" $pids 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    read -r _ _ _ ppid rest 2>/dev/null <"/proc/$p/stat" || continue
    read -r comm 2>/dev/null <"/proc/$ppid/comm" || continue
    [ "$comm" = rudra ] && { echo "$p"; return 0; }
  done
}
# Waits (at most 60 s) until FILE exists and matches PATTERN.
wait_for() {
  local i
  for i in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
epochs_logged() { grep -c '"event":"epoch"' "$1/metrics.jsonl" 2>/dev/null; }
# After a run: nothing of it may be left (a stopped learner included). Zombies do not count:
# where PID 1 does not reap (some containers), the ranks of a killed guard stay as zombies.
live_rudras() { ps -eo pid=,stat=,comm= | awk '$3 == "rudra" && $2 !~ /^Z/ { print $1 }'; }
no_leftovers() {
  sleep 1
  if [ -n "$(live_rudras)" ]; then
    fail "$1: rudra processes left behind"; ps -o pid,ppid,stat,etime,args -p "$(live_rudras | paste -sd,)" | cut -c1-120
    pkill -CONT -x rudra; pkill -9 -x rudra
  else pass; fi
}
# The run is niced so that this shell, which must kill or signal it at a given epoch, gets the
# CPU when it needs it.
start() {  # start NAME RANKS ARGS...: a run in the background, its exit code in $work/NAME.rc
  local name=$1 ranks=$2; shift 2
  ( timeout -k 5 150 nice -n 5 mpiexec -disable-auto-cleanup -n "$ranks" "$rudra" dist "$solver" "${common[@]}" -o "$work/$name" "$@" \
      >"$work/$name.log" 2>&1 &
    echo $! >"$work/$name.pid"
    wait $!
    echo $? >"$work/$name.rc" ) &
  sleep 0.2
}
# kill -9 of every process of the run (timeout leads its own process group).
kill_job() { kill -9 -- "-$(cat "$work/$1.pid")"; }
finish_run() {  # finish_run NAME: waits for the background run; its exit code in $rc
  wait
  rc=$(cat "$work/$1.rc")
}

# SIGTERM to every rank of a background run, as a batch system sends it at a time limit (Slurm
# signals each task of the step): to the rank guards, children of mpiexec's proxy.
term_ranks() {
  local proxy
  proxy=$(pgrep -P "$(pgrep -P "$(cat "$work/$1.pid")" -x mpiexec)" -x hydra_pmi_proxy)
  pkill -TERM -P "$proxy" -x rudra
}
# kill -9 of rank RANK of background run NAME, then waits for the run: its exit code in $rc,
# the seconds from the kill to the run's end in $took.
kill_rank() {  # kill_rank NAME RANK
  local t0
  kill -9 "$(rank_pid "$2")"
  t0=$(date +%s)
  finish_run "$1"
  took=$(($(date +%s) - t0))
}
# After kill_rank: the run ended with exit 3 within 30 s.
ended_for_lost_learner() {  # ended_for_lost_learner NAME
  [ "$rc" = 3 ] && pass || { fail "$1: exit $rc, wanted 3"; tail -20 "$work/$1.log"; }
  [ "$took" -le 30 ] && pass || fail "$1: stopped after $took s"
  echo "$1: the job ended $took s after the kill (peer timeout 3 s)"
}
# A rank killed or stopped while it sends can block its receiver's MPI queue for good (UCX's
# shared memory: the sender reserves a slot, fills it, then marks it, and the receiver waits at
# the unmarked slot). The receiver then hears no one; the PS and a leaf PS say "stopped
# receiving" and end with what they have. A case that met it is checked for that (nothing lost:
# a checkpoint or final.rudra kept) and run once more: its own check needs the queues whole.
met_blocked_queue() {  # met_blocked_queue NAME TRY: true when the case is to be run again
  [ "$2" = 1 ] && grep -q 'stopped receiving' "$work/$1.log" || return 1
  echo "$1: a rank stopped receiving (its queue blocked by the rank killed mid-send), exit $rc; running the case again"
  grep -h 'stopped receiving' "$work/$1.log" | head -2 | sed "s/^/$1: /"
  [ -s "$work/$1/checkpoint.rudra" ] || [ -s "$work/$1/final.rudra" ] && pass || fail "$1: nothing kept after the blocked queue"
  pkill -CONT -x rudra; pkill -9 -x rudra; sleep 1
  rm -rf "$work/$1.blocked"; mv "$work/$1" "$work/$1.blocked"; mv "$work/$1.log" "$work/$1.blocked.log"
}
