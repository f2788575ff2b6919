#!/usr/bin/env bash
# The image data paths against the IDX path, on real labels: the first 2000 training and 400 test
# images of Debian's Fashion-MNIST written out by tools/data/export_idx.py (PIL, python3-lmdb and
# a Datum encoder of its own: writers independent of rudra's) as a Caffe LMDB of raw Datums, one
# of encoded (PNG) Datums, and an ImageData list of PNG files in the IDX order. Trained with the
# same seed, each must give the IDX run's test accuracy and loss exactly (the paths are lossless
# and draw the same samples). Then: the sources read as Caffe reads them (relative to the working
# directory), `rudra dist` on an LMDB, and bad input refused with the file and record named.
# Usage: image_data_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
rudra=$(cd "$(dirname "$rudra")" && pwd)/$(basename "$rudra")
fm=/usr/share/datasets/fashion-mnist
py=/usr/bin/python3
export OMP_NUM_THREADS=2
"$py" "$src/tools/data/export_idx.py" "$fm" "$work/fm" --limit-train 2000 --limit-test 400 --forms list,lmdb >/dev/null ||
  { fail "export_idx.py"; finish; exit 1; }
# The nets' mean_file (mean.binaryproto, beside the sets): the first 2000 training images' mean,
# written by Python as a BlobProto of unpacked floats. rudra mean's file, read back by Python,
# holds the same values.
"$rudra" mean "$work/fm/lmdb/train_raw" "$work/rudra_mean.binaryproto" >"$work/mean.log" 2>&1 || fail "mean: $(cat "$work/mean.log")"
"$py" - "$work/fm/lmdb/train_raw" "$work/fm/mean.binaryproto" "$work/rudra_mean.binaryproto" <<'PY' || fail "mean: Python's mean and rudra's differ"
import lmdb, struct, sys
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7F) << s; s += 7
        if not c & 0x80: return v, i
def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0: v, i = varint(b, i)
        elif w == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        elif w == 5: v = b[i:i + 4]; i += 4
        yield f, w, v
sums, n = None, 0
with lmdb.open(sys.argv[1], readonly=True, lock=False).begin() as t:
    for _, rec in t.cursor():
        data = next(v for f, w, v in fields(rec) if f == 4)
        sums = list(data) if sums is None else [a + b for a, b in zip(sums, data)]
        n += 1
mean = [s / n for s in sums]
out = b"".join(bytes([k << 3]) + bytes([v]) for k, v in ((1, 1), (2, 1), (3, 28), (4, 28)))
out += b"".join(b"\x2d" + struct.pack("<f", m) for m in mean)
open(sys.argv[2], "wb").write(out)
theirs = next(v for f, w, v in fields(open(sys.argv[3], "rb").read()) if f == 5 and w == 2)
theirs = struct.unpack(f"<{len(theirs) // 4}f", theirs)
worst = max(abs(a - b) for a, b in zip(mean, theirs))
sys.exit(0 if len(theirs) == 784 and worst < 1e-3 else f"{len(theirs)} values, worst difference {worst}")
PY
net=$src/models/cifar10_full_28/cifar10_full_28_train_test.prototxt
solver=$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt
# A copy of the net and solver whose Data layers read SOURCE_TRAIN / SOURCE_TEST (ImageData when
# the third argument is "list").
make_net() {  # make_net NAME TRAIN_SOURCE TEST_SOURCE [list]
  "$py" - "$net" "$work/$1.prototxt" "$2" "$3" "${4:-}" <<'PY'
import sys
src, out, train, test, kind = sys.argv[1:]
s = open(src).read()
if kind == "list":
    s = s.replace('type: "Data"', 'type: "ImageData"').replace("data_param {", "image_data_param {")
    extra = '\n    root_folder: "png/"\n    is_color: false'
else:
    extra = ""
s = s.replace('source: "/usr/share/datasets/fashion-mnist"', f'source: "{train}"{extra}', 1)
s = s.replace('source: "/usr/share/datasets/fashion-mnist"', f'source: "{test}"{extra}', 1)
open(out, "w").write(s)
PY
  sed "s|^net: .*|net: \"$work/$1.prototxt\"|" "$solver" >"$work/$1_solver.prototxt"
}
result() { grep -o 'test_accuracy [0-9.]*  test_loss [0-9.]*' "$1" | tail -1; }
run_train() {  # run_train NAME SOLVER [options]: the epoch line's accuracy and loss into NAME.result
  local name=$1 s=$2
  shift 2
  timeout -k 5 300 "$rudra" train "$s" --epochs 1 --seed 3 --batch 64 -o "$work/run-$name" "$@" >"$work/$name.log" 2>&1 ||
    { fail "$name: rudra train exit $?"; tail -5 "$work/$name.log"; }
  result "$work/$name.log" >"$work/$name.result"
}

run_train idx "$solver" --data "$fm" --train-limit 2000 --test-limit 400
want=$(cat "$work/idx.result")
echo "idx: $want"
[ -n "$want" ] && pass || fail "idx: no result"
make_net raw lmdb/train_raw lmdb/val_raw
make_net encoded lmdb/train_encoded lmdb/val_encoded
make_net list list/train.txt list/val.txt list
for kind in raw encoded list; do
  run_train "$kind" "$work/${kind}_solver.prototxt" --data "$work/fm"
  echo "$kind: $(cat "$work/$kind.result")"
  [ "$(cat "$work/$kind.result")" = "$want" ] && pass || fail "$kind: not the IDX run's result"
done
grep -q "record\|note: .*source" "$work/raw.log" && fail "raw: a note about the source" || pass

# Caffe's resolution: the sources and the mean file relative to the working directory, no --data.
(cd "$work/fm" && run_train cwd "$work/raw_solver.prototxt")
[ "$(cat "$work/cwd.result")" = "$want" ] && pass || fail "cwd: the sources relative to the working directory"
# Named and missing: an error naming the layer and the source, no silent fall-back.
(cd "$work" && timeout 60 "$rudra" train "$work/raw_solver.prototxt" --epochs 1 -o "$work/run-missing") >"$work/missing.log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "layer 'cifar' (Data): its source 'lmdb/train_raw' does not exist" "$work/missing.log" && pass ||
  { fail "missing: exit $rc, the source named"; cat "$work/missing.log"; }

# rudra dist on the LMDB: every rank opens it, 1 epoch, 2 learners.
if "$rudra" dist --help >/dev/null 2>&1; then
  OMP_NUM_THREADS=1 timeout -k 5 300 mpiexec -disable-auto-cleanup -n 4 "$rudra" dist "$work/raw_solver.prototxt" \
    --data "$work/fm" --epochs 1 --batch 32 -o "$work/dist" >"$work/dist.log" 2>&1 &&
    grep '"event":"epoch"' "$work/dist/metrics.jsonl" | grep -q '"test_top5"' && [ -s "$work/dist/final.rudra" ] && pass ||
    { fail "dist: an epoch on the LMDB"; tail -5 "$work/dist.log"; }
fi

# rudra convert: the PNG list into an LMDB of raw grey Datums (as convert_imageset --gray) trains
# as the LMDB of the independent writer does; a second conversion into it is refused.
"$rudra" convert "$work/fm/list/train.txt" "$work/conv/lmdb/train_raw" --root "$work/fm/png/" --gray >"$work/convert.log" 2>&1 &&
  "$rudra" convert "$work/fm/list/val.txt" "$work/conv/lmdb/val_raw" --root "$work/fm/png/" --gray >>"$work/convert.log" 2>&1 ||
  fail "convert: $(tail -1 "$work/convert.log")"
cp "$work/fm/mean.binaryproto" "$work/conv/"
run_train converted "$work/raw_solver.prototxt" --data "$work/conv"
[ "$(cat "$work/converted.result")" = "$want" ] && pass || fail "converted: not the IDX run's result"
"$rudra" convert "$work/fm/list/val.txt" "$work/conv/lmdb/val_raw" --root "$work/fm/png/" >"$work/again.log" 2>&1 &&
  fail "convert: wrote over an LMDB" || { grep -q "exists already" "$work/again.log" && pass || fail "convert: the refusal"; }
run_train mean_compute "$work/raw_solver.prototxt" --data "$work/fm" --mean compute
# A run with each mean file gives the run that computes the mean itself.
cp "$work/fm/mean.binaryproto" "$work/py_mean.binaryproto"
for m in py_mean rudra_mean; do
  run_train "$m" "$work/raw_solver.prototxt" --data "$work/fm" --mean "$work/$m.binaryproto"
  [ "$(cat "$work/$m.result")" = "$(cat "$work/mean_compute.result")" ] && pass ||
    fail "$m: $(cat "$work/$m.result") with the mean file, $(cat "$work/mean_compute.result") computed"
done
# A named mean_file that is not there is an error for an LMDB (it is computed only for IDX and
# CIFAR-10 folders, which come without one).
sed 's|mean_file: "mean.binaryproto"|mean_file: "no_mean.binaryproto"|' "$work/raw.prototxt" >"$work/nomean.prototxt"
sed "s|^net: .*|net: \"$work/nomean.prototxt\"|" "$solver" >"$work/nomean_solver.prototxt"

# Bad input: each refused with a non-zero exit, naming the file and the record or line.
bad() {  # bad NAME PATTERN SOLVER [options]
  local name=$1 pattern=$2 s=$3
  shift 3
  timeout -k 5 120 "$rudra" train "$s" --epochs 1 -o "$work/run-$name" "$@" >"$work/$name.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && grep -q -- "$pattern" "$work/$name.log" && pass ||
    { fail "$name: exit $rc, wanted an error matching '$pattern'"; tail -3 "$work/$name.log"; }
}
mkdir -p "$work/b"
cp -r "$work/fm/list" "$work/fm/png" "$work/fm/mean.binaryproto" "$work/b/"
first=$(head -1 "$work/b/list/train.txt" | cut -d' ' -f1)
head -c 200 "$work/b/png/$first" >"$work/b/cut.png" && mv "$work/b/cut.png" "$work/b/png/$first"
bad truncated "list/train.txt:1: .*png/$first: corrupt or truncated PNG" "$work/list_solver.prototxt" --data "$work/b"
# --bad-image skip: the same run goes on, the record named on stderr and in the metrics, counted
# on the epoch line.
timeout -k 5 120 "$rudra" train "$work/list_solver.prototxt" --data "$work/b" --epochs 1 --bad-image skip \
  -o "$work/run-skip" >"$work/skip.log" 2>&1 && grep -q "skipped a record (--bad-image skip): .*$first: corrupt" "$work/skip.log" &&
  grep -q '"event":"skipped_record"' "$work/run-skip/metrics.jsonl" &&
  grep '"event":"epoch"' "$work/run-skip/metrics.jsonl" | grep -q '"skipped_records":[1-9]' && pass ||
  { fail "skip: the bad record skipped and reported"; tail -3 "$work/skip.log"; }
sed -i '3s|^[^ ]*|train/no-such.png|' "$work/b/list/val.txt"
cp "$work/fm/png/$first" "$work/b/png/$first"
bad missing_file "list/val.txt:3: no such image file: .*train/no-such.png" "$work/list_solver.prototxt" --data "$work/b"
sed -i '3s|^.*$|train/x.png seven|' "$work/b/list/val.txt"
bad bad_label_text "list/val.txt:3: label 'seven' is not a class number" "$work/list_solver.prototxt" --data "$work/b"
mkdir -p "$work/b/lmdb/train_raw" "$work/b/lmdb/val_raw"
head -c 5000 /dev/urandom >"$work/b/lmdb/train_raw/data.mdb"
cp "$work/fm/lmdb/val_raw/data.mdb" "$work/b/lmdb/val_raw/"
bad not_lmdb "lmdb/train_raw: not a readable LMDB" "$work/raw_solver.prototxt" --data "$work/b"
# Datums written by the independent writer with a label past the net's 10 classes, and with
# fewer bytes than their shape needs.
"$py" - "$work/b/lmdb" <<'PY'
import lmdb, sys
def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80); v >>= 7
    out.append(v); return bytes(out)
def datum(c, h, w, data, label):
    return (varint(8) + varint(c) + varint(16) + varint(h) + varint(24) + varint(w) + varint(34) + varint(len(data)) +
            data + varint(40) + varint(label))
for name, records in (("label12", [datum(1, 28, 28, bytes(784), 3), datum(1, 28, 28, bytes(784), 12)] * 40),
                      ("short", [datum(1, 28, 28, bytes(784), 1), datum(1, 28, 28, bytes(700), 1)] * 40)):
    env = lmdb.open(f"{sys.argv[1]}/{name}", map_size=1 << 24)
    with env.begin(write=True) as t:
        for i, r in enumerate(records):
            t.put(f"{i:08d}".encode(), r)
    env.close()
PY
make_net label12 lmdb/label12 lmdb/val_raw
bad label12 "lmdb/label12: record [0-9]* (key '[0-9]*'): label 12 is not one of the net's 10 classes" \
  "$work/label12_solver.prototxt" --data "$work/b"
make_net short lmdb/short lmdb/val_raw
bad short "lmdb/short: record [0-9]* (key '[0-9]*'): the Datum's data holds 700 bytes, its shape 1 x 28 x 28 needs 784" \
  "$work/short_solver.prototxt" --data "$work/b"
bad no_mean "mean_file 'no_mean.binaryproto' does not exist" "$work/nomean_solver.prototxt" --data "$work/fm"
finish
