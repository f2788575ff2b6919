#!/usr/bin/env python3
"""GFLOP/s against mini-batch from `rudra bench --format csv`, as small multiples: one panel per
layer and pass, one line per backend (and thread count, when the file has several), GFLOP/s on
the left axis and the share of the machine's peak on the right. PNG or SVG, by OUT's extension.

  rudra bench --batch-file bench/cifar10_full_conv.txt --mb 1,2,4,8,16,32,64,128 --format csv -o conv.csv
  bench/plot_bench.py conv.csv conv.png
"""
import csv
import math
import os
import re
import sys
from collections import defaultdict


def main():
    if len(sys.argv) != 3:
        print("usage: plot_bench.py BENCH.csv OUT.png|OUT.svg", file=sys.stderr)
        return 2
    path, out = sys.argv[1], sys.argv[2]
    try:
        import matplotlib
    except ImportError:
        if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:])
        print("plot_bench: matplotlib is missing (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        return 1
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"plot_bench: {path}: {e.strerror}", file=sys.stderr)
        return 1
    need = {"problem", "name", "backend", "pass", "threads", "mb", "gflops", "pct_peak"}
    if not rows or not need <= set(rows[0]):
        print(f"plot_bench: {path}: not a `rudra bench --format csv` file (columns {sorted(need)})", file=sys.stderr)
        return 1
    series = defaultdict(lambda: defaultdict(list))  # (layer, pass) -> line -> [(mb, gflops)]
    peak = {}  # threads -> GFLOP/s at 100%
    threads = {r["threads"] for r in rows}
    for r in rows:
        mb, gf, pct = float(r["mb"] or 0), float(r["gflops"] or 0), float(r["pct_peak"] or 0)
        if mb <= 0 or gf <= 0:
            continue  # GEMM rows and the bandwidth-bound layers (pooling, LRN)
        layer = r["name"] or re.sub(r"mb\d+", "", r["problem"])  # an unnamed problem: its shape but the mini-batch
        line = r["backend"] + (f" {r['threads']} thr" if len(threads) > 1 else "")
        series[(layer, r["pass"])][line].append((mb, gf))
        if pct > 0:
            peak[r["threads"]] = gf * 100.0 / pct
    if not series:
        print(f"plot_bench: no convolution rows (mb > 0, GFLOP/s > 0) in {path}", file=sys.stderr)
        return 1
    panels = sorted(series)
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.4 * cols, 3.5 * nrows + 0.6), squeeze=False, layout="constrained")
    backends = sorted({line for s in series.values() for line in s})
    colours = {b: f"C{i}" for i, b in enumerate(backends)}
    one_peak = peak[next(iter(peak))] if len(peak) == 1 else None
    for ax, key in zip(axes.flat, panels):
        for line in sorted(series[key]):
            pts = sorted(series[key][line])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, color=colours[line], label=line)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{key[0]} {key[1]}", fontsize=9)
        ax.set_xlabel("mini-batch")
        ax.set_ylabel("GFLOP/s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if one_peak:
            right = ax.secondary_yaxis("right", functions=(lambda g: g * 100.0 / one_peak, lambda p: p * one_peak / 100.0))
            right.set_ylabel("% of peak")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)  # the same backends and colours in every panel
    fig.suptitle(os.path.basename(path) + (f" (peak {one_peak:.0f} GFLOP/s)" if one_peak else ""))
    fig.savefig(out, dpi=100, bbox_inches="tight")
    print(f"plot_bench: wrote {out} ({len(panels)} panels, {len(backends)} lines each at most)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
