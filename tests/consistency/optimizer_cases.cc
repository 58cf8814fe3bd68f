// Consistency cases: the fused optimizer updates and assign. The harness runs ref and each fast
// kernel on clones of the inputs and compares the parameters and slots they leave behind.
#include "tests/consistency/op_case.h"

namespace tern::testing {
namespace {

struct Range {
  double lo, hi;
};

// Hyper-parameter inputs, then params, grads and one list per slot range for `shapes`.
std::vector<InputSpec> update_inputs(std::vector<InputSpec> hypers,
                                     const std::vector<Shape>& shapes,
                                     const std::vector<Range>& slots) {
  std::vector<InputSpec> in = std::move(hypers);
  for (const Shape& s : shapes) in.push_back(In(s, -1, 1));      // params
  for (const Shape& s : shapes) in.push_back(In(s, -0.5, 0.5));  // grads
  for (const Range& r : slots) {
    for (const Shape& s : shapes) in.push_back(In(s, r.lo, r.hi));
  }
  return in;
}

const std::vector<Shape> kSmall = {Shape({3, 4}), Shape({5}), Shape({2, 2, 3})};
// Above the fast kernel's chunk size and parallel threshold, with ragged tails.
const std::vector<Shape> kLarge = {Shape({70001}), Shape({300}), Shape({7})};

InputSpec lr() {
  return In(Shape({}), 0.01, 0.1);
}
InputSpec step(double t, DType d = DType::kI64) {
  return Fixed(Tensor::scalar(d, t));
}
// The trailing `apply` input of a has_apply update (true here: a case must mutate something;
// apply = false is tests/e2e/optimizer_apply_test.cc).
std::vector<InputSpec> with_apply(std::vector<InputSpec> in) {
  in.push_back(Fixed(Tensor::scalar(DType::kBool, 1)));
  return in;
}

// Appends one 16-bit copy input (dtype `d`, the parameter's shape, values the kernel overwrites)
// per index in `params` of `shapes`: attribute copies = params.
std::vector<InputSpec> with_copies(std::vector<InputSpec> in, const std::vector<Shape>& shapes,
                                   const std::vector<int64_t>& params, DType d) {
  for (int64_t i : params) {
    in.push_back(InputSpec{shapes[static_cast<size_t>(i)], -1, 1, d, false, std::nullopt});
  }
  return in;
}

const Range kVelocity{-0.1, 0.1}, kFirstMoment{-0.1, 0.1}, kSecondMoment{0.0, 0.01},
    kVhat{0.0, 0.02}, kRms{0.1, 1.0}, kMeanGrad{-0.2, 0.2};

int64_t n_small() {
  return static_cast<int64_t>(kSmall.size());
}
int64_t n_large() {
  return static_cast<int64_t>(kLarge.size());
}

}  // namespace

TERN_OP_CASES(optimizer) {
  return {
      {"sgd_update",
       update_inputs({lr()}, kSmall, {}),
       {{"num_params", n_small()}},
       false,
       {},
       0,
       "plain"},
      {"sgd_update",
       update_inputs({lr()}, kSmall, {kVelocity}),
       {{"num_params", n_small()}, {"momentum", 0.9}},
       false,
       {},
       0,
       "momentum"},
      {"sgd_update",
       update_inputs({lr()}, kSmall, {kVelocity}),
       {{"num_params", n_small()}, {"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.01}},
       false,
       {},
       0,
       "nesterov-l2"},
      {"sgd_update",
       update_inputs({lr()}, kLarge, {kVelocity}),
       {{"num_params", n_large()}, {"momentum", 0.5}, {"nesterov", true}},
       false,
       {},
       0,
       "large"},
      {"adam_update",
       update_inputs({lr(), step(3)}, kSmall, {kFirstMoment, kSecondMoment}),
       {{"num_params", n_small()}},
       false,
       {},
       0,
       "default"},
      {"adam_update",
       update_inputs({lr(), step(1)}, kSmall, {kFirstMoment, kSecondMoment, kVhat}),
       {{"num_params", n_small()}, {"amsgrad", true}, {"beta1", 0.8}},
       false,
       {},
       0,
       "amsgrad"},
      {"adam_update",
       update_inputs({lr(), step(7, DType::kF32)}, kSmall, {kFirstMoment, kSecondMoment}),
       {{"num_params", n_small()}, {"epsilon", 1e-3}},
       false,
       {},
       0,
       "f32-step"},
      {"adam_update",
       update_inputs({lr(), step(2)}, kLarge, {kFirstMoment, kSecondMoment, kVhat}),
       {{"num_params", n_large()}, {"amsgrad", true}},
       false,
       {},
       0,
       "large"},
      {"adamw_update",
       update_inputs({lr(), step(5)}, kSmall, {kFirstMoment, kSecondMoment}),
       {{"num_params", n_small()}, {"weight_decay", 0.1}},
       false,
       {},
       0,
       "default"},
      {"adamw_update",
       update_inputs({lr(), step(5, DType::kI32)}, kSmall, {kFirstMoment, kSecondMoment, kVhat}),
       {{"num_params", n_small()}, {"amsgrad", true}},
       false,
       {},
       0,
       "amsgrad"},
      {"adamw_update",
       update_inputs({lr(), step(9)}, kLarge, {kFirstMoment, kSecondMoment}),
       {{"num_params", n_large()}, {"weight_decay", 0.05}},
       false,
       {},
       0,
       "large"},
      {"rmsprop_update",
       update_inputs({lr()}, kSmall, {kRms}),
       {{"num_params", n_small()}},
       false,
       {},
       0,
       "plain"},
      {"rmsprop_update",
       update_inputs({lr()}, kSmall, {kRms, kVelocity}),
       {{"num_params", n_small()}, {"momentum", 0.9}},
       false,
       {},
       0,
       "momentum"},
      {"rmsprop_update",
       update_inputs({lr()}, kSmall, {kRms, kMeanGrad}),
       {{"num_params", n_small()}, {"centered", true}, {"rho", 0.8}},
       false,
       {},
       0,
       "centered"},
      {"rmsprop_update",
       update_inputs({lr()}, kLarge, {kRms, kVelocity, kMeanGrad}),
       {{"num_params", n_large()}, {"centered", true}, {"momentum", 0.5}},
       false,
       {},
       0,
       "large-centered-momentum"},
      {"sgd_update",
       with_apply(update_inputs({lr()}, kLarge, {kVelocity})),
       {{"num_params", n_large()}, {"momentum", 0.9}, {"has_apply", true}},
       false,
       {},
       0,
       "apply"},
      {"adam_update",
       with_apply(update_inputs({lr(), step(4)}, kLarge, {kFirstMoment, kSecondMoment})),
       {{"num_params", n_large()}, {"has_apply", true}},
       false,
       {},
       0,
       "apply"},
      {"adamw_update",
       with_apply(update_inputs({lr(), step(2)}, kSmall, {kFirstMoment, kSecondMoment, kVhat})),
       {{"num_params", n_small()}, {"amsgrad", true}, {"has_apply", true}},
       false,
       {},
       0,
       "apply"},
      {"rmsprop_update",
       with_apply(update_inputs({lr()}, kSmall, {kRms, kVelocity, kMeanGrad})),
       {{"num_params", n_small()}, {"centered", true}, {"momentum", 0.5}, {"has_apply", true}},
       false,
       {},
       0,
       "apply"},
      // 16-bit copies written with the update (f32 parameters only).
      {"sgd_update",
       with_copies(update_inputs({lr()}, kLarge, {kVelocity}), kLarge, {0, 2}, DType::kBF16),
       {{"num_params", n_large()}, {"momentum", 0.9}, {"copies", std::vector<int64_t>{0, 2}}},
       false,
       {DType::kF32},
       0,
       "bf16-copies"},
      {"adam_update",
       with_copies(update_inputs({lr(), step(3)}, kSmall, {kFirstMoment, kSecondMoment}), kSmall,
                   {1}, DType::kF16),
       {{"num_params", n_small()}, {"copies", std::vector<int64_t>{1}}},
       false,
       {DType::kF32},
       0,
       "f16-copy"},
      {"rmsprop_update",
       with_apply(
           with_copies(update_inputs({lr()}, kLarge, {kRms}), kLarge, {0, 1, 2}, DType::kBF16)),
       {{"num_params", n_large()}, {"copies", std::vector<int64_t>{0, 1, 2}}, {"has_apply", true}},
       false,
       {DType::kF32},
       0,
       "bf16-copies-apply"},
      {"assign", {In({3, 4}), In({3, 4}, -5, 5)}, {}, false, {}, 0, "copy"},
  };
}

}  // namespace tern::testing
