"""Rudra-adv and Rudra-adv* in the discrete-event model of simulate.py, as `rudra dist --topology`
builds them (dist/ps/topology.h, dist/ps/relay_server.h, dist/ps/weight_broadcast.h):

- Learners sit on nodes of `learners_per_node` (or `--leaf-sizes`, or `--leaf-of` in rank
  order), each node with a leaf PS (a relay). A learner pushes its gradient to its relay over
  the node's link (node latency and bandwidth; the relay takes one message at a time each way). The relay adds it (grad_ms of its own core) to a sum;
  once the sum holds the relay's share of an update (c * its learners / lambda, at least 1) and
  the previous sum has left, the sum goes up to the root over the relay's own link and the
  root's incoming one. The root counts every gradient in a sum as if it had come alone and
  updates once it holds c (a sum is never split: an update may take more).
- adv: each relay keeps one pull waiting at the root ("newer than mine"); the root answers it with
  the weights after each update, and the relay pulls again. Learners pull from their relay as
  they would from the PS (base mode waits for the reply; hardsync's waits for the next version).
- adv*: no pulls. After each update the root sends the version to its first F learners, and
  learner k forwards what it receives to learners F(k+1) .. F(k+1)+F-1, each sender always the
  newest version it holds once its link is free (versions in between are skipped). Learners
  compute without waiting, on the newest weights they hold; hardsync learners wait for the
  version after the one their last gradient was computed from. With forward_core_ms a forward
  takes that much core time per child, shared with the computations (a node whose learners
  forward on the cores they compute on), instead of link time.
- With links between nodes (simulate.py's link_gbs), each leaf PS and its learners are a node,
  the root on the first: a sum going up, a leaf's pull and its answer, and a version broadcast
  from one node to another cross the nodes' links.
"""
from collections import deque

from simulate import Sim


class Relay:
    def __init__(self, learners, share, node):
        self.learners = learners
        self.share = share
        self.node = node             # the leaf PS's node (the first also holds the root)
        self.ts = 0                  # the version it holds (every rank starts with version 0)
        self.items = []              # (learner, timestamp) of the gradients in the sum being built
        self.sending = False         # a sum on its way up: one in flight
        self.up_free = 0.0           # its own link toward the root
        self.in_free = self.out_free = 0.0  # its node link, each way
        self.deferred = []           # hardsync learners waiting for a newer version
        self.queue = deque()
        self.busy = False


class TreeSim(Sim):
    def ranks(self):
        return super().ranks() + len(self.a.leaves)  # a leaf PS per node

    def __init__(self, a):
        super().__init__(a)
        lam = a.learners
        self.star = a.topology == "adv*"
        self.relay_of = list(a.leaf_of)  # each learner's leaf PS, learners in rank order
        self.relays = []
        for leaf in range(len(a.leaves)):
            members = [i for i in range(lam) if self.relay_of[i] == leaf]
            self.relays.append(Relay(members, max(1, self.per_update * len(members) // lam), leaf))
        self.have = [0] * lam
        self.node_of = list(self.relay_of)  # each learner's node: its leaf PS's
        self.root_waiting = []       # adv: relays whose pull waits for a newer version
        # adv*: each sender's (the root's, key -1, and every learner's) newest unsent version
        self.pending = {}
        self.sending = set()
        self.link_free = [0.0] * lam
        self.waiting_version = [None] * lam  # hardsync adv*: the version a learner waits for

    # -- links ----------------------------------------------------------------------------------
    def node_send(self, nbytes, relay, inbound, sender_free=0.0):
        """(arrival, when it left the sender) of a message between a learner and its relay."""
        a = self.a
        wire = nbytes / (a.node_bandwidth_gbs * 1e9) + self.message_hold()
        if inbound:
            start = max(self.now, sender_free, relay.in_free)
            relay.in_free = start + wire
        else:
            start = max(self.now, relay.out_free)
            relay.out_free = start + wire
        return start + wire + a.node_latency_us * 1e-6, start + wire

    # -- learners -------------------------------------------------------------------------------
    def pull(self, i):
        relay = self.relays[self.relay_of[i]]
        arrive, _ = self.node_send(self.a.request_bytes, relay, True)
        self.at(arrive, self.relay_message, relay, ("pull", i))

    def push(self, i, ts):
        relay = self.relays[self.relay_of[i]]
        arrive, left = self.node_send(self.a.model_bytes, relay, True, self.push_free[i])
        self.push_free[i] = left
        self.at(arrive, self.relay_message, relay, ("grad", i, ts))
        if not self.star:
            if self.a.mode == "base":
                self.pull(i)
            elif not self.pending_pull[i]:
                self.start_compute(i)
        elif self.a.protocol == "hardsync" and self.have[i] <= ts:
            self.waiting_version[i] = ts + 1
        else:
            self.start_compute(i)

    def start_compute(self, i):
        if not self.star:
            return super().start_compute(i)
        self.computing[i] = True
        self.started[i] = self.now
        self.run_on_cores(("learner", i), self.compute_time(), self.computed, i, self.have[i])

    # -- relays ---------------------------------------------------------------------------------
    def relay_message(self, relay, msg):
        relay.queue.append(msg)
        if not relay.busy:
            self.relay_next(relay)

    def relay_next(self, relay):
        if not relay.queue:
            relay.busy = False
            return
        relay.busy = True
        msg = relay.queue.popleft()
        cost = self.a.request_us * 1e-6 if msg[0] == "pull" else self.a.grad_ms * 1e-3
        self.run_on_cores(("relay", id(relay)), cost, self.relay_done, relay, msg)

    def relay_done(self, relay, msg):
        if msg[0] == "pull":
            i = msg[1]
            if relay.ts > self.have[i]:
                arrive, _ = self.node_send(self.a.model_bytes, relay, False)
                self.at(arrive, self.got_weights, i, relay.ts)
            elif self.a.protocol == "hardsync":
                relay.deferred.append(i)
            else:
                arrive, _ = self.node_send(self.a.request_bytes, relay, False)
                self.at(arrive, self.got_weights, i, relay.ts)
        else:
            relay.items.append((msg[1], msg[2]))
            self.send_up(relay)
        self.relay_next(relay)

    def send_up(self, relay):
        if relay.sending or len(relay.items) < relay.share:
            return
        items, relay.items = relay.items, []
        left = self.to_ps(self.a.model_bytes, relay.up_free, relay.node, self.ps_message,
                          ("sum", relay, items))
        relay.up_free = left
        relay.sending = True
        self.at(left, self.sum_left, relay)

    def sum_left(self, relay):
        relay.sending = False
        self.send_up(relay)

    def relay_pull(self, relay):
        self.to_ps(self.a.request_bytes, relay.up_free, relay.node, self.ps_message, ("rpull", relay))

    def relay_got_weights(self, relay, ts):
        relay.ts = max(relay.ts, ts)
        self.relay_pull(relay)
        waiting, relay.deferred = relay.deferred, []
        for i in waiting:
            arrive, _ = self.node_send(self.a.model_bytes, relay, False)
            self.at(arrive, self.got_weights, i, relay.ts)

    # -- the root (Sim's ps_next, with sums and the leaves' pulls) ------------------------------
    def ps_done(self, msg):
        sent = self.now
        if msg[0] == "rpull":
            relay = msg[1]
            if self.ts > relay.ts:
                sent = self.reply_relay(relay)
            else:
                self.root_waiting.append(relay)
        else:
            self.bucket.extend(ts for _, ts in msg[2])
            if self.taken_log is not None:
                self.taken_log.append(("sum", msg[2], self.now))
            if len(self.bucket) >= self.per_update:
                self.apply_update()
                if self.star:  # a thread of its own sends down the broadcast tree
                    self.pending[-1] = self.ts
                    self.broadcast(-1)
                else:
                    waiting, self.root_waiting = self.root_waiting, []
                    for relay in waiting:
                        sent = self.reply_relay(relay)
        self.ps_next_after(sent)  # the leaves' pulls are answered as a learner's are: blocking

    def reply_relay(self, relay):
        arrive, left = self.transfer(self.a.model_bytes, False, 0.0, relay.node)
        self.at(arrive, self.relay_got_weights, relay, self.ts)
        return left

    # -- adv*'s broadcast tree ------------------------------------------------------------------
    def children(self, sender):
        f, lam = self.a.broadcast_fan_out, self.a.learners
        first = 0 if sender < 0 else f * (sender + 1)
        return range(first, min(lam, first + f))

    def broadcast(self, sender):
        """Sends the sender's newest version to its children, once its link is free."""
        if sender in self.sending or self.pending.get(sender) is None:
            return
        version = self.pending.pop(sender)
        self.sending.add(sender)
        a = self.a
        left = self.now
        if sender >= 0 and a.forward_core_ms > 0:
            # The learner's receiving thread copies the version to each child on the cores the
            # computations use (processor sharing), then the message crosses the link.
            self.run_on_cores(("forward", sender), a.forward_core_ms * 1e-3 * len(self.children(sender)),
                              self.forwarded, sender, version)
            return
        for child in self.children(sender):
            if sender < 0:
                arrive, left = self.transfer(a.model_bytes, False, 0.0, self.node_of[child])
            else:
                start = self.cross(self.node_of[sender], self.node_of[child], a.model_bytes,
                                   max(self.now, self.link_free[sender]))
                left = self.link_free[sender] = start + a.model_bytes / (a.bandwidth_gbs * 1e9) + self.message_hold()
                arrive = left + a.latency_us * 1e-6
            self.at(arrive, self.got_version, child, version)
        self.at(left, self.broadcast_left, sender)

    def forwarded(self, sender, version):
        for child in self.children(sender):
            through = self.cross(self.node_of[sender], self.node_of[child], self.a.model_bytes, self.now)
            self.at(through + self.a.latency_us * 1e-6, self.got_version, child, version)
        self.broadcast_left(sender)

    def broadcast_left(self, sender):
        self.sending.discard(sender)
        self.broadcast(sender)

    def got_version(self, i, version):
        if version <= self.have[i]:
            return
        self.have[i] = version
        if self.children(i):
            self.pending[i] = version
            self.broadcast(i)
        if self.waiting_version[i] is not None and version >= self.waiting_version[i]:
            self.waiting_version[i] = None
            self.start_compute(i)

    # -- run ------------------------------------------------------------------------------------
    def begin(self):
        """Every rank starts with version 0: learners compute at once, relays wait for version 1."""
        for relay in self.relays:
            if not self.star:
                self.relay_pull(relay)
        for i in range(self.a.learners):
            self.at(self.rng.uniform(0, 1e-4), self.start_compute, i)
