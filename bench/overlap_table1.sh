#!/usr/bin/env bash
# Table I of the paper: the overlap ratio (computation / (computation + communication), summed
# over the learners) of Rudra-base, Rudra-adv and Rudra-adv* in an adversarial scenario: a large model and a
# tiny mini-batch. The model is cifar10_full_28 with an inner-product layer of WIDE outputs
# inserted after pool3 (576 x WIDE weights: 16384 gives 9.4M parameters, a 38 MB gradient), and
# the learners use mini-batch MU. The topologies alternate ROUNDS times, so that both see the
# same machine; adv and adv* emulate nodes of RANKS_PER_NODE ranks (a leaf PS and its learners on
# each; adv*'s learners get the weights down a broadcast tree). MODE applies to base and adv (adv*'s
# learners never pull).
# VCLUSTER=NAME runs across the nodes of an emulated cluster that is up
# (tools/vcluster/rudra-vcluster): the ranks are spread over NODES nodes with mpiexec's -ppn, adv
# finds the nodes from MPI, and the links are what `up --rate` made them.
# Prints one Markdown row per run and the median ratio per topology.
# Usage: bench/overlap_table1.sh RUDRA_BINARY DATA_DIR OUT
#        environment: LAMBDA=8 MU=4 WIDE=16384 TRAIN_LIMIT=512 ROUNDS=2 RANKS_PER_NODE=auto
#                     PROTOCOL=softsync MODE=base TOPOLOGIES="base adv adv*" VCLUSTER= NODES=2
set -uo pipefail
rudra=$(readlink -f "$1") data=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
lambda=${LAMBDA:-8} mu=${MU:-4} wide=${WIDE:-16384} limit=${TRAIN_LIMIT:-512} rounds=${ROUNDS:-2}
per_node=${RANKS_PER_NODE:-auto} protocol=${PROTOCOL:-softsync} mode=${MODE:-base}
mkdir -p "$out"
export OMP_NUM_THREADS=1
launch=(mpiexec)
[ -n "${VCLUSTER:-}" ] && launch=("$here/../tools/vcluster/rudra-vcluster" mpiexec --name "$VCLUSTER")
nodes=${NODES:-2}

# The wide model: ip_wide (+ ReLU) between pool3 and ip1.
. "$here/wide_model.sh"
wide_model "$out" "$wide" || exit 1

# Ranks for `lambda` learners: base needs lambda + 2; adv also a leaf PS per node (bench/adv_ranks.py).
adv_layout() { python3 "$here/adv_ranks.py" "$1" "$per_node"; }  # prints "RANKS K"

echo "| round | topology | ranks | overlap ratio | images/s | staleness mean | rank 0 MB / update |"
echo "|---|---|---|---|---|---|---|"
for round in $(seq 1 "$rounds"); do
  for topology in ${TOPOLOGIES:-base adv adv*}; do
    dir=$out/$topology-$round ranks=$((lambda + 2)) extra=() shown=""
    if [ "$topology" != base ]; then
      read -r ranks k < <(adv_layout "$lambda") || { echo "no adv layout for lambda $lambda" >&2; continue; }
      shown="$ranks ($k per node)"
      extra=(--topology "$topology")
      [ -z "${VCLUSTER:-}" ] && extra+=(--ranks-per-node "$k")
    fi
    placement=()
    [ -n "${VCLUSTER:-}" ] && placement=(-ppn $(((ranks + nodes - 1) / nodes))) && shown="$ranks on $nodes nodes"
    rm -rf "$dir"
    timeout -k 10 1800 "${launch[@]}" -disable-auto-cleanup "${placement[@]}" -n "$ranks" "$rudra" dist "$solver" --data "$data" --train-limit "$limit" \
      --test-limit 100 --protocol "$protocol" --batch "$mu" --epochs 1 --mode "$mode" --wait-sleep-us 2000 \
      "${extra[@]}" -o "$dir" >"$dir.log" 2>&1 || { echo "overlap_table1: $dir failed, see $dir.log" >&2; continue; }
    python3 - "$dir/metrics.jsonl" "$round" "$topology" "${shown:-$ranks}" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
e = [l for l in lines if l.get("event") == "epoch"][-1]
r0 = [l for l in lines if l.get("event") == "traffic"][-1]["ranks"][0]
mb = (r0["sent_bytes"] + r0["received_bytes"]) / 1e6 / max(1, e["updates"])
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {e['overlap_ratio']:.3f} | {e['images_per_s']} | "
      f"{e['staleness_mean']} | {mb:.1f} |")
EOF
  done
done | tee "$out/table1.md"
python3 - "$out/table1.md" <<'EOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 7 and cells[0].isdigit():
        by.setdefault(cells[1], []).append(float(cells[3]))
print()
for topology, ratios in by.items():
    print(f"{topology}: median overlap ratio {statistics.median(ratios):.3f} over {len(ratios)} runs")
EOF
