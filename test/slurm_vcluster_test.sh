#!/usr/bin/env bash
# Slurm across the emulated cluster's nodes (tools/vcluster/rudra-vcluster): slurmctld on the
# host, one slurmd in each node (each node has its own host name and network, so each slurmd is
# the only one of its "host", and Slurm's several-daemons-per-host mode is not needed), a private
# munged whose socket every node reaches through the shared file system. The batch script
# runs a hardsync job on 2 nodes of 4 tasks under adv (srun --mpi=pmi2 starts the ranks in their
# nodes); its test loss is that of the same run on one host. Bounded: a hang is a failure.
# Needs root, ip, tc, unshare and Slurm's daemons (slurmctld, slurmd, munge: installed by the
# workplace's start-local-slurm.sh in test/slurm_test.sh, which runs first).
# Usage: slurm_vcluster_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$1" "$2"
rudra=$(readlink -f "$rudra")
src=$(readlink -f "$src")
mpi_test_setup
vc=$src/tools/vcluster/rudra-vcluster
name=rvs subnet=10.78.13
dir=$work/slurm
pids=()
cleanup() {
  [ -n "${SLURM_CONF:-}" ] && timeout -k 2 10 scancel --partition=vc >/dev/null 2>&1
  "$vc" down --name $name >/dev/null 2>&1  # the slurmds with their nodes
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 1
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
for tool in munged slurmctld slurmd sbatch squeue; do
  command -v $tool >/dev/null || { fail "$tool is not installed (slurmctld, slurmd, slurm-client, munge)"; finish; exit; }
done
"$vc" up --name $name --nodes 2 --rate 1gbit --subnet $subnet >"$work/up.log" 2>&1 || { fail "up: $(cat "$work/up.log")"; finish; exit; }

mkdir -p "$dir/munge" "$dir/log" "$dir/state/ctld"
chmod 755 "$work" "$dir" "$dir/munge"
dd if=/dev/urandom of="$dir/munge/key" bs=1 count=1024 status=none
chmod 400 "$dir/munge/key"
socket=$dir/munge/socket
munged --foreground --force --socket="$socket" --key-file="$dir/munge/key" --pid-file="$dir/munge/pid" \
  --seed-file="$dir/munge/seed" >"$dir/log/munged.log" 2>&1 </dev/null &
pids+=($!)
host=$(hostname -s)
cat >"$dir/slurm.conf" <<EOF
ClusterName=vc
SlurmctldHost=$host($subnet.1)
SlurmctldPort=6827
SlurmdPort=6828
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/state/ctld
SlurmdSpoolDir=$dir/state/slurmd-%n
SlurmctldPidFile=$dir/state/slurmctld.pid
SlurmdPidFile=$dir/state/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=pmi2
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$name-node1 NodeAddr=$subnet.11 CPUs=4 State=UNKNOWN
NodeName=$name-node2 NodeAddr=$subnet.12 CPUs=4 State=UNKNOWN
PartitionName=vc Nodes=$name-node[1-2] Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 </dev/null &
pids+=($!)
# In a node, `ip netns exec` has mounted a sysfs of the node's own, without the host's cgroup
# file systems, which slurmd's start-up looks for: they are mounted again, as the host has them.
cgroups="mount -t tmpfs cgroup /sys/fs/cgroup"
while read -r type path options; do
  cgroups+=" && mkdir -p $path && mount -t $type -o $options cgroup $path"
done < <(awk '$3 ~ /^cgroup2?$/ && $2 ~ "^/sys/fs/cgroup" { print $3, $2, $4 }' /proc/mounts)
for node in 1 2; do
  mkdir -p "$dir/state/slurmd-$name-node$node"
  "$vc" exec --name $name node$node "$cgroups &&" \
    "nohup slurmd -D -f $SLURM_CONF -N $name-node$node >$dir/log/slurmd-$node.out 2>&1 </dev/null &"
done
for _ in $(seq 120); do
  [ "$(timeout -k 2 10 sinfo -h -o %T 2>/dev/null | sort -u)" = idle ] && break
  sleep 0.5
done
[ "$(timeout -k 2 10 sinfo -h -o '%D %T' 2>/dev/null)" = "2 idle" ] && pass ||
  { fail "the two nodes did not come up: $(sinfo 2>&1)"; tail -n 5 "$dir"/log/*.log; finish; exit; }

# The batch script, as a user submits it: 2 nodes of 4 tasks, hardsync on adv (a leaf PS on each
# node, the nodes found by MPI), 2 epochs. Hardsync gives the same weights on every topology and
# host: those of the same run on one host with the nodes emulated.
cd "$work"
run=(--data "$data" --batch 16 --protocol hardsync --topology adv --epochs 2)
jid=$(RUDRA="$rudra" OMP_NUM_THREADS=1 timeout 60 sbatch --parsable --nodes=2 --ntasks-per-node=4 \
  --output="$work/job.out" "$src/tools/slurm/rudra-dist.sbatch" "$solver" "${run[@]}" --peer-timeout 5 -o "$work/out")
[ -n "$jid" ] && pass || { fail "sbatch gave no job id"; finish; exit; }
for _ in $(seq 360); do
  squeue -h -j "$jid" 2>/dev/null | grep -q . || break
  sleep 0.5
done
squeue -h -j "$jid" 2>/dev/null | grep -q . && { fail "the job did not end within 3 minutes"; timeout 10 scancel "$jid"; }
grep -q "8 tasks on $name-node\[1-2\]" "$work/job.out" && pass || fail "the job's tasks on both nodes"
grep -q "node 1: rank 4 leaf parameter server (parent 0), learners 5 6 7" "$work/job.out" && pass || fail "adv: node 2's leaf PS"
grep -q "PS: 30 updates" "$work/job.out" && [ -s "$work/out/final.rudra" ] && pass || fail "the run's end"
# The same run on one host, the nodes emulated: the same test loss, to rounding (a leaf PS sums
# its learners' gradients as they arrive).
timeout -k 5 150 mpiexec -n 8 "$rudra" dist "$solver" "${run[@]}" --ranks-per-node 4 -o "$work/local" \
  >"$work/local.log" 2>&1 || fail "the run on one host: exit $?"
# (Epoch 1's: by epoch 2 the loss is near 0, where rounding is a large part of it.)
epoch1_loss() { perl -MJSON::PP -ne '$l //= decode_json($_)->{test_loss} if /"event":"epoch"/; END { print $l }' "$1/metrics.jsonl"; }
perl -e 'exit !(abs($ARGV[0] - $ARGV[1]) <= 1e-3 * abs($ARGV[0]) && $ARGV[0] > 0)' "$(epoch1_loss "$work/out")" \
  "$(epoch1_loss "$work/local")" && pass || fail "test loss $(epoch1_loss "$work/out"), on one host $(epoch1_loss "$work/local")"
[ $failures = 0 ] || { cat "$work/job.out"; tail -n 5 "$dir"/log/slurmd-*.log; }
finish
