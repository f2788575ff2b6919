#!/usr/bin/env bash
# MPI runs of `rudra dist` (separate processes under mpiexec, oversubscribed on this machine):
# every protocol and mode (all-reduce included) trains on a small generated IDX set, ends cleanly within a bound, and
# leaves metrics, staleness and a final snapshot that `rudra test` reads; bad settings fail
# with a clear error instead of hanging.
# Usage: dist_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
mpi_test_setup

run() {  # run NAME RANKS ARGS... : a distributed run that must succeed within 180 s and log $epochs epochs
  local name=$1 ranks=$2; shift 2
  local out=$work/$name
  if timeout -k 5 180 mpiexec -n "$ranks" "$rudra" dist "$solver" --data "$data" --epochs 2 --batch 16 -o "$out" "$@" \
      >"$work/$name.log" 2>&1; then pass; else fail "$name: exit $?"; tail -20 "$work/$name.log"; return; fi
  [ "$(grep -c '"event":"epoch"' "$out/metrics.jsonl")" = "${epochs:-2}" ] && pass ||
    { fail "$name: ${epochs:-2} epoch lines"; tail -3 "$work/$name.log"; grep -v '"traffic"' "$out/metrics.jsonl" | cut -c1-300; }
  grep -q '"staleness_mean"' "$out/metrics.jsonl" && grep -q '"overlap_ratio"' "$out/metrics.jsonl" && pass ||
    fail "$name: epoch lines carry staleness and overlap"
  [ -s "$out/staleness.json" ] && pass || fail "$name: staleness.json"
  if timeout 60 "$rudra" test "$solver" "$out/final.rudra" --data "$data" >"$work/$name.test" 2>&1; then pass
  else fail "$name: rudra test reads final.rudra"; cat "$work/$name.test"; fi
}

run hardsync 5 --protocol hardsync
# Hardsync is deterministic: the same run again ends with the same weights, bit for bit.
run hardsync_again 5 --protocol hardsync
cmp -s "$work/hardsync/final.rudra" "$work/hardsync_again/final.rudra" && pass ||
  fail "hardsync: two runs with the same seed end with different weights"
grep -q '"max":0,' "$work/hardsync/staleness.json" && pass || fail "hardsync: staleness always 0"
# With dropout, a run resumed after its first epoch ends with the straight run's weights: each
# learner's masks go on from where they were.
dropout_net "$work/dropnet" && pass || fail "dropnet: no dropout layer"
solver=$work/dropnet/cifar10_full_28_solver.prototxt run drop_straight 4 --protocol hardsync
solver=$work/dropnet/cifar10_full_28_solver.prototxt epochs=1 run drop_resumed 4 --protocol hardsync --epochs 1
if timeout -k 5 180 mpiexec -n 4 "$rudra" dist --resume "$work/drop_resumed" --epochs 2 >"$work/drop_resumed2.log" 2>&1 &&
    cmp -s "$work/drop_straight/final.rudra" "$work/drop_resumed/final.rudra"; then pass
else fail "hardsync with dropout: the resumed run's weights differ from the straight run's"; tail -3 "$work/drop_resumed2.log"; fi
# Traffic: a last line with every rank's counts; the PS answered pulls with weights or "nothing newer".
# Each rank's start-up time and resident memory come first.
tail -1 "$work/hardsync/metrics.jsonl" | grep -q '^{"event":"traffic","ranks":\[{"rank":0,"role":"parameter server","ready_s":[0-9.]*,"startup_s":[0-9.]*,"resident_mb":[1-9][0-9.]*,"private_mb":[1-9][0-9.]*,"sent_messages":[1-9][0-9]*,[^}]*"weight_replies":[1-9][0-9]*,"empty_replies":[0-9]*},{"rank":1,"role":"statistics server","ready_s".*{"rank":4,"role":"learner","ready_s"' &&
  pass || { fail "hardsync: the traffic line"; tail -1 "$work/hardsync/metrics.jsonl"; }
acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/hardsync.test")
perl -e "exit !($acc > 0.3)" && pass || fail "hardsync learns (test accuracy $acc)"
# The node's ranks mapped one copy of the data set from /dev/shm, and its file is gone.
[ -z "$(ls /dev/shm/rudra-data-* 2>/dev/null)" ] && pass || fail "the node's shared copy of the data set was left in /dev/shm"
# Where no copy can be shared, each rank holds its own, and says why.
run own_copies 4 --protocol async --node-data-dir "$work/no-such-dir"
grep -q "^rank 0: the node's ranks do not share one copy of the data set (.*no-such-dir/rudra-data-.*: cannot create a file: No such file or directory); each holds its own$" \
  "$work/own_copies.log" && pass || fail "own_copies: the reason for not sharing"
run softsync1 5 --protocol softsync --n 1
# What a person sees: a readable line per epoch (JSON only with --json, below), no progress bar
# in a log (progress lines come every 30 s: this run is shorter).
grep -q '^epoch 2/2: test accuracy [0-9.]*, top-5 [0-9.]* (loss [0-9.]*), train loss [0-9.]*, [0-9,]* images/s, staleness [0-9.]* (max [0-9]*), overlap [0-9.]*, [0-9:]* elapsed$' \
  "$work/softsync1.log" && ! grep -q '"event":"epoch"' "$work/softsync1.log" && ! grep -q $'\r' "$work/softsync1.log" &&
  pass || { fail "softsync1: readable epoch lines"; grep epoch "$work/softsync1.log"; }
# --wire bf16: the PS takes half the bytes per update, and answers pulls with half the bytes;
# hardsync still learns (1-softsync on this small set fails to learn in some runs at either wire).
run hardsync_bf16 5 --protocol hardsync --wire bf16
per_update() {  # per_update RUN: the PS's bytes received per update and sent per reply with weights, at the last epoch
  python3 -c 'import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if "\"event\":\"epoch\"" in l][-1]
t = e["rank0_traffic"]
print(t["received_bytes"] / e["updates"], t["sent_bytes"] / t["weight_replies"])' "$work/$1/metrics.jsonl"
}
read -r got32 sent32 <<<"$(per_update hardsync)"
read -r got16 sent16 <<<"$(per_update hardsync_bf16)"
echo "wire fp32: $got32 bytes per update received, $sent32 per reply; bf16: $got16, $sent16"
awk -v a="$got32" -v b="$got16" -v c="$sent32" -v d="$sent16" 'BEGIN { r = b / a; s = d / c; exit !(r > 0.49 && r < 0.51 && s > 0.49 && s < 0.51) }' &&
  pass || fail "--wire bf16 halves the PS's bytes per update and per reply"
acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/hardsync_bf16.test")
perl -e "exit !($acc > 0.3)" && pass || fail "hardsync with --wire bf16 learns (test accuracy $acc)"
# A replay rounds as the run's ranks did: the weights each learner received and the gradients it
# sent, in BF16. It ends with the run's weights, bit for bit; with --wire fp32 it computes the
# same schedule unrounded, to other weights, and says it does not compare them. A record with
# relayed sums is refused with --wire bf16 (the relays' rounding of their sums is not repeated).
if timeout 120 "$rudra" dist --replay "$work/hardsync_bf16" -o "$work/hardsync_bf16_replay" >"$work/hardsync_bf16_replay.log" 2>&1 &&
  grep -q "; wire bf16; output $work/hardsync_bf16_replay$" "$work/hardsync_bf16_replay.log" &&
  grep -q "^replay: identical to the run's $work/hardsync_bf16/final.rudra, bit for bit$" "$work/hardsync_bf16_replay.log"
then pass; else fail "replay of a --wire bf16 run"; tail -3 "$work/hardsync_bf16_replay.log"; fi
if timeout 120 "$rudra" dist --replay "$work/hardsync_bf16" --wire fp32 -o "$work/hardsync_bf16_as_fp32" \
    >"$work/hardsync_bf16_as_fp32.log" 2>&1 &&
  grep -q "^replay: computed with --wire fp32, the run with bf16: not compared with the run's weights$" \
    "$work/hardsync_bf16_as_fp32.log" && ! cmp -s "$work/hardsync_bf16/final.rudra" "$work/hardsync_bf16_as_fp32/final.rudra"
then pass; else fail "replay of a --wire bf16 run with --wire fp32"; tail -3 "$work/hardsync_bf16_as_fp32.log"; fi
{ head -1 "$work/hardsync_bf16/schedule.txt"; echo "sum 1"; sed -n 2p "$work/hardsync_bf16/schedule.txt"; } |
  sed '1s/"events":[0-9]*/"events":2/' >"$work/bf16_sum.txt"
timeout 60 "$rudra" dist --replay "$work/bf16_sum.txt" -o "$work/bf16_sum_replay" >"$work/bf16_sum.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "bf16_sum.txt: the run's relays summed gradients, and with --wire bf16 they round their sums again" \
  "$work/bf16_sum.log" && pass || { fail "a relayed record with --wire bf16: exit $rc"; tail -3 "$work/bf16_sum.log"; }
run easgd_bf16 5 --protocol easgd --wire bf16
# A resumed run keeps the checkpoint's wire: EASGD stopped after its first epoch goes on in BF16.
epochs=1 run easgd_bf16_resumed 5 --protocol easgd --wire bf16 --epochs 1
if timeout -k 5 180 mpiexec -n 5 "$rudra" dist --resume "$work/easgd_bf16_resumed" --epochs 2 \
    >"$work/easgd_bf16_resumed2.log" 2>&1; then pass; else fail "easgd_bf16_resumed: the resume failed"; fi
grep -q '"event":"start".*"wire":"bf16"' "$work/easgd_bf16_resumed/metrics.jsonl" &&
  grep -q '"event":"resume".*"wire":"bf16"' "$work/easgd_bf16_resumed/metrics.jsonl" && pass ||
  fail "easgd_bf16_resumed: the start and resume lines say wire bf16"
run softsyncL 5 --protocol softsync --n 3 --lr-modulation per-gradient --ps-receive-ahead on
run async 5 --protocol async --mode overlap --momentum 0.5 --json --progress bar
[ "$(grep -c '"event":"epoch"' "$work/async.log")" = 2 ] && grep -q $'\r\033\[Kepoch 1 \[' "$work/async.log" && pass ||
  fail "async: --json prints the metrics lines, --progress bar draws the bar"
grep -q '"momentum":0.5' "$work/async/metrics.jsonl" && pass || fail "async: --momentum 0.5 in the start line"
run overlap1 6 --protocol softsync --n 1 --mode overlap --timeline "$work/overlap1.json"
# The timeline: one Chrome trace of every rank's spans, the ranks' part files merged away.
perl -MJSON::PP -e '
  local $/; open(my $f, "<", $ARGV[0]) or die; my $t = decode_json(<$f>);
  my %n; for my $e (@{$t->{traceEvents}}) { $n{"$e->{pid} $e->{name}"}++ if $e->{ph} eq "X" }
  for my $k ("0 gradient (and update)", "1 test the epoch\x27s weights", "2 compute", "2 pull", "2 push", "5 compute") {
    die "no \"$k\" spans\n" unless $n{$k} }
  # The PS names the learner of each gradient and reply (ranks 2-5).
  for my $e (@{$t->{traceEvents}}) {
    next unless $e->{ph} eq "X" && $e->{pid} == 0 && $e->{name} =~ /^(gradient|reply)/;
    my $p = $e->{args}{peer} // -1; die "$e->{name}: peer $p\n" unless $p >= 2 && $p <= 5 } ' "$work/overlap1.json" && [ -z "$(ls "$work"/overlap1.json.rank-* 2>/dev/null)" ] &&
  grep -q 'timeline: .*overlap1.json (6 of 6 ranks' "$work/overlap1.log" && pass || fail "overlap1: the timeline"
# `auto` is measured once for the learners: the first one measures and the others take its choices.
run auto 5 --protocol async --conv-backend auto --auto-cache "$work/auto-cache.json"
[ "$(grep -c 'rank 2: --conv-backend auto for the learners: auto,conv1=' "$work/auto.log")" = 1 ] && pass ||
  fail "auto: rank 2 sends its choices once"
grep -q '"mb16ic1ih28' "$work/auto-cache.json" && grep -q '"mb100ic1ih28' "$work/auto-cache.json" && pass ||
  fail "auto: the cache holds the learners' shapes and the statistics server's"
run many 16 --protocol softsync --n 2 --wait-sleep-us 50

# Rudra-adv: nodes of 4 ranks, a leaf PS on each ({0,1,2,3} {4..7} {8..11}: leaves 2, 4, 8), the
# root counting every relayed gradient; hardsync exact and never stale, the layout in the metrics.
run adv_hardsync 12 --protocol hardsync --topology adv --ranks-per-node 4
grep -q '"max":0,' "$work/adv_hardsync/staleness.json" && pass || fail "adv_hardsync: staleness always 0"
head -1 "$work/adv_hardsync/metrics.jsonl" | grep -q '"layout":{"topology":"adv","fan_out":0,"ranks":\[{"rank":0,"role":"root parameter server","node":0},{"rank":1,"role":"statistics server","node":0},{"rank":2,"role":"leaf parameter server","node":0,"parent":0},{"rank":3,"role":"learner","node":0,"parent":2},{"rank":4,"role":"leaf parameter server","node":1,"parent":0}' &&
  pass || { fail "adv_hardsync: the layout in the start line"; head -1 "$work/adv_hardsync/metrics.jsonl"; }
grep -q '^  node 2: rank 8 leaf parameter server (parent 0), learners 9 10 11$' "$work/adv_hardsync.log" && pass ||
  fail "adv_hardsync: the layout printed at start"
# The root took sums from its 3 leaves, one per leaf and update (hardsync), never a learner's gradient.
perl -MJSON::PP -e '
  my ($updates, $r0); open(my $f, "<", $ARGV[0]) or die;
  while (<$f>) { my $j = decode_json($_); $updates = $j->{updates} if ($j->{event} // "") eq "epoch";
                 $r0 = $j->{ranks}[0] if ($j->{event} // "") eq "traffic" }
  die "role $r0->{role}\n" unless $r0->{role} eq "root parameter server";
  # per update: 3 sums and 3 pulls in, 3 weight replies out (and the statistics server: a few)
  my $per = $r0->{received_messages} / $updates;
  die "received $per messages per update\n" unless $per >= 5.5 && $per < 7.5;' "$work/adv_hardsync/metrics.jsonl" &&
  pass || fail "adv_hardsync: rank 0 hears only its leaves"
run adv_softsync 12 --protocol softsync --n 1 --topology adv --ranks-per-node 4 --fan-out 1 --mode overlap
run adv_async 12 --protocol async --topology adv --ranks-per-node 4 --mode overlap
# The leaf PSs add the gradients, in their order: no schedule is recorded, and a replay says so.
[ ! -e "$work/adv_async/schedule.txt" ] && pass || fail "adv_async: a schedule where the leaf PSs add the gradients"
timeout 60 "$rudra" dist --replay "$work/adv_async" 2>&1 | grep -q "adv_async/schedule.txt: no schedule record there" &&
  pass || fail "adv_async: --replay says there is no schedule"
# Every topology gives its learners the same samples: hardsync with the same 7 learners under base,
# adv and adv* ends with the same model (to rounding: the leaves add first), so the same test loss.
run hardsync7 9 --protocol hardsync
run advstar_hardsync 12 --protocol hardsync --topology 'adv*' --ranks-per-node 4
last_loss() { perl -MJSON::PP -ne '$l = decode_json($_)->{test_loss} if /"event":"epoch"/; END { print $l }' "$work/$1/metrics.jsonl"; }
for other in adv_hardsync advstar_hardsync; do
  perl -e 'exit !(abs($ARGV[0] - $ARGV[1]) <= 1e-3 * abs($ARGV[0]) && $ARGV[0] > 0)' "$(last_loss hardsync7)" "$(last_loss $other)" &&
    pass || fail "$other: test loss $(last_loss $other), base's $(last_loss hardsync7)"
done
tail -1 "$work/adv_softsync/metrics.jsonl" | grep -q '{"rank":2,"role":"inner parameter server".*{"rank":8,"role":"leaf parameter server"' &&
  pass || fail "adv_softsync: a chain of leaves with --fan-out 1"
# --wire bf16 on the trees: the leaves' sums come up and the weights go down (adv: through the
# leaves; adv*: down the broadcast tree) in half the bytes (the root's other messages, the
# epochs' FP32 weights to the statistics server, add a little to what it sends), and the same
# samples end at nearly the same loss.
run adv_hardsync_bf16 12 --protocol hardsync --topology adv --ranks-per-node 4 --wire bf16
run advstar_hardsync_bf16 12 --protocol hardsync --topology 'adv*' --ranks-per-node 4 --wire bf16
for t in adv advstar; do
  read -r got32 sent32 <<<"$(per_update ${t}_hardsync)"
  read -r got16 sent16 <<<"$(per_update ${t}_hardsync_bf16)"
  echo "$t wire fp32: $got32 bytes per update received, $sent32 per version sent; bf16: $got16, $sent16"
  awk -v a="$got32" -v b="$got16" -v c="$sent32" -v d="$sent16" 'BEGIN { r = b / a; s = d / c; exit !(r > 0.49 && r < 0.51 && s > 0.49 && s < 0.53) }' &&
    pass || fail "${t}_hardsync --wire bf16 halves the root's bytes per update and per version"
  perl -e 'exit !(abs($ARGV[0] - $ARGV[1]) <= 0.05 * abs($ARGV[0]) && $ARGV[0] > 0)' "$(last_loss ${t}_hardsync)" \
    "$(last_loss ${t}_hardsync_bf16)" && pass ||
    fail "${t}_hardsync_bf16: test loss $(last_loss ${t}_hardsync_bf16), FP32's $(last_loss ${t}_hardsync)"
done
# A chain of leaves (a sum of sums) in BF16.
run adv_softsync_bf16 12 --protocol softsync --n 1 --topology adv --ranks-per-node 4 --fan-out 1 --mode overlap --wire bf16
# Rudra-adv*: the weights go down a broadcast tree over the learners (a chain with fan-out 1:
# rank 0 -> 3 -> 5 -> 6 -> 7 -> 9 -> 10 -> 11); the leaves take no weights.
run advstar 12 --protocol softsync --n 1 --topology 'adv*' --ranks-per-node 4 --broadcast-fan-out 1
head -1 "$work/advstar/metrics.jsonl" | grep -q '"topology":"adv\*","fan_out":0,"broadcast_fan_out":1,.*{"rank":6,"role":"learner","node":1,"parent":4,"broadcast_parent":5}' &&
  pass || { fail "advstar: the broadcast tree in the layout"; head -1 "$work/advstar/metrics.jsonl"; }
perl -MJSON::PP -e '
  my ($r, $e); open(my $f, "<", $ARGV[0]) or die;
  while (<$f>) { my $j = decode_json($_); $e = $j if ($j->{event} // "") eq "epoch";
                 $r = $j->{ranks} if ($j->{event} // "") eq "traffic" }
  my $versions = $r->[0]{weight_replies};
  die "no versions sent\n" unless $versions >= 2;
  die "rank 0 sent $r->[0]{sent_messages} messages for $versions versions\n" if $r->[0]{sent_messages} > $versions + 10;
  # each learner but the last forwarded every version it received (and the stop)
  for my $l (3, 5, 6, 7) { die "rank $l forwarded $r->[$l]{sent_messages}\n" unless $r->[$l]{sent_messages} >= $versions }
  die "leaf 2 answered pulls\n" if ($r->[2]{weight_replies} // 0) > 0;
  die "overlap $e->{overlap_ratio}\n" unless $e->{overlap_ratio} > 0.5;' "$work/advstar/metrics.jsonl" &&
  pass || fail "advstar: the broadcast carried the weights"

# All-reduce, no PS: rank 0 and ranks 2-3 learn, rank 1 tests. Deterministic, and it learns.
allreduce() {  # allreduce NAME [ARGS...]
  local name=$1; shift
  if timeout -k 5 180 mpiexec -n 4 "$rudra" dist "$solver" --data "$data" --epochs 2 --batch 16 --protocol allreduce \
      -o "$work/$name" "$@" >"$work/$name.log" 2>&1; then pass; else fail "$name: exit $?"; tail -20 "$work/$name.log"; fi
  set -- "$name"
  [ "$(grep -c '"event":"epoch","protocol":"allreduce"' "$work/$1/metrics.jsonl")" = 2 ] && pass || fail "$1: 2 epoch lines"
}
allreduce allreduce
grep -q 'allreduce: 3 learners' "$work/allreduce.log" && pass || fail "allreduce: 3 learners"
# 40 steps of sums, each learner contributing its gradients: at least 40 x the arena's bytes.
tail -1 "$work/allreduce/metrics.jsonl" | grep -q '{"rank":2,"role":"learner",[^}]*"sent_messages":[0-9]*,"sent_bytes":[0-9]*,"received_messages":[0-9]*,"received_bytes":[0-9]*,"sums":[0-9]*,"sum_bytes":[0-9]\{8,\}}' &&
  pass || { fail "allreduce: rank 2's sums in the traffic line"; tail -1 "$work/allreduce/metrics.jsonl"; }
if timeout 60 "$rudra" test "$solver" "$work/allreduce/final.rudra" --data "$data" >"$work/allreduce.test" 2>&1; then pass
else fail "allreduce: rudra test reads final.rudra"; cat "$work/allreduce.test"; fi
acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/allreduce.test")
perl -e "exit !(${acc:-0} > 0.3)" && pass || fail "allreduce learns (test accuracy $acc)"
allreduce allreduce_again
cmp -s "$work/allreduce/final.rudra" "$work/allreduce_again/final.rudra" && pass ||
  fail "allreduce: two runs with the same seed end with different weights"
rank_bytes() {  # rank_bytes RUN RANK FIELD: a counter of the traffic line
  python3 -c 'import json, sys
t = json.loads(open(sys.argv[1]).readlines()[-1])
print([r for r in t["ranks"] if r["rank"] == int(sys.argv[2])][0][sys.argv[3]])' "$work/$1/metrics.jsonl" "$2" "$3"
}
halved() {  # halved FP32_BYTES BF16_BYTES WHAT
  awk -v a="$1" -v b="$2" 'BEGIN { r = b / a; exit !(r > 0.49 && r < 0.51) }' && pass || fail "$3: $1 bytes with fp32, $2 with bf16"
}
# --wire bf16: the sums carry BF16 (half the bytes), the learners' models still agree at every
# epoch's check (each partial sum rounded alike everywhere), and it learns.
allreduce allreduce_bf16 --wire bf16
halved "$(rank_bytes allreduce 2 sum_bytes)" "$(rank_bytes allreduce_bf16 2 sum_bytes)" "allreduce --wire bf16 halves the sums' bytes"
timeout 60 "$rudra" test "$solver" "$work/allreduce_bf16/final.rudra" --data "$data" >"$work/allreduce_bf16.test" 2>&1
acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/allreduce_bf16.test")
perl -e "exit !(${acc:-0} > 0.3)" && pass || fail "allreduce with --wire bf16 learns (test accuracy $acc)"

# EASGD: learners step locally; every 2 steps they exchange elastic differences with the PS's centre.
run easgd 5 --protocol easgd --tau 2 --beta 0.3
grep -q '"event":"epoch","protocol":"easgd"' "$work/easgd/metrics.jsonl" && pass || fail "easgd: epoch lines name it"
acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/easgd.test")
perl -e "exit !(${acc:-0} > 0.3)" && pass || fail "easgd learns (test accuracy $acc)"

# Gossip, pull and push: no PS; the epoch lines carry the learners' spread; every learner
# records its peers; final.rudra (the learners' average) learns.
for mode in pull push; do
  name=gossip_$mode
  if timeout -k 5 180 mpiexec -n 4 "$rudra" dist "$solver" --data "$data" --epochs 2 --batch 16 --protocol gossip-$mode \
      --tau 2 -o "$work/$name" >"$work/$name.log" 2>&1; then pass; else fail "$name: exit $?"; tail -20 "$work/$name.log"; fi
  [ "$(grep -c '"event":"epoch","protocol":"gossip-'$mode'".*"spread":' "$work/$name/metrics.jsonl")" = 2 ] && pass ||
    fail "$name: 2 epoch lines with the spread"
  [ -s "$work/$name/gossip-peers/rank-0.txt" ] && [ -s "$work/$name/gossip-peers/rank-2.txt" ] &&
    [ -s "$work/$name/gossip-peers/rank-3.txt" ] && pass || fail "$name: every learner records its peers"
  if timeout 60 "$rudra" test "$solver" "$work/$name/final.rudra" --data "$data" >"$work/$name.test" 2>&1; then pass
  else fail "$name: rudra test reads final.rudra"; cat "$work/$name.test"; fi
  acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/$name.test")
  perl -e "exit !(${acc:-0} > 0.3)" && pass || fail "$name learns (test accuracy $acc)"
  # --wire bf16: the models exchanged take half the bytes (the same peers: the same seed), and
  # the learners' average learns. A learner pulls as many models as it takes, and pushes as many
  # as it sends.
  if timeout -k 5 180 mpiexec -n 4 "$rudra" dist "$solver" --data "$data" --epochs 2 --batch 16 --protocol gossip-$mode \
      --tau 2 --wire bf16 -o "$work/${name}_bf16" >"$work/${name}_bf16.log" 2>&1; then pass
  else fail "${name}_bf16: exit $?"; tail -20 "$work/${name}_bf16.log"; fi
  field=received_bytes; [ $mode = push ] && field=sent_bytes
  halved "$(rank_bytes "$name" 2 $field)" "$(rank_bytes "${name}_bf16" 2 $field)" "$name --wire bf16 halves rank 2's $field"
  timeout 60 "$rudra" test "$solver" "$work/${name}_bf16/final.rudra" --data "$data" >"$work/${name}_bf16.test" 2>&1
  acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/${name}_bf16.test")
  perl -e "exit !(${acc:-0} > 0.3)" && pass || fail "${name} with --wire bf16 learns (test accuracy $acc)"
done

# A straggler (experiments): rank 2 computes 3 times slower, under all-reduce and under async.
allreduce straggler --straggler 2:3
grep -q 'rank 2 is a straggler: its compute is slowed 3 times' "$work/straggler.log" && pass || fail "straggler: announced"
run straggler_async 5 --protocol async --straggler 3:2.5
# Hardsync with a backup learner and a straggler: each update averages 2 of the 3 gradients, the
# late ones are dropped and logged per epoch, none applied is stale.
run backup 5 --protocol hardsync --backup 1 --straggler 4:4
grep -q '"event":"epoch","protocol":"1-backup-hardsync","epoch":2,' "$work/backup/metrics.jsonl" &&
  grep -q '"dropped":[1-9]' "$work/backup/metrics.jsonl" && grep -q '"max":0,' "$work/backup/staleness.json" && pass ||
  { fail "backup: dropped gradients logged, staleness 0"; grep '"epoch"' "$work/backup/metrics.jsonl"; }
grep -q 'gradients dropped' "$work/backup.log" && pass || fail "backup: the epoch line says what was dropped"
# K-sync, 2 of 3, each learner slowed on some mini-batches (the late gradients dropped), and K-batch-async,
# any 2 gradients, bounded.
run ksync 5 --protocol ksync --k 2 --straggler all:4:0.3
grep -q 'every learner is slowed 4 times (it sleeps) on a mini-batch with probability 0.3' "$work/ksync.log" && pass ||
  fail "ksync: the random slow-down announced"
grep -q '"event":"epoch","protocol":"2-ksync","epoch":2,' "$work/ksync/metrics.jsonl" &&
  grep -q '"dropped":[1-9]' "$work/ksync/metrics.jsonl" && grep -q '"max":0,' "$work/ksync/staleness.json" && pass ||
  { fail "ksync: 2-ksync, dropped gradients logged, staleness 0"; grep '"epoch"' "$work/ksync/metrics.jsonl"; }
run kasync 5 --protocol kasync --k 2 --max-staleness 3
grep -q '"event":"epoch","protocol":"2-kasync","epoch":2,' "$work/kasync/metrics.jsonl" &&
  grep -q '"max":[0-3],' "$work/kasync/staleness.json" && grep -q '"k":2' "$work/kasync/metrics.jsonl" && pass ||
  { fail "kasync: 2-kasync, staleness at most 3"; head -c 300 "$work/kasync/staleness.json"; }
# A staleness bound under 1-softsync in overlap mode: no gradient applied is more than 1 update old.
run bound 5 --protocol softsync --n 1 --max-staleness 1 --mode overlap --straggler 4:3
grep -q '"max":[01],' "$work/bound/staleness.json" && grep -q '"dropped":[0-9]' "$work/bound/metrics.jsonl" &&
  grep -q '"max_staleness":1' "$work/bound/metrics.jsonl" && pass ||
  { fail "bound: staleness at most 1, refusals logged"; head -c 300 "$work/bound/staleness.json"; }

# Warm start: 1-softsync goes on from the hardsync run's 2 epochs to a total of 3.
epochs=1 run warm 5 --protocol softsync --n 1 --epochs 3 --warm-start "$work/hardsync/final.rudra"
grep -q '"event":"epoch","protocol":"1-softsync","epoch":3,' "$work/warm/metrics.jsonl" && pass ||
  fail "warm: the one new epoch is numbered 3"

# The LSF batch script, run the way bsub runs it: LSB_MCPU_HOSTS gives this host 5 slots.
lsf=$src/tools/lsf/rudra-dist.lsf
if LSB_MCPU_HOSTS="$(hostname) 5" LSB_JOBID=7 RUDRA="$rudra" timeout -k 5 180 bash "$lsf" "$solver" --data "$data" \
    --epochs 1 --batch 16 --protocol async -o "$work/lsf" >"$work/lsf.log" 2>&1; then pass
else fail "lsf: exit $?"; tail -20 "$work/lsf.log"; fi
grep -q "job 7, 5 ranks" "$work/lsf.log" && pass || fail "lsf: 5 ranks from LSB_MCPU_HOSTS"
[ "$(grep -c '"event":"epoch"' "$work/lsf/metrics.jsonl" 2>/dev/null)" = 1 ] && pass || fail "lsf: one epoch line"
lsf_error() {  # lsf_error PATTERN HOSTS [THREADS [LAUNCH]]
  if LSB_MCPU_HOSTS=$2 RUDRA_THREADS=${3:-1} RUDRA_LAUNCH=${4:-hydra} RUDRA="$rudra" timeout 20 bash "$lsf" "$solver" >"$work/lsf.err" 2>&1; then
    fail "lsf with '$2' should fail"
  else grep -qF -- "$1" "$work/lsf.err" && pass || { fail "lsf: wanted '$1'"; cat "$work/lsf.err"; }; fi
}
lsf_error "not a multiple of RUDRA_THREADS=2" "$(hostname) 5" 2
lsf_error "needs at least 3" "$(hostname) 2"
lsf_error "is not 'host slots' pairs" "$(hostname)"
lsf_error "RUDRA_LAUNCH must be hydra, jsrun or mpirun, got 'srun'" "$(hostname) 5" 1 srun
# The jsrun (Spectrum MPI) and mpirun (Open MPI) paths, through stand-ins that log their options
# and start the ranks with mpiexec (no LSF here): the script's launch line, and a run through it.
standin=$work/standin
mkdir -p "$standin"
cat >"$standin/launcher" <<'EOS'
#!/usr/bin/env bash
echo "$(basename "$0") $*" >"$STANDIN_LOG"
n=0
while [ $# -gt 0 ]; do
  case $1 in
    --nrs | -n) n=$2; shift 2 ;;
    --tasks_per_rs | --cpu_per_rs | --bind | --env | --map-by | --bind-to | -x) shift 2 ;;
    *) break ;;
  esac
done
exec mpiexec -n "$n" "$@"
EOS
chmod +x "$standin/launcher"
ln -sf launcher "$standin/jsrun"
ln -sf launcher "$standin/mpirun"
for launch in jsrun mpirun; do
  if LSB_MCPU_HOSTS="$(hostname) 5" RUDRA_LAUNCH=$launch JSRUN=$standin/jsrun MPIRUN=$standin/mpirun \
      STANDIN_LOG=$work/$launch.args RUDRA="$rudra" timeout -k 5 180 bash "$lsf" "$solver" --data "$data" \
      --epochs 1 --batch 16 --protocol async -o "$work/lsf-$launch" >"$work/lsf-$launch.log" 2>&1 &&
      [ "$(grep -c '"event":"epoch"' "$work/lsf-$launch/metrics.jsonl" 2>/dev/null)" = 1 ]; then pass
  else fail "lsf $launch: a run"; tail -20 "$work/lsf-$launch.log"; fi
done
grep -q "^jsrun --nrs 5 --tasks_per_rs 1 --cpu_per_rs 1 --bind packed:1 --env OMP_NUM_THREADS=1 $rudra dist $solver" "$work/jsrun.args" &&
  pass || { fail "lsf jsrun: the launch line"; cat "$work/jsrun.args"; }
grep -q "^mpirun -n 5 --map-by slot:PE=1 --bind-to core -x OMP_NUM_THREADS $rudra dist $solver" "$work/mpirun.args" &&
  pass || { fail "lsf mpirun: the launch line"; cat "$work/mpirun.args"; }

expect_error() {  # expect_error NAME PATTERN RANKS ARGS...
  local name=$1 pattern=$2 ranks=$3; shift 3
  timeout -k 5 60 mpiexec -n "$ranks" "$rudra" dist "$solver" -o "$work/$name" "$@" >"$work/$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$pattern" "$work/$name.log"; then pass
  else fail "$name: exit $rc, wanted an error containing '$pattern'"; tail -5 "$work/$name.log"; fi
}
expect_error bad_n "--n 7 must be in [1, 3]" 5 --data "$data" --protocol softsync --n 7
expect_error bad_backup "--backup 3 must be in [0, 2]" 5 --data "$data" --protocol hardsync --backup 3
expect_error backup_elsewhere "--backup is a setting of --protocol hardsync" 5 --data "$data" --protocol async --backup 1
expect_error ksync_no_k "--protocol ksync needs --k K in [1, 3]" 5 --data "$data" --protocol ksync
expect_error k_elsewhere "--k is a setting of --protocol ksync and kasync" 5 --data "$data" --protocol softsync --k 2
expect_error bound_elsewhere "--max-staleness is a setting of --protocol softsync, async and kasync" 5 --data "$data" \
  --protocol hardsync --max-staleness 2
expect_error backup_adv "use --topology base with --backup" 8 --data "$data" --protocol hardsync --backup 1 \
  --topology adv --ranks-per-node 4
expect_error bad_straggler "--straggler must be RANK:FACTOR with RANK a learner's rank (2, 3, 4) and FACTOR a number >= 1, or RANK:FACTOR:P" \
  5 --data "$data" --protocol async --straggler 1:3
expect_error slow_factor "got '2:0.5'" 5 --data "$data" --protocol async --straggler 2:0.5
expect_error bad_tau "--tau: must be a positive integer, got '0'" 5 --data "$data" --protocol easgd --tau 0
expect_error bad_beta "--beta must be in (0, 1], got 1.5" 5 --data "$data" --protocol easgd --beta 1.5
expect_error tau_elsewhere "--tau is a setting of --protocol easgd, gossip-pull and gossip-push" 5 --data "$data" --protocol async --tau 2
expect_error beta_elsewhere "--beta is a setting of --protocol easgd" 4 --data "$data" --protocol gossip-pull --beta 0.5
expect_error too_few "needs at least 3 ranks" 2 --data "$data" --protocol async
expect_error adv_allreduce "--topology adv is a parameter-server tree for hardsync, softsync, async and kasync, not for --protocol allreduce" \
  6 --data "$data" --protocol allreduce --topology adv
expect_error adv_lone "node 0 has only rank 2 besides ranks 0 and 1" 9 --data "$data" --protocol async --topology adv --ranks-per-node 3
expect_error adv_divide "--ranks-per-node 4 does not divide the 10 ranks into nodes" 10 --data "$data" --protocol async \
  --topology adv --ranks-per-node 4
expect_error adv_fan_out "--fan-out: must be a positive integer, got '0'" 8 --data "$data" --protocol async --topology adv \
  --ranks-per-node 4 --fan-out 0
expect_error adv_per_gradient "--lr-modulation per-gradient weighs each gradient before the sum" \
  8 --data "$data" --protocol softsync --topology adv --ranks-per-node 4 --lr-modulation per-gradient
expect_error per_node_base "--ranks-per-node is a setting of --topology adv and adv*" 5 --data "$data" --protocol async --ranks-per-node 2
expect_error bcast_adv "--broadcast-fan-out is a setting of --topology adv*" 8 --data "$data" --protocol async --topology adv \
  --ranks-per-node 4 --broadcast-fan-out 2
expect_error bad_data "nowhere: no such data folder (--data)" 4 --protocol async --data "$work/nowhere"
expect_error warm_done "has trained 2 epochs already" 4 --data "$data" --protocol async --epochs 2 \
  --warm-start "$work/hardsync/final.rudra"
# Errors every rank meets are reported once, not once per rank.
RUDRA_ISA=sse9 expect_error bad_isa "RUDRA_ISA=sse9: not an instruction-set level" 4 --data "$data" --protocol async
[ "$(grep -c 'RUDRA_ISA=sse9' "$work/bad_isa.log")" = 1 ] && pass || fail "bad_isa: reported once"
expect_error bad_batch "--batch: must be a positive integer, got 'abc'" 4 --data "$data" --protocol async --batch abc
[ "$(grep -c 'must be a positive integer' "$work/bad_batch.log")" = 1 ] && pass || fail "bad_batch: reported once"

finish
