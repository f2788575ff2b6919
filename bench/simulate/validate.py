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
metrics.jsonl: each learner's leaf PS, the broadcast's fan-out); every link of one
machine costs the same, so the node links take --latency-us and --bandwidth-gbs too.

Runs across the emulated cluster's nodes (tools/vcluster) take --link-gbs, --link-burst-bytes and
--link-latency-us, the links as tc shapes them, and --ranks-per-node, how mpiexec placed the ranks
(-ppn): a base run's learners (ranks 2, 3, ...) are on the node of rank // ranks-per-node, the PS
(rank 0) on the first; a tree run's nodes are its layout's leaf PSs. --host SWEEP fits each
configuration's --compute-ms to its rate in SWEEP (the same grid on one host, or across unshaped
links), simulated without links, so that the links alone set OUT's runs apart:

  python3 bench/simulate/validate.py runs/links-100m --host runs/links-10g --model-bytes 334032 \
      --cores 2 ... --link-gbs 0.0125 --link-burst-bytes 162000 --ranks-per-node 2

Measured updates per second: the last epoch line's updates over its elapsed seconds (set-up
excluded: the PS's clock starts with training; a warm start's source's seconds excluded);
measured staleness: the run's staleness.json.
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
    """(each learner's leaf PS in rank order, broadcast fan-out, ranks) of a run on a tree, from its
    metrics' start line; None for base."""
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
    learners = sorted((r for r in ranks if r["role"] == "learner"), key=lambda r: r["rank"])
    used = [leaf for leaf in leaves if any(r.get("parent") == leaf for r in learners)]
    return [used.index(r["parent"]) for r in learners], layout.get("broadcast_fan_out", 2), len(ranks)


def own_seconds(row, last):
    """A run's own training time: a warm-started run's elapsed_s also counts its source's (the
    sweep's time axis), its updates do not."""
    source = last.get(row.get("warm_start_from") or "")
    return float(row["elapsed_s"]) - (float(source["elapsed_s"]) if source else 0.0)


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


def sweep(out):
    """(each run's last epoch row by name, the runs of each configuration) of a collected sweep."""
    rows = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
    last = {}
    for r in rows:
        if r["run"] not in last or int(r["epoch"]) > int(last[r["run"]]["epoch"]):
            last[r["run"]] = r
    # The runs of one configuration (repeats with other seeds) together.
    configs = {}
    for r in last.values():
        key = (r["protocol"], r["n"], r["topology"], int(r["learners"]), r.get("mode"))
        configs.setdefault(key, []).append(r)
    return last, configs


def measured(out, runs, last):
    """(updates/s, mean staleness, the runs' staleness, overlap or nan, updates) of a configuration's runs."""
    stales = []
    for x in runs:
        stale_path = os.path.join(out, x["run"], "staleness.json")
        stales.append(json.load(open(stale_path))["mean"] if os.path.exists(stale_path)
                      else float(x["staleness_mean"]))
    rate = sum(float(x["updates"]) / own_seconds(x, last) for x in runs) / len(runs)
    overlaps = [float(x["overlap_ratio"]) for x in runs if x.get("overlap_ratio")]
    overlap = sum(overlaps) / len(overlaps) if overlaps else float("nan")
    updates = round(sum(int(x["updates"]) for x in runs) / len(runs))
    return rate, sum(stales) / len(stales), stales, overlap, updates


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="a sweep's folder, collected (runs.csv)")
    p.add_argument("--host", default="",
                   help="the same sweep run on one host (collected): each configuration's --compute-ms is fitted "
                        "to its updates/s there, without links, so that only the links set the runs of OUT apart")
    for name, default in (("compute-ms", None), ("model-bytes", None), ("cores", "0"), ("latency-us", "5"),
                          ("bandwidth-gbs", "10"), ("update-ms", "0"), ("grad-ms", "0"), ("request-us", "2"),
                          ("compute-cv", "0.1"), ("updates", "3000"), ("message-us", "0"),
                          ("crowding-cost", "0"), ("request-lag-ms", "0"),
                          ("request-lag-gradients", "0"), ("forward-core-ms", "0"), ("message-load-us", "0"),
                          ("link-gbs", "0"), ("link-burst-bytes", "0"), ("link-latency-us", "0"),
                          ("ranks-per-node", "0")):
        p.add_argument("--" + name, required=default is None and name != "compute-ms", default=default)
    a = p.parse_args()
    if a.compute_ms is None and not a.host:
        p.error("--compute-ms is needed (or --host, to fit it)")
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
    last, configs = sweep(a.out)
    host_last, host_configs = sweep(a.host) if a.host else ({}, {})
    costs = ["--model-bytes", a.model_bytes, "--cores", a.cores,
             "--bandwidth-gbs", a.bandwidth_gbs, "--update-ms", a.update_ms,
             "--grad-ms", a.grad_ms, "--crowding-cost", a.crowding_cost, "--request-us", a.request_us,
             "--compute-cv", a.compute_cv, "--forward-core-ms", a.forward_core_ms,
             "--message-load-us", a.message_load_us]
    links = ["--link-gbs", a.link_gbs, "--link-burst-bytes", a.link_burst_bytes, "--link-latency-us", a.link_latency_us]
    ppn = int(a.ranks_per_node)
    if float(a.link_gbs) > 0 and ppn < 1:
        p.error("--link-gbs needs --ranks-per-node: how mpiexec placed the run's ranks on the nodes")

    def row_args(out, r, across):
        """The simulator's arguments for run r of sweep OUT (its protocol, tree layout, costs; the
        links where `across`), all but --compute-ms."""
        proto = r["protocol"]
        if proto == "hardsync":
            args = ["--protocol", "hardsync"]
        elif proto == "async":
            args = ["--protocol", "async"]
        else:
            args = ["--protocol", "softsync", "--n", r["n"]]
        ranks = int(r["learners"]) + 2
        tree = tree_layout(os.path.join(out, r["run"]))
        if tree:
            leaf_of, fan_out, ranks = tree
            args += ["--topology", r["topology"], "--leaf-of", ",".join(map(str, leaf_of)),
                     "--broadcast-fan-out", str(fan_out), "--node-latency-us", str(latency_us(ranks)),
                     "--node-bandwidth-gbs", a.bandwidth_gbs]
        elif across and float(a.link_gbs) > 0:
            nodes = [(rank + 2) // ppn for rank in range(int(r["learners"]))]
            args += ["--learner-nodes", ",".join(str(nodes.count(n)) for n in range(max(nodes) + 1))]
        if r.get("mode") == "overlap":
            args += ["--mode", "overlap"]
        elif not tree:
            args += ["--request-lag-ms", str(request_lag_ms(ranks)),
                     "--request-lag-gradients", str(request_lag_gradients(ranks))]
        return ["--learners", r["learners"], "--message-us", str(message_us(ranks)),
                "--latency-us", str(latency_us(ranks))] + args + costs + (links if across else [])

    def fit_compute(key):
        """The --compute-ms whose simulation without links runs as many updates/s as the host's runs."""
        runs = host_configs[key]
        target, _, _, _, updates = measured(a.host, runs, host_last)
        argv = row_args(a.host, runs[0], False)
        lo, hi = 0.1, 500.0
        for _ in range(16):  # bisection on a log scale: the rate falls as a mini-batch takes longer
            mid = (lo * hi) ** 0.5
            rate = simulate_like(argv + ["--compute-ms", str(mid)], updates, 1000)["updates_per_s"]
            lo, hi = (mid, hi) if rate > target else (lo, mid)
        return (lo * hi) ** 0.5, target

    fitted = " | compute ms fitted | updates/s of the --host runs" if a.host else ""
    print("| protocol | topology | lambda | runs | updates/s measured | simulated | ratio | mean staleness measured "
          f"(range) | simulated | difference | overlap measured | simulated{fitted} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if a.host else ""))
    worst_rate = worst_stale = worst_overlap = 0.0
    skipped = []
    for key in sorted(configs, key=lambda k: (k[0], k[2], k[3])):
        runs = configs[key]
        r = runs[0]
        proto = r["protocol"]
        if proto in ("allreduce", "easgd") or proto.startswith("gossip"):
            skipped.extend(f"{x['run']} ({proto}: the simulator models the parameter-server protocols only)" for x in runs)
            continue
        if a.host and key not in host_configs:
            skipped.extend(f"{x['run']} (no run of its configuration in {a.host})" for x in runs)
            continue
        rate, stale, stales, overlap, updates = measured(a.out, runs, last)
        compute_ms, host_rate = fit_compute(key) if a.host else (float(a.compute_ms), None)
        s = simulate_like(row_args(a.out, r, True) + ["--compute-ms", str(compute_ms)], updates, int(a.updates))
        ratio = s["updates_per_s"] / rate
        diff = (s["staleness_mean"] - stale) / stale if stale > 0 else 0.0
        worst_rate = max(worst_rate, abs(ratio - 1))
        worst_stale = max(worst_stale, abs(diff))
        if overlap == overlap:
            worst_overlap = max(worst_overlap, abs(s["overlap_ratio"] - overlap))
        spread = f" ({min(stales):.2f}-{max(stales):.2f})" if len(stales) > 1 else ""
        extra = f" {compute_ms:.2f} | {host_rate:.1f} |" if a.host else ""
        print(f"| {proto} | {r['topology']} | {r['learners']} | {len(runs)} | {rate:.1f} | {s['updates_per_s']:.1f} | "
              f"{ratio:.2f} | {stale:.2f}{spread} | {s['staleness_mean']:.2f} | {100 * diff:+.0f}% | "
              f"{overlap:.2f} | {s['overlap_ratio']:.2f} |{extra}")
    print(f"\nlargest error: updates/s {100 * worst_rate:.0f}%, mean staleness {100 * worst_stale:.0f}%, "
          f"overlap ratio {worst_overlap:.2f}")
    for line in skipped:
        print(f"not simulated: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
