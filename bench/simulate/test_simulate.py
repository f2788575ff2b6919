#!/usr/bin/env python3
"""The simulator against cases whose answers are known without it: constant compute times and
free communication (hardsync's rate is one update per compute time; async's staleness is
lambda - 1; cores shared halve the rate), then the costs it adds (a slow link, the PS's update
cost) moving the figures the way they must; the trees' leaf PSs and broadcast doing what they
are for; backups, K-sync and the staleness bound dropping what they must. Run by ctest (simulate_test)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simulate import simulate  # noqa: E402
import timeline_lags  # noqa: E402

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


class Trees(unittest.TestCase):
    """adv and adv* (trees.py): what the leaf PSs and the broadcast tree must change, and not."""
    COMM = ["--compute-ms", "10", "--compute-cv", "0.1", "--model-bytes", "1e6", "--latency-us", "5",
            "--bandwidth-gbs", "10", "--updates", "300", "--learners", "16", "--learners-per-node", "4"]

    def sim(self, topology, *protocol):
        return simulate(self.COMM + ["--topology", topology] + list(protocol))

    def test_hardsync_stays_exact_and_in_step(self):
        for topology in ("adv", "adv*"):
            r = simulate(["--learners", "8", "--protocol", "hardsync", "--topology", topology] + FREE)
            self.assertEqual(r["staleness_max"], 0, topology)
            self.assertAlmostEqual(r["updates_per_s"], 100.0, delta=2.0)

    def test_leaf_servers_cut_the_root_traffic(self):
        # 1-softsync, 4 learners per leaf: the root takes 4 sums and sends 4 weights per update,
        # where the base PS takes 16 gradients and sends 16 replies.
        base = self.sim("base", "--protocol", "softsync", "--n", "1")
        adv = self.sim("adv", "--protocol", "softsync", "--n", "1")
        self.assertAlmostEqual(base["ps_mb_per_update"] / adv["ps_mb_per_update"], 4.0, delta=0.6)
        self.assertLess(adv["staleness_mean"], 2.0)

    def test_leaf_sizes_as_a_runs_layout(self):
        # Leaves of 1, 7 and 8 learners (node 0 also holds the root and the statistics server):
        # 3 sums in and 3 weights out per update, where 4 leaves of 4 move 8 models.
        uneven = simulate(self.COMM + ["--topology", "adv", "--leaf-sizes", "1,7,8", "--protocol", "softsync"])
        self.assertAlmostEqual(uneven["ps_mb_per_update"], 6.0, delta=0.9)
        with self.assertRaises(SystemExit):  # 15 learners for 16
            simulate(self.COMM + ["--topology", "adv", "--leaf-sizes", "1,7,7"])

    def test_every_gradient_goes_up_alone_when_each_is_an_update(self):
        r = self.sim("adv", "--protocol", "softsync", "--n", "16")
        # In: one gradient per update; out: the newest weights to each of the 4 leaves whose pull
        # waits (a leaf still pulling after the last version gets the next one only).
        self.assertAlmostEqual(r["ps_in_gbs"] * 1e3 / r["updates_per_s"], 1.0, delta=0.02)
        self.assertTrue(2.0 < r["ps_mb_per_update"] - 1.0 <= 4.01, r["ps_mb_per_update"])

    def test_broadcast_tree_overlaps_and_sends_fan_out_copies(self):
        slow = ["--compute-ms", "10", "--compute-cv", "0", "--model-bytes", "4e6", "--bandwidth-gbs", "2",
                "--latency-us", "0", "--updates", "300", "--learners", "8", "--protocol", "softsync", "--n", "1"]
        base = simulate(slow)
        star = simulate(slow + ["--topology", "adv*", "--learners-per-node", "4"])
        self.assertGreater(star["overlap_ratio"], 0.99)
        self.assertLess(base["overlap_ratio"], 0.9)
        # The root sends each version to its 2 broadcast children, and takes 2 sums per update.
        self.assertAlmostEqual(star["ps_mb_per_update"], 4 * 4.0, delta=1.0)

    def test_forwards_on_the_cores_slow_the_learners(self):
        # 8 learners on 2 cores: the computations alone allow 200 gradients/s. Forwarding each
        # version takes core time from them (three learners have children), and the versions
        # reach the leaves of the broadcast later: fewer gradients, staler ones.
        shared = ["--learners", "8", "--protocol", "async", "--topology", "adv*", "--learners-per-node", "4",
                  "--cores", "2"] + FREE
        link_only = simulate(shared)
        on_cores = simulate(shared + ["--forward-core-ms", "2"])
        self.assertAlmostEqual(link_only["gradients_per_s"], 200.0, delta=2.0)
        self.assertLess(on_cores["gradients_per_s"], 0.85 * link_only["gradients_per_s"])
        self.assertGreater(on_cores["staleness_mean"], link_only["staleness_mean"] + 2.0)


class Figure7(unittest.TestCase):
    def test_speedups_of_a_small_sweep(self):
        import subprocess
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run([sys.executable, os.path.join(here, "figure7.py"), "--compute-ms", "4=1,128=20",
                              "--model-bytes", "1e6", "--bandwidth-gbs", "1", "--lambdas", "1,4,16",
                              "--topologies", "base,adv", "--learners-per-node", "4", "--gradients", "300"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = {tuple(c.strip() for c in line.split("|")[1:4]): line for line in out.stdout.splitlines()
                if line.startswith("| 4 ") or line.startswith("| 128 ")}
        self.assertEqual(len(rows), 12)  # 2 mu x 2 topologies x 3 protocols
        # At mu 128 one learner is the baseline itself; at mu 4 the links (1 ms per model against
        # 1 ms of compute) hold base lambda-softsync below 16 / 20 * 4 of 16 learners' speed-up.
        cells = rows[("128", "base", "hardsync")].split("|")
        self.assertAlmostEqual(float(cells[4]), 1.0, delta=0.02)
        lam16 = float(rows[("4", "base", "λ-softsync")].split("|")[6])
        self.assertLess(lam16, 16 * 4 / 20 * 0.9)


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

    def test_crowding_slows_every_computation(self):
        # 4 learners and the PS on 2 cores: 6 ranks, 4 beyond the cores, each costing 10%.
        plain = run("--learners", "4", "--protocol", "hardsync", "--cores", "2")
        crowded = run("--learners", "4", "--protocol", "hardsync", "--cores", "2", "--crowding-cost", "0.1")
        self.assertAlmostEqual(plain["updates_per_s"] / crowded["updates_per_s"], 1.4, delta=0.02)

    def test_the_ps_sends_its_replies_itself(self):
        # Async, a 1 MB model on 1 GB/s links: each link alone carries 1,000 models a second, and
        # the update costs 1 ms. The PS sends each reply itself, so a gradient holds it for its
        # update and its reply, 2 ms: 500 gradients a second, not the 1,000 of either part.
        r = simulate(["--learners", "16", "--protocol", "async", "--compute-ms", "10", "--compute-cv", "0",
                      "--model-bytes", "1e6", "--bandwidth-gbs", "1", "--latency-us", "0", "--update-ms", "1",
                      "--updates", "2000"])
        self.assertAlmostEqual(r["gradients_per_s"], 500, delta=15)


    def test_messages_slower_with_the_computations_on_the_cores(self):
        # 8 learners on 2 cores: a message holds its link 1 ms longer for each computation per
        # core, so learners wait longer between gradients and compute a smaller share of the time.
        # On dedicated cores there is no such load and nothing changes.
        args = ["--learners", "8", "--protocol", "async"]
        plain = run(*args, "--cores", "2")
        loaded = run(*args, "--cores", "2", "--message-load-us", "1000")
        self.assertLess(loaded["overlap_ratio"], plain["overlap_ratio"] - 0.1)
        self.assertLess(loaded["gradients_per_s"], plain["gradients_per_s"])
        self.assertEqual(run(*args)["histogram"], run(*args, "--message-load-us", "1000")["histogram"])
    def test_a_request_behind_its_gradient_lowers_the_staleness(self):
        # Async, 8 learners: with the request at once, each gradient finds the other 7 before it.
        # A request the PS takes a while after the learner's gradient is answered after some of
        # the others' gradients, which the learner's next gradient then does not count.
        plain = run("--learners", "8", "--protocol", "async")
        late = run("--learners", "8", "--protocol", "async", "--request-lag-ms", "5")
        self.assertEqual(plain["request_lag_gradients"], 0.0)
        self.assertAlmostEqual(late["request_lag_ms"], 5.0, delta=0.75)
        self.assertGreater(late["request_lag_gradients"], 1.0)
        self.assertAlmostEqual(late["staleness_mean"], 7 - late["request_lag_gradients"], delta=0.3)

    def test_a_request_held_for_other_gradients(self):
        # Counted in gradients: the PS takes the request after that many of the others'
        # gradients (2 on average), and the next gradient's staleness is lower by them.
        held = run("--learners", "8", "--protocol", "async", "--request-lag-gradients", "2")
        self.assertAlmostEqual(held["request_lag_gradients"], 2.0, delta=0.3)
        self.assertAlmostEqual(held["staleness_mean"], 7 - held["request_lag_gradients"], delta=0.3)
        # A lone learner has no other gradients to wait for: its request goes through.
        alone = run("--learners", "1", "--protocol", "async", "--request-lag-gradients", "3")
        self.assertEqual(alone["updates"], 400)
        self.assertAlmostEqual(alone["updates_per_s"], 100.0, delta=1.0)

    def test_bad_options(self):
        with self.assertRaises(SystemExit):
            simulate(["--learners", "4", "--n", "5", "--compute-ms", "1", "--model-bytes", "1"])


class SlowLearners(unittest.TestCase):
    """Backups, K-sync, K-batch-async, the staleness bound and --straggler, as the PS's rule has them."""

    def same(self, a, b):
        for key in ("updates_per_s", "histogram", "dropped", "overlap_ratio"):
            self.assertEqual(a[key], b[key], key)

    def test_k_batch_async_of_c_is_softsync(self):
        self.same(run("--learners", "8", "--protocol", "kasync", "--k", "2"),
                  run("--learners", "8", "--protocol", "softsync", "--n", "4"))

    def test_ksync_of_all_is_hardsync(self):
        r = run("--learners", "4", "--protocol", "ksync", "--k", "4")
        self.same(r, run("--learners", "4", "--protocol", "hardsync"))
        self.assertEqual(r["protocol"], "4-ksync")

    def test_a_straggler_sets_hardsyncs_pace_and_backups_drop_it(self):
        slow = ("--straggler", "0:3")
        hs = run("--learners", "4", "--protocol", "hardsync", *slow)
        self.assertAlmostEqual(hs["updates_per_s"], 100.0 / 3, delta=0.5)
        b = run("--learners", "4", "--protocol", "hardsync", "--backup", "1", *slow)
        # The three others make every update; the straggler's gradient is late at each of its
        # mini-batches (one per 3 updates), and dropped.
        self.assertEqual(b["protocol"], "1-backup-hardsync")
        self.assertAlmostEqual(b["updates_per_s"], 100.0, delta=1.0)
        self.assertEqual(b["staleness_max"], 0)
        self.assertAlmostEqual(b["dropped"], 400 / 3, delta=2)

    def test_a_straggler_with_probability(self):
        never = run("--learners", "4", "--protocol", "hardsync", "--straggler", "all:3:0.000001")
        always = run("--learners", "4", "--protocol", "hardsync", "--straggler", "all:3:1")
        half = run("--learners", "1", "--protocol", "hardsync", "--straggler", "0:3:0.5")
        self.assertAlmostEqual(never["updates_per_s"], 100.0, delta=1.0)
        self.assertAlmostEqual(always["updates_per_s"], 100.0 / 3, delta=0.5)
        self.assertAlmostEqual(1.0 / half["updates_per_s"], 0.02, delta=0.003)  # 10 ms + half the time 20

    def test_the_bound_drops_what_is_older(self):
        free = run("--learners", "8", "--protocol", "async")
        self.same(free, run("--learners", "8", "--protocol", "async", "--max-staleness", "1000"))
        r = run("--learners", "8", "--protocol", "async", "--max-staleness", "3")
        self.assertLessEqual(r["staleness_max"], 3)
        self.assertGreater(r["dropped"], 0)
        self.assertEqual(free["dropped"], 0)

    def test_bad_slow_learner_options(self):
        base = ["--learners", "4", "--compute-ms", "1", "--model-bytes", "1"]
        for bad in (["--protocol", "softsync", "--backup", "1"], ["--protocol", "hardsync", "--backup", "4"],
                    ["--protocol", "ksync"], ["--protocol", "kasync", "--k", "5"], ["--protocol", "async", "--k", "2"],
                    ["--protocol", "hardsync", "--max-staleness", "2"],
                    ["--protocol", "async", "--max-staleness", "2", "--mode", "overlap"],
                    ["--protocol", "ksync", "--k", "2", "--topology", "adv"],
                    ["--straggler", "4:2"], ["--straggler", "0:0.5"], ["--straggler", "all:2:0"], ["--straggler", "x"]):
            with self.assertRaises(SystemExit, msg=" ".join(bad)):
                simulate(base + bad)


class Links(unittest.TestCase):
    """Nodes joined by shaped links (--link-gbs): what crosses them, and their tbf bucket."""

    ONE = ["--learners", "1", "--protocol", "hardsync", "--compute-ms", "10", "--compute-cv", "0",
           "--model-bytes", "1e5", "--latency-us", "0", "--bandwidth-gbs", "1000", "--updates", "200",
           "--link-gbs", "0.01"]  # a model crosses in 10 ms at the link's rate

    def test_a_crossing_costs_the_bytes_beyond_the_bucket(self):
        # One learner on another node: 10 ms computing, then its gradient crosses one way and the
        # weights the other. With no bucket each crossing takes 10 ms: 30 ms an update. With a
        # bucket of half a model, 5 ms (the 15 ms the link rests refill it). With one larger than
        # the bytes a link carries in a cycle, the crossings are free: 10 ms.
        for burst, rate in ((0, 1000 / 30), (5e4, 1000 / 20), (1e6, 100)):
            r = simulate(self.ONE + ["--link-burst-bytes", str(burst)])
            self.assertAlmostEqual(r["updates_per_s"], rate, delta=rate * 0.01, msg=f"burst {burst}")
            self.assertAlmostEqual(r["link_mb_per_update"], 0.2, delta=0.002)

    def test_learners_beside_the_ps_cross_no_link(self):
        # Hardsync, 4 learners, a model taking 10 ms on the link: all 4 on another node send 4
        # gradients through its link per update, 2 beside the PS and 2 away only 2.
        args = ["--learners", "4", "--protocol", "hardsync", "--link-gbs", "0.01", "--model-bytes", "1e5",
                "--compute-ms", "10", "--compute-cv", "0", "--latency-us", "0", "--bandwidth-gbs", "1000",
                "--updates", "200"]
        away = simulate(args + ["--learner-nodes", "0,4"])
        half = simulate(args + ["--learner-nodes", "2,2"])
        home = simulate(args + ["--learner-nodes", "4,0"])
        self.assertAlmostEqual(away["link_mb_per_update"], 0.8, delta=0.01)
        self.assertAlmostEqual(half["link_mb_per_update"], 0.4, delta=0.01)
        self.assertEqual(home["link_mb_per_update"], 0.0)
        self.assertAlmostEqual(home["updates_per_s"], 100.0, delta=1.0)
        # Away: the 4 replies leave one after another (10 ms each), the last learner's gradient
        # crosses 10 ms after its 10 ms of computing: 60 ms an update. Half: 40 ms.
        self.assertAlmostEqual(away["updates_per_s"], 1000 / 60, delta=0.2)
        self.assertAlmostEqual(half["updates_per_s"], 1000 / 40, delta=0.3)

    def test_a_leaf_ps_sends_one_sum_across(self):
        # 1-softsync, 8 learners on 2 nodes: one PS takes node 2's 4 gradients and sends its
        # replies across; adv's leaf PS on node 2 sends one sum and takes one version instead.
        args = ["--learners", "8", "--protocol", "softsync", "--n", "1", "--link-gbs", "1"] + FREE
        base = simulate(args + ["--learner-nodes", "4,4"])
        adv = simulate(args + ["--topology", "adv", "--leaf-sizes", "4,4"])
        self.assertGreater(base["link_mb_per_update"], 6e-6)
        self.assertLess(adv["link_mb_per_update"], 0.4 * base["link_mb_per_update"])
        self.assertGreater(adv["link_mb_per_update"], 0.0)

    def test_leaves_in_rank_order(self):
        # --leaf-of names each learner's leaf PS in rank order: in turn, it is --leaf-sizes; mixed
        # across 2 nodes, more of adv*'s broadcast crosses the link (the tree follows rank order).
        args = ["--learners", "4", "--protocol", "softsync", "--n", "1", "--topology", "adv*"] + FREE
        self.assertEqual(simulate(args + ["--leaf-sizes", "2,2"])["histogram"],
                         simulate(args + ["--leaf-of", "0,0,1,1"])["histogram"])
        linked = args + ["--link-gbs", "1"]
        together = simulate(linked + ["--leaf-of", "0,0,1,1"])  # the root's 2 children beside it
        mixed = simulate(linked + ["--leaf-of", "1,1,0,0"])     # both across
        self.assertGreater(mixed["link_mb_per_update"], together["link_mb_per_update"])
        for bad in (["--leaf-of", "0,2,2,0"], ["--leaf-of", "0,1,1"], ["--leaf-of", "0,1,x,1"],
                    ["--leaf-of", "0,0,1,1", "--leaf-sizes", "2,2"]):
            with self.assertRaises(SystemExit, msg=bad):
                simulate(args + bad)

    def test_bad_link_options(self):
        for bad in (["--learner-nodes", "1,3"],  # no links
                    ["--link-gbs", "1", "--learner-nodes", "1,2"],  # 3 of 4 learners
                    ["--link-gbs", "1", "--learner-nodes", "a,b"],
                    ["--link-gbs", "-1"],
                    ["--link-gbs", "1", "--learner-nodes", "2,2", "--topology", "adv"]):
            with self.assertRaises(SystemExit, msg=bad):
                simulate(["--learners", "4", "--compute-ms", "1", "--model-bytes", "1"] + bad)


class TimelineLags(unittest.TestCase):
    def timeline(self, spans):
        import json
        import tempfile
        events = [{"name": "process_name", "ph": "M", "pid": p} for p in (0, 1, 2, 3)]
        for name, peer, ts, dur in spans:
            events.append({"name": name, "ph": "X", "pid": 0, "tid": 0, "ts": ts, "dur": dur, "args": {"peer": peer}})
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"traceEvents": events}, f)
        f.close()
        self.addCleanup(os.remove, f.name)
        return f.name

    def test_lags_from_the_ps_sequence(self):
        # Learner 2's request after its gradient is answered 3 ms and one gradient (learner 3's)
        # later; learner 3's overtook its gradient (answered before it: -1 ms, -1 gradient).
        path = self.timeline([
            ("reply with weights", 2, 0, 100), ("reply with weights", 3, 200, 100),
            ("gradient (and update)", 2, 1000, 1000),
            ("reply with weights", 3, 2500, 100),
            ("gradient (and update)", 3, 3000, 500),
            ("reply with weights", 2, 5000, 100)])
        ranks, xs = timeline_lags.lags(path)
        self.assertEqual(ranks, 4)
        self.assertEqual(sorted(xs), [(-1.0, -1), (3.0, 1)])

    def test_a_timeline_without_peers_is_refused(self):
        path = self.timeline([])
        with self.assertRaises(SystemExit) as e:
            timeline_lags.lags(path)
        self.assertIn("name no learner", str(e.exception))


class Validate(unittest.TestCase):
    """validate.py: repeats of one configuration (other seeds) make one row, their mean."""

    def test_repeats_are_one_row_of_their_means(self):
        import csv
        import json
        import subprocess
        import tempfile
        out = tempfile.mkdtemp()
        fields = ["run", "protocol", "n", "learners", "mode", "topology", "seed", "epoch", "elapsed_s", "updates",
                  "staleness_mean", "overlap_ratio"]
        runs = [("a1", "async", 1, 3.0, 100, 2.0), ("a2", "async", 2, 5.0, 300, 1.0), ("s1", "1-softsync", 1, 0.5, 50, 1.0)]
        with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for name, proto, seed, stale, updates, seconds in runs:
                w.writerow({"run": name, "protocol": proto, "n": 1, "learners": 4, "mode": "base", "topology": "base",
                            "seed": seed, "epoch": 1, "elapsed_s": seconds, "updates": updates,
                            "staleness_mean": stale, "overlap_ratio": 0.5})
                os.makedirs(os.path.join(out, name))
                with open(os.path.join(out, name, "staleness.json"), "w") as j:
                    json.dump({"mean": stale}, j)
        here = os.path.dirname(os.path.abspath(__file__))
        table = subprocess.run([sys.executable, os.path.join(here, "validate.py"), out] + FREE[:-2] + ["--updates", "50"],
                               capture_output=True, text=True, check=True).stdout
        rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| async") or
                line.startswith("| 1-softsync")]
        self.assertEqual(len(rows), 2, table)
        a = [c.strip() for c in next(r for r in rows if r[0].strip() == "async")]
        self.assertEqual(a[3], "2")  # runs
        self.assertAlmostEqual(float(a[4]), (50.0 + 300.0) / 2, delta=0.05)  # updates/s: 100 / 2 s and 300 / 1 s
        self.assertEqual(a[7], "4.00 (3.00-5.00)")  # mean staleness (range)

    def sweep_folder(self, runs):
        """A collected sweep of 4-learner base runs: (name, protocol, updates, seconds) each."""
        import csv
        import tempfile
        out = tempfile.mkdtemp()
        self.addCleanup(__import__("shutil").rmtree, out)
        fields = ["run", "protocol", "n", "learners", "mode", "topology", "seed", "epoch", "elapsed_s", "updates",
                  "staleness_mean", "overlap_ratio"]
        with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for name, proto, updates, seconds in runs:
                w.writerow({"run": name, "protocol": proto, "n": 1, "learners": 4, "mode": "base", "topology": "base",
                            "seed": 1, "epoch": 1, "elapsed_s": seconds, "updates": updates,
                            "staleness_mean": 0.5, "overlap_ratio": 0.5})
        return out

    def test_compute_fitted_on_one_host_then_the_links(self):
        # Hardsync at 20 updates/s on one host. Across nodes with a link that carries a model in
        # no time, the fitted simulation runs as fast as the host's; with a 1 MB/s link (0.1 s a
        # model; at 2 ranks per node all 4 learners are away from the PS, their 4 gradients cross
        # into its node one after another) it runs under 2.5 updates/s.
        import subprocess
        host = self.sweep_folder([("h", "hardsync", 200, 10.0)])
        across = self.sweep_folder([("x", "hardsync", 50, 10.0)])
        here = os.path.dirname(os.path.abspath(__file__))
        common = [sys.executable, os.path.join(here, "validate.py"), across, "--host", host, "--model-bytes", "1e5",
                  "--compute-cv", "0", "--ranks-per-node", "2", "--updates", "200"]

        def simulated(*link):
            table = subprocess.run(common + list(link), capture_output=True, text=True, check=True).stdout
            row = next(line for line in table.splitlines() if line.startswith("| hardsync"))
            cells = [c.strip() for c in row.split("|")[1:-1]]
            self.assertAlmostEqual(float(cells[13]), 20.0, delta=0.05)  # the host's rate, shown
            return float(cells[5])

        self.assertAlmostEqual(simulated("--link-gbs", "1000"), 20.0, delta=20.0 * 0.03)
        self.assertLess(simulated("--link-gbs", "0.001"), 2.5)
        no_placement = subprocess.run(common[:-4] + ["--link-gbs", "1"], capture_output=True, text=True)
        self.assertNotEqual(no_placement.returncode, 0)
        self.assertIn("--ranks-per-node", no_placement.stderr)


if __name__ == "__main__":
    unittest.main()
