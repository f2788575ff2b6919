#!/usr/bin/env bash
# `rudra dist` across the emulated cluster (tools/vcluster/rudra-vcluster): nodes that are network
# namespaces on a bridge with shaped links, ranks started in them by mpiexec through the
# cluster's launcher, each run bounded by timeout (a hang is a failure).
#   the cluster's refusals; its nodes' host names and /dev/shm
#   hardsync on 2 nodes: the learners' gradients cross the link, the weights equal one host's run
#   node detection: adv with --ranks-per-node unset puts a leaf PS on each node
#   a node's link cut under 1-softsync: the run goes on and logs its learners lost
#   a whole node killed under hardsync: the job ends with its checkpoint whole; resumed on one node
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
# A run's exit code in $rc. UCX's TCP transport can hang in MPI_Finalize closing its connections
# to other nodes (openucx/ucx#8738): the ranks then exit after the peer timeout, their files all
# written, and Hydra, whose proxy loses them in its last barrier, ends with 255. That case counts
# as 0 here, and is said.
finished() {
  wait
  rc=$(cat "$work/$1.rc")
  if [ "$rc" = 255 ] && grep -q "MPI_Finalize did not return" "$work/$1.log"; then
    echo "$1: MPI_Finalize hung in UCX after the run's end; mpiexec exit 255 counted as 0"
    rc=0
  fi
}
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

# Node detection: adv with --ranks-per-node unset finds the nodes from MPI (MPI_Comm_split_type):
# 4 ranks per node, so rank 2 is node 1's leaf PS and rank 4 node 2's.
vrun adv -n 8 -ppn 4 "${dist_args[@]}" --protocol softsync --n 1 --topology adv --epochs 1
finished adv
[ "$rc" = 0 ] && pass || { fail "adv: exit $rc"; tail -20 "$work/adv.log"; }
grep -q "node 1: rank 4 leaf parameter server (parent 0), learners 5 6 7" "$work/adv.log" && pass ||
  { fail "adv: the leaf PS of node 2"; grep -A3 "^layout" "$work/adv.log"; }

# Node 2's link cut under 1-softsync: its learners (3, 4, 5) fall silent and are lost; the learner
# on node 1 finishes the run. (Hydra's proxy on node 2 cannot report its end while the link is
# down: the link is mended once the PS has written its last line.)
vrun soft_cut -n 6 -ppn 3 "${dist_args[@]}" --protocol softsync --n 1 --epochs 6
wait_for "$work/soft_cut/metrics.jsonl" '"epoch":1,' || fail "soft_cut: no epoch 1"
"$vc" cut --name $name node2 >/dev/null
wait_for "$work/soft_cut.log" 'PS: [0-9]* updates' || fail "soft_cut: the PS did not finish"
"$vc" mend --name $name node2 >/dev/null
finished soft_cut
[ "$rc" = 0 ] && pass || { fail "soft_cut: exit $rc"; tail -20 "$work/soft_cut.log"; }
[ "$(epochs_logged "$work/soft_cut")" = 6 ] && pass || fail "soft_cut: 6 epoch lines"
for r in 3 4 5; do
  grep -q "\"event\":\"learner_lost\",\"rank\":$r," "$work/soft_cut/metrics.jsonl" && pass || fail "soft_cut: rank $r lost"
done

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

"$vc" down --name $name >/dev/null
[ -z "$(ip netns list | grep "^$name-node")" ] && [ -z "$(ip -o link show | grep -E ": $name-(br|v[0-9])")" ] && pass ||
  fail "down: namespaces or links left"
pkill -9 -f "$work/" 2>/dev/null
finish
