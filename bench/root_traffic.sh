#!/usr/bin/env bash
# Rank 0's traffic per update (the parameter server, or all-reduce's first learner) at several
# learner counts, from the "traffic" line that ends each run's metrics.jsonl: messages and bytes
# through rank 0 for each update, and how many of the PS's replies to pulls carried weights.
# The figure the tree topologies must cut by about their fan-in: under TOPOLOGIES="base adv adv*",
# the adv and adv* runs emulate nodes (a leaf PS and its learners on each) of RANKS_PER_NODE ranks
# (auto: the count near 8 that divides a layout with the same lambda learners).
# Usage: bench/root_traffic.sh RUDRA_BINARY DATA_DIR OUT [TRAIN_LIMIT=3000]
#        environment: LAMBDAS="8 16 30", PROTOCOLS="softsync async allreduce", BATCH=4,
#        TOPOLOGIES="base", RANKS_PER_NODE=auto
set -uo pipefail
rudra=$(readlink -f "$1") data=$2 out=$3 limit=${4:-3000}
here=$(cd "$(dirname "$0")" && pwd)
solver=$here/../models/cifar10_full_28/cifar10_full_28_solver.prototxt
mkdir -p "$out"
export OMP_NUM_THREADS=1
per_node=${RANKS_PER_NODE:-auto}
# The ranks and ranks per node of an adv layout with exactly $1 learners (bench/adv_ranks.py).
adv_layout() { python3 "$here/adv_ranks.py" "$1" "$per_node"; }  # prints "RANKS K"
echo "| topology | protocol | lambda | ranks | updates | rank 0 messages / update | rank 0 MB / update | sent MB | received MB | replies with weights | replies without |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for topology in ${TOPOLOGIES:-base}; do
for proto in ${PROTOCOLS:-softsync async allreduce}; do
  for lambda in ${LAMBDAS:-8 16 30}; do
    dir=$out/$topology-$proto-$lambda ranks=$((lambda + 2)) extra=() shown=""
    case $proto in
      softsync) extra=(--n 1) ;;
      allreduce) ranks=$((lambda + 1)) ;;
    esac
    if [ "$topology" != base ]; then
      [ "$proto" = allreduce ] && continue
      read -r ranks k < <(adv_layout "$lambda") || { echo "no adv layout for lambda $lambda" >&2; continue; }
      shown="$ranks ($k per node)"
      extra+=(--topology "$topology" --ranks-per-node "$k")
    fi
    rm -rf "$dir"
    timeout -k 10 1800 mpiexec -disable-auto-cleanup -n "$ranks" "$rudra" dist "$solver" --data "$data" --train-limit "$limit" --test-limit 500 \
      --protocol "$proto" "${extra[@]}" --batch "${BATCH:-4}" --epochs 1 --wait-sleep-us 2000 -o "$dir" >"$dir.log" 2>&1 ||
      { echo "root_traffic: $dir failed, see $dir.log" >&2; continue; }
    python3 - "$dir/metrics.jsonl" "$proto" "$lambda" "$topology" "${shown:-$ranks}" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
updates = [l for l in lines if l.get("event") == "epoch"][-1]["updates"]
r0 = [l for l in lines if l.get("event") == "traffic"][-1]["ranks"][0]
msgs = r0["sent_messages"] + r0["received_messages"]
mb = (r0["sent_bytes"] + r0["received_bytes"] + r0.get("sum_bytes", 0)) / 1e6
print(f"| {sys.argv[4]} | {sys.argv[2]} | {sys.argv[3]} | {sys.argv[5]} | {updates} | {msgs / updates:.1f} | {mb / updates:.2f} | "
      f"{r0['sent_bytes'] / 1e6:.0f} | {r0['received_bytes'] / 1e6:.0f} | {r0.get('weight_replies', '-')} | "
      f"{r0.get('empty_replies', '-')} |")
EOF
  done
done
done
