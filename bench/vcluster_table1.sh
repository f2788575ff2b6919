#!/usr/bin/env bash
# Table I across shaped links: bench/overlap_table1.sh on one host (nodes emulated by
# --ranks-per-node, messages through shared memory), then across 2 nodes of the emulated cluster
# (tools/vcluster/rudra-vcluster) with each link shaped to each of RATES, the same runs otherwise.
# Needs root (the cluster). Writes OUT/one-host/table1.md and OUT/RATE/table1.md, and prints them.
# Usage: bench/vcluster_table1.sh RUDRA_BINARY DATA_DIR OUT
#        environment: RATES="10gbit 1gbit" and overlap_table1.sh's (WIDE=4096 TRAIN_LIMIT=512
#        ROUNDS=1 unless given)
set -uo pipefail
rudra=$(readlink -f "$1") data=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
vc=$here/../tools/vcluster/rudra-vcluster
export WIDE=${WIDE:-4096} TRAIN_LIMIT=${TRAIN_LIMIT:-512} ROUNDS=${ROUNDS:-1}
trap '"$vc" down --name t1 >/dev/null 2>&1' EXIT
echo "## one host"
bash "$here/overlap_table1.sh" "$rudra" "$data" "$out/one-host"
for rate in ${RATES:-10gbit 1gbit}; do
  "$vc" up --name t1 --nodes 2 --rate "$rate" --subnet 10.78.31 >/dev/null || exit 1
  echo; echo "## 2 nodes, links $rate"
  VCLUSTER=t1 NODES=2 bash "$here/overlap_table1.sh" "$rudra" "$data" "$out/$rate"
  "$vc" traffic --name t1
  "$vc" down --name t1 >/dev/null
done
