#!/usr/bin/env bash
# The portable build against a native one (-DRUDRA_NATIVE=ON) of the same sources on this
# machine, alternating in one run: `rudra time` of cifar10_full (images/s, best of ROUNDS per
# build and mini-batch) and `rudra bench` of the batch files (ms per problem and pass, each
# build's best over ROUNDS runs). Prints the native / portable time ratio (above 1: the portable
# build is faster). RUDRA_ISA applies to both, so the same command compares the AVX2 paths.
# Usage: bench/native_compare.sh PORTABLE_RUDRA NATIVE_RUDRA
#   env: BATCHES ("4 128"), THREADS (2), ROUNDS (3), BENCH_FILES (the cifar10_full conv, GEMM and
#        layer batch files), BENCH_MB (128)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ne 2 ]; then
  echo "usage: bench/native_compare.sh PORTABLE_RUDRA NATIVE_RUDRA" >&2
  exit 2
fi
portable=$1 native=$2
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
files=${BENCH_FILES:-"$src/bench/cifar10_full_conv.txt $src/bench/cifar10_full_gemm.txt $src/bench/cifar10_full_layers.txt"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=$threads

echo "rudra time, cifar10_full, $threads threads, best of $rounds (images/s)"
printf '%-6s %12s %12s %8s\n' batch portable native ratio
for mb in ${BATCHES:-4 128}; do
  iters=$([ "$mb" -ge 64 ] && echo 5 || echo 40)
  : >"$tmp/p"; : >"$tmp/n"
  for ((r = 0; r < rounds; r++)); do
    for b in p n; do
      bin=$portable; [ $b = n ] && bin=$native
      "$bin" time "$src/models/cifar10_full/cifar10_full.prototxt" --batch "$mb" --iterations "$iters" \
        --json "$tmp/t.json" >/dev/null
      sed 's/.*"images_per_s":\([0-9.e+]*\).*/\1/' "$tmp/t.json" >>"$tmp/$b"
    done
  done
  p=$(sort -g "$tmp/p" | tail -1) n=$(sort -g "$tmp/n" | tail -1)
  printf '%-6s %12.0f %12.0f %8.3f\n' "$mb" "$p" "$n" "$(awk -v a="$p" -v b="$n" 'BEGIN { print a / b }')"
done

echo
echo "rudra bench, own kernels, mini-batch ${BENCH_MB:-128}, $threads threads: ms, best of $rounds runs per build"
batch_args=()
for f in $files; do batch_args+=(--batch-file "$f"); done
for ((r = 0; r < rounds; r++)); do
  for b in p n; do
    bin=$portable; [ $b = n ] && bin=$native
    "$bin" bench "${batch_args[@]}" --mb "${BENCH_MB:-128}" --threads "$threads" --backends own --min-time 0.1 \
      --format csv -o "$tmp/$b$r.csv" >/dev/null
  done
done
python3 - "$tmp" "$rounds" <<'EOF'
import csv, math, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
best = {}
for b in "pn":
    for r in range(rounds):
        for row in csv.DictReader(open(f"{tmp}/{b}{r}.csv")):
            key = (row["name"] or row["problem"], row["pass"])
            best.setdefault(b, {})[key] = min(best.get(b, {}).get(key, 1e30), float(row["ms"]))
print(f"{'problem':28} {'pass':11} {'portable':>9} {'native':>9} {'ratio':>7}")
logs = []
for key in best["p"]:
    p, n = best["p"][key], best["n"][key]
    logs.append(math.log(n / p))
    print(f"{key[0][:28]:28} {key[1]:11} {p:9.3f} {n:9.3f} {n / p:7.3f}")
print(f"native / portable time, geometric mean over {len(logs)} cases: {math.exp(sum(logs) / len(logs)):.3f}")
EOF
