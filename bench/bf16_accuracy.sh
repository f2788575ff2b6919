#!/usr/bin/env bash
# BF16's effect on accuracy, each pair with the same seed, on Debian's Fashion-MNIST with
# cifar10_full_28, 10 epochs (EPOCHS):
#  1. `rudra train`, mini-batch 64: --precision fp32 against bf16;
#  2. the main job (tools/run-main.sh: hardsync, 4 learners of mini-batch 32): fp32 against
#     --precision bf16;
#  3. 1-softsync with 8 learners of mini-batch 16 (`rudra dist`): --wire fp32 against bf16, with
#     the PS's bytes received per update and sent per reply;
#  4. (wire_hardsync, not by default) hardsync with 8 learners of 16: --wire fp32 against bf16;
#  5. (wire_replay, not by default) 1-softsync as in 3, each wire's run and its schedule replayed
#     with the other wire: pairs that differ by the wire alone.
# Prints each run's last-epoch test accuracy and the differences. Needs avx512_bf16 for parts 1
# and 2 (part 3 runs anywhere). About 25 minutes on 2 cores.
# Usage: bench/bf16_accuracy.sh [OUT_DIR]   env: EPOCHS (10), PARTS ("single hardsync wire"),
#   WIRE_RUNS (1: pairs of wire runs, seeds 1..WIRE_RUNS)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rudra=${RUDRA:-$src/build/rudra}
out=${1:-$(mktemp -d)}
epochs=${EPOCHS:-10}
data=/usr/share/datasets/fashion-mnist
mkdir -p "$out"
last() {  # last RUN_DIR: test accuracy of the last epoch line
  sed -n 's/.*"event":"epoch".*"test_accuracy":\([0-9.]*\).*/\1/p' "$1/metrics.jsonl" | tail -1
}
traffic() {  # traffic RUN_DIR: PS bytes received per update and sent per reply with weights, last epoch
  python3 -c 'import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if "\"event\":\"epoch\"" in l][-1]
t = e["rank0_traffic"]
print("%.0f %.0f" % (t["received_bytes"] / e["updates"], t["sent_bytes"] / t["weight_replies"]))' "$1/metrics.jsonl"
}
diff_line() {  # diff_line WHAT A B
  awk -v w="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%-44s fp32 %.4f  bf16 %.4f  difference %+.2f points\n", w, a, b, 100 * (b - a) }'
}
echo "$epochs epochs of Fashion-MNIST, cifar10_full_28; runs in $out"
for part in ${PARTS:-single hardsync wire}; do
  case $part in
  single)
    for p in fp32 bf16; do
      "$rudra" train "$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt" --data "$data" --epochs "$epochs" \
        --seed 1 --precision $p -o "$out/single_$p" --overwrite >"$out/single_$p.log" 2>&1
    done
    diff_line "rudra train, mini-batch 64" "$(last "$out/single_fp32")" "$(last "$out/single_bf16")" ;;
  hardsync)
    for p in fp32 bf16; do
      OMP_NUM_THREADS=1 "$src/tools/rudra-launch" -n 6 "$src/models/cifar10_full_28/cifar10_full_28_b128_solver.prototxt" \
        --protocol hardsync --batch 32 --epochs "$epochs" --reference-batch 128 --data "$data" --precision $p \
        -o "$out/hardsync_$p" --overwrite >"$out/hardsync_$p.log" 2>&1
    done
    diff_line "main job (hardsync, 4 x 32), --precision" "$(last "$out/hardsync_fp32")" "$(last "$out/hardsync_bf16")" ;;
  wire)
    # 1-softsync's order of arrivals differs from run to run: WIRE_RUNS pairs (seeds 1, 2, ...),
    # each wire's mean and range.
    for seed in $(seq 1 "${WIRE_RUNS:-1}"); do
      suffix=$([ "$seed" = 1 ] && echo "" || echo "_s$seed")
      for w in fp32 bf16; do
        OMP_NUM_THREADS=1 "$src/tools/rudra-launch" -n 10 "$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt" \
          --protocol softsync --n 1 --batch 16 --epochs "$epochs" --data "$data" --wire $w --seed "$seed" \
          -o "$out/wire_$w$suffix" --overwrite >"$out/wire_$w$suffix.log" 2>&1
      done
      diff_line "1-softsync, 8 x 16, --wire, seed $seed" "$(last "$out/wire_fp32$suffix")" "$(last "$out/wire_bf16$suffix")"
      a32="${a32:-} $(last "$out/wire_fp32$suffix")"; a16="${a16:-} $(last "$out/wire_bf16$suffix")"
    done
    python3 -c 'import sys
a, b = [[float(x) for x in s.split()] for s in sys.argv[1:3]]
m = lambda v: sum(v) / len(v)
print("1-softsync --wire over %d pairs: fp32 mean %.4f (%.4f-%.4f), bf16 mean %.4f (%.4f-%.4f), difference of means %+.2f points"
      % (len(a), m(a), min(a), max(a), m(b), min(b), max(b), 100 * (m(b) - m(a))))' "$a32" "$a16"
    read -r r32 s32 <<<"$(traffic "$out/wire_fp32")"
    read -r r16 s16 <<<"$(traffic "$out/wire_bf16")"
    awk -v a="$r32" -v b="$r16" -v c="$s32" -v d="$s16" 'BEGIN {
      printf "PS bytes per update received: fp32 %d, bf16 %d (%.3f); per reply sent: %d, %d (%.3f)\n", a, b, b / a, c, d, d / c }' ;;
  wire_hardsync)
    # The wire's effect alone: hardsync's updates are the same in every run, so a pair differs by
    # the wire only.
    for w in fp32 bf16; do
      OMP_NUM_THREADS=1 "$src/tools/rudra-launch" -n 10 "$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt" \
        --protocol hardsync --batch 16 --epochs "$epochs" --data "$data" --wire $w --seed 1 \
        -o "$out/wire_hardsync_$w" --overwrite >"$out/wire_hardsync_$w.log" 2>&1
    done
    diff_line "hardsync, 8 x 16, --wire" "$(last "$out/wire_hardsync_fp32")" "$(last "$out/wire_hardsync_bf16")" ;;
  wire_replay)
    # The wire alone on 1-softsync's own schedules: a run with each wire (seed 1), and each run's
    # schedule replayed with the other wire (`rudra dist --replay RUN --wire W`): both wires train
    # on the same gradients' order and staleness, so each pair differs by the wire only.
    for w in fp32 bf16; do
      OMP_NUM_THREADS=1 "$src/tools/rudra-launch" -n 10 "$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt" \
        --protocol softsync --n 1 --batch 16 --epochs "$epochs" --data "$data" --wire $w --seed 1 \
        -o "$out/replay_run_$w" --overwrite >"$out/replay_run_$w.log" 2>&1
      other=$([ $w = fp32 ] && echo bf16 || echo fp32)
      "$rudra" dist --replay "$out/replay_run_$w" --wire $other -o "$out/replay_run_$w/as_$other" --overwrite \
        >"$out/replay_run_$w.as_$other.log" 2>&1
    done
    diff_line "1-softsync, 8 x 16, fp32 run's schedule" "$(last "$out/replay_run_fp32")" \
      "$(last "$out/replay_run_fp32/as_bf16")"
    diff_line "1-softsync, 8 x 16, bf16 run's schedule" "$(last "$out/replay_run_bf16/as_fp32")" \
      "$(last "$out/replay_run_bf16")" ;;
  *) echo "bf16_accuracy: unknown part '$part' (single, hardsync, wire, wire_hardsync, wire_replay)" >&2; exit 2 ;;
  esac
done
