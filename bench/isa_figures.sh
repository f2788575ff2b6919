#!/usr/bin/env bash
# Issue 15's figures at every ISA cap this CPU allows, each a side-by-side ratio from one run:
#   SGEMM 2048^3 and the cifar10_full GEMM shapes, 1 and 2 threads: own against BLIS and OpenBLAS
#     (BLIS as the library dispatches itself, and with BLIS_ARCH_TYPE forcing its best
#     sub-configuration for the cap: Debian's BLIS 0.9 takes 'generic' on CPUs it does not know);
#   convolutions over bench/cifar10_full_conv.txt (mb 1-128) and bench/alexnet_conv.txt (mb 4-64):
#     own / oneDNN speed, geometric mean (bench/conv_ratios.py);
#   pooling and LRN of cifar10_full (bench/cifar10_full_layers.txt, mb 128).
# The caps: RUDRA_ISA for this project, ONEDNN_MAX_CPU_ISA for oneDNN, OPENBLAS_CORETYPE and
# BLIS_ARCH_TYPE for the BLAS libraries. Training against PyTorch: bench/pytorch_compare.sh.
# Usage: bench/isa_figures.sh [RUDRA] [OUT_DIR]   env: LEVELS (the levels this CPU runs, e.g. "avx512 avx2"),
#        THREADS ("1 2"), MIN_TIME (0.3)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${1:-$src/build/rudra}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
levels=${LEVELS:-$("$rudra" info | sed -n 's/^ISA levels this CPU runs: \([a-z0-9, ]*\).*/\1/p' | tr -d , | sed 's/ reference//')}
threads=${THREADS:-1 2}
min_time=${MIN_TIME:-0.3}
# BLIS 0.9's arch_t numbers (BLIS_ARCH_TYPE takes the number): skx 0, haswell 3, zen3 6.
blis_arch() { case "$1" in avx512) echo 0 ;; *) echo 3 ;; esac; }
onednn_cap() { case "$1" in avx512) echo ALL ;; avx2) echo AVX2 ;; *) echo DEFAULT ;; esac; }

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
