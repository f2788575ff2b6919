#!/usr/bin/env bash
# `rudra dist` across the emulated cluster (tools/vcluster/rudra-vcluster): nodes that are network
# namespaces on a bridge with shaped links, ranks started in them by mpiexec through the
# cluster's launcher, each run bounded by timeout (a hang is a failure).
#   the cluster's refusals; its nodes' host names and /dev/shm
#   hardsync on 2 nodes: the learners' gradients cross the link, the weights equal one host's run
#   all-reduce on 2 nodes: the weights equal one host's run; EASGD and gossip finish across them
#   node detection: adv with --ranks-per-node unset puts a leaf PS on each node; adv* under async
#   one data-set file per node, mapped by that node's ranks only and removed once mapped
#   a node's link cut under 1-softsync: the run goes on and logs its learners lost
#   a node's link cut under hardsync and all-reduce: exit 3 naming the node's ranks, a checkpoint
#   a whole node killed under hardsync: the job ends with its checkpoint whole; resumed on one node
#   the LSF script with a two-host LSB_MCPU_HOSTS: its ranks on both nodes
#   4 nodes of 2 ranks: hardsync, async and 1-softsync end with exit 0, Hydra reporting no death
#   down: nothing of the cluster is left
# Needs root, ip, tc and unshare; says so and fails without them.
# Usage: vcluster_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
mpi_test_setup
. "$(dirname "$0")/fault_harness.sh"
vc=$src/tools/vcluster/rudra-vcluster
name=rvt
trap '"$vc" down --name $name >/dev/null 2>&1; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
common=(--data "$data" --batch 16 --peer-timeout 3)

# Refusals, each with exit 2 and a message.
refused() {  # refused LABEL PATTERN ARGS...
  local label=$1 pattern=$2; shift 2
  local out
  out=$("$vc" "$@" 2>&1) && { fail "$label: accepted"; return; }
  echo "$out" | grep -q -- "$pattern" && pass || fail "$label: '$out' lacks '$pattern'"
}
refused unknown "unknown command 'frobnicate'" frobnicate
refused bad_name "--name must be" up --name Bad_Name
refused not_up "is not up" status --name $name
refused nodes "--nodes must be" up --name $name --nodes 0

if ! "$vc" up --name $name --nodes 2 --rate 1gbit --subnet 10.78.9 >"$work/up.log" 2>&1; then
  fail "up: $(cat "$work/up.log")"
  finish; exit
fi
pass
[ "$("$vc" exec --name $name node2 hostname)" = "$name-node2" ] && pass || fail "a node's host name"
"$vc" exec --name $name 1 'touch /dev/shm/rvt-mark'
[ ! -e /dev/shm/rvt-mark ] && pass || { fail "a node's /dev/shm is the host's"; rm -f /dev/shm/rvt-mark; }
refused bad_node "no node 'node9'" exec --name $name node9 true
if "$vc" up --name $name --nodes 2 --delay 50us --subnet 10.78.9 >"$work/delay.log" 2>&1; then
  pass  # this kernel has netem: the cluster was made again with the delay
  "$vc" up --name $name --nodes 2 --rate 1gbit --subnet 10.78.9 >/dev/null
else
  grep -q "needs tc's netem" "$work/delay.log" && pass || fail "--delay: $(cat "$work/delay.log")"
  "$vc" status --name $name >/dev/null && pass || fail "a refused --delay removed the cluster"
fi

node_sent() { "$vc" traffic --name $name | awk -v n="$name-node$1" '$1 == n { print $3 }'; }
vrun() {  # vrun NAME ARGS...: a run on the cluster in the background, its exit code in $work/NAME.rc
  local run=$1; shift
  ( timeout -k 5 150 "$vc" mpiexec --name $name -disable-auto-cleanup "$@" -o "$work/$run" \
      >"$work/$run.log" 2>&1
    echo $? >"$work/$run.rc" ) &
}
finished() { wait; rc=$(cat "$work/$1.rc"); }
# The rudra processes of a node (ranks and their guards).
node_rudras() { for p in $(ip netns pids "$name-node$1"); do [ "$(cat /proc/$p/comm 2>/dev/null)" = rudra ] && echo "$p"; done; }
dist_args=("$rudra" dist "$solver" "${common[@]}")

# Hardsync on 2 nodes of 2 ranks: the PS and the statistics server on node 1, the learners on
# node 2. Each update's gradients and weights cross the link; hardsync being deterministic, the
# weights are those of the same run on one host.
sent0=$(node_sent 2)
vrun hs -n 4 -ppn 2 "${dist_args[@]}" --protocol hardsync --epochs 2
finished hs
[ "$rc" = 0 ] && pass || { fail "hs: exit $rc"; tail -20 "$work/hs.log"; }
sent=$(( $(node_sent 2) - sent0 ))
floats=$(timeout 60 "$rudra" time "$solver" --input-shape 1,28,28 --iterations 1 2>/dev/null |
  sed -n 's/^learnable parameters: //p' | tr -d ,)
# 2 epochs of 960 images in updates of 2 x 16: 60 updates, 2 gradients each.
expected=$(( 60 * 2 * ${floats:-0} * 4 ))
echo "hs: node 2 sent $sent bytes for $expected bytes of gradients"
[ "${floats:-0}" -gt 0 ] && [ "$sent" -ge "$expected" ] && pass || fail "hs: the gradients did not cross the link ($sent < $expected)"
if timeout -k 5 150 mpiexec -n 4 "${dist_args[@]}" --protocol hardsync --epochs 2 -o "$work/hs_local" >"$work/hs_local.log" 2>&1 &&
  cmp -s "$work/hs/final.rudra" "$work/hs_local/final.rudra"; then pass
else fail "hs: the weights differ from the same run on one host"; fi

# All-reduce, EASGD and gossip on 2 nodes of 2 ranks (the statistics server and a learner on
# node 1, two learners on node 2). All-reduce is deterministic: the weights of one host's run.
vrun ar -n 4 -ppn 2 "${dist_args[@]}" --protocol allreduce --epochs 2
finished ar
[ "$rc" = 0 ] && pass || { fail "ar: exit $rc"; tail -20 "$work/ar.log"; }
if timeout -k 5 150 mpiexec -n 4 "${dist_args[@]}" --protocol allreduce --epochs 2 -o "$work/ar_local" >"$work/ar_local.log" 2>&1 &&
  cmp -s "$work/ar/final.rudra" "$work/ar_local/final.rudra"; then pass
else fail "ar: the weights differ from the same run on one host"; fi
for method in easgd gossip-push; do
  vrun "$method" -n 4 -ppn 2 "${dist_args[@]}" --protocol "$method" --epochs 2
  finished "$method"
  [ "$rc" = 0 ] && [ "$(epochs_logged "$work/$method")" = 2 ] && [ -s "$work/$method/final.rudra" ] && pass ||
    { fail "$method: exit $rc, 2 epochs, final.rudra"; tail -20 "$work/$method.log"; }
done

# Node detection: adv with --ranks-per-node unset finds the nodes from MPI (MPI_Comm_split_type):
# 4 ranks per node, so rank 2 is node 1's leaf PS and rank 4 node 2's.
vrun adv -n 8 -ppn 4 "${dist_args[@]}" --protocol softsync --n 1 --topology adv --epochs 1
finished adv
[ "$rc" = 0 ] && pass || { fail "adv: exit $rc"; tail -20 "$work/adv.log"; }
grep -q "node 1: rank 4 leaf parameter server (parent 0), learners 5 6 7" "$work/adv.log" && pass ||
  { fail "adv: the leaf PS of node 2"; grep -A3 "^layout" "$work/adv.log"; }

# adv* under async: the weights go down the broadcast tree across the link.
vrun adv_star -n 8 -ppn 4 "${dist_args[@]}" --protocol async --topology 'adv*' --epochs 1
finished adv_star
[ "$rc" = 0 ] && grep -q "node 1: rank 4 leaf parameter server (parent 0), learners 5 6 7" "$work/adv_star.log" && pass ||
  { fail "adv_star: exit $rc, the leaf PS of node 2"; tail -20 "$work/adv_star.log"; }

# Node 2's link cut under 1-softsync: its learners (3, 4, 5) fall silent and are lost; the learner
# on node 1 finishes the run. (Hydra's proxy on node 2 cannot report its end while the link is
# down: the link is mended once the PS has written its last line.) 16 epochs: with 6 (2 s in
# all) a loaded machine could finish the run before the cut below, after epoch 1, reached it.
vrun soft_cut -n 6 -ppn 3 "${dist_args[@]}" --protocol softsync --n 1 --epochs 16
wait_for "$work/soft_cut/metrics.jsonl" '"epoch":1,' || fail "soft_cut: no epoch 1"
# The data set: one file in each node's own /dev/shm, already removed (mapped, "(deleted)"), and
# shared by node 2's three learners.
for node in 1 2; do
  for p in $(node_rudras $node); do grep -h "/dev/shm/rudra-data-" /proc/$p/maps 2>/dev/null; done |
    awk '{ print $4, $5, $6, $7 }' | sort | uniq -c >"$work/data_files$node"
done
[ "$(wc -l <"$work/data_files1")" = 1 ] && [ "$(wc -l <"$work/data_files2")" = 1 ] &&
  grep -q "(deleted)" "$work/data_files1" && grep -q "(deleted)" "$work/data_files2" &&
  [ "$(awk '{ print $1 }' "$work/data_files2")" -ge 3 ] && pass ||
  { fail "soft_cut: one removed data-set file per node, mapped by node 2's learners"; cat "$work"/data_files?; }
"$vc" cut --name $name node2 >/dev/null
wait_for "$work/soft_cut.log" 'PS: [0-9]* updates' || fail "soft_cut: the PS did not finish"
"$vc" mend --name $name node2 >/dev/null
finished soft_cut
[ "$rc" = 0 ] && pass || { fail "soft_cut: exit $rc"; tail -20 "$work/soft_cut.log"; }
[ "$(epochs_logged "$work/soft_cut")" = 16 ] && pass || fail "soft_cut: 16 epoch lines"
for r in 3 4 5; do
  grep -q "\"event\":\"learner_lost\",\"rank\":$r," "$work/soft_cut/metrics.jsonl" && pass || fail "soft_cut: rank $r lost"
done

# Node 2's link cut under hardsync and all-reduce: neither goes on without a learner; each ends
# the job with exit 3 and a checkpoint, naming node 2's ranks (2 and 3).
cut_run() {  # cut_run NAME PATTERN ARGS...: node 2 cut after epoch 1 until the job's last line
  local run=$1 pattern=$2; shift 2
  vrun "$run" -n 4 -ppn 2 "${dist_args[@]}" "$@" --epochs 6
  wait_for "$work/$run/metrics.jsonl" '"epoch":1,' || fail "$run: no epoch 1"
  "$vc" cut --name $name node2 >/dev/null
  local seen=1
  wait_for "$work/$run.log" "$pattern" || seen=0
  "$vc" mend --name $name node2 >/dev/null
  finished "$run"
  [ $seen = 1 ] && pass || { fail "$run: no '$pattern'"; tail -12 "$work/$run.log"; }
  [ "$rc" = 3 ] && pass || { fail "$run: exit $rc, not 3"; tail -20 "$work/$run.log"; }
  [ "$(timeout 60 "$rudra" checkpoint "$work/$run" --field epoch 2>&1)" -ge 1 ] 2>/dev/null && pass ||
    fail "$run: no whole checkpoint"
}
cut_run hs_cut "PS: ending the job (rank" --protocol hardsync
grep -q "PS: ending the job (rank 2, 3 lost) with exit code 3" "$work/hs_cut.log" && pass ||
  { fail "hs_cut: ranks 2 and 3 named"; grep "ending the job" "$work/hs_cut.log"; }
cut_run ar_cut "ranks silent for over half the peer timeout: 2 ([0-9.]* s), 3 ([0-9.]* s)" --protocol allreduce

# Node 2 killed (every process in it, Hydra's proxy included) under hardsync: the job ends (MPICH
# 4.0's mpiexec ends every rank when a proxy's connection closes, -disable-auto-cleanup or not),
# and its last checkpoint is whole; resumed on one node with one learner, the run finishes.
vrun hs_kill -n 4 -ppn 2 "${dist_args[@]}" --protocol hardsync --epochs 4
wait_for "$work/hs_kill/metrics.jsonl" '"epoch":2,' || fail "hs_kill: no epoch 2"
"$vc" kill --name $name node2 >/dev/null
finished hs_kill
[ "$rc" != 0 ] && pass || fail "hs_kill: exit 0 without its learners"
ck_epoch=$(timeout 60 "$rudra" checkpoint "$work/hs_kill" --field epoch 2>&1)
[ "${ck_epoch:-0}" -ge 1 ] 2>/dev/null && pass || fail "hs_kill: a whole checkpoint ($ck_epoch)"
if timeout -k 5 150 mpiexec -n 3 "$rudra" dist --resume "$work/hs_kill" >"$work/hs_resumed.log" 2>&1; then pass
else fail "hs_resumed: exit $?"; tail -20 "$work/hs_resumed.log"; fi
grep -q "with 1 learners instead of 2" "$work/hs_resumed.log" && [ -s "$work/hs_kill/final.rudra" ] && pass ||
  fail "hs_resumed: one learner, final.rudra"

# The LSF batch script as bsub runs it on two hosts: LSB_MCPU_HOSTS names the nodes, Hydra starts
# 4 ranks on node 1 and 3 on node 2 (through the cluster's launcher), and adv finds the nodes.
printf '#!/bin/sh\nexec mpiexec -launcher-exec /run/rudra-vcluster/%s/launch "$@"\n' $name >"$work/mpiexec"
chmod +x "$work/mpiexec"
if LSB_MCPU_HOSTS="$name-node1 4 $name-node2 3" LSB_JOBID=7 RUDRA="$rudra" MPIEXEC="$work/mpiexec" RUDRA_LAUNCHER=ssh \
  timeout -k 5 150 bash "$src/tools/lsf/rudra-dist.lsf" "$solver" "${common[@]}" --protocol softsync --n 1 \
  --topology adv --epochs 1 -o "$work/lsf" >"$work/lsf.log" 2>&1 &&
  grep -q "7 ranks on: $name-node1:4 $name-node2:3" "$work/lsf.log" &&
  grep -q "node 1: rank 4 leaf parameter server (parent 0), learners 5 6" "$work/lsf.log"; then pass
else fail "lsf: two hosts"; tail -20 "$work/lsf.log"; fi

# 4 nodes, 2 ranks each: every job ends with its own exit code. A rank that exits without
# telling Hydra's proxy it has finished is taken for a dead one, and mpiexec, signalling the other
# nodes, failed where one had already closed (exit -13, "assert (!closed)").
"$vc" down --name $name >/dev/null
if "$vc" up --name $name --nodes 4 --rate 1gbit --subnet 10.78.9 >"$work/up4.log" 2>&1; then
  for proto in hardsync async "softsync --n 1"; do
    run=four_${proto%% *}
    # shellcheck disable=SC2086
    vrun "$run" -n 8 -ppn 2 "${dist_args[@]}" --protocol $proto --epochs 2
    finished "$run"
    [ "$rc" = 0 ] && ! grep -q "assert\|HYD_\|BAD TERMINATION" "$work/$run.log" && [ -s "$work/$run/final.rudra" ] &&
      pass || { fail "$run: exit $rc across 4 nodes"; tail -8 "$work/$run.log"; }
  done
else
  fail "up with 4 nodes: $(cat "$work/up4.log")"
fi

"$vc" down --name $name >/dev/null
[ -z "$(ip netns list | grep "^$name-node")" ] && [ -z "$(ip -o link show | grep -E ": $name-(br|v[0-9])")" ] && pass ||
  fail "down: namespaces or links left"
pkill -9 -f "$work/" 2>/dev/null
finish
