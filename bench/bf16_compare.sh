#!/usr/bin/env bash
# BF16 against FP32, side by side in one run, on this machine:
#  1. GEMM GFLOP/s: own FP32, own BF16 (FP32 in and out, rounded as packed), oneDNN's BF16 matmul
#     (inputs already BF16), on AlexNet's and cifar10_full's GEMM shapes;
#  2. convolution GFLOP/s, the same backends (oneDNN's convolutions on BF16 tensors), AlexNet's and
#     cifar10_full's layers at mini-batch 128;
#  3. the training step (`rudra time`: forward + backward) of cifar10_full and AlexNet at each
#     mini-batch: rudra FP32, `--precision bf16` (own kernels), `--precision bf16 --conv-backend
#     onednn_bf16`, `--precision bf16 --conv-backend auto` (each convolution layer's faster of
#     own_bf16 and onednn_bf16, measured once before the rounds) against FP32 `--conv-backend auto`
#     (the fastest of own, BLIS and oneDNN), and PyTorch 1.13 FP32 and with
#     CPU autocast to BF16, alternating ROUNDS rounds, the best of each kept.
# The % of peak of BF16 rows is of the BF16 dot-product peak. Without avx512_bf16 it says so and
# stops. Needs python3-torch for part 3's PyTorch columns (skipped without it).
# Usage: bench/bf16_compare.sh [RUDRA]   env: THREADS (2), ROUNDS (3), PARTS ("gemm conv train"),
#        BATCHES_CIFAR ("4 128"), BATCHES_ALEXNET ("32 128"), NETS ("cifar10_full alexnet")
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
python=${PYTHON:-/usr/bin/python3}
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
export OMP_NUM_THREADS=$threads
if ! "$rudra" info | grep -q "^ISA levels this CPU runs: avx512_bf16"; then
  echo "bf16_compare: $("$rudra" info | grep '^ISA levels') (no avx512_bf16): nothing to compare" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $threads threads"
ratio_table() {  # FILE: rudra bench lines -> per problem and pass, own_bf16 / own and own_bf16 / onednn_bf16
  awk '$2 ~ /^(own|own_bf16|onednn_bf16)$/ && $5 == "thr" {
         key = $1 " " $3; ms[key, $2] = $6; if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
       END { printf "%-52s %-12s %10s %10s %10s %8s %8s\n", "problem", "pass", "own ms", "own_bf16", "onednn_bf16", "x own", "x onednn"
             for (i = 0; i < n; i++) { split(order[i], k, " ")
               a = ms[order[i], "own"]; b = ms[order[i], "own_bf16"]; c = ms[order[i], "onednn_bf16"]
               printf "%-52s %-12s %10.3f %10.3f %10.3f %8.2f %8.2f\n", k[1], k[2], a, b, c, (b ? a / b : 0), (b ? c / b : 0) } }' "$1"
}
for part in ${PARTS:-gemm conv train}; do
  case "$part" in
  gemm)
    echo "== GEMM (own FP32, own BF16, oneDNN BF16 matmul)"
    "$rudra" bench --batch-file "$src/bench/alexnet_gemm.txt" "$src/bench/cifar10_full_gemm.txt" \
      --backends own,own_bf16,onednn_bf16 --threads "$threads" --min-time 0.3 >"$tmp/gemm" 2>&1
    grep -E "^(peak|BF16 peak)" "$tmp/gemm"
    ratio_table "$tmp/gemm" ;;
  conv)
    echo "== convolution at mini-batch 128 (own FP32, own BF16, oneDNN BF16)"
    "$rudra" bench --batch-file "$src/bench/alexnet_conv.txt" "$src/bench/cifar10_full_conv.txt" --mb 128 \
      --backends own,own_bf16,onednn_bf16 --threads "$threads" --min-time 0.3 >"$tmp/conv" 2>&1
    grep -E "^(peak|BF16 peak)" "$tmp/conv"
    ratio_table "$tmp/conv" ;;
  train)
    echo "== training step, images/s (best of $rounds alternating rounds)"
    has_torch=1
    "$python" -c "import torch" 2>/dev/null || { has_torch=0; echo "(no python3-torch: PyTorch columns skipped)"; }
    printf '%-10s %5s %10s %10s %14s %10s %10s %10s %10s %8s %8s %8s %8s %8s\n' net batch fp32 bf16 bf16+onednn fp32+auto \
      bf16+auto torch torch_bf16 "bf16/fp32" "bf16/torch_bf16" "bf16+onednn/fp32" "bf16+auto/fp32" "bf16+auto/fp32+auto"
    for net in ${NETS:-cifar10_full alexnet}; do
      if [ $net = alexnet ]; then model=$src/models/alexnet/alexnet_train_val.prototxt shape="--input-shape 3,227,227"
        batches=${BATCHES_ALEXNET:-32 128} torch_script=pytorch_alexnet.py
      else model=$src/models/cifar10_full/cifar10_full.prototxt shape="" batches=${BATCHES_CIFAR:-4 128}
        torch_script=pytorch_cifar10_full.py; fi
      for mb in $batches; do
        iters=$([ "$mb" -ge 64 ] && echo 3 || echo 20)
        [ $net = alexnet ] && iters=$([ "$mb" -ge 64 ] && echo 2 || echo 4)
        for k in fp32 bf16 bf16o fp32a bf16a torch torch_bf16; do : >"$tmp/$k"; done
        auto32="--precision fp32 --conv-backend auto --auto-cache $tmp/auto_cache.json"
        auto16="--precision bf16 --conv-backend auto --auto-cache $tmp/auto_cache.json"
        for args in "$auto32" "$auto16"; do  # auto measures here, once for each precision
          # shellcheck disable=SC2086
          "$rudra" time "$model" --batch "$mb" --iterations 1 $shape $args >/dev/null 2>&1
        done
        for ((r = 0; r < rounds; r++)); do
          for k in fp32 bf16 bf16o fp32a bf16a; do
            case $k in fp32) args="--precision fp32" ;; bf16) args="--precision bf16" ;;
              bf16o) args="--precision bf16 --conv-backend onednn_bf16" ;; fp32a) args=$auto32 ;; bf16a) args=$auto16 ;; esac
            # shellcheck disable=SC2086
            "$rudra" time "$model" --batch "$mb" --iterations "$iters" $shape $args --json "$tmp/r.json" >/dev/null 2>&1
            sed 's/.*"images_per_s":\([0-9.e+]*\).*/\1/' "$tmp/r.json" >>"$tmp/$k"
          done
          if [ $has_torch = 1 ]; then
            (cd "$src/bench" && "$python" $torch_script --batch "$mb" --threads "$threads" --iterations "$iters") |
              sed 's/.*"images_per_s": \([0-9.e+]*\).*/\1/' >>"$tmp/torch"
            (cd "$src/bench" && "$python" $torch_script --batch "$mb" --threads "$threads" --iterations "$iters" --bf16) |
              sed 's/.*"images_per_s": \([0-9.e+]*\).*/\1/' >>"$tmp/torch_bf16"
          fi
        done
        b() { sort -g "$tmp/$1" | tail -1; }
        f=$(b fp32) h=$(b bf16) o=$(b bf16o) fa=$(b fp32a) a=$(b bf16a) t=$(b torch) tb=$(b torch_bf16)
        awk -v n=$net -v mb="$mb" -v f="$f" -v h="$h" -v o="$o" -v fa="$fa" -v a="$a" -v t="${t:-0}" -v tb="${tb:-0}" 'BEGIN {
          printf "%-10s %5d %10.1f %10.1f %14.1f %10.1f %10.1f %10.1f %10.1f %8.2f %8.2f %8.2f %8.2f %8.2f\n", n, mb, f, h, o,
                 fa, a, t, tb, h / f, (tb > 0 ? h / tb : 0), o / f, a / f, a / fa }'
      done
    done ;;
  *) echo "bf16_compare: unknown part '$part' (gemm, conv, train)" >&2; exit 2 ;;
  esac
done
