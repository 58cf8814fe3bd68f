// Unary op family: elementwise math on one tensor (neg, exp, relu, gelu, ...), `cast` between all
// dtypes, and the gradient helpers relu_grad, gelu_grad, sigmoid_grad, tanh_grad that the
// gradient rules of relu, gelu, sigmoid and tanh emit. Every op keeps its input's shape.
#include <string>
#include <vector>

#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

// Floats plus the signed integers: ops whose integer form is meaningful only with a sign.
const std::vector<DType> kSignedDTypes = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                                          DType::kI8,  DType::kI32, DType::kI64};

struct UnarySpec {
  const char* name;
  const char* doc;
  const std::vector<DType>* dtypes;
  uint32_t extra_traits = kTraitNone;
};

void add_unary(OpRegistry& r, const UnarySpec& s, std::vector<AttrSpec> attrs = {}) {
  r.add({.name = s.name,
         .family = "unary",
         .doc = s.doc,
         .inputs = {"x"},
         .attrs = std::move(attrs),
         .dtypes = *s.dtypes,
         .traits = kTraitElementwise | s.extra_traits,
         .inplace = {{0, 0}},
         .infer = [](const InferContext& ctx) { return infer_same_as_input(ctx, 0); }});
}

// relu_grad(dy, x) and friends: two inputs of one type, output of that type.
void add_grad_helper(OpRegistry& r, const char* name, const char* second_input, const char* doc,
                     std::vector<AttrSpec> attrs = {}) {
  r.add({.name = name,
         .family = "unary",
         .doc = doc,
         .inputs = {"dy", second_input},
         .attrs = std::move(attrs),
         .dtypes = kFloatDTypes,
         .traits = kTraitElementwise | kTraitNotDifferentiable,
         .inplace = {{0, 0}},
         .infer = [](const InferContext& ctx) {
           require_same_type(ctx, 0, 1);
           return infer_same_as_input(ctx, 0);
         }});
}

std::vector<TensorType> infer_cast(const InferContext& ctx) {
  return {{ctx.attrs.get_dtype("dtype"), ctx.input(0).shape}};
}

}  // namespace

void register_unary_ops(OpRegistry& r) {
  const UnarySpec specs[] = {
      {"neg", "-x (integers wrap around).", &kSignedDTypes},
      {"abs", "|x| (the most negative integer wraps to itself).", &kNumericDTypes},
      {"exp", "e^x.", &kFloatDTypes},
      {"log", "Natural logarithm; NaN below 0, -inf at 0.", &kFloatDTypes},
      {"log1p", "log(1 + x), accurate for small x.", &kFloatDTypes},
      {"sqrt", "Square root; NaN below 0.", &kFloatDTypes},
      {"rsqrt", "1 / sqrt(x).", &kFloatDTypes},
      {"square", "x * x (integers wrap around).", &kNumericDTypes},
      {"tanh", "Hyperbolic tangent.", &kFloatDTypes},
      {"sigmoid", "1 / (1 + e^-x).", &kFloatDTypes},
      {"relu", "max(x, 0); NaN stays NaN.", &kNumericDTypes},
      {"softplus", "log(1 + e^x), computed without overflow.", &kFloatDTypes},
      {"sin", "Sine (radians).", &kFloatDTypes},
      {"cos", "Cosine (radians).", &kFloatDTypes},
      {"sign", "-1, 0 or 1 by the sign of x; NaN stays NaN. No gradient flows through it.",
       &kNumericDTypes, kTraitNotDifferentiable},
  };
  for (const UnarySpec& s : specs) add_unary(r, s);
  add_unary(r,
            {"gelu",
             "x * Phi(x) with Phi the standard normal CDF (erf form); approximate = true uses "
             "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).",
             &kFloatDTypes},
            {{"approximate", AttrKind::kBool, false}});

  r.add({.name = "cast",
         .family = "unary",
         .doc = "Converts to attribute `dtype`. Floats to integers truncate toward zero and "
                "saturate at the integer's range (NaN becomes 0); integers wrap to narrower "
                "integers; anything to bool is x != 0; bool to numbers is 0 or 1.",
         .inputs = {"x"},
         .attrs = {{"dtype", AttrKind::kDType, std::nullopt}},
         .dtypes = kAllDTypeList,
         .traits = kTraitElementwise,
         .infer = infer_cast});

  add_grad_helper(r, "relu_grad", "x", "dy where x > 0, else 0 (the gradient of relu).");
  add_grad_helper(r, "gelu_grad", "x", "dy * d gelu(x) / dx, in the form chosen by `approximate`.",
                  {{"approximate", AttrKind::kBool, false}});
  add_grad_helper(r, "sigmoid_grad", "y", "dy * y * (1 - y) with y = sigmoid(x).");
  add_grad_helper(r, "tanh_grad", "y", "dy * (1 - y^2) with y = tanh(x).");
}

}  // namespace tern::ops
