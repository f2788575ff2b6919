# Sourced by the benchmarks that compare two settings of `rudra dist` side by side
# (transport_cost.sh, timeline_cost.sh): runs them alternately ROUNDS times in one session and
# prints each run's mean images/s after the first epoch, the means and their ratio.
# The caller defines run_one SETTING OUT (one run writing OUT/metrics.jsonl); sets $solver, $work.
solver=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/models/cifar10_full_28/cifar10_full_28_solver.prototxt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
rate() {  # mean images/s after the first epoch
  grep -o '"images_per_s":[0-9.]*' "$1/metrics.jsonl" | tail -n +2 | cut -d: -f2 |
    awk '{ s += $1; n++ } END { printf "%.1f", n ? s / n : 0 }'
}
alternate() {  # alternate ROUNDS LABEL A B: A and B alternately; prints the ratio B/A
  local rounds=$1 label=$2 a=$3 b=$4 r setting out
  printf "%-8s %-22s %s\n" round "$label" images/s
  for r in $(seq "$rounds"); do
    for setting in "$a" "$b"; do
      out=$work/$r-$setting
      run_one "$setting" "$out"
      printf "%-8s %-22s %s\n" "$r" "$setting" "$(rate "$out")"
      echo "$setting $(rate "$out")" >>"$work/all"
    done
  done
  awk -v a="$a" -v b="$b" '{ s[$1] += $2; n[$1]++ } END { printf "mean: %s %.1f, %s %.1f images/s; %s/%s = %.3f\n",
    a, s[a] / n[a], b, s[b] / n[b], b, a, (s[b] / n[b]) / (s[a] / n[a]) }' "$work/all"
}
