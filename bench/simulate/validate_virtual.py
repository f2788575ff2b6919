#!/usr/bin/env python3
"""The virtual cluster against real runs: for each run of a sweep (each folder with a schedule.txt,
which holds the run's settings), virtual_cluster.py trains the same settings and seed on the
described cluster into OUT (a run already there is kept); then, per protocol and learner count,
the real runs' and the virtual runs' mean staleness, P(sigma > 2n) (async: n = lambda) and test
accuracy at each epoch, as a Markdown table: the mean of the seeds and their range, and whether
the virtual runs' mean lies inside the real runs' range, the two ranges overlap, or they lie apart
(with the difference of the means).

  python3 bench/simulate/validate_virtual.py runs/vval runs/vval-virtual \\
      --compute-ms 6.5 --model-bytes 334032 --cores 2 ... [simulate.py's cluster options]

An option's value may be RANKS=VALUE pairs (--request-lag-gradients 6=0.33,32=8.95, as
timeline_lags.py prints them): each run takes the pair of its rank count (learners + 2), or the
nearest.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import virtual_cluster  # noqa: E402


def figures(run, n):
    """(mean staleness, P(sigma > 2n), [test accuracy by epoch]) of a run's folder, or None."""
    try:
        with open(os.path.join(run, "staleness.json")) as f:
            st = json.load(f)
        with open(os.path.join(run, "metrics.jsonl")) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return None
    hist = st["histogram"]
    total = sum(hist)
    tail = sum(c for s, c in enumerate(hist) if s > 2 * n) / total if total else 0.0
    acc = {e["epoch"]: e["test_accuracy"] for e in lines if e.get("event") == "epoch"}
    return st["mean"], tail, [acc[k] for k in sorted(acc)]


def settings_of(run):
    with open(os.path.join(run, "schedule.txt")) as f:
        return json.loads(f.readline())["settings"]


def virtual_args(s, out):
    args = [out, "--learners", str(s["learners"]), "--protocol", s["protocol"], "--n", str(s["n"]),
            "--mode", s["mode"], "--batch", str(s["batch"]), "--epochs", str(s["epochs"]),
            "--seed", str(s["seed"]), "--solver", s["solver"], "--data", s["data"] or virtual_cluster.DEFAULT_DATA,
            "--train-limit", str(s["train_limit"]), "--test-limit", str(s["test_limit"]),
            "--base-lr", str(s["base_lr"])]
    if s["lr_modulation"]:
        args += ["--lr-modulation", s["lr_modulation"]]
    if s["momentum_compensation"]:
        args.append("--momentum-compensation")
    return args


def for_ranks(cluster, ranks):
    """The cluster options with each RANKS=VALUE list resolved for `ranks`."""
    out = []
    for arg in cluster:
        if "=" in arg and not arg.startswith("-"):
            pairs = [tuple(float(x) for x in pair.split("=")) for pair in arg.split(",")]
            arg = repr(min(pairs, key=lambda p: abs(p[0] - ranks))[1])
        out.append(arg)
    return out


def spread(values):
    m = sum(values) / len(values)
    return m, min(values), max(values)


def cell(values, digits):
    m, lo, hi = spread(values)
    return f"{m:.{digits}f} ({lo:.{digits}f}-{hi:.{digits}f})"


def main(argv):
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    real_dir, out_dir, cluster = argv[0], argv[1], argv[2:]
    groups = {}
    for name in sorted(os.listdir(real_dir)):
        run = os.path.join(real_dir, name)
        if not os.path.exists(os.path.join(run, "schedule.txt")) or not os.path.exists(os.path.join(run, "final.rudra")):
            continue
        s = settings_of(run)
        lam = s["learners"]
        n = lam if s["protocol"] == "async" else s["n"]
        virtual = os.path.join(out_dir, name)
        if figures(virtual, n) is None:
            if virtual_cluster.main(virtual_args(s, virtual) + for_ranks(cluster, lam + 2)) != 0:
                sys.exit(f"{virtual}: the virtual cluster failed")
        name_of = f"{s['n']}-softsync" if s["protocol"] == "softsync" else s["protocol"]
        g = groups.setdefault((name_of, lam, s["mode"]), {"real": [], "virtual": []})
        g["real"].append(figures(run, n))
        g["virtual"].append(figures(virtual, n))
    epochs = max(len(f[2]) for g in groups.values() for f in g["real"])
    head = ["protocol", "lambda", "mode", "seeds", "staleness real", "virtual", "P(sigma>2n) real", "virtual"]
    for e in range(1, epochs + 1):
        head += [f"test accuracy epoch {e} real", "virtual", "agreement"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (proto, lam, mode), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        row = [proto, str(lam), mode, str(len(g["real"])),
               cell([f[0] for f in g["real"]], 3), cell([f[0] for f in g["virtual"]], 3),
               cell([f[1] for f in g["real"]], 4), cell([f[1] for f in g["virtual"]], 4)]
        for e in range(epochs):
            real = [f[2][e] for f in g["real"] if len(f[2]) > e]
            virt = [f[2][e] for f in g["virtual"] if len(f[2]) > e]
            m, lo, hi = spread(real)
            vm, vlo, vhi = spread(virt)
            agree = "mean inside" if lo <= vm <= hi else ("ranges overlap" if vlo <= hi and lo <= vhi else "apart")
            row += [cell(real, 4), cell(virt, 4), f"{agree} ({vm - m:+.4f})"]
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
