#!/usr/bin/env python3
"""The fewest ranks whose --topology adv layout has exactly LAMBDA learners, with nodes of K
consecutive ranks (--ranks-per-node K): ranks 0 and 1 sit on the first node, every node's
first other rank is its leaf PS and the rest are learners; a node with one such rank is refused.
Usage: adv_ranks.py LAMBDA K"""
import sys

want, k = int(sys.argv[1]), int(sys.argv[2])
for n in range(want + 3, 4 * want + 8):
    learners, ok = 0, True
    for first in range(0, n, k):
        m = len([r for r in range(first, min(first + k, n)) if r >= 2])
        ok = ok and m != 1
        learners += max(0, m - 1)
    if ok and learners == want:
        print(n)
        sys.exit(0)
sys.exit(f"adv_ranks: no layout with nodes of {k} ranks has {want} learners")
