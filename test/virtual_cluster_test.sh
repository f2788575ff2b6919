#!/usr/bin/env bash
# The virtual cluster (bench/simulate/virtual_cluster.py): the simulator's schedule of a described
# cluster, computed for real by `rudra dist --replay` in one process, for the PS and for the adv
# and adv* trees (whose leaf PSs send sums), and with slow learners, backups, K-sync and a
# staleness bound (the gradients the PS drops in the record too). The same arguments give the
# same bytes, another seed others; the staleness the rule counts is the simulator's, histogram for
# histogram, dropped for dropped; the epoch lines carry the simulated time; one stopped by a
# signal goes on from its checkpoint to the same bytes; the sweep's collection reads the output
# as a run's.
# Usage: virtual_cluster_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
mpi_test_setup
vc=$src/bench/simulate/virtual_cluster.py
cluster=(--compute-ms 6.5 --model-bytes 334032 --cores 2 --crowding-cost 0.03 --latency-us 1000 --message-us 2000)

wait_for() {  # wait_for FILE PATTERN: at most 60 s
  for _ in $(seq 1200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}
virtual() {  # virtual NAME ARGS...
  local name=$1; shift
  if timeout 300 python3 "$vc" "$work/$name" --rudra "$rudra" --solver "$solver" --data "$data" --batch 16 --epochs 2 \
      "${cluster[@]}" "$@" >"$work/$name.log" 2>&1; then pass
  else fail "$name: exit $?"; tail -10 "$work/$name.log"; fi
}

virtual a1 --learners 8 --protocol async --momentum-compensation --base-lr 0.002 --seed 1
virtual a1_again --learners 8 --protocol async --momentum-compensation --base-lr 0.002 --seed 1
virtual a2 --learners 8 --protocol async --momentum-compensation --base-lr 0.002 --seed 2
virtual s4 --learners 12 --protocol softsync --n 4 --mode overlap --seed 1
# Rudra-adv and adv*: leaf PSs of 4 learners send sums, which the replay gives to the rule whole.
virtual adv --learners 8 --protocol softsync --n 1 --topology adv --learners-per-node 4 --seed 1
virtual adv_again --learners 8 --protocol softsync --n 1 --topology adv --learners-per-node 4 --seed 1
virtual advstar_hs --learners 8 --protocol hardsync --topology 'adv*' --leaf-sizes 3,5 --seed 1
# 2-softsync over leaves of 3 and 5 learners: shares of 1 and 2 gradients, and an update takes a
# sum whole, so some take 5 gradients where c is 4 (the rule then counts what the simulator did).
virtual advstar_s2 --learners 8 --protocol softsync --n 2 --topology 'adv*' --leaf-sizes 3,5 --seed 1
# Slow learners: hardsync with a backup and a learner 3 times slower, K-sync with every learner
# sometimes twice as slow, async with a staleness bound. The record has the gradients the PS
# dropped too, and the rule drops the same ones.
virtual backup --learners 8 --protocol hardsync --backup 2 --straggler 0:3 --seed 1
virtual ksync --learners 8 --protocol ksync --k 6 --straggler all:2:0.2 --seed 1
virtual bound --learners 8 --protocol async --max-staleness 4 --straggler 1:3 --base-lr 0.002 --seed 1
grep -q "^virtual cluster: 2-backup-hardsync, 8 learners" "$work/backup.log" && pass || fail "backup: the simulator's line"
cmp -s "$work/adv/final.rudra" "$work/adv_again/final.rudra" && pass || fail "adv: final.rudra differs between two runs"
cmp -s "$work/adv/final.rudra" "$work/a1/final.rudra" && fail "adv: a1's weights" || pass
# Each update of 8 gradients is two sums of 4: the record says so, line by line.
[ "$(grep -c '^sum 4$' "$work/adv/schedule.txt")" = 30 ] && [ "$(grep -c '^g ' "$work/adv/schedule.txt")" = 120 ] &&
  pass || fail "adv: 30 sums of 4 gradients in the record"
grep -q '^sum 3$' "$work/advstar_hs/schedule.txt" && grep -q '^sum 5$' "$work/advstar_hs/schedule.txt" && pass ||
  fail "advstar_hs: sums of the leaves' 3 and 5 learners"
grep -q '"topology":"adv\*"' "$work/advstar_hs/schedule.txt" && grep -q "staleness 0.00 (max 0)" "$work/advstar_hs.log" &&
  pass || fail "advstar_hs: adv* in the settings, hardsync's staleness 0"
for name in backup ksync bound; do
  python3 -c "import json,sys; sys.exit(0 if json.load(open('$work/$name/staleness.json'))['dropped'] > 0 else 1)" &&
    pass || fail "$name: no gradient dropped"
done
grep -q "^replay: 124 gradients, 28 updates" "$work/advstar_s2.log" && pass ||
  { fail "advstar_s2: 124 gradients in 28 updates (c 4)"; tail -3 "$work/advstar_s2.log"; }
timeout 60 python3 "$vc" "$work/adv_pg" --rudra "$rudra" --solver "$solver" --data "$data" --batch 16 --learners 8 \
  --topology adv --lr-modulation per-gradient "${cluster[@]}" >"$work/adv_pg.log" 2>&1
[ $? = 2 ] && grep -q "per-gradient weighs each gradient before the sum" "$work/adv_pg.log" && pass ||
  fail "adv with per-gradient modulation: refused"
for f in final.rudra staleness.json schedule.txt; do
  cmp -s "$work/a1/$f" "$work/a1_again/$f" && pass || fail "a1: $f differs between two runs of the same arguments"
done
cmp -s "$work/a1/final.rudra" "$work/a2/final.rudra" && fail "a1, a2: another seed, the same weights" || pass
grep -q "^virtual cluster: async, 8 learners, base: 120 updates in [0-9.]* simulated s" "$work/a1.log" && pass ||
  fail "a1: the simulator's line"
# The rule's staleness (computed by rudra from the schedule) is the simulator's, and the last
# epoch ends at the simulated time of the schedule's last gradient.
for name in a1 s4 adv advstar_hs advstar_s2 backup ksync bound; do
  python3 - "$work/$name" <<'PY' && pass || fail "$name: staleness or time differ from the simulator's"
import json, sys
run = sys.argv[1]
head = json.loads(open(run + "/schedule.txt").readline())
stale = json.load(open(run + "/staleness.json"))
epochs = [json.loads(l) for l in open(run + "/metrics.jsonl") if '"event":"epoch"' in l]
last_time = float(open(run + "/schedule.txt").read().splitlines()[-1].split()[4])
sim = head["simulated"]
ok = stale["histogram"] == sim["histogram"] and stale["dropped"] == sim["dropped"] and len(epochs) == 2 and abs(epochs[-1]["elapsed_s"] - last_time) < 1e-9
ok = ok and abs(last_time - sim["seconds"]) < 1e-5 and epochs[0]["elapsed_s"] < epochs[1]["elapsed_s"]
if not ok:
    print(stale["histogram"], sim["histogram"], stale["dropped"], sim["dropped"], [e["elapsed_s"] for e in epochs],
          last_time, sim["seconds"])
sys.exit(0 if ok else 1)
PY
done
grep -q '"event":"start".*"virtual_cluster":"' "$work/s4/metrics.jsonl" && pass || fail "s4: the start line names the virtual cluster"
timeout 60 "$rudra" test "$solver" "$work/s4/final.rudra" --data "$data" >/dev/null 2>&1 && pass || fail "s4: final.rudra readable"
# Stopped by a signal after its first epoch (the script's process becomes rudra's), it checkpoints
# and exits 130; --resume goes on to the bytes of the run never stopped, its metrics with each
# epoch once. (Niced, so that this shell signals it before its second epoch ends.)
stop_and_resume() {  # stop_and_resume NAME_OF_THE_RUN_NEVER_STOPPED ARGS...
  local ref=$1 name=$1_stopped; shift
  nice -n 10 python3 "$vc" "$work/$name" --rudra "$rudra" --solver "$solver" --data "$data" --batch 16 --epochs 2 \
    "${cluster[@]}" "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  wait_for "$work/$name.log" "^epoch 1/2" || fail "$name: no epoch 1"
  kill -TERM $pid
  wait $pid
  local rc=$?
  [ $rc = 130 ] && [ -s "$work/$name/checkpoint.rudra" ] && pass ||
    { fail "$name: exit $rc, not 130 with a checkpoint"; tail -5 "$work/$name.log"; }
  if timeout 300 python3 "$vc" "$work/$name" --resume --rudra "$rudra" >"$work/$name.resumed.log" 2>&1; then pass
  else fail "$name: --resume exit $?"; tail -5 "$work/$name.resumed.log"; fi
  for f in final.rudra staleness.json; do
    cmp -s "$work/$ref/$f" "$work/$name/$f" && pass || fail "$name: $f differs from $ref's after the resume"
  done
  [ "$(grep -c '"event":"epoch"' "$work/$name/metrics.jsonl")" = 2 ] &&
    grep -q '"event":"resume"' "$work/$name/metrics.jsonl" && pass || fail "$name: 2 epoch lines and a resume line"
  ls "$work/$name" | grep -q -e checkpoint -e replay-versions && fail "$name: its checkpoint left after the end" || pass
}
stop_and_resume a1 --learners 8 --protocol async --momentum-compensation --base-lr 0.002 --seed 1
stop_and_resume adv --learners 8 --protocol softsync --n 1 --topology adv --learners-per-node 4 --seed 1
timeout 60 python3 "$vc" "$work/s4" --resume --rudra "$rudra" >"$work/no_resume.log" 2>&1
[ $? != 0 ] && grep -q "no checkpoint.rudra to go on from" "$work/no_resume.log" && pass ||
  fail "--resume of a finished virtual run: refused"
# The sweep's collection reads the virtual runs' folders as runs': 13 runs of 2 epochs.
if python3 "$src/tools/sweep/sweep.py" collect "$work" >"$work/collect.log" 2>&1; then pass
else fail "sweep.py collect"; cat "$work/collect.log"; fi
grep -q "^collect: 13 runs, 26 epoch rows" "$work/collect.log" && pass || { fail "collect: 13 runs, 26 epoch rows"; cat "$work/collect.log"; }
# The collection names each run's method, tree and slow learners as a run's.
python3 - "$work/runs.csv" <<'PY' && pass || fail "collect: backup, straggler, bound and topology of the virtual runs"
import csv, sys
rows = {r["run"]: r for r in csv.DictReader(open(sys.argv[1]))}
want = {"backup": {"backup": "2", "straggler": "0:3", "protocol": "2-backup-hardsync"},
        "bound": {"max_staleness": "4", "straggler": "1:3"}, "ksync": {"k": "6", "straggler": "all:2:0.2"},
        "adv": {"topology": "adv"}, "advstar_hs": {"topology": "adv*"}, "a1": {"topology": "base", "straggler": ""}}
bad = [(run, k, rows[run][k], v) for run, fields in want.items() for k, v in fields.items() if rows[run][k] != v]
print(bad) if bad else None
sys.exit(1 if bad else 0)
PY
# Its folder holds a run: a second virtual run there is refused.
timeout 60 python3 "$vc" "$work/s4" --rudra "$rudra" --solver "$solver" --data "$data" --batch 16 --learners 4 \
  "${cluster[@]}" >"$work/again.log" 2>&1
[ $? != 0 ] && grep -q "holds a run already" "$work/again.log" && pass || fail "a second run into s4's folder"
finish
