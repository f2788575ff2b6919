#!/usr/bin/env bash
# What a model costs across one link of the emulated cluster (tools/vcluster), for the simulator's
# links (bench/simulate, --link-burst-bytes): pingpong_bench between 2 nodes, one rank each, with
# the links shaped to each of RATES, and once at 10gbit as the reference without shaping. tc's
# tbf lets a message pass at once while its bucket holds the bytes, so a round trip's one-way
# time T gives the bucket a model finds: S - R * (T - T_10gbit) for a model of S bytes at R.
# Needs root. Usage: bench/vcluster_pingpong.sh PINGPONG_BENCH [BYTES=334032] [ROUNDS=40]
#                    environment: RATES="100mbit 1gbit"
set -uo pipefail
bench=$(readlink -f "$1") bytes=${2:-334032} rounds=${3:-40}
vc=$(cd "$(dirname "$0")/.." && pwd)/tools/vcluster/rudra-vcluster
trap '"$vc" down --name pp >/dev/null 2>&1' EXIT
one_way() {  # RATE -> the model's median one-way time, us
  "$vc" up --name pp --nodes 2 --rate "$1" --subnet 10.78.51 >/dev/null || exit 1
  timeout 300 "$vc" mpiexec --name pp -n 2 -ppn 1 "$bench" "$bytes" "$rounds" 2>/dev/null |
    sed -n 's/^model: .* median \([0-9.]*\) us$/\1/p'
  "$vc" down --name pp >/dev/null
}
ref=$(one_way 10gbit)
[ -n "$ref" ] || { echo "vcluster_pingpong: no time from $bench at 10gbit" >&2; exit 1; }
echo "| link | one-way median, us | bucket a model finds, bytes |"
echo "|---|---|---|"
echo "| 10gbit | $ref | (reference) |"
for rate in ${RATES:-100mbit 1gbit}; do
  t=$(one_way "$rate")
  [ -n "$t" ] || { echo "vcluster_pingpong: no time from $bench at $rate" >&2; exit 1; }
  python3 - "$rate" "$t" "$ref" "$bytes" <<'PY'
import sys
rate, t, ref, size = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
unit = next(u for u in units if rate.endswith(u))
bytes_per_s = float(rate[:-len(unit)]) * units[unit] / 8
print(f"| {rate} | {t:.0f} | {max(0.0, size - bytes_per_s * (t - ref) * 1e-6):.0f} |")
PY
done
