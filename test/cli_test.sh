#!/usr/bin/env bash
# End-to-end checks of the rudra command on a small generated IDX data set: train, resume,
# test, time, interruption, and clear errors with a non-zero exit for bad input.
# Usage: cli_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
expect() {  # expect DESCRIPTION COMMAND... : command must succeed
  local what=$1; shift
  if timeout 300 "$@" >"$work/out" 2>&1; then pass; else fail "$what (exit $?)"; cat "$work/out"; fi
}
expect_error() {  # expect_error DESCRIPTION PATTERN COMMAND... : must fail and print PATTERN
  local what=$1 pattern=$2; shift 2
  timeout 120 "$@" >"$work/out" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$pattern" "$work/out"; then pass
  else fail "$what: exit $rc, wanted an error containing '$pattern'"; cat "$work/out"; fi
}

data=$work/data
mkdir -p "$data"
mkdata "$data" train 640 1
mkdata "$data" t10k 200 2
solver=$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt

expect "help" "$rudra" --help
grep -q "train" "$work/out" && pass || fail "--help lists train"
expect_error "no subcommand" "A subcommand is required" "$rudra"

expect "train one epoch" "$rudra" train "$solver" --data "$data" --epochs 1 -o "$work/run" --threads 2
grep -q '"event":"epoch"' "$work/run/metrics.jsonl" && pass || fail "metrics.jsonl has an epoch event"
grep -q '"test_accuracy"' "$work/run/metrics.jsonl" && pass || fail "epoch event has test_accuracy"
grep -q 'test_accuracy' "$work/out" && pass || fail "train prints test accuracy"
snap=$(ls "$work"/run/*_iter_10.rudra 2>/dev/null | head -1)
[ -n "$snap" ] && pass || fail "final snapshot written (iteration 10)"

expect "resume to two epochs" "$rudra" train "$solver" --data "$data" --epochs 2 -o "$work/run" --resume "$snap"
[ "$(grep -c '"event":"epoch"' "$work/run/metrics.jsonl")" = 2 ] && pass || fail "resumed run appends the second epoch"
grep -q '"resumed_from":"'"$snap"'"' "$work/run/metrics.jsonl" && pass || fail "resume recorded"
[ -f "$work/run/cifar10_full_28_iter_20.rudra" ] && pass || fail "resumed run ends at iteration 20"

# With dropout too, a resumed run ends with the bytes of one never stopped: the masks go on
# from where the first part left them.
dropout_net "$work/dropnet" && pass || fail "dropnet: no dropout layer"
expect "dropout, 2 epochs" "$rudra" train "$work/dropnet/cifar10_full_28_solver.prototxt" --data "$data" --epochs 2 -o "$work/drop2"
expect "dropout, 1 epoch" "$rudra" train "$work/dropnet/cifar10_full_28_solver.prototxt" --data "$data" --epochs 1 -o "$work/drop1"
expect "dropout, resumed to 2 epochs" "$rudra" train "$work/dropnet/cifar10_full_28_solver.prototxt" --data "$data" \
  --epochs 2 -o "$work/drop1" --resume "$work/drop1/cifar10_full_28_iter_10.rudra"
cmp -s "$work/drop2/cifar10_full_28_iter_20.rudra" "$work/drop1/cifar10_full_28_iter_20.rudra" && pass ||
  fail "dropout: the resumed run's iteration-20 snapshot differs from the straight run's"

expect "test a snapshot" "$rudra" test "$solver" "$work/run/cifar10_full_28_iter_20.rudra" --data "$data"
grep -q "test_accuracy" "$work/out" && pass || fail "test prints accuracy"
acc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$work/out")
perl -e "exit !($acc > 0.3)" && pass || fail "two epochs on separable data beat chance (10%) threefold (got $acc)"

expect "time the deploy net" "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" --batch 4 --iterations 2
grep -q "learnable parameters: 89,578" "$work/out" && pass || fail "time reports 89,578 parameters"
expect "time a train/test net" "$rudra" time "$src/models/cifar10_full/cifar10_full_train_test.prototxt" \
  --input-shape 3,32,32 --batch 2 --iterations 1 --json "$work/time.json"
grep -q '"learnable_parameters":89578' "$work/time.json" && pass || fail "time --json"

# Interruption: SIGUSR1 writes a snapshot and the run goes on; SIGTERM ends the step, writes a
# snapshot, exits 130, leaves no temporary file.
timeout 300 "$rudra" train "$solver" --data "$data" --epochs 50 -o "$work/int" >"$work/int.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -s "$work/int/metrics.jsonl" ] && break; sleep 0.1; done
sleep 1
pkill -USR1 -P $pid  # rudra, the child of timeout (which forwards only SIGTERM)
for _ in $(seq 1 100); do grep -q '"event":"snapshot"' "$work/int/metrics.jsonl" && break; sleep 0.1; done
grep -q '"event":"snapshot"' "$work/int/metrics.jsonl" && pass || fail "a snapshot written on SIGUSR1"
kill -0 $pid 2>/dev/null && pass || fail "the run goes on after SIGUSR1"
sleep 0.5
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 130 ] && pass || { fail "SIGTERM exit code 130 (got $rc)"; cat "$work/int.log"; }
grep -q '"event":"interrupted"' "$work/int/metrics.jsonl" && pass || fail "interrupted event logged"
ls "$work"/int/*.rudra >/dev/null 2>&1 && pass || fail "snapshot written on SIGTERM"
ls "$work"/int/*.tmp >/dev/null 2>&1 && fail "temporary snapshot left behind" || pass

# Bad input: clear errors naming the file and place, non-zero exit.
printf 'net: "cifar10_full_28_train_test.prototxt"\nbase_lr: fast\n' >"$src/models/cifar10_full_28/.bad_solver_$$.prototxt"
expect_error "malformed solver" "bad_solver_$$.prototxt:2:1: solver: field 'base_lr' needs a number" \
  "$rudra" train "$src/models/cifar10_full_28/.bad_solver_$$.prototxt" --data "$data"
rm -f "$src/models/cifar10_full_28/.bad_solver_$$.prototxt"
expect_error "missing data directory" "none: no such data folder (--data)" "$rudra" train "$solver" --data "$work/none"
mkdir -p "$work/cut"
cp "$data"/* "$work/cut/"
head -c 5000 "$data/train-images-idx3-ubyte" >"$work/cut/train-images-idx3-ubyte"
expect_error "truncated data file" "cut/train-images-idx3-ubyte: truncated" "$rudra" train "$solver" --data "$work/cut"
head -c 1000 "$snap" >"$work/bad.rudra"
expect_error "truncated snapshot" "corrupt snapshot" "$rudra" train "$solver" --data "$data" --resume "$work/bad.rudra" -o "$work/badrun"
[ ! -e "$work/badrun/metrics.jsonl" ] && pass || fail "a refused resume writes no metrics file"
expect_error "wrong option value" "--batch: must be a positive integer, got '-3'" "$rudra" train "$solver" --batch -3
expect_error "not a number" "--batch: must be a positive integer, got 'abc'" "$rudra" train "$solver" --batch abc
expect_error "no threads" "--threads: must be a positive integer, got '0'" "$rudra" train "$solver" --threads 0
"$rudra" train "$solver" --batch abc >/dev/null 2>&1; [ $? -eq 1 ] && pass || fail "a command-line error exits with 1"
expect_error "a mini-batch beyond memory" "GiB of memory (lower the mini-batch)" "$rudra" train "$solver" \
  --data "$data" --batch 100000000
# A label the net has no class for: named with its file and record before training.
mkdir -p "$work/badlabel"
cp "$data"/t10k-* "$data/train-images-idx3-ubyte" "$work/badlabel/"
perl -e 'open(my $f, "<", $ARGV[0]) or die; binmode $f; local $/; my $b = <$f>;
  substr($b, 8 + 5, 1) = chr(12); open(my $o, ">", $ARGV[1]) or die; binmode $o; print $o $b' \
  "$data/train-labels-idx1-ubyte" "$work/badlabel/train-labels-idx1-ubyte"
expect_error "label out of range" "train-labels-idx1-ubyte: record 5 has label 12, but the net" "$rudra" train "$solver" \
  --data "$work/badlabel" -o "$work/badlabel-run"
expect_error "unknown option" "--bogus" "$rudra" train "$solver" --bogus
# Sizes from input that would wrap: each a clear error naming the file, option or descriptor.
mkdir -p "$work/wrap"
cp "$data"/t10k-* "$work/wrap/"
perl -e 'binmode STDOUT; print pack("NNNN", 0x803, 16, 1 << 30, 1 << 30), "\0" x 16' >"$work/wrap/train-images-idx3-ubyte"
perl -e 'binmode STDOUT; print pack("NN", 0x801, 16), "\0" x 16' >"$work/wrap/train-labels-idx1-ubyte"
expect_error "IDX dimensions whose product wraps" "wrap/train-images-idx3-ubyte: the IDX header's dimensions 16 x 1073741824 x 1073741824 promise more than 2^64 data bytes" \
  "$rudra" train "$solver" --data "$work/wrap" -o "$work/wrap-run"
expect_error "a shape past 64 bits" "blob 'data': the shape 64x16x1073741824x1073741824 has more elements than 64 bits can count" \
  "$rudra" time "$solver" --batch 64 --input-shape 16,1073741824,1073741824
expect_error "a convolution past int sizes" "layer 'conv1' (Convolution): the input 1x2147483647x1 with its padding" \
  "$rudra" time "$solver" --batch 1 --input-shape 1,2147483647,1
printf 'name: "huge"\ninput: "data"\ninput_shape { dim: 1 dim: 1048576 }\nlayer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 16777216 } }\n' \
  >"$work/huge_params.prototxt"
expect_error "parameters beyond memory" "huge_params.prototxt:4: layer 'ip': the activations, parameters, scratch and kernel buffers up to this layer need" \
  "$rudra" time "$work/huge_params.prototxt"
printf 'name: "padded"\ninput: "data"\ninput_shape { dim: 1 dim: 1024 dim: 2 dim: 2 }\nlayer { name: "conv" type: "Convolution" bottom: "data" top: "conv" convolution_param { num_output: 8 kernel_size: 5 pad: 500 } }\n' \
  >"$work/padded.prototxt"
expect_error "kernel buffers beyond memory, before they are allocated" \
  "padded.prototxt:4: layer 'conv': the activations, parameters, scratch and kernel buffers up to this layer need" \
  "$rudra" time "$work/padded.prototxt"
expect_error "a bench size past int" "problem 'mb4294967298ic3ih32oc32oh32kh3ph1': 'mb' is 4294967298, more than 2147483647" \
  "$rudra" bench mb4294967298ic3ih32oc32oh32kh3ph1
expect_error "a bench geometry past int" "past the kernels' int sizes" "$rudra" bench mb1ic65536ih65536oc32kh3ph1
printf 'mb1ic3ih32oc32kh3\nmb1ic3ih99999999999999999999oc3kh1\n' >"$work/batch.txt"
expect_error "a batch file's number past int" "batch.txt:2: problem 'mb1ic3ih99999999999999999999oc3kh1': 'ih' is 99999999999999999999" \
  "$rudra" bench --batch-file "$work/batch.txt"
expect_error "an int option past int" "--batch: must be a positive integer of at most 2147483647, got '4294967296'" \
  "$rudra" train "$solver" --batch 4294967296
expect_error "Data net needs a shape" "--input-shape" "$rudra" time "$src/models/cifar10_full/cifar10_full_train_test.prototxt"
expect_error "snapshot of another net" "do not match" "$rudra" test "$src/test/models/lenet_train_test.prototxt" "$snap" --data "$data"

# Kernels: backends per layer, auto with its cache, the benchmark driver, info.
expect "time on oneDNN or own" "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" --batch 2 --iterations 1 \
  --conv-backend "own,conv2=reference"
grep -q "conv2 .*reference" "$work/out" && grep -q "conv1 .*own" "$work/out" && pass || fail "per-layer backends shown"
RUDRA_CACHE_DIR=$work/cache expect "time with auto" "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" \
  --batch 2 --iterations 1 --conv-backend auto
grep -q "auto:" "$work/out" && [ -s "$work/cache/conv_auto.json" ] && pass || fail "auto chose and cached"
grep -q "^ip1 .*(auto: fwd+bwd_weights .*(ms: own " "$work/out" && grep -q '"ip:mb2ic1024oc10 threads' "$work/cache/conv_auto.json" &&
  pass || fail "the inner-product layer measured on auto and cached"
RUDRA_CACHE_DIR=$work/cache expect "auto from the cache" "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" \
  --batch 2 --iterations 1 --conv-backend auto
grep -q "(cached)" "$work/out" && pass || fail "auto reads its cache"
grep -q "^ip1 .*(cached))" "$work/out" && pass || fail "the inner-product layer's choice read from the cache"
echo "{ broken" >"$work/cache/conv_auto.json"
RUDRA_CACHE_DIR=$work/cache expect "auto with a damaged cache" "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" \
  --batch 2 --iterations 1 --conv-backend auto
grep -q "damaged" "$work/out" && pass || fail "damaged cache reported and replaced"
expect_error "unknown conv backend" "unknown backend 'cudnn'" "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" --conv-backend cudnn
expect "a layer's backward-data on another backend" "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" \
  --batch 2 --iterations 1 --conv-backend "own,conv2=reference+own"
grep -q "^conv2 .*reference+own: direct loops; bwd_data on fwd implicit_" "$work/out" && pass ||
  fail "conv2=reference+own runs backward-data on own"
expect_error "half a backend pair" "'conv2=own+' needs two backends" "$rudra" time \
  "$src/models/cifar10_full/cifar10_full.prototxt" --conv-backend "own,conv2=own+"
expect "bench writes CSV" "$rudra" bench m40n50k30 mb1ic3ih8oc4kh3ph1 --backends own,reference --threads 1 \
  --min-time 0.01 --format csv -o "$work/bench.csv"
[ "$(grep -c ',own,' "$work/bench.csv")" = 4 ] && pass || fail "bench CSV has the GEMM and three conv passes for own"
grep -q "% of peak" "$work/out" && pass || fail "bench reports percent of peak"
# The CSV drawn as small multiples: one panel per layer and pass (three here), one line per backend.
expect "bench CSV plotted" bash "$src/bench/plot_bench.sh" "$work/bench.csv" "$work/bench.png"
grep -q "(3 panels, 2 lines each at most)" "$work/out" && [ "$(head -c 4 "$work/bench.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ] &&
  pass || fail "plot_bench: 3 panels of 2 backends in a PNG"
expect_error "plot_bench on a file that is not bench CSV" "not a \`rudra bench --format csv\` file" \
  bash "$src/bench/plot_bench.sh" "$src/bench/grids/figure3.grid" "$work/x.png"
expect_error "bad descriptor" "problem 'mb1ic3ihx'" "$rudra" bench mb1ic3ihx
expect "bench runs pooling, LRN and inner product" "$rudra" bench pool_max:mb2ic3ih9kh3sh2 pool_ave:mb2ic3ih8kh3sh2ph1 \
  lrn_within:mb2ic4ih6ls3 lrn_across:mb2ic4ih6ls5 ip:mb3ic4ih2oc5 --mb 1,3 --backends own,reference --threads 1 \
  --min-time 0.01 --format csv -o "$work/layers.csv"
[ "$(grep -c ',own,' "$work/layers.csv")" = 22 ] && pass || fail "layer CSV: fwd and bwd_data of 4 layers, 3 passes of ip, at 2 mini-batches"
grep -q '^pool_max:mb3ic3ih9kh3sh2,.*,3,' "$work/layers.csv" && pass || fail "the sweep rewrites mb after the kind"
grep -q "GB/s" "$work/out" && pass || fail "pooling and LRN report bytes per second"
expect_error "unknown layer kind" "unknown kind 'pool_min'" "$rudra" bench pool_min:mb1ic3ih8kh2
expect_error "even LRN size" "ls must be odd" "$rudra" bench lrn_within:mb1ic3ih8ls4
expect_error "pooling pad" "padding must be smaller" "$rudra" bench pool_max:mb1ic3ih8kh2ph2
expect_error "bad batch file line" "b.txt:2:" bash -c "printf 'm4n4k4\nm4n4q4\n' >$work/b.txt; $rudra bench --batch-file $work/b.txt"
expect "info" "$rudra" info --ranks 4 --threads-per-rank 11 --topology "pack:2 numa:2 core:11 pu:4"
grep -q "rank 3: NUMA 3" "$work/out" && grep -q "sgemm micro-kernel: " "$work/out" && pass || fail "info shows kernels and the plan"
grep -q "^ISA gate: " "$work/out" && grep -q "^  max pooling: forward" "$work/out" && grep -q "^  LRN: " "$work/out" &&
  grep -q "^  transpose: " "$work/out" && grep -q "^  ReLU: " "$work/out" && pass ||
  fail "info lists the gate and every gated operation"

# One setting caps every operation: at the reference level nothing ISA-specific may run.
RUDRA_ISA=reference RUDRA_VERBOSE=1 expect "info capped at reference" "$rudra" info
grep -q "ISA gate: reference (portable C++ for the architecture's baseline): capped by RUDRA_ISA=reference" "$work/out" &&
  grep -q "^  sgemm micro-kernel: reference " "$work/out" && grep -q "^  transpose: portable" "$work/out" &&
  grep -q "^  LRN: portable (not allowed: " "$work/out" && grep -q "^rudra: sgemm micro-kernel reference" "$work/out" &&
  pass || fail "the cap reaches the micro-kernel, transpose and LRN, and RUDRA_VERBOSE reports it"
RUDRA_ISA=reference expect "time capped at reference" "$rudra" time "$src/models/cifar10_full/cifar10_full.prototxt" \
  --batch 2 --iterations 1
grep -q "^conv2 .*own: fwd im2col+sgemm_reference (implicit: micro-kernel reference has no indirect tile; gather: micro-kernel reference has no gather tile)" "$work/out" &&
  grep -q "^pool1 .*fwd portable (avx512_narrow, avx512_rows, portable_avx512: needs avx512, " "$work/out" &&
  grep -q "^norm1 .*portable (avx512_narrow, portable_avx512: needs avx512, " "$work/out" &&
  grep -q "^relu1 .*portable (portable_avx512: needs avx512, " "$work/out" && grep -q "^ip1 .*own (reference)" "$work/out" &&
  pass || fail "rudra time shows each layer's implementation under the cap and why"
RUDRA_ISA=sse9 expect_error "unknown ISA" "RUDRA_ISA=sse9: not an instruction-set level of this" "$rudra" info
grep -q "(choices: " "$work/out" && pass || fail "an unknown ISA names the choices"
RUDRA_ISA=sse9 expect_error "unknown ISA stops train before any work" "RUDRA_ISA=sse9" "$rudra" train "$solver" \
  --data "$data" --epochs 1 -o "$work/isa-run"
[ ! -e "$work/isa-run" ] && pass || fail "no output directory after an ISA error"
RUDRA_SGEMM_KERNEL=avx2 expect_error "retired variable" "RUDRA_SGEMM_KERNEL=avx2: replaced by RUDRA_ISA" "$rudra" info
RUDRA_SGEMM_BLOCKS=1,2 expect_error "bad blocks" "RUDRA_SGEMM_BLOCKS='1,2': expected three positive integers" "$rudra" info
expect "help names RUDRA_ISA" "$rudra" --help
grep -q "RUDRA_ISA=LEVEL" "$work/out" && pass || fail "--help documents RUDRA_ISA"

finish
