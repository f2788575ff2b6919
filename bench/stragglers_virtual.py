#!/usr/bin/env python3
"""Slow learners on the virtual cluster (bench/grids/stragglers_virtual.grid) from a sweep's
runs.csv: for each method and straggler setting over its seeds, the images per simulated second
over the whole run (the samples the PS took, dropped gradients not counted, over the simulated
time of the last epoch), its share of the same method's without a straggler, the last epoch's
test error and the gradients dropped, each as the mean with the half-width of its 95% confidence
interval (Student's t over the seeds).

  python3 bench/stragglers_virtual.py SWEEP_OUT     (after sweep.py collect SWEEP_OUT)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_tables import cell, last_epochs, one_argument, read_rows  # noqa: E402

SETTINGS = [("", "no straggler"), ("0:3", "learner 0 3x slower"), ("all:3:0.1", "10% of mini-batches 3x")]


def method(row):
    name = row["protocol"]
    if row.get("max_staleness") not in ("", None, "-1"):
        name += f", S={row['max_staleness']}"
    if row.get("momentum_compensation") == "1":
        name += ", mc"
    return name


def main(argv):
    rows = read_rows(os.path.join(one_argument(argv, __doc__), "runs.csv"))
    last, dropped = last_epochs(rows), {}
    for r in rows:
        dropped[r["run"]] = dropped.get(r["run"], 0.0) + float(r["dropped"] or 0)  # each epoch's
    groups = {}
    for r in last.values():
        groups.setdefault((method(r), r.get("straggler") or ""), []).append(r)
    methods = sorted({m for m, _ in groups})
    rate = {k: [float(r["samples"]) / float(r["elapsed_s"]) for r in v] for k, v in groups.items()}
    head = " | ".join(f"{name}: images/s (share), error %, dropped" for _, name in SETTINGS)
    print(f"| method | seeds | {head} |")
    print("|---|---|" + "---|" * len(SETTINGS))
    for m in methods:
        cells = []
        seeds = 0
        for key, _ in SETTINGS:
            runs = groups.get((m, key))
            if not runs:
                cells.append("")
                continue
            seeds = max(seeds, len(runs))
            share = ""
            if key and (m, "") in rate:
                base = sum(rate[(m, "")]) / len(rate[(m, "")])
                share = f" ({sum(rate[(m, key)]) / len(rate[(m, key)]) / base:.2f})"
            cells.append(f"{cell(rate[(m, key)], 0)}{share}, {cell([float(r['test_error']) for r in runs], 1, 100.0)}, "
                         f"{cell([dropped[r['run']] for r in runs], 0)}")
        print(f"| {m} | {seeds} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
