#!/usr/bin/env bash
# --precision bf16 end to end: where the ISA gate allows no BF16 dot products (a cap below
# avx512_bf16, or a CPU without them) the commands say so and run FP32; where it does, `rudra time`
# shows every convolution and inner product on own_bf16, and one epoch of Debian's Fashion-MNIST
# with cifar10_full_28 trained with BF16 inputs ends within a point of the FP32 run of the same seed.
# Usage: bf16_test.sh RUDRA_BINARY SOURCE_DIR
. "$(dirname "$0")/harness.sh" "$@"
export OMP_NUM_THREADS=2
net=$src/models/cifar10_full/cifar10_full.prototxt
solver=$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt
fm=/usr/share/datasets/fashion-mnist

"$rudra" info >"$work/info" 2>&1 || fail "info: $(cat "$work/info")"
grep -q "^  BF16 GEMM micro-kernel (BF16 inputs, FP32 sums): " "$work/info" && pass || fail "info names the BF16 micro-kernel"

# Capped at reference: no BF16 dot products, so fp32, said once, before the work.
RUDRA_ISA=reference "$rudra" time "$net" --batch 2 --iterations 1 --precision bf16 >"$work/ref" 2>&1 ||
  fail "time capped at reference: $(cat "$work/ref")"
[ "$(grep -c "^precision: fp32, not bf16: the ISA gate (reference" "$work/ref")" = 1 ] && pass ||
  fail "a cap without BF16 says that training runs fp32"
grep -q "^conv1 .* own: " "$work/ref" && grep -q "^ip1 .*own (reference)" "$work/ref" && ! grep -q own_bf16 "$work/ref" &&
  pass || fail "the layers stay FP32 under the cap"
"$rudra" time "$net" --precision bf17 >"$work/bad" 2>&1
[ $? -eq 1 ] && grep -q "precision" "$work/bad" && pass || fail "an unknown precision is refused"

if ! grep -q "^ISA levels this CPU runs: avx512_bf16" "$work/info"; then
  echo "skipped: the BF16 training checks; $(grep '^ISA levels' "$work/info") (no avx512_bf16)"
  finish
  exit
fi

"$rudra" time "$net" --batch 4 --iterations 1 --precision bf16 >"$work/t16" 2>&1 || fail "time bf16: $(cat "$work/t16")"
grep -q "^precision: bf16 (own layers: BF16 GEMM inputs on the avx512_bf16 micro-kernel" "$work/t16" && pass ||
  fail "bf16 is said"
for layer in conv1 conv2 conv3; do
  grep -q "^$layer .*own_bf16: fwd im2col+own_bf16 (avx512_bf16)" "$work/t16" && pass || fail "$layer on own_bf16"
done
grep -q "^ip1 .*own_bf16 (avx512_bf16)" "$work/t16" && pass || fail "ip1 on own_bf16"
# The products column: BF16 inputs on the convolutions and the inner product, FP32 elsewhere.
products() { awk -v l="$1" '$1 == l { print $5 }' "$2"; }
[ "$(products conv1 "$work/t16")/$(products conv3 "$work/t16")/$(products ip1 "$work/t16")/$(products pool1 "$work/t16")" = \
  bf16/bf16/bf16/fp32 ] && grep -q "^products: .*activations, gradients, sums and weights are FP32" "$work/t16" && pass ||
  fail "products per layer: $(grep -E '^(conv|ip|pool1)' "$work/t16" | cut -c1-80)"
# A layer named on another backend stays there, in FP32.
"$rudra" time "$net" --batch 4 --iterations 1 --precision bf16 --conv-backend own,conv2=reference >"$work/mix" 2>&1
grep -q "^conv2 .*reference: direct loops" "$work/mix" && grep -q "^conv1 .*own_bf16" "$work/mix" &&
  [ "$(products conv2 "$work/mix")/$(products conv1 "$work/mix")" = fp32/bf16 ] && pass ||
  fail "--conv-backend conv2=reference keeps conv2 FP32: $(grep '^conv' "$work/mix")"

# auto measures the BF16 backends only, and caches them apart from FP32's choices.
RUDRA_CACHE_DIR=$work/cache "$rudra" time "$net" --batch 4 --iterations 1 --precision bf16 --conv-backend auto >"$work/auto" 2>&1 ||
  fail "time bf16 auto: $(cat "$work/auto")"
[ "$(grep -cE "^conv[123] .*(own_bf16|onednn_bf16)[+a-z0-9_]* \(auto: fwd\+bwd_weights (own_bf16|onednn_bf16) \(ms: own_bf16 [0-9.]*, onednn_bf16" "$work/auto")" = 3 ] &&
  grep -q "^ip1 .*own_bf16" "$work/auto" && pass || fail "auto under bf16: $(grep -E '^(conv|ip)' "$work/auto")"
RUDRA_CACHE_DIR=$work/cache "$rudra" time "$net" --batch 4 --iterations 1 --conv-backend auto >"$work/auto32" 2>&1
grep -q "^conv1 .*(auto: fwd+bwd_weights [a-z]* (ms: own " "$work/auto32" && ! grep -E "^(conv|ip)" "$work/auto32" | grep -q _bf16 &&
  pass ||
  fail "auto in fp32 after bf16: $(grep '^conv1' "$work/auto32")"
for p in fp32 bf16; do
  "$rudra" train "$solver" --data "$fm" --epochs 1 --seed 5 --precision $p -o "$work/$p" >"$work/$p.log" 2>&1 ||
    fail "train $p: $(tail -3 "$work/$p.log")"
done
acc() { sed -n 's/.*"event":"epoch".*"test_accuracy":\([0-9.]*\).*/\1/p' "$work/$1/metrics.jsonl" | tail -1; }
a32=$(acc fp32) a16=$(acc bf16)
echo "one epoch: test accuracy fp32 $a32, bf16 $a16"
awk -v a="$a32" -v b="$a16" 'BEGIN { d = a - b; exit !(a > 0.8 && b > 0.8 && d < 0.01 && d > -0.01) }' && pass ||
  fail "bf16's accuracy ($a16) within a point of fp32's ($a32)"
finish
