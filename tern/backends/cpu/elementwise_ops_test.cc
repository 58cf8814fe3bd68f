// Op-level tests of the unary and binary families that the consistency harness does not make:
// error messages (broadcast mismatches name the op, the node and both shapes), cast round trips
// and saturation, integer wrap-around, NaN rules, and the shape of gradient graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "tern/autodiff/autodiff.h"
#include "tern/ir/graph.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/runtime.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {
namespace {

using runtime::eager_call1;

Tensor ref_call(std::string_view op, const std::vector<Tensor>& in, const ops::Attrs& attrs = {}) {
  runtime::EagerOptions o;
  o.kernel = "ref";
  return eager_call1(op, in, attrs, o);
}

Tensor cast(const Tensor& x, DType to) {
  return eager_call1("cast", {x}, {{"dtype", to}});
}

TEST(ElementwiseErrors, BroadcastMismatchNamesOpNodeAndShapes) {
  ir::Graph g;
  ir::Value* a = g.input("a", {DType::kF32, {3, 4}});
  ir::Value* b = g.input("b", {DType::kF32, {5}});
  EXPECT_TERN_ERROR(
      g.add("add", {a, b}, {}, "dense_1/bias_add"), ErrorCode::kInvalidArgument,
      "op 'add' (node 'dense_1/bias_add'): shapes [3, 4] and [5] cannot be broadcast");
  ir::Value* c = g.input("c", {DType::kBool, {3, 1}});
  EXPECT_TERN_ERROR(g.add("where", {c, a, b}, {}, "mask"), ErrorCode::kInvalidArgument,
                    "op 'where' (node 'mask'): shapes [3, 1], [3, 4] and [5] cannot be broadcast");
  EXPECT_TERN_ERROR(eager_call1("mul", {Tensor(DType::kF32, {2}), Tensor(DType::kF32, {3})}),
                    ErrorCode::kInvalidArgument, "shapes [2] and [3] cannot be broadcast");
}

TEST(ElementwiseErrors, DTypeMistakesAreNamed) {
  EXPECT_TERN_ERROR(eager_call1("add", {Tensor(DType::kF32, {2}), Tensor(DType::kF64, {2})}),
                    ErrorCode::kInvalidArgument, "different dtypes (f32 vs f64)");
  EXPECT_TERN_ERROR(eager_call1("exp", {Tensor(DType::kI32, {2})}), ErrorCode::kInvalidArgument,
                    "op 'exp' (node 'exp'): dtype i32 is not supported");
  EXPECT_TERN_ERROR(eager_call1("where", {Tensor(DType::kF32, {2}), Tensor(DType::kF32, {2}),
                                          Tensor(DType::kF32, {2})}),
                    ErrorCode::kInvalidArgument, "cond must be bool, got f32");
  EXPECT_TERN_ERROR(eager_call1("relu_grad", {Tensor(DType::kF32, {2}), Tensor(DType::kF32, {3})}),
                    ErrorCode::kInvalidArgument, "different shapes ([2] vs [3])");
  EXPECT_TERN_ERROR(eager_call1("cast", {Tensor(DType::kF32, {2})}), ErrorCode::kInvalidArgument,
                    "required attribute 'dtype' is missing");
  EXPECT_TERN_ERROR(
      eager_call1("logical_and", {Tensor(DType::kF32, {2}), Tensor(DType::kF32, {2})}),
      ErrorCode::kInvalidArgument, "dtype f32 is not supported");
}

TEST(ElementwiseCast, RoundTripsAreExactWhereTheValueFits) {
  Tensor ints = Tensor::from_values(DType::kI32, {5}, {-2147483648.0, -7, 0, 42, 2147483647.0});
  EXPECT_TRUE(bitwise_equal(cast(cast(ints, DType::kF64), DType::kI32), ints));
  EXPECT_TRUE(bitwise_equal(cast(cast(ints, DType::kI64), DType::kI32), ints));
  for (DType half : {DType::kBF16, DType::kF16}) {
    Tensor h = random_tensor(half, {1000}, 11, -100, 100);
    EXPECT_TRUE(bitwise_equal(cast(cast(h, DType::kF32), half), h)) << dtype_name(half);
    EXPECT_TRUE(bitwise_equal(cast(cast(h, DType::kF64), half), h)) << dtype_name(half);
  }
  Tensor small = Tensor::from_values(DType::kI8, {4}, {-128, -1, 0, 127});
  for (DType to : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64}) {
    EXPECT_TRUE(bitwise_equal(cast(cast(small, to), DType::kI8), small)) << dtype_name(to);
  }
  Tensor flags = Tensor::from_values(DType::kBool, {3}, {1, 0, 1});
  for (DType to : {DType::kF32, DType::kBF16, DType::kU8, DType::kI64}) {
    Tensor n = cast(flags, to);
    EXPECT_EQ(n.to_doubles(), (std::vector<double>{1, 0, 1})) << dtype_name(to);
    EXPECT_TRUE(bitwise_equal(cast(n, DType::kBool), flags)) << dtype_name(to);
  }
}

TEST(ElementwiseCast, FloatToIntegerTruncatesAndSaturates) {
  Tensor x = Tensor::from_values(DType::kF32, {7}, {-1e10, 1e10, NAN, 300, -300, 2.9, -2.9});
  EXPECT_EQ(cast(x, DType::kI8).to_doubles(),
            (std::vector<double>{-128, 127, 0, 127, -128, 2, -2}));
  EXPECT_EQ(cast(x, DType::kU8).to_doubles(), (std::vector<double>{0, 255, 0, 255, 0, 2, 0}));
  EXPECT_EQ(cast(x, DType::kI32).to_doubles(),
            (std::vector<double>{-2147483648.0, 2147483647.0, 0, 300, -300, 2, -2}));
  Tensor big = Tensor::from_values(DType::kF64, {2}, {1e300, -1e300});
  Tensor i64 = cast(big, DType::kI64);
  EXPECT_EQ(i64.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.data<int64_t>()[1], std::numeric_limits<int64_t>::min());
  Tensor nonzero = Tensor::from_values(DType::kF32, {4}, {0.0, -0.0, 0.5, NAN});
  EXPECT_EQ(cast(nonzero, DType::kBool).to_doubles(), (std::vector<double>{0, 0, 1, 1}));
}

TEST(ElementwiseIntegers, ArithmeticWrapsAround) {
  Tensor a = Tensor::from_values(DType::kI8, {3}, {100, -128, 127});
  Tensor b = Tensor::from_values(DType::kI8, {3}, {100, 1, 2});
  EXPECT_EQ(ref_call("add", {a, b}).to_doubles(), (std::vector<double>{-56, -127, -127}));
  EXPECT_EQ(ref_call("sub", {b, a}).to_doubles(), (std::vector<double>{0, -127, -125}));
  EXPECT_EQ(ref_call("neg", {a}).to_doubles(), (std::vector<double>{-100, -128, -127}));
  EXPECT_EQ(ref_call("abs", {a}).to_doubles(), (std::vector<double>{100, -128, 127}));
  Tensor m = Tensor::from_values(DType::kI32, {1}, {65536});
  EXPECT_EQ(ref_call("square", {m}).to_doubles(), (std::vector<double>{0}));
  Tensor u = Tensor::from_values(DType::kU8, {3}, {0, 7, 255});
  EXPECT_EQ(ref_call("sign", {u}).to_doubles(), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(ref_call("sub", {u, Tensor::scalar(DType::kU8, 8)}).to_doubles(),
            (std::vector<double>{248, 255, 247}));
}

TEST(ElementwiseNaN, ExtremaAndReluKeepNaN) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF64}) {
    Tensor a = Tensor::from_values(d, {3}, {NAN, 1, -1});
    Tensor b = Tensor::from_values(d, {3}, {0, NAN, -2});
    for (const char* op : {"maximum", "minimum"}) {
      Tensor y = eager_call1(op, {a, b});
      EXPECT_TRUE(std::isnan(y.get(0)) && std::isnan(y.get(1))) << op << " " << dtype_name(d);
    }
    Tensor r = eager_call1("relu", {a});
    EXPECT_TRUE(std::isnan(r.get(0)));
    EXPECT_EQ(r.get(2), 0);
    EXPECT_TRUE(std::isnan(eager_call1("sign", {a}).get(0)));
    EXPECT_EQ(eager_call1("less", {a, b}).to_doubles(), (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(eager_call1("not_equal", {a, a}).to_doubles(), (std::vector<double>{1, 0, 0}));
  }
}

// Op names of the gradient nodes added for `op` applied to inputs of `types`.
std::multiset<std::string> gradient_ops(const std::string& op, std::vector<TensorType> types,
                                        const ops::Attrs& attrs = {}) {
  ir::Graph g;
  std::vector<ir::Value*> in;
  for (size_t i = 0; i < types.size(); ++i) in.push_back(g.input(str_cat("x", i), types[i]));
  ir::Value* y = g.add(op, in, attrs);
  ir::Value* loss = g.add("sum", {y}, {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
  size_t before = g.num_nodes();
  std::vector<ir::Value*> wrt;
  for (ir::Value* v : in) {
    if (is_floating(v->dtype())) wrt.push_back(v);
  }
  autodiff::gradients(g, loss, wrt);
  std::multiset<std::string> ops;
  for (ir::Node* n : g.nodes()) {
    if (n->name().rfind(str_cat("grad/", y->node()->name(), "/"), 0) == 0) ops.insert(n->op_name());
  }
  EXPECT_GT(g.num_nodes(), before);
  return ops;
}

TEST(ElementwiseGrad, ActivationsUseTheirHelperOps) {
  TensorType t{DType::kF32, {4, 3}};
  EXPECT_EQ(gradient_ops("relu", {t}), (std::multiset<std::string>{"relu_grad"}));
  EXPECT_EQ(gradient_ops("tanh", {t}), (std::multiset<std::string>{"tanh_grad"}));
  EXPECT_EQ(gradient_ops("sigmoid", {t}), (std::multiset<std::string>{"sigmoid_grad"}));
  EXPECT_EQ(gradient_ops("gelu", {t}, {{"approximate", true}}),
            (std::multiset<std::string>{"gelu_grad"}));
}

TEST(ElementwiseGrad, BroadcastGradientsAreSummedToTheInputShape) {
  // add of [4, 3] and [3]: dy for a passes as is, dy for b is summed over axis 0.
  auto ops = gradient_ops("add", {{DType::kF32, {4, 3}}, {DType::kF32, {3}}});
  EXPECT_EQ(ops.count("sum"), 1u);
  // Same shapes need no reduction at all.
  EXPECT_EQ(gradient_ops("add", {{DType::kF32, {4, 3}}, {DType::kF32, {4, 3}}}).count("sum"), 0u);
  // where: nothing for the bool condition.
  auto w =
      gradient_ops("where", {{DType::kBool, {4, 1}}, {DType::kF32, {4, 3}}, {DType::kF32, {}}});
  EXPECT_EQ(w.count("where"), 2u);
}

TEST(ElementwiseGrad, SignBlocksGradients) {
  ir::Graph g;
  ir::Value* x = g.input("x", {DType::kF64, {3}});
  ir::Value* loss = g.add("sum", {g.add("mul", {g.add("sign", {x}), x})},
                          {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
  ir::Value* dx = autodiff::gradients(g, loss, std::vector<ir::Value*>{x})[0];
  g.add_output("dx", dx);
  Tensor xv = Tensor::from_values(DType::kF64, {3}, {-2, 0.5, 3});
  Tensor got = runtime::run_graph_eager(g, {{"x", xv}}, nullptr)[0];
  // d/dx (sign(x) * x) with sign treated as a constant is sign(x).
  EXPECT_EQ(got.to_doubles(), (std::vector<double>{-1, 1, 1}));
}

}  // namespace
}  // namespace tern::testing
