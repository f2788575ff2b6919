#!/usr/bin/env bash
# AlexNet end to end on generated ImageNet-shaped JPEGs: the images made into LMDBs of encoded
# 256x256 Datums by `rudra convert` and a mean file by `rudra mean`, at the names Caffe's AlexNet
# files use; models/alexnet/alexnet_paper_solver.prototxt trained unchanged (only --data, a
# smaller mini-batch and one epoch) with `rudra train` and with `rudra dist`, each reporting top-1,
# top-5 and its Accuracy layers; models/caffenet's CaffeNet with Caffe's reference solver.
# Usage: alexnet_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
rudra=$(cd "$(dirname "$rudra")" && pwd)/$(basename "$rudra")
cd "$src" || exit 1
export OMP_NUM_THREADS=2
set_dir=$work/imagenet
/usr/bin/python3 tools/data/make_imagenet_like.py "$work/jpeg" --train 48 --val 16 --classes 10 --seed 2 >/dev/null ||
  { fail "make_imagenet_like.py"; finish; exit 1; }
"$rudra" convert "$work/jpeg/train" "$set_dir/ilsvrc12_train_lmdb" --resize-height 256 --resize-width 256 --encoded \
  --shuffle >"$work/convert.log" 2>&1 &&
  "$rudra" convert "$work/jpeg/val" "$set_dir/ilsvrc12_val_lmdb" --resize-height 256 --resize-width 256 --encoded \
    >>"$work/convert.log" 2>&1 &&
  "$rudra" mean "$set_dir/ilsvrc12_train_lmdb" "$set_dir/imagenet_mean.binaryproto" >"$work/mean.log" 2>&1 &&
  pass || { fail "convert and mean"; cat "$work/convert.log" "$work/mean.log"; finish; exit 1; }
grep -q "mean: 48 images of 3 x 256 x 256" "$work/mean.log" && pass || fail "mean: $(cat "$work/mean.log")"
solver=models/alexnet/alexnet_paper_solver.prototxt

timeout -k 5 600 "$rudra" train "$solver" --data "$set_dir" --batch 16 --epochs 1 --decode-threads 2 \
  -o "$work/train" >"$work/train.log" 2>&1
rc=$?
grep '"event":"epoch"' "$work/train/metrics.jsonl" >"$work/epoch.json" 2>/dev/null
[ $rc -eq 0 ] && /usr/bin/python3 - "$work/epoch.json" <<'PY' && pass || { fail "train: exit $rc, an epoch with top-1, top-5 and the Accuracy layers"; tail -5 "$work/train.log"; }
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
layers = e["accuracy_layers"]
assert abs(layers["accuracy"] - e["test_accuracy"]) < 1e-9, e
assert abs(layers["accuracy_top5"] - e["test_top5"]) < 1e-9, e
assert e["iteration"] == 3, e
PY
grep -q "subtracting the mean image of $set_dir/imagenet_mean.binaryproto" "$work/train.log" && pass ||
  fail "train: the mean file named"

# CaffeNet (each pooling before its LRN) on the same inputs, with Caffe's reference solver as it
# is (solver_mode GPU included).
timeout -k 5 600 "$rudra" train models/caffenet/caffenet_solver.prototxt --data "$set_dir" --batch 16 --epochs 1 \
  -o "$work/caffenet" >"$work/caffenet.log" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q 'net models/caffenet/caffenet_train_val.prototxt (60,965,224 learnable parameters)' "$work/caffenet.log" &&
  grep '"event":"epoch"' "$work/caffenet/metrics.jsonl" | grep -q '"test_top5"' && [ -s "$work/caffenet/caffenet_train_iter_3.rudra" ] &&
  pass || { fail "CaffeNet: exit $rc, an epoch with top-5 and a snapshot"; tail -5 "$work/caffenet.log"; }

if "$rudra" dist --help >/dev/null 2>&1; then
  OMP_NUM_THREADS=1 timeout -k 5 600 mpiexec -disable-auto-cleanup -n 4 "$rudra" dist "$solver" --data "$set_dir" \
    --batch 8 --epochs 1 -o "$work/dist" >"$work/dist.log" 2>&1 &&
    grep '"event":"epoch"' "$work/dist/metrics.jsonl" | grep -q '"accuracy_top5"' && [ -s "$work/dist/final.rudra" ] &&
    pass || { fail "dist: AlexNet for an epoch"; tail -5 "$work/dist.log"; }
  # Its 3 updates end the epoch before any learner reports a loss (every 10 mini-batches): the
  # line says so instead of showing a loss of 0.
  grep -q '^epoch 1/1: .*train loss not reported yet' "$work/dist.log" && pass ||
    fail "dist: the epoch line's missing train loss: $(grep '^epoch' "$work/dist.log")"
fi
finish
