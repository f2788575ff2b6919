#!/usr/bin/env bash
# How fast could AlexNet's training step run on this machine with the fastest kernel of any backend
# on every pass? A composite measured side by side in one run, against the goals of 3x PyTorch and
# 80% of the FLOP limit:
#   - each convolution and inner-product pass alone (`rudra bench`: own, BLIS and oneDNN), the
#     fastest backend's time kept per pass (conv1 has no backward-data: its input is the data);
#   - every other layer's forward and backward as `rudra time` measures them in the net;
#   - the solver's update and the input pipeline left out, so the composite can only be faster
#     than any real step;
#   - PyTorch 1.13 training the same net (bench/pytorch_alexnet.py), and the FMA loop's peak.
# Prints per mini-batch the composite's images/s, its share of the FLOP limit (4.1 GFLOP per image
# for a training step), its ratio to PyTorch, and `rudra time`'s own step for comparison.
# Usage: bench/alexnet_composite.sh   env: BATCHES ("32 128"), THREADS (2), MIN_TIME (1), ROUNDS (1:
#        each pass's best over the rounds), RUDRA (build/rudra)
set -euo pipefail
cd "$(dirname "$0")/.."
rudra=${RUDRA:-$PWD/build/rudra}
threads=${THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
peak=$(bench/fma_peak.sh "$rudra" "$threads" 3)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads threads; measured peak $peak GFLOP/s"
for b in ${BATCHES:-32 128}; do
  sed "s/^mb256/mb$b/" bench/alexnet_conv.txt >"$tmp/problems.txt"
  printf 'ip:mb%dic9216oc4096n"alexnet:fc6"\nip:mb%dic4096oc4096n"alexnet:fc7"\nip:mb%dic4096oc1000n"alexnet:fc8"\n' \
    "$b" "$b" "$b" >>"$tmp/problems.txt"
  for r in $(seq "${ROUNDS:-1}"); do
    OMP_NUM_THREADS=$threads "$rudra" bench --batch-file "$tmp/problems.txt" --backends own,blis,onednn \
      --threads "$threads" --min-time "${MIN_TIME:-1}" --format csv -o "$tmp/passes_$r.csv" >/dev/null
  done
  OMP_NUM_THREADS=$threads "$rudra" time models/alexnet/alexnet_train_val.prototxt --batch "$b" --iterations 2 \
    --input-shape 3,227,227 --threads "$threads" --json "$tmp/time.json" >/dev/null
  /usr/bin/python3 bench/pytorch_alexnet.py --batch "$b" --threads "$threads" --iterations 3 >"$tmp/torch.json"
  /usr/bin/python3 - "$b" "$tmp" "$peak" <<'PY'
import csv, glob, json, sys
batch, tmp, peak = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
best = {}
for path in glob.glob(tmp + "/passes_*.csv"):
    for row in csv.DictReader(open(path)):
        if row["name"] == "alexnet:conv1" and row["pass"] == "bwd_data":
            continue  # the data layer takes no gradient
        key = (row["name"], row["pass"])
        ms = float(row["ms"])
        if key not in best or ms < best[key][0]:
            best[key] = (ms, row["backend"])
timed = json.loads(open(tmp + "/time.json").read())
other = sum(l["forward_ms"] + l["backward_ms"] for l in timed["layers"]
            if l["type"] not in ("Convolution", "InnerProduct"))
gemm = sum(ms for ms, _ in best.values())
torch = json.loads(open(tmp + "/torch.json").read())["images_per_s"]
step = gemm + other
ips = batch * 1000 / step
limit = 4.1 * batch / peak * 1000
for (name, p), (ms, backend) in sorted(best.items()):
    print(f"  mb {batch:3d} {name:14s} {p:12s} {ms:9.1f} ms  {backend}")
print(f"mb {batch:3d}: fastest backend per pass {gemm:.0f} ms + other layers in the net {other:.0f} ms = {step:.0f} ms: "
      f"{ips:.1f} img/s, {100 * limit / step:.1f}% of the FLOP limit (peak {peak:.0f} GFLOP/s); "
      f"PyTorch {torch:.1f} img/s: composite / PyTorch {ips / torch:.2f}; "
      f"rudra time (own) {timed['forward_backward_ms']:.0f} ms, {timed['images_per_s']:.1f} img/s")
PY
done
