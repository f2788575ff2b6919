#!/usr/bin/env python3
"""Table I on the virtual cluster, from a sweep's folder of virtual runs (bench/grids/table1_virtual.grid):
for each learner count and topology over its seeds, the learners' overlap ratio (compute over compute
plus waiting), images per simulated second and the PS's updates per simulated second (the model's,
from each run's schedule.txt header), the mean staleness the rule counted (staleness.json), and
the last epoch's test error (metrics.jsonl), each as the mean with the half-width of its 95%
confidence interval (Student's t over the seeds).

  python3 bench/table1_virtual.py runs/t1v
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_tables import cell, one_argument  # noqa: E402


def read_run(folder):
    """(learners, topology, seed, figures) of one finished virtual run, or None."""
    schedule, metrics = os.path.join(folder, "schedule.txt"), os.path.join(folder, "metrics.jsonl")
    if not os.path.exists(schedule) or not os.path.exists(os.path.join(folder, "final.rudra")):
        return None
    with open(schedule) as f:
        head = json.loads(f.readline())
    sim, settings = head.get("simulated"), head["settings"]
    if sim is None:
        return None
    epochs = [json.loads(line) for line in open(metrics) if '"event":"epoch"' in line]
    stale = json.load(open(os.path.join(folder, "staleness.json")))
    samples = epochs[-1]["samples"]
    figures = {"overlap": sim["overlap_ratio"], "images_per_s": samples / sim["seconds"],
               "updates_per_s": sim["updates_per_s"], "staleness": stale["mean"],
               "error": 100.0 * (1.0 - epochs[-1]["test_accuracy"])}
    return settings["learners"], settings["topology"], settings["seed"], figures


def main(argv):
    folder = one_argument(argv, __doc__)
    groups = {}
    for name in sorted(os.listdir(folder)):
        run = read_run(os.path.join(folder, name))
        if run:
            learners, topology, _, figures = run
            groups.setdefault((learners, topology), []).append(figures)
    if not groups:
        sys.exit(f"{folder}: no finished virtual run (schedule.txt with a \"simulated\" header and final.rudra)")
    order = {"base": 0, "adv": 1, "adv*": 2}
    print("| learners | topology | seeds | overlap ratio | images/s (simulated) | updates/s | mean staleness | "
          "test error, last epoch |")
    print("|---|---|---|---|---|---|---|---|")
    for (learners, topology), runs in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9))):
        col = {k: [r[k] for r in runs] for k in runs[0]}
        print(f"| {learners} | {topology} | {len(runs)} | {cell(col['overlap'], 3)} | {cell(col['images_per_s'], 0)} | "
              f"{cell(col['updates_per_s'], 1)} | {cell(col['staleness'], 2)} | {cell(col['error'], 2)}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
