#!/usr/bin/env python3
"""Summarise a `rudra bench --format csv` convolution run: the own backend's speed against
oneDNN and BLIS as a geometric mean over layers, passes and mini-batches (issue 3's 0.8x
target), the best backend per case against oneDNN, and each layer's total time.

Usage: bench/conv_ratios.py RESULTS.csv
   e.g. rudra bench --batch-file bench/cifar10_full_conv.txt --mb 1,4,16,128 --threads 2 \\
          --backends own,blis,onednn --format csv -o conv.csv && bench/conv_ratios.py conv.csv
"""
import collections
import csv
import math
import sys


def main(path):
    rows = list(csv.DictReader(open(path)))
    ms = {(r["name"] or r["problem"], r["pass"], int(r["mb"]), r["backend"]): float(r["ms"]) for r in rows}
    cases = sorted({k[:3] for k in ms})
    for other in ("onednn", "blis"):
        logs = [math.log(ms[c + (other,)] / ms[c + ("own",)]) for c in cases if c + (other,) in ms and c + ("own",) in ms]
        if logs:
            print(f"own speed / {other} speed, geometric mean over {len(logs)} cases: {math.exp(sum(logs) / len(logs)):.3f}")
    best = [math.log(ms[c + ("onednn",)] / min(v for (n, p, mb, b), v in ms.items() if (n, p, mb) == c))
            for c in cases if c + ("onednn",) in ms]
    if best:
        print(f"best backend / oneDNN, geometric mean: {math.exp(sum(best) / len(best)):.3f} (worst case {math.exp(min(best)):.3f})")
    layers = collections.defaultdict(dict)
    for (name, p, mb, backend), v in ms.items():
        layers[(name, mb)].setdefault(backend, {})[p] = v
    print("layer, mini-batch: ms of all passes per backend; own/oneDNN speed per pass")
    for (name, mb), per in sorted(layers.items()):
        totals = ", ".join(f"{b} {sum(v.values()):.2f}" for b, v in sorted(per.items()))
        ratios = ""
        if "own" in per and "onednn" in per:
            ratios = " ".join(f"{p} {per['onednn'][p] / per['own'][p]:.2f}" for p in sorted(per["own"]) if p in per["onednn"])
        print(f"  {name} mb {mb}: {totals};  {ratios}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
