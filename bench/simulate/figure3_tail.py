#!/usr/bin/env python3
"""The paper's Figure 3 on a cluster with a core for each learner: the staleness distribution of
n-softsync with lambda learners, from the calibrated model of simulate.py (the schedule the
virtual cluster trains on: its staleness is the model's, histogram for histogram).

The paper (lambda = 30): sigma lies in {0, ..., 2n} and <sigma> ~ n; for 30-softsync,
P(sigma > 60) < 1e-4. On one node of 2 shared cores the real runs leave that tail at 1e-4 to 3e-3
(bench/results/base_order.md); here every learner and the PS compute on cores of their own,
joined by links (latency, bandwidth), as on the paper's cluster.

  figure3_tail.py [--learners 30] [--ns 1,2,4,8,15,30] [--gradients 300000] [--seeds 1,2,3]
      [--cvs 0.1,0.3] [--md OUT.md] [simulate.py's cluster options...]

Prints a Markdown table: per n and spread of the compute time (its coefficient of variation), the
mean staleness (over the seeds, with its range), the largest, and P(sigma > 2n) over all the
seeds' gradients with its 95% interval (Wilson; "rule of three" when none is seen).
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simulate  # noqa: E402


def wilson(k, n, z=1.96):
    """95% interval of a proportion k/n (Wilson score); with k = 0 the upper end is 3/n."""
    if k == 0:
        return 0.0, 3.0 / n
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), c + h


def run(cluster, learners, n, gradients, seed, cv):
    per_update = max(1, learners // n)
    a = simulate.parse(cluster + ["--learners", str(learners), "--protocol", "softsync", "--n", str(n),
                                  "--compute-cv", str(cv), "--updates", str(max(1, gradients // per_update)),
                                  "--seed", str(seed)])
    return simulate.make(a).run()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--learners", type=int, default=30)
    p.add_argument("--ns", default="1,2,4,8,15,30")
    p.add_argument("--gradients", type=int, default=300000, help="gradients simulated per seed and point")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--cvs", default="0.1,0.3", help="the compute time's coefficients of variation")
    p.add_argument("--md", help="write the table here too")
    a, cluster = p.parse_known_args(argv)
    for opt in ("--compute-ms", "--model-bytes"):
        if opt not in cluster:
            p.error(f"give the cluster's {opt} (simulate.py's options)")
    ns = [int(x) for x in a.ns.split(",")]
    seeds = [int(x) for x in a.seeds.split(",")]
    cvs = [float(x) for x in a.cvs.split(",")]
    lines = [f"λ = {a.learners}, {len(seeds)} seeds of {a.gradients:,} gradients each per point; cluster: "
             f"`{' '.join(cluster)}`", "",
             "| n | compute cv | mean σ (seeds' range) | max σ | σ ≤ 2n | P(σ > 2n) (count) | 95% interval |",
             "|---|---|---|---|---|---|---|"]
    for cv in cvs:
        for n in ns:
            means, top, tail, total = [], 0, 0, 0
            for seed in seeds:
                r = run(cluster, a.learners, n, a.gradients, seed, cv)
                h = r["histogram"]
                means.append(r["staleness_mean"])
                top = max(top, r["staleness_max"])
                tail += sum(h[2 * n + 1:])
                total += sum(h)
            lo, hi = wilson(tail, total)
            mean = sum(means) / len(means)
            lines.append(f"| {n} | {cv:g} | {mean:.2f} ({min(means):.2f}-{max(means):.2f}) | {top} | "
                         f"{100 * (1 - tail / total):.4f}% | {tail / total:.1e} ({tail}) | {lo:.1e} - {hi:.1e} |")
            print(f"figure3_tail: cv {cv:g} n {n}: mean {mean:.3f}, max {top}, {tail} of {total} beyond 2n",
                  file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
