#!/usr/bin/env bash
# Sourced by the command tests (cli_test.sh, dist_test.sh) with their arguments RUDRA_BINARY
# SOURCE_DIR: a scratch folder removed on exit, pass/fail counting, a data generator.
set -u
rudra=$1
src=$2
work=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
failures=0
passes=0
pass() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
finish() {
  echo "$passes passed, $failures failed"
  [ $failures -eq 0 ]
}

# 28x28 images of 10 classes: class k lights a 7x7 block at row 7*(k/4), column 7*(k%4), plus noise.
mkdata() {  # mkdata DIR PREFIX COUNT SEED
  perl -e '
    my ($dir, $prefix, $n, $seed) = @ARGV; srand($seed);
    open(my $im, ">", "$dir/$prefix-images-idx3-ubyte") or die; binmode $im;
    open(my $lb, ">", "$dir/$prefix-labels-idx1-ubyte") or die; binmode $lb;
    print $im pack("NNNN", 0x803, $n, 28, 28); print $lb pack("NN", 0x801, $n);
    for my $i (0 .. $n - 1) {
      my $k = $i % 10; my ($r0, $c0) = (7 * int($k / 4), 7 * ($k % 4));
      my $img = "";
      for my $r (0 .. 27) { for my $c (0 .. 27) {
        my $v = int(rand(60));
        $v += 180 if $r >= $r0 && $r < $r0 + 7 && $c >= $c0 && $c < $c0 + 7;
        $img .= chr($v > 255 ? 255 : $v);
      } }
      print $im $img; print $lb chr($k);
    }' "$@"
}

# cifar10_full_28 with a dropout layer before ip1, in DIR (its solver DIR/cifar10_full_28_solver.prototxt).
dropout_net() {  # dropout_net DIR
  mkdir -p "$1"
  cp "$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt" "$1/"
  awk '/^  name: "ip1"/ && !done { print "  name: \"drop3\"\n  type: \"Dropout\"\n  bottom: \"pool3\"\n  top: \"pool3\"";
    print "  dropout_param { dropout_ratio: 0.3 }\n}\nlayer {"; done = 1 } { print }' \
    "$src/models/cifar10_full_28/cifar10_full_28_train_test.prototxt" >"$1/cifar10_full_28_train_test.prototxt"
  grep -q '"drop3"' "$1/cifar10_full_28_train_test.prototxt"
}

# The small IDX set of the MPI tests (960 training and 200 test images) in $work/data, the solver
# they train, and one OpenMP thread per rank.
mpi_test_setup() {
  data=$work/data
  mkdir -p "$data"
  mkdata "$data" train 960 1
  mkdata "$data" t10k 200 2
  solver=$src/models/cifar10_full_28/cifar10_full_28_solver.prototxt
  export OMP_NUM_THREADS=1
}
