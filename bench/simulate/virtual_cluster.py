#!/usr/bin/env python3
"""A virtual cluster: lambda learners on a described cluster, trained for real in one process.

The discrete-event model of simulate.py (the same costs, links and cores) decides when each
learner's gradient reaches the parameter server, and so which weights version each gradient is
computed on and how stale it is; it writes that schedule as a record (OUT/schedule.txt, the format
a real run's PS writes, with each gradient's simulated time), and `rudra dist --replay` computes
every gradient for real, each learner on its own sample stream and seed, on the weights it held,
and applies them with the PS's update rule. OUT gets what a sweep's run gets: metrics.jsonl (its elapsed
times simulated), staleness.json, final.rudra and manifest.json, so that `sweep.py collect` and the
plots read it unchanged.
The same arguments give the same bytes.

  virtual_cluster.py OUT --learners 30 --protocol softsync --n 1 --batch 32 --epochs 3 \\
      --compute-ms 12 --model-bytes 334000 [simulate.py's cluster options] \\
      [--solver SOLVER] [--data DIR] [--seed S] [--rudra build/rudra]
  virtual_cluster.py OUT --resume [--rudra build/rudra]

Like a run, the training checkpoints at each epoch's end, every 10 minutes and when a signal
(SIGTERM, SIGINT, SIGHUP, SIGUSR2) stops it, with exit code 130; --resume goes on from
OUT/checkpoint.rudra to the bytes an uninterrupted run gives.

With --topology adv or adv* (trees.py) the record has each leaf PS's sum as the root takes it
("sum N" and its N gradients, added in the order they reached the leaf), and the replay gives each
sum to the rule whole, as the root does. Backups (--backup), K-sync and K-batch-async (--protocol
ksync|kasync --k K), the staleness bound (--max-staleness, base mode) and slow learners
(--straggler LEARNER:FACTOR[:P]) are simulate.py's: the record has every gradient the PS took,
the dropped ones too, and the rule drops them as the run's PS does. Not modelled here: EASGD
and the decentralized methods.
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simulate  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SOLVER = os.path.join(ROOT, "models/cifar10_full_28/cifar10_full_28_solver.prototxt")
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def train_images(data, limit):
    """The training images of an IDX folder (the header's count), at most `limit` when set."""
    for name in ("train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"):
        path = os.path.join(data, name)
        if os.path.exists(path):
            with (gzip.open if name.endswith(".gz") else open)(path, "rb") as f:
                magic, count = struct.unpack(">II", f.read(8))
            if magic != 0x803:
                sys.exit(f"{path}: not an IDX image file (magic {magic:#x})")
            return min(count, limit) if limit > 0 else count
    sys.exit(f"{data}: no train-images-idx3-ubyte(.gz): the virtual cluster reads IDX folders")


def settings(a, sim):
    """The run's settings as a real run's checkpoint and record keep them (dist/run/checkpoint.cpp)."""
    return {"solver": a.solver, "data": a.data, "format": "auto", "train_limit": a.train_limit, "test_limit": a.test_limit,
            "mean": "", "bad_image": "stop", "protocol": sim.protocol, "n": sim.n, "backup": sim.backup,
            "max_staleness": sim.max_staleness, "k": sim.k, "batch": a.batch, "epochs": a.epochs, "mode": sim.mode,
            "lr_modulation": a.lr_modulation, "momentum_compensation": a.momentum_compensation,
            "reference_batch": a.reference_batch, "base_lr": a.base_lr, "momentum": a.momentum, "seed": a.seed, "warm_start": "",
            "tau": 1, "beta": 0.0, "topology": sim.topology, "ranks_per_node": 0, "fan_out": 0,
            "broadcast_fan_out": sim.broadcast_fan_out if sim.topology == "adv*" else 2, "learners": sim.learners}


def write_record(path, header, taken):
    """taken: (learner, timestamp, time) for a gradient the PS took, ("sum", [(learner, timestamp)],
    time) for a leaf PS's sum (a "sum N" line before its N gradient lines)."""
    positions = {}
    lines = []

    def gradient(learner, ts, t):
        p = positions.get(learner, 0)
        positions[learner] = p + 1
        lines.append(f"g {learner} {p} {ts} {t:.6f}\n")

    for entry in taken:
        if entry[0] == "sum":
            _, items, t = entry
            lines.append(f"sum {len(items)}\n")
            for learner, ts in items:
                gradient(learner, ts, t)
        else:
            gradient(*entry)
    head = {"format": "rudra-schedule", "version": 1, "learners": header["settings"]["learners"],
            "events": len(lines)}
    head.update(header)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(head, separators=(",", ":")) + "\n")
        f.writelines(lines)
    os.replace(tmp, path)


def write_manifest(a, sim, argv):
    """The manifest a sweep's run has (tools/sweep/sweep.py), so that `sweep.py collect` reads the
    virtual run's folder as a run's."""
    options = [x for x in argv if x != a.out]
    manifest = {"name": os.path.basename(os.path.normpath(a.out)), "grid_line": " ".join(options),
                "ranks": sim.learners + 2, "solver": os.path.abspath(a.solver), "options": options,
                "arguments": [os.path.abspath(__file__)] + list(argv), "warm_start_from": None,
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename,
                "slurm_job": os.environ.get("SLURM_JOB_ID"), "virtual_cluster": True}
    tmp = os.path.join(a.out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(a.out, "manifest.json"))


def remove_run(out):
    """A run's files in its folder (a sweep's run.log stays)."""
    if not os.path.isdir(out):
        return
    for name in os.listdir(out):
        if name in ("metrics.jsonl", "staleness.json", "schedule.txt", "schedule.txt.tmp", "manifest.json") or \
                name.endswith(".rudra") or name.endswith(".rudra.tmp"):
            os.remove(os.path.join(out, name))


def train(command):
    """The training itself, in this process's place: a stop signal (a batch system's) reaches
    `rudra dist --replay`, which checkpoints, and its exit code is this script's."""
    sys.stdout.flush()
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    try:
        os.execve(command[0], command, env)
    except OSError as e:
        sys.exit(f"virtual_cluster.py: cannot run {command[0]}: {e.strerror}")


def resume(argv):
    p = argparse.ArgumentParser(prog="virtual_cluster.py OUT --resume")
    p.add_argument("out")
    p.add_argument("--resume", action="store_true", required=True)
    p.add_argument("--rudra", default=os.path.join(ROOT, "build/rudra"))
    a = p.parse_args(argv)
    for f in ("schedule.txt", "checkpoint.rudra"):
        if not os.path.exists(os.path.join(a.out, f)):
            sys.exit(f"{a.out}: no {f} to go on from (--resume goes on with a virtual cluster stopped after its "
                     f"first checkpoint)")
    return train([a.rudra, "dist", "--replay", a.out, "--resume", a.out])


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if "--resume" in args:
        return resume(args)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                add_help=False)
    p.add_argument("out", help="the run's folder (created; refused when it holds a run)")
    p.add_argument("--solver", default=DEFAULT_SOLVER)
    p.add_argument("--data", default=DEFAULT_DATA, help="an IDX folder (Fashion-MNIST by default)")
    p.add_argument("--train-limit", type=int, default=0, help="the first N training images only (0: all)")
    p.add_argument("--test-limit", type=int, default=0, help="the first N test images only (0: all)")
    p.add_argument("--batch", type=int, required=True, help="mu, each learner's mini-batch")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--base-lr", type=float, default=0.0, help="alpha0 (0: the solver's)")
    p.add_argument("--momentum", type=float, default=-1.0, help="the PS's momentum (< 0: the solver's)")
    p.add_argument("--reference-batch", type=int, default=0,
                   help="B in hardsync's alpha0 * sqrt(lambda * mu / B) (0: the Data layer's)")
    p.add_argument("--lr-modulation", default="", choices=["", "none", "average", "per-gradient"])
    p.add_argument("--momentum-compensation", action="store_true")
    p.add_argument("--rudra", default=os.path.join(ROOT, "build/rudra"))
    p.add_argument("--overwrite", action="store_true", help="replace the run in OUT (its files) with this one")
    p.add_argument("-h", "--help", action="store_true")
    if {"-h", "--help"} & set(sys.argv[1:] if argv is None else argv):
        p.print_help()
        print("\nThe cluster (simulate.py's options):\n")
        simulate.parse(["--help"])  # exits
    a, rest = p.parse_known_args(argv)
    sim = simulate.parse(rest + ["--updates", "1"])  # the count is set below
    a.seed = sim.seed
    if sim.topology != "base" and a.lr_modulation == "per-gradient":
        p.error("--lr-modulation per-gradient weighs each gradient before the sum, and a leaf PS sends sums: "
                f"use average or none with --topology {sim.topology}")
    if a.batch < 1 or a.epochs < 1:
        p.error("--batch and --epochs must be at least 1")
    images = train_images(a.data, a.train_limit)
    model = simulate.make(sim)
    # The PS ends the run at the update that reaches epochs x images samples (a leaf PS's sum may
    # make an update of more than c gradients).
    model.stop_after_gradients = math.ceil(a.epochs * images / a.batch)
    model.taken_log = []
    result = model.run()
    if a.overwrite:
        remove_run(a.out)
    if os.path.exists(os.path.join(a.out, "metrics.jsonl")):
        sys.exit(f"{a.out}: holds a run already (metrics.jsonl): give another folder, or --overwrite")
    os.makedirs(a.out, exist_ok=True)
    cluster = {k: v for k, v in vars(sim).items() if k not in ("updates", "json")}
    header = {"settings": settings(a, sim), "threads": 1, "conv_backend": "own",
              "simulated": {"cluster": cluster, "updates_per_s": result["updates_per_s"],
                            "seconds": result["seconds"], "overlap_ratio": result["overlap_ratio"],
                            "histogram": result["histogram"], "dropped": result["dropped"]}}
    write_record(os.path.join(a.out, "schedule.txt"), header, model.taken_log)
    write_manifest(a, sim, sys.argv[1:] if argv is None else argv)
    gradients = sum(len(e[1]) if e[0] == "sum" else 1 for e in model.taken_log)
    print(f"virtual cluster: {result['protocol']}, {sim.learners} learners, {sim.mode}: {result['updates']} updates in "
          f"{result['seconds']:.1f} simulated s, staleness mean {result['staleness_mean']:.2f} max "
          f"{result['staleness_max']}; computing the {gradients} gradients", flush=True)
    return train([a.rudra, "dist", "--replay", a.out, "-o", a.out])


if __name__ == "__main__":
    sys.exit(main())
