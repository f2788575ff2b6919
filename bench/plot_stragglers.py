#!/usr/bin/env python3
"""The slow-learner grid (bench/grids/stragglers.grid) from a sweep's runs.csv: a table per
learner count (images/s, and each method's share of its own images/s without a straggler; test
error after the grid's samples; gradients dropped) in OUT/stragglers.md, and test error against
time, one panel per learner count and straggler setting, in OUT/stragglers.png.

  python3 bench/plot_stragglers.py SWEEP_OUT     (after sweep.py collect SWEEP_OUT)
"""
import csv
import os
import sys
from collections import defaultdict

SCENARIOS = [("", "none"), ("2:3", "one 3x slower"), ("all:3:0.1", "10% of batches 3x")]


def method(row):
    name = row["protocol"]
    if row.get("max_staleness") not in ("", None):
        name += f", S={row['max_staleness']}"
    if row.get("momentum_compensation") == "1":
        name += ", mc"
    return name


def rate(rows):
    """Mean images/s of the epochs after the first (the first holds the start-up)."""
    later = [float(r["images_per_s"]) for r in rows if r["epoch"] != "1" and r["images_per_s"]]
    return sum(later) / len(later) if later else 0.0


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    with open(os.path.join(out, "runs.csv")) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{out}/runs.csv: no epoch rows")
    runs = defaultdict(list)
    for r in rows:
        runs[(int(r["learners"]), r["straggler"], method(r))].append(r)
    order = []
    for r in rows:
        if method(r) not in order:
            order.append(method(r))
    summary = {}
    for key, rs in runs.items():
        rs.sort(key=lambda r: int(r["epoch"]))
        last = rs[-1]
        dropped = sum(int(r["dropped"]) for r in rs if r.get("dropped"))
        summary[key] = {"rate": rate(rs), "error": float(last["test_error"]), "epochs": len(rs),
                        "dropped": dropped, "samples": int(last["samples"]), "series": rs}
    lines = []
    for lam in sorted({k[0] for k in runs}):
        lines += [f"### {lam} learners", "",
                  "| method | " + " | ".join(f"{label}: images/s (share), error, dropped" for _, label in SCENARIOS) + " |",
                  "|---|" + "---|" * len(SCENARIOS)]
        for m in order:
            cells = []
            base = summary.get((lam, "", m))
            for scen, _ in SCENARIOS:
                s = summary.get((lam, scen, m))
                if s is None:
                    cells.append("-")
                    continue
                share = f" ({s['rate'] / base['rate']:.2f})" if base and base["rate"] and scen else ""
                cells.append(f"{s['rate']:,.0f}{share}, {s['error']:.4f}, {s['dropped']}")
            if any(c != "-" for c in cells):
                lines.append(f"| {m} | " + " | ".join(cells) + " |")
        lines.append("")
    with open(os.path.join(out, "stragglers.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_stragglers: no plot (apt-get install python3-matplotlib)")
    lams = sorted({k[0] for k in runs})
    colours = plt.get_cmap("tab20")
    fig, axes = plt.subplots(len(lams), len(SCENARIOS), figsize=(5 * len(SCENARIOS), 4 * len(lams)), squeeze=False)
    for i, lam in enumerate(lams):
        for j, (scen, label) in enumerate(SCENARIOS):
            ax = axes[i][j]
            for c, m in enumerate(order):
                s = summary.get((lam, scen, m))
                if s is None:
                    continue
                xs = [float(r["elapsed_s"]) for r in s["series"]]
                ys = [float(r["test_error"]) for r in s["series"]]
                waits = any(w in m for w in ("hardsync", "ksync", "allreduce"))  # the synchronous ones
                ax.plot(xs, ys, "-" if waits else "--", color=colours(c % 20), marker="o", markersize=3, label=m)
            ax.set_title(f"{lam} learners, straggler: {label}")
            ax.set_xlabel("elapsed s")
            ax.set_ylabel("test error")
            ax.grid(alpha=0.3)
    for row in axes:
        row[0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "stragglers.png"), dpi=90)
    print(f"plot_stragglers: {out}/stragglers.md, {out}/stragglers.png")


if __name__ == "__main__":
    main()
