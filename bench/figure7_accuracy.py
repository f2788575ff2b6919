#!/usr/bin/env python3
"""Figure 7 with accuracy, from a sweep's runs.csv (tools/sweep/sweep.py collect) of
bench/grids/figure7_virtual.grid: for each protocol (hardsync, 1-softsync, lambda-softsync) and
learner count at mini-batch 4, the speed-up over the baseline (sigma, mu, lambda) = (0, 128, 1),
its simulated seconds over the run's at the last epoch, and the last epoch's test error, each as
the mean over the seeds with the half-width of its 95% interval (Student's t).

  python3 bench/figure7_accuracy.py runs/f7v/runs.csv [--png figure7_accuracy.png]
"""
import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from table2_ci import mean_ci  # noqa: E402

PROTOCOLS = ("hardsync", "1-softsync", "λ-softsync")


def curve(r):
    if r["protocol"] == "hardsync":
        return "hardsync"
    return "1-softsync" if int(r["n"]) == 1 else "λ-softsync"


def text(m, h, fmt):
    return (fmt % m) + ("" if math.isnan(h) else " ± " + (fmt % h))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv")
    p.add_argument("--png")
    a = p.parse_args(argv)
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    last = {}
    for r in rows:  # each run's last epoch
        if r["run"] not in last or int(r["epoch"]) > int(last[r["run"]]["epoch"]):
            last[r["run"]] = r
    base = [float(r["elapsed_s"]) for r in last.values() if int(r["batch"]) == 128 and int(r["learners"]) == 1]
    if not base:
        sys.exit(f"{a.csv}: no baseline run (1 learner, mini-batch 128)")
    base_s = sum(base) / len(base)
    points = {}
    for r in last.values():
        if int(r["batch"]) == 128:
            continue
        lam = int(r["learners"])
        names = PROTOCOLS if lam == 1 else (curve(r),)  # one learner: every protocol is the same
        for name in names:
            points.setdefault((name, lam), []).append(r)
    lambdas = sorted({lam for _, lam in points})
    berr = mean_ci([float(r["test_error"]) * 100 for r in last.values() if int(r["batch"]) == 128])
    print(f"baseline (0, 128, 1): {base_s:.1f} simulated s over its {len(base)} run(s), test error "
          f"{text(*berr, '%.2f')}%\n")
    print("| protocol | " + " | ".join(f"λ={x}" for x in lambdas) + " |")
    print("|---|" + "---|" * len(lambdas))
    series = {}
    for name in PROTOCOLS:
        cells = []
        for lam in lambdas:
            rs = points.get((name, lam), [])
            if not rs:
                cells.append("")
                continue
            sp = mean_ci([base_s / float(r["elapsed_s"]) for r in rs])
            err = mean_ci([float(r["test_error"]) * 100 for r in rs])
            series.setdefault(name, []).append((lam, sp, err, len(rs)))
            cells.append(f"{text(*sp, '%.2f')}x, {text(*err, '%.1f')}% ({len(rs)})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nEach cell: speed-up, test error (seeds).")
    if a.png:
        draw(series, berr[0], a.png)
    return 0


def draw(series, base_error, path):
    try:
        import matplotlib
    except ImportError:
        sys.exit("figure7_accuracy.py: --png needs matplotlib (Debian: apt-get install python3-matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"hardsync": "tab:blue", "1-softsync": "tab:green", "λ-softsync": "tab:red"}
    for name, pts in series.items():
        xs = [p[0] for p in pts]
        left.errorbar(xs, [p[1][0] for p in pts], yerr=[0 if math.isnan(p[1][1]) else p[1][1] for p in pts],
                      marker="o", color=colors[name], label=name, capsize=3)
        right.errorbar(xs, [p[2][0] for p in pts], yerr=[0 if math.isnan(p[2][1]) else p[2][1] for p in pts],
                       marker="o", color=colors[name], label=name, capsize=3)
    right.axhline(base_error, color="0.5", linewidth=0.8, label="(0, 128, 1)")
    for ax, label in ((left, "speed-up over (0, 128, 1)"), (right, "test error, %")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("learners λ (mini-batch 4)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    left.set_yscale("log", base=2)
    fig.suptitle("Figure 7 on the virtual cluster: speed-up and error, 95% intervals over seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
