#!/usr/bin/env python3
"""Sweeps of `rudra dist` runs: the study's grids as batch work.

A grid file holds one configuration per line: `rudra dist` options, with --learners L (the
learner count; the run gets L + 2 ranks) or --ranks K (every rank, for the adv and adv*
topologies, whose leaf servers are ranks too). Two kinds of line set what every run shares:

    solver: models/cifar10_full_28/cifar10_full_28_solver.prototxt
    all: --data /usr/share/datasets/fashion-mnist --epochs 1 --train-limit 6000
    --learners 4 --protocol hardsync --batch 32
    --learners 4 --protocol softsync --n 1 --batch 32 --seed 2

A run may start from another's final model (the paper's warm start): label the source line
`[NAME] --learners ...` and give the other `--warm-start @NAME`; the source must come first. A
run whose source has not finished waits for it: `sweep.py run` skips it (the same command goes
on with it later), and under Slurm each stage is an array of its own (`list --stages`).

Blank lines and lines starting with # are skipped. Relative paths of the solver and of the
options that name files (--data, --warm-start, --timeline, --node-data-dir, --auto-cache) are
taken from the directory the sweep is started in.

Each run has a folder of its own under the sweep's folder, named after its options and a hash
of its whole configuration (so that a grid file edited later keeps the names of the lines it
kept), with manifest.json: the grid line, the full command, the rank count. A run whose folder
holds final.rudra is done and skipped; one with a checkpoint goes on with --resume; one whose
run stopped before its first checkpoint starts again with --overwrite (nothing of it is kept).
So a sweep stopped at any point is started again with the same command. Local runs go through
mpiexec -disable-auto-cleanup, so that a lost learner is survived where the protocol allows.

  sweep.py list GRID [--stages]      the runs, numbered from 0 (a job array's task ids); with
                                     --stages, their numbers by stage (warm starts after sources)
  sweep.py run GRID OUT [--index I]  every run not done (or run I), one after another; with
           [--virtual CLUSTER]       --virtual, on the virtual cluster (bench/simulate/virtual_cluster.py)
  sweep.py command GRID OUT --index I
           [--virtual CLUSTER]       write run I's manifest; print its rank count, folder and
                                     `rudra dist` arguments, one per line, --resume or
                                     --overwrite included as `run` adds them
                                     (tools/slurm/rudra-sweep.sbatch, a job array, launches them
                                     through rudra-dist.sbatch, which resumes its requeued slots);
                                     with --virtual, 1, the folder and the virtual cluster's
                                     whole command (--resume or --overwrite as `run` does)
  sweep.py collect OUT [-o CSV]      every run's epoch lines in one CSV (OUT/runs.csv), and the
                                     staleness histograms in another (OUT/staleness.csv)
  sweep.py plot OUT [--figures DIR]  the paper's figures from those CSV files, as PNG
"""
import argparse
import csv
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


class GridError(Exception):
    pass


def parse_grid(path):
    """The runs of a grid file: a list of dicts (line, number, solver, options, ranks, name)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise GridError(f"{path}: {e.strerror}")
    solver, shared, runs, labels = None, [], [], {}
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            if line.startswith("solver:"):
                solver = line[len("solver:"):].strip()
                continue
            if line.startswith("all:"):
                shared = shlex.split(line[len("all:"):])
                continue
            tokens = shlex.split(line)
        except ValueError as e:
            raise GridError(f"{where}: {e}")
        label = None
        m = re.match(r"\[([A-Za-z0-9_.-]+)\]$", tokens[0])
        if m:
            label = m.group(1)
            tokens = tokens[1:]
            if label in labels:
                raise GridError(f"{where}: the label [{label}] is already line {labels[label]['number']}'s")
            if not tokens:
                raise GridError(f"{where}: [{label}] names no run (options follow the label)")
        if not tokens[0].startswith("-"):
            raise GridError(f"{where}: a run line holds `rudra dist` options (starting with -), "
                            f"or 'solver:' or 'all:', got '{tokens[0]}'")
        options, learners, ranks = [], None, None
        i = 0
        while i < len(tokens):
            t = tokens[i]
            key, eq, value = t.partition("=")
            if key in ("--learners", "--ranks"):
                if not eq:
                    if i + 1 >= len(tokens):
                        raise GridError(f"{where}: {key} needs a number")
                    value = tokens[i + 1]
                    i += 1
                if not value.isdigit() or int(value) < 1:
                    raise GridError(f"{where}: {key} needs a positive number, got '{value}'")
                if key == "--learners":
                    learners = int(value)
                else:
                    ranks = int(value)
            elif key in ("-o", "--output", "--resume"):
                raise GridError(f"{where}: {key} is the sweep's to set (each run has its own folder)")
            else:
                options.append(t)
            i += 1
        if learners is None and ranks is None:
            raise GridError(f"{where}: give --learners L (L + 2 ranks) or --ranks K")
        if learners is not None and ranks is not None and ranks != learners + 2:
            raise GridError(f"{where}: --learners {learners} and --ranks {ranks} disagree "
                            f"(give --ranks alone for a topology with leaf servers)")
        if solver is None:
            raise GridError(f"{where}: no 'solver:' line before the first run")
        run = {"line": line, "number": number, "solver": solver, "options": shared + options,
               "ranks": ranks if ranks is not None else learners + 2, "label": label, "after": None}
        source = warm_start_source(run["options"])
        if source is not None:
            if source not in labels:
                raise GridError(f"{where}: --warm-start @{source}: no earlier line is labelled [{source}] "
                                f"(a run can start only from one above it)")
            run["after"] = labels[source]
        if label:
            labels[label] = run
        runs.append(run)
    if not runs:
        raise GridError(f"{path}: no runs (one line of `rudra dist` options per run)")
    for i, r in enumerate(runs):
        r["index"] = i
        r["name"] = run_name(r)  # in grid order: a source's name is there before its dependents'
    names = {}
    for r in runs:
        if r["name"] in names:
            raise GridError(f"{path}:{r['number']}: the same run as line {names[r['name']]}")
        names[r["name"]] = r["number"]
    return runs


def run_name(run):
    """Readable and stable: the line's own options, then a hash of everything the run depends on."""
    own = shlex.split(run["line"])
    slug = "_".join(t.strip("[]").lstrip("-") for t in own)
    slug = re.sub(r"[^A-Za-z0-9.=_+-]+", "-", slug).strip("-")[:80]
    hashed = [run["solver"], run["options"], run["ranks"]]
    if run["after"] is not None:
        hashed.append(run["after"]["name"])  # a changed source makes a new run of its dependents
    digest = hashlib.sha1(json.dumps(hashed).encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


def warm_start_source(options):
    """The label in `--warm-start @LABEL` (another run's final model), or None."""
    for i, t in enumerate(options):
        key, eq, value = t.partition("=")
        if key == "--warm-start":
            value = value if eq else (options[i + 1] if i + 1 < len(options) else "")
            return value[1:] if value.startswith("@") else None
    return None


def resolve_warm_start(options, run, out):
    """`--warm-start @LABEL` made the source run's final.rudra in the sweep's folder OUT."""
    if run["after"] is None:
        return options
    model = os.path.join(os.path.abspath(out), run["after"]["name"], "final.rudra")
    resolved = []
    for i, t in enumerate(options):
        if t.startswith("--warm-start=@"):
            t = "--warm-start=" + model
        elif t.startswith("@") and i > 0 and options[i - 1] == "--warm-start":
            t = model
        resolved.append(t)
    return resolved


def stage(run):
    """0 for a run that needs no other; one more than its source's for one that warm-starts."""
    return 0 if run["after"] is None else stage(run["after"]) + 1


# `rudra dist` options that name files or folders.
PATH_OPTIONS = ("--data", "--warm-start", "--timeline", "--node-data-dir", "--auto-cache")


def absolute_paths(options, solver):
    """The solver and the options' paths made absolute against the current directory (the
    submission's), so that a run finds them whatever its working directory."""
    out = list(options)
    for i, t in enumerate(out):
        key, eq, value = t.partition("=")
        if key not in PATH_OPTIONS:
            continue
        if eq and value:
            out[i] = key + "=" + os.path.abspath(value)
        elif not eq and i + 1 < len(out) and out[i + 1]:
            out[i + 1] = os.path.abspath(out[i + 1])
    return out, os.path.abspath(solver)


def state(folder):
    if os.path.exists(os.path.join(folder, "final.rudra")):
        return "done"
    if os.path.exists(os.path.join(folder, "checkpoint.rudra")):
        return "resume"
    return "new"


def start_arguments(folder):
    """What goes in front of a run's arguments: --resume for one with a checkpoint; --overwrite for
    one that stopped before its first (its metrics alone, which rudra dist would refuse to
    replace)."""
    st = state(folder)
    if st == "resume":
        return ["--resume", folder]
    if st == "new" and os.path.exists(os.path.join(folder, "metrics.jsonl")):
        return ["--overwrite"]
    return []


def dist_arguments(run, folder):
    """`rudra dist` arguments of a run, as a fresh run takes them. One that stopped goes on with
    --resume FOLDER in front (its options must agree with the checkpoint's; --epochs may raise
    the total): sweep.py run adds it, rudra-dist.sbatch does it by itself."""
    options = resolve_warm_start(run["options"], run, os.path.dirname(folder))
    options, solver = absolute_paths(options, run["solver"])
    return [solver] + options + ["-o", folder]


def virtual_command(run, folder, rudra, cluster):
    """--virtual: the run on bench/simulate/virtual_cluster.py, its learners on the cluster that
    `cluster` describes (simulate.py's options), trained for real in one process."""
    options, solver = absolute_paths(resolve_warm_start(run["options"], run, os.path.dirname(folder)), run["solver"])
    return [sys.executable, os.path.join(SOURCE, "bench", "simulate", "virtual_cluster.py"), folder,
            "--learners", str(run["ranks"] - 2), "--solver", solver, "--rudra", rudra] + shlex.split(cluster) + options


def virtual_launch(args, folder, rudra):
    """What starts a virtual run given its command `args`: one stopped after its first checkpoint
    goes on from it (to the bytes of a run never stopped); one stopped before starts again."""
    st = state(folder)
    if st == "resume":
        return args[:3] + ["--resume", "--rudra", rudra]
    if st == "new" and os.path.isdir(folder) and os.listdir(folder):
        return args + ["--overwrite"]
    return args


def source_not_done(run, out):
    """Why a run cannot start yet (its warm start's source has no final model), or None."""
    src = run["after"]
    if src is None or state(os.path.join(out, src["name"])) == "done":
        return None
    return (f"run {run['index']} warm-starts from run {src['index']} ([{src['label']}], {src['name']}), "
            f"which has not finished")


def write_manifest(run, folder, args):
    manifest = {"name": run["name"], "grid_line": run["line"], "ranks": run["ranks"],
                "solver": os.path.abspath(run["solver"]), "options": run["options"],
                "arguments": args, "warm_start_from": run["after"]["name"] if run["after"] else None,
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "host": os.uname().nodename, "slurm_job": os.environ.get("SLURM_JOB_ID")}
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(folder, "manifest.json"))


def pick(runs, index):
    if index is None:
        return list(enumerate(runs))
    if not 0 <= index < len(runs):
        raise GridError(f"--index {index}: the grid has runs 0 to {len(runs) - 1}")
    return [(index, runs[index])]


def cmd_list(a):
    runs = parse_grid(a.grid)
    if a.stages:
        # One line per stage, as an sbatch --array list: stage k's runs start from stage k-1's.
        by_stage = {}
        for r in runs:
            by_stage.setdefault(stage(r), []).append(str(r["index"]))
        for k in sorted(by_stage):
            print(",".join(by_stage[k]))
        return
    for i, r in enumerate(runs):
        after = f"\tafter {r['after']['index']}" if r["after"] is not None else ""
        print(f"{i}\t{r['ranks']} ranks\t{r['name']}{after}")


def cmd_command(a):
    runs = parse_grid(a.grid)
    (_, run), = pick(runs, a.index)
    folder = os.path.join(os.path.abspath(a.out), run["name"])
    why = source_not_done(run, a.out)
    if why and state(folder) == "new":
        raise GridError(f"{why}: submit the stages one after another (sweep.py list --stages; "
                        f"tools/slurm/rudra-sweep.sbatch shows how)")
    if a.virtual is not None:
        args = virtual_command(run, folder, os.path.abspath(a.rudra), a.virtual)
        launch, ranks = virtual_launch(args, folder, os.path.abspath(a.rudra)), 1
    else:
        args = launch = start_arguments(folder) + dist_arguments(run, folder)
        ranks = run["ranks"]
    write_manifest(run, folder, args)
    print(ranks)
    print(folder)
    for t in launch:
        print(t)


def cmd_run(a):
    runs = parse_grid(a.grid)
    rudra = os.path.abspath(a.rudra)
    chosen = pick(runs, a.index)
    todo = [(i, r) for i, r in chosen if state(os.path.join(a.out, r["name"])) != "done"]
    print(f"sweep: {len(chosen)} runs in {a.grid}, {len(chosen) - len(todo)} done, {len(todo)} to run", flush=True)
    failed = 0
    for k, (i, run) in enumerate(todo, 1):
        folder = os.path.join(os.path.abspath(a.out), run["name"])
        resume = state(folder) == "resume"
        why = source_not_done(run, a.out)
        if why and not resume:
            failed += 1
            print(f"sweep: [{k}/{len(todo)}] run {i} skipped: {why}", flush=True)
            continue
        if a.virtual is not None:
            args = virtual_command(run, folder, rudra, a.virtual)
            launch = virtual_launch(args, folder, rudra)
        else:
            args = start_arguments(folder) + dist_arguments(run, folder)
            launch = shlex.split(a.launcher) + ["-n", str(run["ranks"]), rudra, "dist"] + args
        write_manifest(run, folder, args)
        log = os.path.join(folder, "run.log")
        print(f"sweep: [{k}/{len(todo)}] run {i} ({run['ranks']} ranks{', resumed' if resume else ''}): "
              f"{run['name']}", flush=True)
        t0 = time.time()
        with open(log, "a") as f:
            rc = subprocess.call(launch, stdout=f, stderr=subprocess.STDOUT)
        took = time.time() - t0
        if a.virtual is not None and os.path.isdir(folder):
            write_manifest(run, folder, args)  # in place of the virtual cluster's own
        if rc == 0 and state(folder) == "done":
            print(f"sweep:   done in {took:.1f} s", flush=True)
        else:
            failed += 1
            tail = open(log, errors="replace").read().splitlines()[-3:]
            print(f"sweep:   exit {rc} after {took:.1f} s ({state(folder)}); {log}:", flush=True)
            for t in tail:
                print(f"sweep:     {t}", flush=True)
    if failed:
        print(f"sweep: {failed} of {len(todo)} runs did not finish; the same command goes on with them", flush=True)
        return 1
    return 0


# Every column of runs.csv: the run's settings (from its metrics' start line and manifest), then
# the epoch line's figures.
SETTINGS = ["run", "protocol", "n", "learners", "batch", "mu_lambda", "mode", "topology", "lr_modulation",
            "base_lr", "momentum", "seed", "epochs_planned", "train_images", "warm_start_from", "backup", "k",
            "max_staleness", "straggler", "momentum_compensation"]
FIGURES = ["epoch", "elapsed_s", "updates", "samples", "test_accuracy", "test_error", "test_loss", "train_loss",
           "staleness_mean", "staleness_max", "images_per_s", "overlap_ratio", "spread", "test_top5",
           "test_top5_error", "dropped"]


def read_jsonl(path):
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass  # a line torn by a kill
    return rows


def option_values(options, name):
    """Every value given to the option, in order ("--name V" or "--name=V")."""
    values = []
    for i, t in enumerate(options):
        if t == name and i + 1 < len(options):
            values.append(options[i + 1])
        elif t.startswith(name + "="):
            values.append(t[len(name) + 1:])
    return values


def option_value(options, name):
    values = option_values(options, name)
    return values[0] if values else ""


def cmd_collect(a):
    out_csv = a.output or os.path.join(a.out, "runs.csv")
    stale_csv = os.path.join(os.path.dirname(out_csv) or ".", "staleness.csv")
    folders = sorted(d for d in os.listdir(a.out) if os.path.exists(os.path.join(a.out, d, "manifest.json")))
    if not folders:
        raise GridError(f"{a.out}: no runs (no folder with manifest.json)")
    rows, hist, missing = [], [], []
    for d in folders:
        folder = os.path.join(a.out, d)
        with open(os.path.join(folder, "manifest.json")) as f:
            manifest = json.load(f)
        metrics = os.path.join(folder, "metrics.jsonl")
        events = read_jsonl(metrics) if os.path.exists(metrics) else []
        starts = [e for e in events if e.get("event") == "start"]
        if not starts:
            missing.append(d)
            continue
        s = starts[0]
        learners = s.get("learners")
        batch = s.get("batch")
        settings = {"run": d, "protocol": s.get("protocol"), "n": s.get("n", ""), "learners": learners,
                    "batch": batch, "mu_lambda": learners * batch if learners and batch else "",
                    "mode": s.get("mode", ""), "topology": (s.get("layout") or {}).get("topology", "base"),
                    "lr_modulation": s.get("lr_modulation", ""), "base_lr": s.get("base_lr", ""),
                    "momentum": s.get("momentum", ""), "seed": option_value(manifest["options"], "--seed"),
                    "epochs_planned": s.get("epochs", ""), "train_images": s.get("train_images", ""),
                    "warm_start_from": manifest.get("warm_start_from") or "", "backup": s.get("backup", ""),
                    "k": s.get("k", ""), "max_staleness": s.get("max_staleness", ""),
                    # A virtual run's slow learners are its cluster's (simulate.py's --straggler).
                    "straggler": s.get("straggler", "") or ",".join(option_values(manifest["options"], "--straggler")),
                    "momentum_compensation": int(bool(s.get("momentum_compensation", False)))}
        seen = set()
        for e in events:
            if e.get("event") != "epoch" or e.get("epoch") in seen:
                continue
            seen.add(e.get("epoch"))
            row = dict(settings)
            for k in FIGURES:
                row[k] = e.get(k, "")
            if e.get("protocol"):
                row["protocol"] = e["protocol"]  # the readable name (e.g. 1-softsync)
            if row["test_accuracy"] != "":
                row["test_error"] = round(1.0 - float(row["test_accuracy"]), 6)
            if row["test_top5"] != "":
                row["test_top5_error"] = round(1.0 - float(row["test_top5"]), 6)
            rows.append(row)
        stale = os.path.join(folder, "staleness.json")
        if os.path.exists(stale):
            with open(stale) as f:
                st = json.load(f)
            for sigma, count in enumerate(st.get("histogram", [])):
                if count:
                    hist.append({"run": d, "protocol": st.get("protocol", settings["protocol"]),
                                 "learners": learners, "n": settings["n"], "sigma": sigma, "count": count})
    # A warm-started run's clock goes on from its source's: its elapsed_s counts the source's
    # training too, so that error against time compares whole trainings (the paper's Figure 8).
    last_elapsed, source_of = {}, {}
    for r in rows:
        last_elapsed[r["run"]] = max(last_elapsed.get(r["run"], 0.0), float(r["elapsed_s"] or 0.0))
        source_of[r["run"]] = r["warm_start_from"]

    def offset(run, seen=()):
        src = source_of.get(run, "")
        if not src or src in seen or src not in last_elapsed:
            return 0.0
        return last_elapsed[src] + offset(src, seen + (run,))
    shifts = {name: offset(name) for name in last_elapsed}
    for r in rows:
        if shifts[r["run"]] and r["elapsed_s"] != "":
            r["elapsed_s"] = round(float(r["elapsed_s"]) + shifts[r["run"]], 3)
    for path, cols, data in ((out_csv, SETTINGS + FIGURES, rows),
                             (stale_csv, ["run", "protocol", "learners", "n", "sigma", "count"], hist)):
        tmp = path + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
            w.writeheader()
            w.writerows(data)
        os.replace(tmp, path)
    print(f"collect: {len(folders) - len(missing)} runs, {len(rows)} epoch rows -> {out_csv}; "
          f"{len(hist)} staleness rows -> {stale_csv}")
    for d in missing:
        print(f"collect: {d}: no metrics yet (not started, or killed before its first line)")
    return 0


def cmd_plot(a):
    try:
        import matplotlib  # noqa: F401  (needed here only)
    except ImportError:
        # Another python3 first in PATH (a pyenv, a venv) lacks Debian's python3-matplotlib,
        # which tools/setup.sh installs for /usr/bin/python3.
        if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:])
        raise GridError("plot needs matplotlib (Debian: apt-get install python3-matplotlib)")
    sys.path.insert(0, HERE)
    import plots
    return plots.draw(a.out, a.figures or os.path.join(a.out, "figures"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("list", help="the runs of a grid file, numbered")
    s.add_argument("grid")
    s.add_argument("--stages", action="store_true",
                   help="print the runs' numbers by stage, one line each (warm starts come a stage later)")
    s.set_defaults(fn=cmd_list)
    for name, fn, text in (("run", cmd_run, "run every run not done, one after another"),
                           ("command", cmd_command, "print one run's rank count, folder and arguments")):
        s = sub.add_parser(name, help=text)
        s.add_argument("grid")
        s.add_argument("out", help="the sweep's folder (one folder per run in it)")
        s.add_argument("--index", type=int, required=name == "command", help="run only this run (from 0)")
        s.add_argument("--rudra", default=os.path.join(SOURCE, "build", "rudra"), help="the rudra binary")
        s.add_argument("--virtual", metavar="CLUSTER",
                       help="run each line on the virtual cluster (bench/simulate/virtual_cluster.py) in one "
                            "process, the cluster described by simulate.py's options in one string, e.g. "
                            "'--compute-ms 6.5 --model-bytes 334032'; a line's own such options override these")
        if name == "run":
            s.add_argument("--launcher", default="mpiexec -disable-auto-cleanup",
                           help="MPI launcher, given -n RANKS (default mpiexec -disable-auto-cleanup)")
        s.set_defaults(fn=fn)
    s = sub.add_parser("collect", help="every run's epochs in one CSV")
    s.add_argument("out")
    s.add_argument("-o", "--output", help="the CSV (default OUT/runs.csv)")
    s.set_defaults(fn=cmd_collect)
    s = sub.add_parser("plot", help="the paper's figures from OUT/runs.csv and OUT/staleness.csv")
    s.add_argument("out")
    s.add_argument("--figures", help="folder of the PNG files (default OUT/figures)")
    s.set_defaults(fn=cmd_plot)
    a = p.parse_args()
    try:
        return a.fn(a) or 0
    except GridError as e:
        print(f"sweep: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
