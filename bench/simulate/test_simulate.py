#!/usr/bin/env python3
"""The simulator against cases whose answers are known without it: constant compute times and
free communication (hardsync's rate is one update per compute time; async's staleness is
lambda - 1; cores shared halve the rate), then the costs it adds (a slow link, the PS's update
cost) moving the figures the way they must. Run by ctest (simulate_test)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simulate import simulate  # noqa: E402

FREE = ["--compute-ms", "10", "--compute-cv", "0", "--model-bytes", "1", "--latency-us", "0",
        "--bandwidth-gbs", "1000", "--updates", "400"]


def run(*args):
    return simulate(list(args) + FREE)


class Known(unittest.TestCase):
    def test_hardsync_one_update_per_compute(self):
        r = run("--learners", "4", "--protocol", "hardsync")
        self.assertAlmostEqual(r["updates_per_s"], 100.0, delta=1.0)
        self.assertEqual(r["staleness_max"], 0)
        self.assertGreater(r["overlap_ratio"], 0.99)

    def test_async_staleness_is_lambda_minus_one(self):
        for lam in (4, 8):
            r = run("--learners", str(lam), "--protocol", "async")
            # The first lambda - 1 gradients find fewer updates before them.
            self.assertAlmostEqual(r["staleness_mean"], lam - 1, delta=lam * lam / 2 / 400 + 0.01)
            self.assertAlmostEqual(r["gradients_per_s"], lam * 100.0, delta=lam * 1.0)

    def test_lambda_softsync_is_async(self):
        a = run("--learners", "6", "--protocol", "async")
        s = run("--learners", "6", "--protocol", "softsync", "--n", "6")
        self.assertEqual(a["histogram"], s["histogram"])

    def test_one_softsync_staleness_below_one(self):
        r = run("--learners", "4", "--protocol", "softsync", "--n", "1")
        self.assertTrue(0.5 < r["staleness_mean"] < 1.0, r["staleness_mean"])
        self.assertAlmostEqual(r["updates_per_s"], 100.0, delta=1.0)

    def test_shared_cores_halve_the_rate(self):
        r = run("--learners", "4", "--protocol", "hardsync", "--cores", "2")
        self.assertAlmostEqual(r["updates_per_s"], 50.0, delta=0.5)

    def test_overlap_hides_the_pull(self):
        # 2 ms per model on the wire against 10 ms of compute: the PS's links are not the limit.
        slow = ["--learners", "2", "--protocol", "softsync", "--n", "1", "--compute-ms", "10", "--compute-cv", "0",
                "--model-bytes", "4e6", "--bandwidth-gbs", "2", "--latency-us", "0", "--updates", "300"]
        base = simulate(slow)
        over = simulate(slow + ["--mode", "overlap"])
        self.assertGreater(over["overlap_ratio"], base["overlap_ratio"] + 0.1)
        self.assertGreater(over["staleness_mean"], base["staleness_mean"])


class Costs(unittest.TestCase):
    def test_the_ps_link_saturates(self):
        # 30 learners pushing 10 MB every 10 ms need 30 GB/s into the PS; its link has 10.
        r = simulate(["--learners", "30", "--protocol", "async", "--compute-ms", "10", "--compute-cv", "0",
                      "--model-bytes", "1e7", "--bandwidth-gbs", "10", "--latency-us", "0", "--updates", "500"])
        self.assertLessEqual(r["ps_in_gbs"], 10.0 * 1.01)
        self.assertGreater(r["ps_in_gbs"], 9.0)
        self.assertLess(r["gradients_per_s"], 1010)

    def test_update_cost_bounds_async(self):
        r = simulate(["--learners", "16", "--protocol", "async", "--update-ms", "2"] + FREE)
        self.assertLessEqual(r["updates_per_s"], 500.0 * 1.01)

    def test_bad_options(self):
        with self.assertRaises(SystemExit):
            simulate(["--learners", "4", "--n", "5", "--compute-ms", "1", "--model-bytes", "1"])


if __name__ == "__main__":
    unittest.main()
