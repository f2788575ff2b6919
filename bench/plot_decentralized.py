#!/usr/bin/env python3
"""Test accuracy against epochs and against wall time for each run of bench/decentralized.sh:
one row of panels per learner count and step size. Usage: plot_decentralized.py OUT"""
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(out, "runs", "p*-lr*-*", "metrics.jsonl"))):
    m = re.match(r"p(\d+)-lr([0-9.e-]+)-(.+)", os.path.basename(os.path.dirname(path)))
    epochs = [json.loads(l) for l in open(path) if '"event":"epoch"' in l]
    if m and epochs:
        runs.setdefault((int(m.group(1)), m.group(2)), {})[m.group(3)] = epochs
if not runs:
    sys.exit("plot_decentralized: no runs under " + out)
keys = sorted(runs)
fig, axes = plt.subplots(len(keys), 2, figsize=(11, 3.2 * len(keys)), squeeze=False)
for row, (p, lr) in enumerate(keys):
    for method, epochs in sorted(runs[(p, lr)].items()):
        acc = [e["test_accuracy"] for e in epochs]
        axes[row][0].plot([e["epoch"] for e in epochs], acc, marker="o", label=method)
        axes[row][1].plot([e["elapsed_s"] for e in epochs], acc, marker="o", label=method)
    axes[row][0].set_title(f"P = {p}, base_lr {lr}: accuracy by epoch")
    axes[row][1].set_title(f"P = {p}, base_lr {lr}: accuracy by wall time")
    axes[row][0].set_xlabel("epoch")
    axes[row][1].set_xlabel("seconds")
    for ax in axes[row]:
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
    axes[row][0].legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(out, "accuracy.png"), dpi=90)
print("plot_decentralized: " + os.path.join(out, "accuracy.png"))
