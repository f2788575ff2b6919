#!/usr/bin/env bash
# AlexNet (models/alexnet, Caffe's single-column net) through `rudra dist`: LEARNERS learners,
# n-softsync with n = 1, mini-batch MU per learner, fed by the JPEG pipeline (an LMDB of encoded
# 256x256 Datums), for each topology in turn: Rudra-base (every learner pulls from and pushes to
# rank 0) and Rudra-adv* (a leaf PS per emulated node sums its learners' gradients; the weights
# go down a broadcast tree). For each run: images/s, the overlap ratio (compute / (compute +
# waiting), summed over the learners' timelines), rank 0's megabytes sent and received per update, rank 0's
# time per update (its timeline's "gradient (and update)" spans, summed, over the updates), and
# each rank's peak resident memory (VmHWM, read from /proc while it runs).
# Usage: bench/alexnet_dist.sh [SET_DIR]   (bench/imagenet_like_sets.sh's folder; default
#        /tmp/rudra-imagenet-like, made when absent)
#   LEARNERS (4), MU (32), UPDATES (12: an epoch is MU x LEARNERS x UPDATES images), EPOCHS (1),
#   TOPOLOGIES ("base adv*"), MODE (overlap), RANKS_PER_NODE (4), RUDRA (build/rudra);
#   VCLUSTER=NAME: across the NODES (2) nodes of an emulated cluster that is up
#   (tools/vcluster/rudra-vcluster), the ranks spread with mpiexec's -ppn, adv*'s nodes found by MPI
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/rudra-imagenet-like}
rudra=${RUDRA:-$PWD/build/rudra}
learners=${LEARNERS:-4} mu=${MU:-32} updates=${UPDATES:-12} epochs=${EPOCHS:-1} mode=${MODE:-overlap} per_node=${RANKS_PER_NODE:-4}
bench/imagenet_like_sets.sh "$dir" "$rudra"
sets=$dir/alexnet
solver=models/alexnet/alexnet_paper_solver.prototxt
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

# Every second, each rank's VmHWM (kB) by its MPI rank; the last reading per rank is its peak.
watch_memory() {  # watch_memory OUT_FILE
  while :; do
    for p in $(pgrep -f "$rudra dist" || true); do
      r=$(tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | sed -n 's/^PMI_RANK=//p' || true)
      h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$p/status" 2>/dev/null || true)
      [ -n "$r" ] && [ -n "$h" ] && echo "$r $h"
    done >>"$1"
    sleep 1
  done
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc --all) cores;" \
  "$learners learners, 1-softsync, mu $mu, --mode $mode, $((mu * learners * updates * epochs)) images per run"
echo "| topology | ranks | images/s | overlap ratio | rank 0 MB / update | rank 0 ms / update | staleness mean | peak resident MB per rank |"
echo "|---|---|---|---|---|---|---|---|"
for topology in ${TOPOLOGIES:-base adv*}; do
  ranks=$((learners + 2)) extra=()
  if [ "$topology" != base ]; then
    read -r ranks k < <(/usr/bin/python3 bench/adv_ranks.py "$learners" "$per_node")
    extra=(--topology "$topology")
    [ -n "${VCLUSTER:-}" ] || extra+=(--ranks-per-node "$k")
  fi
  if [ -n "${VCLUSTER:-}" ]; then
    nodes=${NODES:-2}
    launch=(tools/vcluster/rudra-vcluster mpiexec --name "$VCLUSTER" -disable-auto-cleanup
            -ppn $(((ranks + nodes - 1) / nodes)) -n "$ranks" "$rudra" dist)
  else
    launch=(env RUDRA="$rudra" tools/rudra-launch -n "$ranks")
  fi
  run=$tmp/$topology
  : >"$run.mem"
  watch_memory "$run.mem" &
  watcher=$!
  timeout -k 10 1800 "${launch[@]}" "$solver" --data "$sets" --batch "$mu" \
    --protocol softsync --n 1 --mode "$mode" --train-limit $((mu * learners * updates)) --test-limit 50 --epochs "$epochs" \
    --timeline "$run.trace.json" ${DIST_OPTIONS:-} "${extra[@]}" -o "$run" >"$run.log" 2>&1 || {
    kill "$watcher" 2>/dev/null || true
    echo "alexnet_dist: $topology failed:" >&2
    tail -5 "$run.log" >&2
    continue
  }
  kill "$watcher" 2>/dev/null || true
  /usr/bin/python3 - "$run" "$topology" "$ranks" <<'EOF'
import json, sys
run, topology, ranks = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [json.loads(l) for l in open(run + "/metrics.jsonl")]
e = [l for l in lines if l.get("event") == "epoch"][-1]
r0 = [l for l in lines if l.get("event") == "traffic"][-1]["ranks"][0]
updates = max(1, e["updates"])
mb = (r0["sent_bytes"] + r0["received_bytes"]) / 1e6 / updates
trace = json.load(open(run + ".trace.json"))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
spans = [ev for ev in events if ev.get("ph") == "X"]
busy_us = sum(ev["dur"] for ev in spans if ev["pid"] == 0 and "(and update)" in ev["name"])
# The learners' main lanes: "compute" and "wait for ..." spans (a learner's report to the
# statistics server comes every 10 mini-batches, too seldom for a short run's epoch line).
compute_us = sum(ev["dur"] for ev in spans if ev["name"] == "compute")
wait_us = sum(ev["dur"] for ev in spans if ev["name"].startswith("wait for"))
overlap = compute_us / (compute_us + wait_us) if compute_us + wait_us > 0 else 0.0
peak = {}
for line in open(run + ".mem"):
    r, kb = map(int, line.split())
    peak[r] = max(peak.get(r, 0), kb)
memory = " ".join(f"{r}:{peak[r] / 1024:.0f}" for r in sorted(peak))
print(f"| {topology} | {ranks} | {e['images_per_s']} | {overlap:.3f} | {mb:.0f} | "
      f"{busy_us / 1e3 / updates:.0f} | {e['staleness_mean']} | {memory} |")
EOF
done
