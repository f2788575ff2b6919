"""The paper's figures from a sweep's runs.csv and staleness.csv (sweep.py collect), as PNG files.

  error_vs_time.png      test error against training time, one line per run, one panel per
                         learner count (Figures 5 and 6)
  accuracy_vs_epoch.png  test accuracy against epochs, one line per run, one panel per learner
                         count (Figure 4: with and without learning-rate modulation)
  error_vs_mulambda.png  the last epoch's test error against mu*lambda, one series per protocol,
                         the mean over seeds with their spread (Table II)
  staleness.png          the staleness histogram of each run, one panel per run, counts on a log
                         scale (Figure 3)
A figure whose data the sweep lacks (no staleness.json in any run, a single mu*lambda) is left out
and said so.
"""
import csv
import math
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

# Settings that tell runs apart in a legend, in this order; only those that vary are shown.
LABEL_KEYS = [("protocol", ""), ("learners", "λ="), ("batch", "μ="), ("mode", ""), ("topology", ""),
              ("lr_modulation", "lr "), ("base_lr", "α0="), ("seed", "seed ")]


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def labels(runs):
    """run -> legend text from the settings that differ between runs (base mode and topology go
    without saying); a run that others warm-start from says so."""
    varied = [(k, p) for k, p in LABEL_KEYS if len({r.get(k, "") for r in runs.values()}) > 1]
    if not varied:
        varied = LABEL_KEYS[:1]
    sources = {r.get("warm_start_from", "") for r in runs.values()}
    out = {}
    for name, r in runs.items():
        text = " ".join(f"{p}{r.get(k, '')}" for k, p in varied
                        if r.get(k, "") != "" and not (k in ("mode", "topology") and r.get(k) == "base"))
        out[name] = (text or name) + (" (warm start)" if name in sources else "")
    return out


def panel_key(run, runs):
    """Runs of one warm start share a panel (the source and what goes on from it, as in the
    paper's Figure 8); the others are grouped by learner count."""
    r = runs[run]
    while r.get("warm_start_from") in runs:
        run, r = r["warm_start_from"], runs[r["warm_start_from"]]
    if any(x.get("warm_start_from") == run for x in runs.values()):
        return (0, run)
    return (1, number(r.get("learners", "")))


def grid_of(count):
    cols = min(count, 3)
    return (count + cols - 1) // cols, cols


def panels_by_learners(rows, x, y, ylabel, xlabel, title, path):
    runs = {}
    series = defaultdict(list)
    for r in rows:
        runs.setdefault(r["run"], r)
        if r.get(y, "") != "":
            series[r["run"]].append((number(r[x]), number(r[y])))
    if not series:
        return f"{os.path.basename(path)}: no {y} in the runs"
    text = labels(runs)
    groups = defaultdict(list)
    for name in series:
        groups[panel_key(name, runs)].append(name)
    keys = sorted(groups, key=lambda k: (k[0], str(k[1]) if k[0] == 0 else k[1]))
    nr, nc = grid_of(len(keys))
    fig, axes = plt.subplots(nr, nc, figsize=(5.2 * nc, 3.8 * nr), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        if x == "epoch":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        for name in sorted(groups[key], key=lambda n: text[n]):
            pts = sorted(series[name])
            source = runs[name].get("warm_start_from", "")
            if source in series:  # the line goes on from where its warm start ended
                pts = [max(series[source])] + pts
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=text[name])
        ax.set_title(f"warm start: {text[key[1]]}" if key[0] == 0 else f"λ = {key[1]:g} learners")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def error_vs_mulambda(rows, path):
    last = {}
    for r in rows:
        if r.get("test_error", "") == "":
            continue
        if r["run"] not in last or number(r["epoch"]) > number(last[r["run"]]["epoch"]):
            last[r["run"]] = r
    by_protocol = defaultdict(lambda: defaultdict(list))
    for r in last.values():
        # Table II's rows: lambda-softsync (n = lambda > 1) is one series whatever lambda is.
        family = r["protocol"]
        if family.endswith("softsync") and r.get("n") == r.get("learners") and number(r.get("n")) > 1:
            family = "λ-softsync"
        by_protocol[family][number(r["mu_lambda"])].append(number(r["test_error"]))
    if len({x for p in by_protocol.values() for x in p}) < 2:
        return f"{os.path.basename(path)}: the runs have one mu*lambda"
    fig, ax = plt.subplots(figsize=(6, 4))
    for protocol in sorted(by_protocol):
        xs = sorted(by_protocol[protocol])
        means = [sum(by_protocol[protocol][x]) / len(by_protocol[protocol][x]) for x in xs]
        lo = [m - min(by_protocol[protocol][x]) for m, x in zip(means, xs)]
        hi = [max(by_protocol[protocol][x]) - m for m, x in zip(means, xs)]
        ax.errorbar(xs, [100 * m for m in means], yerr=[[100 * v for v in lo], [100 * v for v in hi]],
                    marker="o", capsize=3, label=protocol)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("μλ (mini-batch × learners)")
    ax.set_ylabel("test error at the last epoch (%)")
    ax.set_title("Test error against μλ (Table II)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def staleness(rows, runs_rows, path):
    hist = defaultdict(dict)
    for r in rows:
        hist[r["run"]][int(r["sigma"])] = int(r["count"])
    if not hist:
        return f"{os.path.basename(path)}: no run has staleness.json (hardsync-only, or unfinished)"
    runs = {r["run"]: r for r in runs_rows}
    for name in hist:
        runs.setdefault(name, {"run": name})
    text = labels({n: runs[n] for n in hist})
    # In n, then lambda order (1, 2, 4, ... 30), not the labels' alphabetical one.
    names = sorted(hist, key=lambda n: (number(runs[n].get("n")), number(runs[n].get("learners")), text[n]))
    nr, nc = grid_of(len(names))
    fig, axes = plt.subplots(nr, nc, figsize=(4.6 * nc, 3.2 * nr), squeeze=False)
    for ax, name in zip(axes.flat, names):
        h = hist[name]
        total = sum(h.values())
        mean = sum(s * c for s, c in h.items()) / total
        ax.bar(list(h), [c / total for c in h.values()], width=0.9)
        ax.set_yscale("log")
        ax.set_title(f"{text[name]}\nmean σ {mean:.2f}, max {max(h)}, {total} gradients", fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("staleness σ")
        ax.set_ylabel("share of gradients")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle("Staleness distribution (Figure 3)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def draw(out, figures):
    rows = read_csv(os.path.join(out, "runs.csv"))
    if not rows:
        print(f"plot: error: {os.path.join(out, 'runs.csv')} is missing or empty (run `sweep.py collect {out}` first)")
        return 2
    os.makedirs(figures, exist_ok=True)
    made, skipped = [], []
    jobs = [
        ("error_vs_time.png", lambda p: panels_by_learners(
            rows, "elapsed_s", "test_error", "test error", "training time (s)",
            "Test error against training time (Figures 5, 6 and 8)", p)),
        ("accuracy_vs_epoch.png", lambda p: panels_by_learners(
            rows, "epoch", "test_accuracy", "test accuracy", "epoch",
            "Test accuracy against epochs (Figure 4)", p)),
        ("error_vs_mulambda.png", lambda p: error_vs_mulambda(rows, p)),
        ("staleness.png", lambda p: staleness(read_csv(os.path.join(out, "staleness.csv")), rows, p)),
    ]
    for name, job in jobs:
        path = os.path.join(figures, name)
        why = job(path)
        (skipped if why else made).append(why or path)
    for p in made:
        print(f"plot: {p}")
    for why in skipped:
        print(f"plot: left out {why}")
    return 0
