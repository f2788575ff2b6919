#!/usr/bin/env python3
"""Table II with confidence intervals, from a sweep's runs.csv (tools/sweep/sweep.py collect): for
each configuration (learners, mini-batch, protocol, momentum compensation) over its seeds, the
last epoch's test error, its mean and the half-width of a 95% confidence interval (Student's t with
seeds - 1 degrees of freedom), the mean staleness, and the error's difference from hardsync at the
same learners and mini-batch with its own interval (Welch).

  python3 bench/table2_ci.py runs/t2v/runs.csv
"""
import csv
import math
import statistics
import sys

# Student's t, two-sided 95%, by degrees of freedom (beyond 30: 1.96).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df):
    if df < 1:
        return float("nan")
    keys = sorted(k for k in T95 if k <= df)
    return T95[keys[-1]] if df <= 30 else 1.96


def mean_ci(values):
    m = statistics.mean(values)
    if len(values) < 2:
        return m, float("nan")
    return m, t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def welch(a, b):
    """Difference of means a - b and the half-width of its 95% interval."""
    if len(a) < 2 or len(b) < 2:
        return statistics.mean(a) - statistics.mean(b), float("nan")
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return statistics.mean(a) - statistics.mean(b), 0.0
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return statistics.mean(a) - statistics.mean(b), t95(int(df)) * se


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    with open(argv[0]) as f:
        rows = list(csv.DictReader(f))
    last = {}
    for r in rows:  # each run's last epoch
        if r["run"] not in last or int(r["epoch"]) > int(last[r["run"]]["epoch"]):
            last[r["run"]] = r
    groups = {}
    for r in last.values():
        key = (int(r["learners"]), int(r["batch"]), r["protocol"], int(r["momentum_compensation"] or 0))
        groups.setdefault(key, []).append(r)
    print("| mu*lambda | lambda | mu | protocol | momentum compensation | seeds | mean staleness | "
          "test error, last epoch (95% CI) | minus hardsync's (95% CI) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (lam, mu, proto, comp), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][2] != "hardsync",
                                                                            kv[0][2], kv[0][3])):
        err = [100 * float(r["test_error"]) for r in rs]
        m, h = mean_ci(err)
        sigma = statistics.mean(float(r["staleness_mean"] or 0) for r in rs)
        hard = groups.get((lam, mu, "hardsync", 0))
        diff = ""
        if proto != "hardsync" and hard:
            d, dh = welch(err, [100 * float(r["test_error"]) for r in hard])
            diff = f"{d:+.2f} (±{dh:.2f})"
        print(f"| {lam * mu} | {lam} | {mu} | {proto} | {'yes' if comp else 'no'} | {len(rs)} | {sigma:.2f} | "
              f"{m:.2f}% (±{h:.2f}) | {diff} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
