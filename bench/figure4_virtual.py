#!/usr/bin/env python3
"""Figure 4 of the paper as a table, from a sweep's runs.csv (bench/grids/figure4_virtual.grid): for
each n-softsync configuration with the plain rate and with the modulated one, the test error after
each epoch over the seeds, as the mean with the half-width of its 95% confidence interval
(Student's t), and the mean staleness.

  python3 bench/figure4_virtual.py runs/f4v/runs.csv
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_tables import cell, one_argument, read_rows  # noqa: E402


def main(argv):
    rows = read_rows(one_argument(argv, __doc__))
    groups = {}  # (learners, protocol, modulation) -> epoch -> [rows]
    for r in rows:
        key = (int(r["learners"]), r["protocol"], r["lr_modulation"] or "default")
        groups.setdefault(key, {}).setdefault(int(r["epoch"]), []).append(r)
    epochs = sorted({e for g in groups.values() for e in g})
    print("| learners | protocol | learning rate | seeds | " + " | ".join(f"test error, epoch {e}" for e in epochs) +
          " | mean staleness |")
    print("|---|---|---|---|" + "---|" * (len(epochs) + 1))
    for (learners, protocol, modulation), by_epoch in sorted(groups.items(), key=lambda kv: (-int(kv[0][1].split("-")[0])
                                                                                             if kv[0][1][0].isdigit()
                                                                                             else 0, kv[0][2])):
        rate = "alpha0 / <sigma>" if modulation == "average" else ("alpha0" if modulation == "none" else modulation)
        cells = [cell([float(r["test_error"]) for r in by_epoch[e]], 2, 100.0) + "%" if e in by_epoch else ""
                 for e in epochs]
        last = by_epoch[max(by_epoch)]
        stale = sum(float(r["staleness_mean"] or 0) for r in last) / len(last)
        print(f"| {learners} | {protocol} | {rate} | {len(last)} | " + " | ".join(cells) + f" | {stale:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
