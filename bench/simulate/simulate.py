#!/usr/bin/env python3
"""A discrete-event model of Rudra-base: one parameter server, lambda learners, the hardsync,
n-softsync and async protocols (and backups, K-sync, K-batch-async, a staleness bound), base and
overlap modes (and, in trees.py, the adv and adv* trees
with --topology). For what one machine cannot run:
predicts updates per second, the staleness histogram, the learners' overlap ratio (compute over
compute plus waiting) and the PS's traffic, from a few costs that `rudra` measures.

The model, as `rudra dist` does it (dist/ps/learner.cpp, dist/ps/parameter_server.cpp):
- A learner pulls: it sends the PS a request with the timestamp it holds; the PS answers with
  the weights only when it has newer ones (else an empty reply); under hardsync it answers once
  the update the learner waits for exists. Base mode waits for the reply, then computes; overlap
  mode computes on the newest weights it holds while the next pull is on its way.
- After computing, a learner pushes its gradient with the timestamp it was computed from. One
  push is in flight at a time: a learner whose previous push has not left waits for it.
- The PS takes one message at a time, and sends its replies itself (it takes the next message
  once they have left its link): a gradient costs `grad_s` (adding it), an update
  `update_s` (the solver's step) once floor(lambda/n) gradients are in (hardsync: all lambda of
  the current timestamp; async: every gradient). Staleness: the PS's timestamp when it applies a
  gradient minus the gradient's.
- Slow learners, as `rudra dist` has them: hardsync with --backup B takes the first lambda - B
  gradients of the current timestamp, ksync the first K, and drops the late ones; kasync takes
  any K; --max-staleness S drops a gradient more than S updates old (base mode). --straggler
  LEARNER:FACTOR[:P] (a learner index, or all) makes a learner sleep FACTOR - 1 times its
  mini-batch's compute time after it, with probability P, as the run's option does.
- A message of B bytes takes latency + message_us + B / bandwidth; the PS's link carries one
  message at a time each way (latency overlaps, message_us and the bytes do not), a learner's
  its own. message_us is what a message costs beyond its bytes while it holds the sender's link
  (the PS's, and in the trees a leaf PS's node link and a forwarding learner's): on an
  oversubscribed node, the other rank's wake-up from its wait policy's sleep. With `cores` set,
  message_load_us adds to it for each computation per core as the message leaves: the more
  ranks compute, the later the sleeping receiver gets a core back, and the longer learners wait
  (what brings the model's overlap ratio to the runs' on 2 shared cores).
- request_lag_ms (base mode): on a node with more ranks than cores a learner's request, sent
  as its gradient leaves, often reaches the PS only well after the gradient (a rank's messages to
  another keep their order, and the request goes when the learner next gets a core); meanwhile
  the PS takes other learners' gradients, which lowers the staleness of the learner's next one.
  Set, the PS takes the request that long (exponential, on average) after the gradient, as
  timeline_lags.py measures it from a run's --timeline; 0, the request goes with the gradient.
  request_lag_gradients counts the lag instead in the other learners' gradients the PS takes
  first (geometric, that many on average; the request also goes through whenever the PS has
  nothing else to take). The count is what the staleness depends on, and the runs' PS takes
  gradients faster while requests wait than on average (30 learners on 2 cores: 6.0 gradients
  in 22.3 ms; a lag of 20.8 ms held 3.5 in the model).
- `cores`: when set, the learners and the PS share that many cores (processor sharing), as on
  one oversubscribed node, each computation slowed by crowding_cost for every rank beyond the
  cores (context switches, caches refilled, the waiting ranks' polls); unset, each has its own.
- Nodes joined by links (link_gbs set): the learners sit on nodes (learner_nodes: so many on
  the PS's node, then on each other node; the trees put each leaf PS's learners on a node of
  their own, the root on the first). A message between two nodes first crosses the sender node's
  outgoing link and the receiver node's incoming one, each shared by every rank of its node and
  carrying one message at a time, shaped as tc's tbf shapes the emulated cluster's links
  (tools/vcluster): bytes pass at link_gbs once a bucket of link_burst_bytes, refilled at that
  rate, is spent; link_latency_us more for crossing. Then it costs what a message costs on one
  node. Messages within a node cross no link. A gradient or request from another node holds no
  place at the PS while it crosses; a reply to another node holds the PS until the links have
  carried it (it sends its replies itself, and its send completes as the bytes leave, at the
  links' pace). Both alternatives were tried against runs (bench/results/simulator_links.md):
  replies that leave the PS at once (the learner beside the PS ran twice as fast in the model
  as in the runs), and a PS also held while each gradient crosses (half the runs' rate).

  simulate.py --learners 30 --protocol softsync --n 1 --compute-ms 12 --model-bytes 334000 \\
      --latency-us 5 --bandwidth-gbs 10 --updates 3000 [--json]
"""
import argparse
import heapq
import json
import math
import random
import sys
from collections import Counter, deque


class Link:
    """One direction of a node's link, as tc's tbf shapes it: a message passes at once while the
    bucket holds its bytes, else at `rate` for the bytes beyond them; the bucket refills at `rate`
    up to `burst`. One message at a time."""

    def __init__(self, rate, burst):
        self.rate, self.burst = rate, burst
        self.tokens, self.since, self.free = burst, 0.0, 0.0

    def tokens_at(self, t):
        return min(self.burst, self.tokens + (t - self.since) * self.rate)

    def wait(self, nbytes, t):
        return max(0.0, (nbytes - self.tokens_at(t)) / self.rate)

    def take(self, nbytes, start, end):
        self.tokens = max(0.0, min(self.burst, self.tokens_at(start) + (end - start) * self.rate - nbytes))
        self.since = self.free = end


class Sim:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.now = 0.0
        self.events = []
        self.seq = 0
        lam = a.learners
        self.per_update = {"hardsync": lam - a.backup, "async": 1, "ksync": a.k, "kasync": a.k}.get(
            a.protocol, max(1, lam // a.n))
        # Hardsync and K-sync: an update takes gradients of the current weights only, and a learner
        # that holds them waits for the next; with backups and under K-sync a late gradient is
        # dropped, as is one past a staleness bound.
        self.synchronous = a.protocol in ("hardsync", "ksync")
        self.drops_late = (a.protocol == "hardsync" and a.backup > 0) or a.protocol == "ksync"
        self.dropped = 0
        self.ts = 0
        self.bucket = []  # gradients' timestamps waiting for the next update
        self.stale = Counter()
        self.updates = 0
        self.ps_queue = deque()
        self.ps_busy = False
        self.ps_out_free = 0.0
        self.ps_in_free = 0.0
        self.bytes_in = self.bytes_out = 0
        self.deferred = []  # hardsync pulls waiting for the next timestamp
        self.have = [-1] * lam  # the timestamp each learner holds
        self.computing = [False] * lam
        self.pending_pull = [False] * lam  # overlap: a pull on its way while computing
        self.started = [0.0] * lam  # when each learner's current gradient began
        self.compute_s = [0.0] * lam
        self.push_free = [0.0] * lam  # when each learner's previous push has left it
        self.request_behind = [False] * lam  # a request waiting for the PS to take the gradient before it
        self.taken = [None] * lam  # (time, gradients taken) when the PS took each learner's last gradient
        self.gradients_taken = 0
        self.lags = []  # (seconds, gradients) from a learner's gradient taken to its next request taken
        self.held = {}  # request_lag_gradients: learner -> other learners' gradients the PS takes before its request
        self.grads_on_way = 0  # gradients pushed and not yet taken by the PS
        self.taken_log = None  # a list to record (learner, timestamp, time) of each gradient the PS takes
        # Set, the run ends at the update that brings the gradients applied to this many (as a run's
        # PS ends at the update that reaches its epochs' samples), whatever a.updates says.
        self.stop_after_gradients = None
        self.gradients_applied = 0
        # Processor sharing (cores set): remaining work of each job on the cores.
        self.jobs = {}
        self.jobs_at = 0.0
        self.job_event = None
        # How much slower every computation runs for the ranks beyond the cores (switches between
        # them, caches refilled, the waiting ranks' polls): 1 + cost * (ranks - cores).
        self.crowding = 1.0 + a.crowding_cost * max(0.0, self.ranks() - a.cores)
        # The node of each learner (the PS's is node 0) and each node's links, one per direction.
        self.node_of = [0] * lam
        first = 0
        for node, count in enumerate(a.learner_nodes):
            self.node_of[first:first + count] = [node] * count
            first += count
        self.links = {}
        self.link_bytes = 0

    # -- events ---------------------------------------------------------------------------------
    def at(self, t, fn, *args):
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, fn, args))

    def transfer(self, nbytes, to_ps, learner_free, node=0):
        """(arrival, when it left the sender) of a message leaving now between the PS and a learner
        (or leaf PS) of its node, or, from the PS, on `node`: the sender's link, the receiver's
        (to_ps sends one from another node)."""
        a = self.a
        wire = nbytes / (a.bandwidth_gbs * 1e9) + self.message_hold()
        if to_ps:
            start = max(self.now, learner_free, self.ps_in_free)  # the PS's incoming link takes one at a time
            self.ps_in_free = start + wire
            self.bytes_in += nbytes
        else:
            # The PS sends its replies itself: a reply to another node holds it until the nodes'
            # links have carried it.
            start = self.cross(0, node, nbytes, max(self.now, self.ps_out_free))
            self.ps_out_free = start + wire
            self.bytes_out += nbytes
        return start + wire + a.latency_us * 1e-6, start + wire

    def to_ps(self, nbytes, sender_free, node, fn, *args):
        """Sends a message to the PS from `node`, fn(*args) once the PS has it; returns when it left
        the sender. From another node it crosses the links first, then takes the PS's link as
        its node's messages do (it holds no place there while it crosses)."""
        if node != 0 and self.a.link_gbs:
            through = self.cross(node, 0, nbytes, max(self.now, sender_free))
            self.at(through, self.into_ps, nbytes, fn, args)
            return through
        arrive, left = self.transfer(nbytes, True, sender_free)
        self.at(arrive, fn, *args)
        return left

    def into_ps(self, nbytes, fn, args):
        arrive, _ = self.transfer(nbytes, True, 0.0)
        self.at(arrive, fn, *args)

    def cross(self, src, dst, nbytes, ready):
        """When a message ready at `ready` is through the links from node src to node dst (ready
        itself within a node)."""
        a = self.a
        if src == dst or not a.link_gbs:
            return ready
        out, into = self.link(src, "out"), self.link(dst, "in")
        start = max(ready, out.free, into.free)
        through = start + max(out.wait(nbytes, start), into.wait(nbytes, start))
        out.take(nbytes, start, through)
        into.take(nbytes, start, through)
        self.link_bytes += nbytes
        return through + a.link_latency_us * 1e-6

    def link(self, node, direction):
        key = (node, direction)
        if key not in self.links:
            self.links[key] = Link(self.a.link_gbs * 1e9, self.a.link_burst_bytes)
        return self.links[key]

    def message_hold(self):
        """What a message holds its sender's link for beyond its bytes: message_us, and on shared
        cores message_load_us for each computation per core as it leaves (the receiver, asleep
        between its tests, gets a core back later the more ranks want one)."""
        return (self.a.message_us + self.a.message_load_us * self.load()) * 1e-6

    # -- cores ----------------------------------------------------------------------------------
    def run_on_cores(self, key, seconds, done, *args):
        if not self.a.cores:
            self.at(self.now + seconds, done, *args)
            return
        self.advance_jobs()
        self.jobs[key] = [seconds, done, args]
        self.schedule_jobs()

    def load(self):
        """Computations per core now (0 on dedicated cores)."""
        return len(self.jobs) / self.a.cores if self.a.cores else 0.0

    def rate(self):
        if not self.jobs:
            return 1.0
        return min(1.0, self.a.cores / len(self.jobs)) / self.crowding

    def ranks(self):
        """The run's ranks: the learners, the PS and the statistics server (trees add leaf PSs)."""
        return self.a.learners + 2

    def advance_jobs(self):
        r = self.rate()
        for j in self.jobs.values():
            j[0] -= (self.now - self.jobs_at) * r
        self.jobs_at = self.now

    def schedule_jobs(self):
        if not self.jobs:
            return
        key, job = min(self.jobs.items(), key=lambda kv: kv[1][0])
        self.seq += 1
        self.job_event = self.seq
        heapq.heappush(self.events, (self.now + max(0.0, job[0]) / self.rate(), self.seq, self.job_done, (self.seq,)))

    def job_done(self, token):
        if token != self.job_event:
            return  # superseded by a later schedule
        self.advance_jobs()
        key = min(self.jobs, key=lambda k: self.jobs[k][0])
        _, done, args = self.jobs.pop(key)
        self.schedule_jobs()
        done(*args)

    # -- learners -------------------------------------------------------------------------------
    def compute_time(self):
        a = self.a
        mean = a.compute_ms * 1e-3
        if a.compute_cv <= 0:
            return mean
        k = 1.0 / (a.compute_cv ** 2)  # gamma with that mean and coefficient of variation
        return self.rng.gammavariate(k, mean / k)

    def straggling(self, i, seconds):
        """As a run's --straggler: after a mini-batch of `seconds`, the learner sleeps FACTOR - 1
        times that (off the cores), with probability P."""
        slow = self.a.stragglers.get(i, self.a.stragglers.get("all"))
        if slow is None:
            return 0.0
        factor, p = slow
        return (factor - 1.0) * seconds if p >= 1.0 or self.rng.random() < p else 0.0

    def pull(self, i):
        self.to_ps(self.a.request_bytes, 0.0, self.node_of[i], self.ps_message, ("pull", i))

    def got_weights(self, i, ts):
        self.have[i] = max(self.have[i], ts)
        if self.a.mode == "base" or not self.computing[i]:
            self.start_compute(i)
        else:
            self.pending_pull[i] = False

    def start_compute(self, i):
        self.computing[i] = True
        self.pending_pull[i] = False
        self.started[i] = self.now
        self.run_on_cores(("learner", i), self.compute_time(), self.computed, i, self.have[i])
        if self.a.mode == "overlap":  # the next pull goes out while this gradient is computed
            self.pending_pull[i] = True
            self.pull(i)

    def computed(self, i, ts):
        self.computing[i] = False
        self.compute_s[i] += self.now - self.started[i]  # wall time: slowed where cores are shared
        ready = self.now + self.straggling(i, self.now - self.started[i])
        self.at(max(ready, self.push_free[i]), self.push, i, ts)

    def push(self, i, ts):
        self.grads_on_way += 1
        self.push_free[i] = self.to_ps(self.a.model_bytes, self.push_free[i], self.node_of[i], self.ps_message,
                                       ("grad", i, ts))
        if self.a.mode == "base":
            if self.a.request_lag_ms > 0 or self.a.request_lag_gradients > 0:
                self.request_behind[i] = True  # it reaches the PS after the gradient: see ps_done
            else:
                self.pull(i)  # the pull thread asks at once, while the push thread sends
        elif not self.pending_pull[i]:
            self.start_compute(i)

    # -- parameter server -----------------------------------------------------------------------
    def ps_message(self, msg):
        self.ps_queue.append(msg)
        if not self.ps_busy:
            self.ps_next()

    def ps_next(self):
        if not self.ps_queue and self.held and not any(self.computing) and not self.grads_on_way:
            # No gradient will come to count them down: the held requests get through.
            held, self.held = self.held, {}
            for i in held:
                self.ps_queue.append(("pull", i))
        if not self.ps_queue:
            self.ps_busy = False
            return
        self.ps_busy = True
        msg = self.ps_queue.popleft()
        self.run_on_cores(("ps",), self.message_cost(msg), self.ps_done, msg)

    def refused(self, ts):
        """Whether the PS drops a gradient of timestamp ts: late under backups and K-sync, or past
        the staleness bound."""
        bound = self.a.max_staleness
        return (self.drops_late and ts < self.ts) or (bound >= 0 and self.ts - ts > bound)

    def message_cost(self, msg):
        """The PS's time for a message: a pull's answer, or adding gradients (and the update they
        complete)."""
        if msg[0] not in ("grad", "sum") or (msg[0] == "grad" and self.refused(msg[2])):
            return self.a.request_us * 1e-6
        gradients = 1 if msg[0] == "grad" else len(msg[2])
        cost = self.a.grad_ms * 1e-3
        if len(self.bucket) + gradients >= self.per_update:
            cost += self.a.update_ms * 1e-3
        return cost

    def apply_update(self):
        """The bucket's gradients make an update: their staleness is counted, the clock moves."""
        for g in self.bucket:
            self.stale[self.ts - g] += 1
        self.gradients_applied += len(self.bucket)
        self.bucket = []
        self.ts += 1
        self.updates += 1

    def ps_done(self, msg):
        sent = self.now
        if msg[0] == "pull":
            i = msg[1]
            if self.taken[i] is not None:
                t, g = self.taken[i]
                self.lags.append((self.now - t, self.gradients_taken - g))
                self.taken[i] = None
            if self.synchronous and self.have[i] >= self.ts:
                self.deferred.append(i)
            else:
                sent = self.reply(i)
        else:
            _, i, ts = msg
            self.gradients_taken += 1
            self.grads_on_way -= 1
            self.taken[i] = (self.now, self.gradients_taken)
            if self.taken_log is not None:
                self.taken_log.append((i, ts, self.now))
            if self.held:  # one more gradient before each held request
                for j in list(self.held):
                    self.held[j] -= 1
                    if self.held[j] <= 0:  # taken next: the count is of gradients taken before it
                        del self.held[j]
                        self.ps_queue.appendleft(("pull", j))
            if self.request_behind[i] and self.a.request_lag_gradients > 0:
                self.request_behind[i] = False
                g = self.a.request_lag_gradients
                # Geometric on 0, 1, 2, ... with mean g: failures before the first success of p = 1 / (1 + g).
                count = int(math.log(1.0 - self.rng.random()) / math.log(g / (1.0 + g)))
                if count == 0:
                    self.ps_queue.appendleft(("pull", i))
                else:
                    self.held[i] = count
            elif self.request_behind[i]:
                # The request sent after this gradient: on an oversubscribed node it waits behind
                # the gradient in the learner's queue to the PS and leaves when the learner next
                # gets a core (measured from a run's --timeline by timeline_lags.py).
                self.request_behind[i] = False
                lag = self.rng.expovariate(1.0 / (self.a.request_lag_ms * 1e-3))
                self.at(self.now + lag, self.ps_message, ("pull", i))
            if self.refused(ts):
                self.dropped += 1
            else:
                self.bucket.append(ts)
            if len(self.bucket) >= self.per_update:
                self.apply_update()
                waiting, self.deferred = self.deferred, []
                for j in waiting:
                    sent = self.reply(j)
        self.ps_next_after(sent)

    def ps_next_after(self, sent):
        """The PS sends its replies itself, blocking: it takes the next message once they have left."""
        if sent > self.now:
            self.at(sent, self.ps_next)
        else:
            self.ps_next()

    def reply(self, i):
        """Answers learner i's pull (the weights if newer); returns when the answer has left."""
        newer = self.ts > self.have[i]
        arrive, left = self.transfer(self.a.model_bytes if newer else self.a.request_bytes, False, 0.0,
                                     self.node_of[i])
        self.at(arrive, self.got_weights, i, self.ts)
        return left

    # -- run ------------------------------------------------------------------------------------
    def protocol_name(self):
        """As a run's metrics name it (dist/ps/protocol.h)."""
        a = self.a
        if a.protocol == "hardsync":
            return f"{a.backup}-backup-hardsync" if a.backup else "hardsync"
        if a.protocol == "softsync":
            return f"{a.n}-softsync"
        return f"{a.k}-{a.protocol}" if a.protocol in ("ksync", "kasync") else a.protocol

    def begin(self):
        for i in range(self.a.learners):
            self.at(self.rng.uniform(0, 1e-4), self.pull, i)

    def run(self):
        lam = self.a.learners
        self.begin()
        def going():
            if self.stop_after_gradients is not None:
                return self.gradients_applied < self.stop_after_gradients
            return self.updates < self.a.updates

        while self.events and going():
            t, _, fn, args = heapq.heappop(self.events)
            self.now = t
            fn(*args)
        total = sum(self.stale.values())
        mean = sum(s * c for s, c in self.stale.items()) / total if total else 0.0
        width = max(self.stale) + 1 if self.stale else 1
        return {
            "protocol": self.protocol_name(), "dropped": self.dropped,
            "learners": lam, "mode": self.a.mode, "updates": self.updates, "seconds": self.now,
            "updates_per_s": self.updates / self.now if self.now else 0.0,
            "gradients_per_s": total / self.now if self.now else 0.0,
            "staleness_mean": mean, "staleness_max": width - 1,
            "histogram": [self.stale.get(s, 0) for s in range(width)],
            "overlap_ratio": sum(self.compute_s) / (lam * self.now) if self.now else 0.0,
            "request_lag_ms": 1e3 * sum(t for t, _ in self.lags) / len(self.lags) if self.lags else 0.0,
            "request_lag_gradients": sum(g for _, g in self.lags) / len(self.lags) if self.lags else 0.0,
            "ps_in_gbs": self.bytes_in / self.now / 1e9 if self.now else 0.0,
            "ps_out_gbs": self.bytes_out / self.now / 1e9 if self.now else 0.0,
            "ps_mb_per_update": (self.bytes_in + self.bytes_out) / self.updates / 1e6 if self.updates else 0.0,
            "link_mb_per_update": self.link_bytes / self.updates / 1e6 if self.updates else 0.0,
            "topology": self.a.topology,
        }


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--learners", type=int, required=True, help="lambda")
    p.add_argument("--protocol", choices=["hardsync", "softsync", "async", "ksync", "kasync"], default="softsync")
    p.add_argument("--n", type=int, default=1, help="n of n-softsync")
    p.add_argument("--backup", type=int, default=0,
                   help="hardsync: backup learners; an update takes the first lambda - B gradients of the weights, "
                        "later ones are dropped")
    p.add_argument("--k", type=int, default=0,
                   help="ksync: an update takes the first K gradients of the weights (later ones dropped); kasync: "
                        "any K gradients")
    p.add_argument("--max-staleness", type=int, default=-1,
                   help="softsync, async, kasync, base mode: the PS drops a gradient more than S updates old (-1: none)")
    p.add_argument("--straggler", action="append", default=[], metavar="LEARNER:FACTOR[:P]",
                   help="as a run's --straggler, by learner index (0 .. lambda-1) or 'all': after a mini-batch "
                        "that learner sleeps FACTOR - 1 times its compute time, with probability P (default 1); "
                        "repeatable")
    p.add_argument("--mode", choices=["base", "overlap"], default="base",
                   help="base: wait for each pull; overlap: compute while pulling (adv* always overlaps)")
    p.add_argument("--topology", choices=["base", "adv", "adv*"], default="base",
                   help="one PS; a tree of leaf PSs (adv); and a broadcast tree of the weights (adv*): trees.py")
    p.add_argument("--learners-per-node", type=int, default=4, help="adv, adv*: learners below each leaf PS")
    p.add_argument("--leaf-sizes", default="",
                   help="adv, adv*: the learners below each leaf PS in order, e.g. 1,3,3 (as a run's layout "
                        "has them: node 0 also holds the root and the statistics server); instead of "
                        "--learners-per-node")
    p.add_argument("--leaf-of", default="",
                   help="adv, adv*: the leaf PS of each learner in rank order, e.g. 1,1,0,0,0,1,1,1 (as a run's layout "
                        "has them across real nodes; the broadcast tree follows rank order); instead of --leaf-sizes")
    p.add_argument("--broadcast-fan-out", type=int, default=2, help="adv*: children of each sender in the broadcast")
    p.add_argument("--forward-core-ms", type=float, default=0.0,
                   help="adv*: a learner's core time to forward a version to one child (with --cores it shares "
                        "them with the computations); 0: a forward costs link time only")
    p.add_argument("--node-latency-us", type=float, default=1.0, help="adv, adv*: a learner's message to its leaf PS")
    p.add_argument("--node-bandwidth-gbs", type=float, default=20.0, help="adv, adv*: the node's link to its leaf PS")
    p.add_argument("--compute-ms", type=float, required=True, help="one mini-batch's forward and backward, alone on its cores")
    p.add_argument("--compute-cv", type=float, default=0.1, help="its coefficient of variation (0: constant)")
    p.add_argument("--model-bytes", type=float, required=True, help="a gradient's (and the weights') bytes")
    p.add_argument("--request-bytes", type=float, default=64, help="a pull request's and an empty reply's bytes")
    p.add_argument("--latency-us", type=float, default=5.0, help="one message's latency")
    p.add_argument("--bandwidth-gbs", type=float, default=10.0, help="each link's bandwidth, GB/s")
    p.add_argument("--message-us", type=float, default=0.0,
                   help="what a message holds its sender's link for beyond its bytes (0 on dedicated cores)")
    p.add_argument("--message-load-us", type=float, default=0.0,
                   help="with --cores: what a message holds its sender's link for beyond --message-us, for each "
                        "computation per core as it leaves (on an oversubscribed node the receiver gets a core back "
                        "later the more ranks compute)")
    p.add_argument("--request-lag-ms", type=float, default=0.0,
                   help="base mode: how long after the PS has taken a learner's gradient it takes the learner's next "
                        "request, on average (exponential); 0: the request leaves with the gradient. On an "
                        "oversubscribed node it waits behind the gradient: measure it with timeline_lags.py")
    p.add_argument("--request-lag-gradients", type=float, default=0.0,
                   help="base mode: instead of --request-lag-ms, the other learners' gradients the PS takes before a "
                        "learner's next request, on average (geometric; timeline_lags.py measures it)")
    p.add_argument("--grad-ms", type=float, default=0.0, help="the PS's cost of taking one gradient")
    p.add_argument("--update-ms", type=float, default=0.0, help="the PS's cost of one update (the solver's step)")
    p.add_argument("--request-us", type=float, default=2.0, help="the PS's cost of answering a pull")
    p.add_argument("--link-gbs", type=float, default=0.0,
                   help="nodes joined by links of this many GB/s each way, shaped as tc's tbf (0: one node, no links)")
    p.add_argument("--link-burst-bytes", type=float, default=0.0, help="with --link-gbs: the tbf bucket, bytes")
    p.add_argument("--link-latency-us", type=float, default=0.0, help="with --link-gbs: what crossing adds to a message")
    p.add_argument("--learner-nodes", default="",
                   help="with --link-gbs, one PS (no tree): the learners on each node, the PS's node first, e.g. 1,3 "
                        "(default: every learner on a node of its own, none beside the PS)")
    p.add_argument("--cores", type=float, default=0, help="cores the learners and the PS share (0: one each)")
    p.add_argument("--crowding-cost", type=float, default=0.0,
                   help="with --cores: each rank beyond the cores slows every computation by this fraction")
    p.add_argument("--updates", type=int, default=2000, help="simulate until this many updates")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print the result as one JSON line")
    a = p.parse_args(argv)
    if a.learners < 1 or a.n < 1 or a.n > a.learners:
        p.error("--learners must be >= 1 and --n in [1, learners]")
    if a.compute_ms <= 0 or a.model_bytes <= 0 or a.bandwidth_gbs <= 0 or a.node_bandwidth_gbs <= 0:
        p.error("--compute-ms, --model-bytes and the bandwidths must be positive")
    if a.learners_per_node < 1 or a.broadcast_fan_out < 1:
        p.error("--learners-per-node and --broadcast-fan-out must be >= 1")
    check_slow_learner_options(a, p.error)
    a.leaves = leaf_sizes(a, p.error)
    a.leaf_of = leaf_of(a, p.error)
    a.learner_nodes = learner_nodes(a, p.error)
    return a


def check_slow_learner_options(a, error):
    """--backup, --k, --max-staleness and --straggler, as `rudra dist` takes them; sets a.stragglers."""
    if a.backup and (a.protocol != "hardsync" or not 0 < a.backup < a.learners):
        error("--backup B is for --protocol hardsync, with B from 1 to lambda - 1")
    if (a.protocol in ("ksync", "kasync")) != (a.k != 0) or (a.k and not 1 <= a.k <= a.learners):
        error("--k K goes with --protocol ksync or kasync (and they need it), K from 1 to lambda")
    if a.max_staleness >= 0 and a.protocol in ("hardsync", "ksync"):
        error("--max-staleness bounds softsync, async and kasync (hardsync and K-sync are never stale)")
    if a.max_staleness >= 0 and a.mode != "base":
        error("--max-staleness: not modelled in overlap mode (a bounded learner computes only on the weights its "
              "last pull brought)")
    if a.topology != "base" and (a.backup or a.protocol == "ksync" or a.max_staleness >= 0):
        error("--backup, ksync and --max-staleness drop single gradients at the PS, and a leaf PS sends sums: "
              "--topology base only")
    a.stragglers = {}
    for text in a.straggler:
        parts = text.split(":")
        try:
            who = "all" if parts[0] == "all" else int(parts[0])
            factor = float(parts[1])
            p = float(parts[2]) if len(parts) == 3 else 1.0
            if len(parts) not in (2, 3) or not factor >= 1.0 or not 0.0 < p <= 1.0 or \
                    (who != "all" and not 0 <= who < a.learners):
                raise ValueError
        except (ValueError, IndexError):
            error(f"--straggler '{text}': expected LEARNER:FACTOR[:P] with LEARNER in 0..{a.learners - 1} or 'all', "
                  "FACTOR >= 1 and P in (0, 1]")
        a.stragglers[who] = (factor, p)


def learner_nodes(a, error):
    """The learners on each node, the PS's first: --learner-nodes, or none beside the PS and one on
    each other node; one node with them all without links."""
    if a.link_gbs < 0 or a.link_burst_bytes < 0 or a.link_latency_us < 0:
        error("--link-gbs, --link-burst-bytes and --link-latency-us must not be negative")
    if a.learner_nodes and a.topology != "base":
        error("--learner-nodes places the learners of one PS; the trees put each leaf PS's learners on a node")
    if not a.link_gbs:
        if a.learner_nodes:
            error("--learner-nodes places learners on nodes joined by links: give --link-gbs too")
        return [a.learners]
    if not a.learner_nodes:
        return [0] + [1] * a.learners
    try:
        counts = [int(x) for x in a.learner_nodes.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 0 or sum(counts) != a.learners:
        error(f"--learner-nodes must be counts (0 or more) adding up to --learners ({a.learners}), "
              f"got '{a.learner_nodes}'")
    return counts


def leaf_of(a, error):
    """The leaf PS of each learner in rank order: --leaf-of, or the leaves' sizes in turn."""
    if not a.leaf_of:
        return [leaf for leaf, size in enumerate(a.leaves) for _ in range(size)]
    try:
        leaves = [int(x) for x in a.leaf_of.split(",")]
    except ValueError:
        leaves = []
    if len(leaves) != a.learners or min(leaves, default=-1) < 0 or \
            sorted(set(leaves)) != list(range(max(leaves) + 1)):
        error(f"--leaf-of must name a leaf (0, 1, ..., none left out) for each of the {a.learners} learners, "
              f"got '{a.leaf_of}'")
    return leaves


def leaf_sizes(a, error):
    """The learners below each leaf PS: --leaf-sizes, --leaf-of, or --learners-per-node to a node."""
    if a.leaf_of and a.leaf_sizes:
        error("--leaf-of and --leaf-sizes both place the learners: give one")
    if a.leaf_of:
        leaves = leaf_of(a, error)
        return [leaves.count(leaf) for leaf in range(max(leaves) + 1)]
    if not a.leaf_sizes:
        g = a.learners_per_node
        return [min(g, a.learners - first) for first in range(0, a.learners, g)]
    try:
        sizes = [int(x) for x in a.leaf_sizes.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1 or sum(sizes) != a.learners:
        error(f"--leaf-sizes must be positive counts adding up to --learners ({a.learners}), got '{a.leaf_sizes}'")
    return sizes


def make(a):
    if a.topology == "base":
        return Sim(a)
    from trees import TreeSim  # trees.py builds on Sim
    return TreeSim(a)


def simulate(argv):
    return make(parse(argv)).run()


def main():
    a = parse()
    r = make(a).run()
    if a.json:
        print(json.dumps(r))
        return 0
    print(f"{r['protocol']}, {r['learners']} learners, {r['topology']}, {r['mode']}: {r['updates_per_s']:.1f} updates/s, "
          f"{r['gradients_per_s']:.1f} gradients/s, staleness mean {r['staleness_mean']:.2f} max {r['staleness_max']}, "
          f"overlap {r['overlap_ratio']:.3f}, PS link in {r['ps_in_gbs']:.2f} / out {r['ps_out_gbs']:.2f} GB/s, "
          f"{r['ps_mb_per_update']:.2f} MB per update at the PS")
    shown = " ".join(f"{s}:{c}" for s, c in enumerate(r["histogram"]) if c)
    print(f"  staleness histogram sigma:count  {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
