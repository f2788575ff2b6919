#!/usr/bin/env python3
"""Ranks and ranks per node for a --topology adv (or adv*) run with exactly LAMBDA learners:
nodes of K consecutive ranks (--ranks-per-node K, which must divide the ranks), ranks 0 and 1 on
the first, every node's first other rank its leaf PS and the rest learners. Prints "RANKS K" for
the given K, or, with no K, for the K in 4..12 closest to PREFER (default 8) that has a layout.
Usage: adv_ranks.py LAMBDA [K] [PREFER]"""
import sys


def learners(n, k):
    total = 0
    for first in range(0, n, k):
        m = len([r for r in range(first, min(first + k, n)) if r >= 2])
        if m == 1:
            return None
        total += max(0, m - 1)
    return total


want = int(sys.argv[1])
given = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "auto" else 0
prefer = int(sys.argv[3]) if len(sys.argv) > 3 else 8
for k in ([given] if given else sorted(range(4, 13), key=lambda k: (abs(k - prefer), k))):
    for n in range(k, 4 * want + 2 * k, k):
        if learners(n, k) == want:
            print(n, k)
            sys.exit(0)
sys.exit(f"adv_ranks: no layout of nodes of {given or '4 to 12'} ranks has {want} learners")
