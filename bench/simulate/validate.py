#!/usr/bin/env python3
"""The simulator against real runs: for each run of a sweep (sweep.py collect OUT first), the same
protocol, learner count and n simulated with the given costs; prints measured and simulated
updates per second and mean staleness side by side, as a Markdown table.

  python3 bench/simulate/validate.py OUT --compute-ms 9.5 --cores 2 --latency-us 1000 \\
      --bandwidth-gbs 5 --model-bytes 334000 [--update-ms 0.1] [--grad-ms 0.05]

--latency-us and --message-us take one value, or RANKS=US pairs (6=3500,32=8000): a message's
costs measured by bench/src/pingpong_bench under the load of that many ranks; a run takes the
pair of its own rank count (learners + 2), or the nearest. --request-lag-ms and
--request-lag-gradients take RANKS=MS and RANKS=COUNT pairs too, as timeline_lags.py prints them
from --timeline runs (Rudra-base runs only).

Runs on the adv and adv* trees are simulated with the run's own layout (its start line in
metrics.jsonl: the learners below each leaf PS, the broadcast's fan-out); every link of one
machine costs the same, so the node links take --latency-us and --bandwidth-gbs too.

Measured updates per second: the last epoch line's updates over its elapsed seconds (set-up
excluded: the PS's clock starts with training); measured staleness: the run's staleness.json.
Runs of one configuration with different seeds (the grid's repeats) are one row: the means of
their figures, and the range of their staleness, which shows how much a measurement moves
between two runs of the same settings.
"""
import argparse
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simulate import simulate  # noqa: E402


def tree_layout(run_dir):
    """(leaf sizes, broadcast fan-out, ranks) of a run on a tree, from its metrics' start line; None for base."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        start = json.loads(f.readline() or "{}")
    layout = start.get("layout") or {}
    if layout.get("topology", "base") == "base":
        return None
    ranks = layout["ranks"]
    leaves = [r["rank"] for r in ranks if r["role"] == "leaf parameter server"]
    sizes = [sum(1 for r in ranks if r["role"] == "learner" and r.get("parent") == leaf) for leaf in leaves]
    return [s for s in sizes if s > 0], layout.get("broadcast_fan_out", 2), len(ranks)


def simulate_like(argv, run_updates, at_least):
    """The run simulated at its own length (a one-epoch run of 13 updates starts with a round
    at staleness 0 that a long simulation would not count), with seeds 1, 2, ... until at least
    `at_least` updates in all; rates and staleness pooled over them."""
    updates = seconds = gradients = stale_sum = overlap = 0.0
    seed = 0
    while updates < at_least:
        seed += 1
        s = simulate(argv + ["--updates", str(max(1, run_updates)), "--seed", str(seed)])
        g = s["gradients_per_s"] * s["seconds"]
        updates += s["updates"]
        seconds += s["seconds"]
        gradients += g
        stale_sum += s["staleness_mean"] * g
        overlap += s["overlap_ratio"]
    return {"updates_per_s": updates / seconds, "staleness_mean": stale_sum / gradients if gradients else 0.0,
            "overlap_ratio": overlap / seed}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="a sweep's folder, collected (runs.csv)")
    for name, default in (("compute-ms", None), ("model-bytes", None), ("cores", "0"), ("latency-us", "5"),
                          ("bandwidth-gbs", "10"), ("update-ms", "0"), ("grad-ms", "0"), ("request-us", "2"),
                          ("compute-cv", "0.1"), ("updates", "3000"), ("message-us", "0"),
                          ("crowding-cost", "0"), ("request-lag-ms", "0"),
                          ("request-lag-gradients", "0"), ("forward-core-ms", "0"), ("message-load-us", "0")):
        p.add_argument("--" + name, required=default is None, default=default)
    a = p.parse_args()
    def per_ranks(option, text):
        try:
            pairs = {int(k): float(v) for k, v in (x.split("=") for x in text.split(","))} \
                if "=" in text else {0: float(text)}
        except ValueError:
            p.error(f"{option} takes a number or RANKS=US pairs")
        return lambda ranks: pairs[min(pairs, key=lambda k: abs(k - ranks))]
    message_us = per_ranks("--message-us", a.message_us)
    latency_us = per_ranks("--latency-us", a.latency_us)
    request_lag_ms = per_ranks("--request-lag-ms", a.request_lag_ms)
    request_lag_gradients = per_ranks("--request-lag-gradients", a.request_lag_gradients)
    rows = list(csv.DictReader(open(os.path.join(a.out, "runs.csv"))))
    last = {}
    for r in rows:
        if r["run"] not in last or int(r["epoch"]) > int(last[r["run"]]["epoch"]):
            last[r["run"]] = r
    # The runs of one configuration (repeats with other seeds) together.
    configs = {}
    for r in last.values():
        key = (r["protocol"], r["n"], r["topology"], int(r["learners"]), r.get("mode"))
        configs.setdefault(key, []).append(r)
    costs = ["--compute-ms", a.compute_ms, "--model-bytes", a.model_bytes, "--cores", a.cores,
             "--bandwidth-gbs", a.bandwidth_gbs, "--update-ms", a.update_ms,
             "--grad-ms", a.grad_ms, "--crowding-cost", a.crowding_cost, "--request-us", a.request_us,
             "--compute-cv", a.compute_cv, "--forward-core-ms", a.forward_core_ms,
             "--message-load-us", a.message_load_us]
    print("| protocol | topology | lambda | runs | updates/s measured | simulated | ratio | mean staleness measured "
          "(range) | simulated | difference | overlap measured | simulated |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    worst_rate = worst_stale = worst_overlap = 0.0
    skipped = []
    for key in sorted(configs, key=lambda k: (k[0], k[2], k[3])):
        runs = configs[key]
        r = runs[0]
        proto = r["protocol"]
        if proto in ("allreduce", "easgd") or proto.startswith("gossip"):
            skipped.extend(f"{x['run']} ({proto}: the simulator models the parameter-server protocols only)" for x in runs)
            continue
        if proto == "hardsync":
            args = ["--protocol", "hardsync"]
        elif proto == "async":
            args = ["--protocol", "async"]
        else:
            args = ["--protocol", "softsync", "--n", r["n"]]
        stales = []
        for x in runs:
            stale_path = os.path.join(a.out, x["run"], "staleness.json")
            stales.append(json.load(open(stale_path))["mean"] if os.path.exists(stale_path)
                          else float(x["staleness_mean"]))
        measured_stale = sum(stales) / len(stales)
        measured_rate = sum(float(x["updates"]) / float(x["elapsed_s"]) for x in runs) / len(runs)
        overlaps = [float(x["overlap_ratio"]) for x in runs if x.get("overlap_ratio")]
        measured_overlap = sum(overlaps) / len(overlaps) if overlaps else float("nan")
        run_updates = round(sum(int(x["updates"]) for x in runs) / len(runs))
        ranks = int(r["learners"]) + 2
        tree = tree_layout(os.path.join(a.out, r["run"]))
        if tree:
            sizes, fan_out, ranks = tree
            args += ["--topology", r["topology"], "--leaf-sizes", ",".join(map(str, sizes)),
                     "--broadcast-fan-out", str(fan_out), "--node-latency-us", str(latency_us(ranks)),
                     "--node-bandwidth-gbs", a.bandwidth_gbs]
        if r.get("mode") == "overlap":
            args += ["--mode", "overlap"]
        elif not tree:
            args += ["--request-lag-ms", str(request_lag_ms(ranks)),
                     "--request-lag-gradients", str(request_lag_gradients(ranks))]
        s = simulate_like(["--learners", r["learners"], "--message-us", str(message_us(ranks)),
                           "--latency-us", str(latency_us(ranks))] + args + costs, run_updates, int(a.updates))
        ratio = s["updates_per_s"] / measured_rate
        diff = (s["staleness_mean"] - measured_stale) / measured_stale if measured_stale > 0 else 0.0
        worst_rate = max(worst_rate, abs(ratio - 1))
        worst_stale = max(worst_stale, abs(diff))
        if overlaps:
            worst_overlap = max(worst_overlap, abs(s["overlap_ratio"] - measured_overlap))
        spread = f" ({min(stales):.2f}-{max(stales):.2f})" if len(stales) > 1 else ""
        print(f"| {proto} | {r['topology']} | {r['learners']} | {len(runs)} | {measured_rate:.1f} | {s['updates_per_s']:.1f} | "
              f"{ratio:.2f} | {measured_stale:.2f}{spread} | {s['staleness_mean']:.2f} | {100 * diff:+.0f}% | "
              f"{measured_overlap:.2f} | {s['overlap_ratio']:.2f} |")
    print(f"\nlargest error: updates/s {100 * worst_rate:.0f}%, mean staleness {100 * worst_stale:.0f}%, "
          f"overlap ratio {worst_overlap:.2f}")
    for line in skipped:
        print(f"not simulated: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
