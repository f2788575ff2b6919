#!/usr/bin/env python3
"""The paper's Figure 7 predicted by the simulator: speed-up against the number of learners for
hardsync, 1-softsync and lambda-softsync, at mini-batch 4 and 128, on a described cluster, for
lambda up to 1,024; with the adv and adv* trees beside Rudra-base.

Speed-up = the baseline's time per epoch (one learner, mini-batch 128, hardsync) over the
configuration's: (gradients/s * mu) / (baseline gradients/s * 128). The costs describe the
cluster: a learner's compute time per mini-batch at each mu (from `rudra time` on one of its
nodes), the model's bytes, the links (latency, bandwidth), the PS's costs per gradient and per
update (bench/src/ps_update_bench). Every learner and the PS have a node of their own.

  figure7.py --compute-ms 4=1.9,128=38 --model-bytes 334032 --latency-us 2 --bandwidth-gbs 12.5 \\
      --grad-ms 0.01 --update-ms 0.03 [--lambdas 1,2,4,...] [--topologies base,adv,adv*] \\
      [--png figure7.png] [--csv figure7.csv]
Prints a Markdown table of speed-ups and, per curve, where it peaks.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simulate import simulate  # noqa: E402

PROTOCOLS = ("hardsync", "1-softsync", "λ-softsync")


def protocol_args(name, lam):
    if name == "hardsync":
        return ["--protocol", "hardsync"]
    return ["--protocol", "softsync", "--n", "1" if name == "1-softsync" else str(lam)]


def updates_for(name, lam, gradients):
    """Updates to simulate so that about `gradients` gradients (at least 20 per learner) go in."""
    per_update = 1 if name == "λ-softsync" else lam
    return max(50, max(gradients, 20 * lam) // per_update)


def run_one(a, mu, lam, name, topology):
    args = ["--learners", str(lam), "--compute-ms", str(a.compute[mu]), "--compute-cv", str(a.compute_cv),
            "--model-bytes", str(a.model_bytes), "--latency-us", str(a.latency_us),
            "--bandwidth-gbs", str(a.bandwidth_gbs), "--grad-ms", str(a.grad_ms), "--update-ms", str(a.update_ms),
            "--updates", str(updates_for(name, lam, a.gradients)), "--topology", topology,
            "--learners-per-node", str(a.learners_per_node)]
    return simulate(args + protocol_args(name, lam))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--compute-ms", required=True, help="MU=MS pairs: a mini-batch's forward and backward per mu")
    p.add_argument("--compute-cv", type=float, default=0.05)
    p.add_argument("--model-bytes", type=float, required=True)
    p.add_argument("--latency-us", type=float, default=2.0)
    p.add_argument("--bandwidth-gbs", type=float, default=12.5)
    p.add_argument("--grad-ms", type=float, default=0.0)
    p.add_argument("--update-ms", type=float, default=0.0)
    p.add_argument("--learners-per-node", type=int, default=8, help="adv, adv*: learners below each leaf PS")
    p.add_argument("--lambdas", default="1,2,4,8,16,30,64,128,256,512,1024")
    p.add_argument("--topologies", default="base,adv,adv*")
    p.add_argument("--gradients", type=int, default=4000, help="gradients simulated per point (at least 20 per learner)")
    p.add_argument("--png", help="draw the curves here (matplotlib)")
    p.add_argument("--csv", help="write every point here")
    a = p.parse_args()
    try:
        a.compute = {int(k): float(v) for k, v in (x.split("=") for x in a.compute_ms.split(","))}
        lambdas = [int(x) for x in a.lambdas.split(",")]
    except ValueError:
        p.error("--compute-ms takes MU=MS pairs (4=1.9,128=38) and --lambdas numbers")
    topologies = a.topologies.split(",")
    if 128 not in a.compute:
        p.error("--compute-ms needs mu 128: the baseline is one learner of mini-batch 128")
    base = run_one(a, 128, 1, "hardsync", "base")
    base_rate = base["gradients_per_s"] * 128
    points = []
    for mu in sorted(a.compute):
        for topology in topologies:
            for name in PROTOCOLS:
                for lam in lambdas:
                    if topology != "base" and lam < 2:
                        continue
                    r = run_one(a, mu, lam, name, topology)
                    points.append({"mu": mu, "topology": topology, "protocol": name, "learners": lam,
                                   "speedup": r["gradients_per_s"] * mu / base_rate,
                                   "updates_per_s": r["updates_per_s"], "staleness_mean": r["staleness_mean"],
                                   "ps_in_gbs": r["ps_in_gbs"], "ps_out_gbs": r["ps_out_gbs"],
                                   "ps_mb_per_update": r["ps_mb_per_update"], "overlap_ratio": r["overlap_ratio"]})
                    print(f"figure7: mu {mu} {topology} {name} lambda {lam}: speed-up {points[-1]['speedup']:.2f}",
                          file=sys.stderr, flush=True)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(points[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(points)
    print(f"baseline: one learner, mu 128, hardsync: {base_rate:.0f} images/s\n")
    print("| mu | topology | protocol | " + " | ".join(f"λ={x}" for x in lambdas) + " | peak |")
    print("|---|---|---|" + "---|" * (len(lambdas) + 1))
    for mu in sorted(a.compute):
        for topology in topologies:
            for name in PROTOCOLS:
                row = {pt["learners"]: pt["speedup"] for pt in points
                       if pt["mu"] == mu and pt["topology"] == topology and pt["protocol"] == name}
                if not row:
                    continue
                peak = max(row, key=row.get)
                cells = " | ".join(f"{row[x]:.1f}" if x in row else "" for x in lambdas)
                print(f"| {mu} | {topology} | {name} | {cells} | {row[peak]:.1f} at λ={peak} |")
    if a.png:
        draw(points, lambdas, a.png)
    return 0


def draw(points, lambdas, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    mus = sorted({pt["mu"] for pt in points})
    fig, axes = plt.subplots(1, len(mus), figsize=(5.6 * len(mus), 4.4), squeeze=False)
    colors = {"hardsync": "tab:blue", "1-softsync": "tab:green", "λ-softsync": "tab:red"}
    styles = {"base": "-", "adv": "--", "adv*": ":"}
    for ax, mu in zip(axes[0], mus):
        for topology in styles:
            for name in colors:
                pts = sorted((pt["learners"], pt["speedup"]) for pt in points
                             if pt["mu"] == mu and pt["topology"] == topology and pt["protocol"] == name)
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], styles[topology], color=colors[name],
                            marker="o", markersize=3, label=f"{topology} {name}")
        ax.plot(lambdas, lambdas, color="0.7", linewidth=0.8, label="λ (ideal, mu 128)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_title(f"μ = {mu}")
        ax.set_xlabel("learners λ")
        ax.set_ylabel("speed-up over (σ, μ, λ) = (0, 128, 1)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6)
    fig.suptitle("Figure 7 predicted: speed-up against learners")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
