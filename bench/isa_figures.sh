#!/usr/bin/env bash
# Issue 15's figures at every ISA cap this CPU allows, each a side-by-side ratio from one run:
#   SGEMM 2048^3 and the cifar10_full GEMM shapes, 1 and 2 threads: own against BLIS and OpenBLAS
#     (BLIS as the library dispatches itself, and with BLIS_ARCH_TYPE forcing its best
#     sub-configuration for the cap: Debian's BLIS 0.9 takes 'generic' on CPUs it does not know);
#   convolutions over bench/cifar10_full_conv.txt (mb 1-128) and bench/alexnet_conv.txt (mb 4-64):
#     own / oneDNN speed, geometric mean (bench/conv_ratios.py);
#   pooling and LRN of cifar10_full (bench/cifar10_full_layers.txt, mb 128);
#   at a BF16 level (avx512_bf16; its FP32 operations run the avx512 code, measured at that cap):
#     the BF16 GEMM over bench/alexnet_gemm.txt and bench/cifar10_full_gemm.txt and the BF16
#     convolutions of both nets at mb 128, 2 threads: own_bf16 / own FP32 and own_bf16 / oneDNN
#     BF16 (matmul, convolution), geometric mean and range.
# The caps: RUDRA_ISA for this project, ONEDNN_MAX_CPU_ISA for oneDNN, OPENBLAS_CORETYPE and
# BLIS_ARCH_TYPE for the BLAS libraries. Training against PyTorch: bench/pytorch_compare.sh.
# Usage: bench/isa_figures.sh [RUDRA] [OUT_DIR]   env: LEVELS (the levels this CPU runs, e.g. "avx512 avx2"),
#        THREADS ("1 2"), MIN_TIME (0.3)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
levels=${LEVELS:-$("$rudra" info | sed -n 's/^ISA levels this CPU runs: \([a-z0-9_, ]*\).*/\1/p' | tr -d , | sed 's/ reference//')}
threads=${THREADS:-1 2}
min_time=${MIN_TIME:-0.3}
# BLIS 0.9's arch_t numbers (BLIS_ARCH_TYPE takes the number): skx 0, haswell 3, zen3 6.
blis_arch() { case "$1" in avx512*) echo 0 ;; *) echo 3 ;; esac; }
onednn_cap() { case "$1" in avx512_bf16) echo ALL ;; avx512) echo AVX512_CORE ;; avx2) echo AVX2 ;; *) echo DEFAULT ;; esac; }

bf16_summary() {  # csv NAME: own_bf16 against own and onednn_bf16, per pass
  python3 - "$1" "$2" <<'PY'
import collections, csv, math, sys
by = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    by[(r["name"] or r["problem"], r["pass"])][r["backend"]] = float(r["gflops"])
def summary(peer):
    rs = [v["own_bf16"] / v[peer] for v in by.values() if "own_bf16" in v and peer in v]
    return f"{math.exp(sum(map(math.log, rs)) / len(rs)):.2f} ({min(rs):.2f}-{max(rs):.2f})"
print(f"  {sys.argv[2]}, 2 threads, {len(by)} cases: own_bf16 / own FP32 {summary('own')}; "
      f"own_bf16 / onednn_bf16 {summary('onednn_bf16')}")
PY
}

bf16_figures() {  # LEVEL
  local set
  for set in alexnet cifar10_full; do
    "$rudra" bench --batch-file "$src/bench/${set}_gemm.txt" --threads 2 --backends own,own_bf16,onednn_bf16 \
      --min-time "$min_time" --format csv -o "$out/bf16_gemm_$set.csv" >/dev/null
    bf16_summary "$out/bf16_gemm_$set.csv" "BF16 GEMM, $set shapes"
    "$rudra" bench --batch-file "$src/bench/${set}_conv.txt" --mb 128 --threads 2 --backends own,own_bf16,onednn_bf16 \
      --min-time "$min_time" --format csv -o "$out/bf16_conv_$set.csv" >/dev/null
    bf16_summary "$out/bf16_conv_$set.csv" "BF16 convolutions, $set, mb 128"
  done
}

gemm_summary() {  # csv: own against the best of the BLAS columns present, per thread count
  python3 - "$1" <<'PY'
import collections, csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(dict)
for r in rows:
    by[(int(r["threads"]), r["name"] or r["problem"])][r["backend"]] = float(r["gflops"])
for t in sorted({k[0] for k in by}):
    shapes, big, big_best = [], None, None  # log(own / best) per cifar10_full shape; the 2048^3 row
    for (tt, name), v in sorted(by.items()):
        if tt != t: continue
        peers = {b: g for b, g in v.items() if b in ("blis", "blis_forced", "openblas")}
        best = max(peers.values())
        if name.startswith("m2048"):
            big, big_best = v, best
        else:
            shapes.append(math.log(v["own"] / best))
    print(f"  {t} thread(s): own / best of {', '.join(sorted(peers))}: 2048^3 {big['own'] / big_best:.2f} "
          f"({', '.join(f'{b} {g:.0f}' for b, g in sorted(big.items()))} GFLOP/s); "
          f"cifar10_full GEMMs geometric mean {math.exp(sum(shapes) / len(shapes)):.2f}")
PY
}

for level in $levels; do
  echo "== cap $level (RUDRA_ISA=$level ONEDNN_MAX_CPU_ISA=$(onednn_cap "$level") OPENBLAS_CORETYPE=Haswell for avx2)"
  export RUDRA_ISA=$level ONEDNN_MAX_CPU_ISA=$(onednn_cap "$level")
  if [ "$level" = avx512_bf16 ]; then
    bf16_figures "$level"
    continue
  fi
  if [ "$level" = avx2 ]; then export OPENBLAS_CORETYPE=Haswell; else unset OPENBLAS_CORETYPE; fi
  gemm="$out/gemm_$level.csv"
  "$rudra" bench m2048n2048k2048 --batch-file "$src/bench/cifar10_full_gemm.txt" --threads "$(echo $threads | tr ' ' ,)" \
    --backends own,blis,openblas --min-time "$min_time" --format csv -o "$gemm" >/dev/null
  BLIS_ARCH_TYPE=$(blis_arch "$level") "$rudra" bench m2048n2048k2048 --batch-file "$src/bench/cifar10_full_gemm.txt" \
    --threads "$(echo $threads | tr ' ' ,)" --backends blis --min-time "$min_time" --format csv -o "$out/blis_forced.csv" >/dev/null
  sed 's/,blis,/,blis_forced,/' "$out/blis_forced.csv" | tail -n +2 >>"$gemm"
  gemm_summary "$gemm"
  for set in cifar10_full:1,4,16,128 alexnet:4,16,64; do
    name=${set%%:*} mbs=${set#*:}
    "$rudra" bench --batch-file "$src/bench/${name}_conv.txt" --mb "$mbs" --threads 2 --backends own,onednn \
      --min-time "$min_time" --format csv -o "$out/conv_${name}_$level.csv" >/dev/null
    python3 "$src/bench/conv_ratios.py" "$out/conv_${name}_$level.csv" >"$out/conv_${name}_$level.txt"
    echo "  $name convolutions, mb $mbs, 2 threads: $(head -1 "$out/conv_${name}_$level.txt")"
  done
  "$rudra" bench --batch-file "$src/bench/cifar10_full_layers.txt" --mb 128 --threads 2 --backends own --min-time "$min_time" \
    --format csv -o "$out/layers_$level.csv" >/dev/null
  echo "  cifar10_full pooling and LRN, mb 128, 2 threads (ms, fwd / bwd_data):"
  python3 - "$out/layers_$level.csv" <<'PY'
import collections, csv, sys
ms = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    ms[r["name"] or r["problem"]][r["pass"]] = float(r["ms"])
print("    " + "; ".join(f"{n} {v.get('fwd', 0):.2f} / {v.get('bwd_data', 0):.2f}" for n, v in ms.items() if not n.startswith("ip")))
PY
done
echo "csv files in $out"
