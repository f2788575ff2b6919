# Sourced by the benchmarks that need a large model with the small images (overlap_table1.sh,
# ps_receive_ahead.sh): cifar10_full_28 with an inner-product layer of WIDE outputs inserted
# after pool3 (576 x WIDE weights: 16384 gives 9.4M parameters, a 38 MB gradient).
# wide_model DIR WIDE: writes DIR/wide_train_test.prototxt and DIR/wide_solver.prototxt, and
# sets $solver to the latter.
wide_model() {
  local dir=$1 wide=$2 models
  models=$(cd "$(dirname "${BASH_SOURCE[0]}")/../models/cifar10_full_28" && pwd)
  local model=$dir/wide_train_test.prototxt
  solver=$dir/wide_solver.prototxt
  perl -0pe 's/(layer \{\s*name: "ip1".*?bottom: )"pool3"/layer {\n  name: "ip_wide"\n  type: "InnerProduct"\n  bottom: "pool3"\n  top: "ip_wide"\n  inner_product_param {\n    num_output: '"$wide"'\n    weight_filler { type: "xavier" }\n    bias_filler { type: "constant" }\n  }\n}\nlayer {\n  name: "relu_wide"\n  type: "ReLU"\n  bottom: "ip_wide"\n  top: "ip_wide"\n}\n$1"ip_wide"/s' \
    "$models/cifar10_full_28_train_test.prototxt" >"$model"
  grep -q '"ip_wide"' "$model" || { echo "wide_model: could not widen the model" >&2; return 1; }
  sed -e "s|^net:.*|net: \"$model\"|" "$models/cifar10_full_28_solver.prototxt" >"$solver"
}
