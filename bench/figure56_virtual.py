#!/usr/bin/env python3
"""Figures 5 and 6 of the paper as tables, from a sweep's runs.csv (bench/grids/figure56_virtual.grid):
for hardsync (Figure 5), lambda-softsync (6a) and 1-softsync (6b), each (sigma, mu, lambda) point
of the mu = 128 and lambda = 30 contours (and (0, 4, 1)) over its seeds: the training time (the
simulated seconds of the last epoch), the test error after it and the mean staleness, each the
mean with the half-width of its 95% confidence interval (Student's t over the seeds).

  python3 bench/figure56_virtual.py runs/f56v/runs.csv
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_tables import cell, last_epochs, one_argument, read_rows  # noqa: E402


def family(protocol, learners):
    if protocol == "hardsync":
        return "hardsync"
    if protocol == "1-softsync" and learners > 1:
        return "1-softsync"
    if protocol == f"{learners}-softsync":
        return "lambda-softsync"
    return None


def main(argv):
    path = one_argument(argv, __doc__)
    last = last_epochs(read_rows(path))
    groups = {}
    for r in last.values():
        learners, mu = int(r["learners"]), int(r["batch"])
        fam = family(r["protocol"], learners)
        if fam:
            groups.setdefault((fam, learners, mu), []).append(r)
    if not groups:
        sys.exit(f"{path}: no run of hardsync, 1-softsync or lambda-softsync")
    titles = {"hardsync": "Figure 5: hardsync", "lambda-softsync": "Figure 6(a): lambda-softsync",
              "1-softsync": "Figure 6(b): 1-softsync"}
    for fam in ("hardsync", "lambda-softsync", "1-softsync"):
        keys = [k for k in groups if k[0] == fam]
        if not keys:
            continue
        print(f"\n{titles[fam]}\n")
        print("| contour | (sigma, mu, lambda) | seeds | training time, simulated s | test error, last epoch | "
              "mean staleness |")
        print("|---|---|---|---|---|---|")
        mu128 = sorted((k for k in keys if k[2] == 128), key=lambda k: k[1])
        lam30 = sorted((k for k in keys if k[1] == 30 and k[2] != 128), key=lambda k: -k[2])
        rest = [k for k in keys if k not in mu128 and k not in lam30]
        for contour, part in (("mu = 128", mu128), ("lambda = 30", lam30), ("", rest)):
            for key in part:
                runs = groups[key]
                sigma = {"hardsync": 0, "1-softsync": 1, "lambda-softsync": key[1]}[fam]
                print(f"| {contour} | ({sigma}, {key[2]}, {key[1]}) | {len(runs)} | "
                      f"{cell([float(r['elapsed_s']) for r in runs], 2)} | "
                      f"{cell([float(r['test_error']) for r in runs], 2, 100.0)}% | "
                      f"{cell([float(r['staleness_mean'] or 0) for r in runs], 2)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
