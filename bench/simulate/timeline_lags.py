#!/usr/bin/env python3
"""How long a learner's request reaches the PS after its gradient, from `rudra dist --timeline`
files of Rudra-base runs: the input `simulate.py --request-lag-ms` takes.

A learner hands its gradient to its push thread and at once asks for new weights from its pull
thread. On a node with more ranks than cores the request often waits behind the gradient (MPI
keeps a rank's messages to another in order) and leaves only when the learner next gets a core;
meanwhile the PS takes other learners' gradients, which the next gradient of this learner does not
count in its staleness. The PS's spans name the learner of each gradient and reply (args.peer),
so the lag is read from the PS's own sequence: for learner L's k-th gradient, the time and the
number of gradients from the PS taking it to the PS answering L's (k+1)-th request (negative when
the request overtook the gradient).

  python3 bench/simulate/timeline_lags.py run4/timeline.json run30/timeline.json

prints one line per file and the RANKS=MS pairs for validate.py --request-lag-ms.
"""
import argparse
import json
import sys


def lags(path):
    """(ranks, [(ms, gradients)]) of one timeline."""
    try:
        events = json.load(open(path))["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"{path}: not a rudra timeline ({e})")
    ranks = len({e["pid"] for e in events if "pid" in e})
    ps = sorted((e for e in events if e.get("ph") == "X" and e.get("pid") == 0 and "peer" in e.get("args", {})),
                key=lambda e: (e["ts"], e["dur"]))
    if not ps:
        raise SystemExit(f"{path}: the PS's spans name no learner (a run of an older rudra, or not Rudra-base)")
    taken, replies, count = {}, {}, 0
    for e in ps:
        peer = e["args"]["peer"]
        if e["name"].startswith("gradient"):
            count += 1
            taken.setdefault(peer, []).append((e["ts"] + e["dur"], count))
        elif e["name"].startswith("reply"):
            replies.setdefault(peer, []).append((e["ts"], count))
    out = []
    for peer, grads in taken.items():
        answered = replies.get(peer, [])
        # Reply 0 answers the first request; reply k + 1 the request sent after gradient k.
        for k, (t, g) in enumerate(grads):
            if k + 1 < len(answered):
                rt, rg = answered[k + 1]
                out.append(((rt - t) / 1000.0, rg - g))
    return ranks, out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("timelines", nargs="+", help="timeline.json files of `rudra dist --timeline` (base topology)")
    a = p.parse_args()
    pairs = []
    for path in a.timelines:
        ranks, xs = lags(path)
        if not xs:
            raise SystemExit(f"{path}: no learner sent a second gradient")
        ms = sorted(x for x, _ in xs)
        mean_ms = sum(ms) / len(ms)
        mean_g = sum(g for _, g in xs) / len(xs)
        overtaken = sum(1 for _, g in xs if g < 0) / len(xs)
        print(f"{path}: {ranks} ranks, {len(xs)} requests: lag {mean_ms:.1f} ms on average (median "
              f"{ms[len(ms) // 2]:.1f}, 90th percentile {ms[int(0.9 * (len(ms) - 1))]:.1f}), "
              f"{mean_g:.2f} gradients; {100 * overtaken:.0f}% overtook their gradient")
        pairs.append((ranks, max(0.0, mean_ms), max(0.0, mean_g)))
    print("--request-lag-ms " + ",".join(f"{r}={ms:.1f}" for r, ms, _ in pairs))
    print("--request-lag-gradients " + ",".join(f"{r}={g:.2f}" for r, _, g in pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
