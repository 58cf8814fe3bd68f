// Consistency cases: reduce family (keepdims on/off, negative and multiple axes, the bias-gradient
// [N, C] -> [C] and last-axis patterns the fast kernels take, sizes above their OpenMP threshold).
// Random uniform inputs are tie-free in f64, so max/min gradients are checked away from ties; the
// tie and zero-product gradient rules get exact tests below.
#include <gtest/gtest.h>

#include "tern/autodiff/autodiff.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/runtime.h"
#include "tests/consistency/op_case.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {

namespace {
using Ints = std::vector<int64_t>;
}  // namespace

TERN_OP_CASES(reduce) {
  std::vector<OpCase> cases;
  for (const char* op : {"sum", "mean"}) {
    std::string o = op;
    cases.push_back({o, {In({3, 4, 5})}, {{"axes", Ints{1}}}, true, {}, 1e-5, "mid"});
    cases.push_back({o,
                     {In({3, 4, 5})},
                     {{"axes", Ints{-1}}, {"keepdims", true}},
                     true,
                     {},
                     1e-5,
                     "last-keep"});
    cases.push_back({o, {In({3, 4, 5})}, {{"axes", Ints{}}}, true, {}, 1e-5, "all"});
    cases.push_back({o,
                     {In({3, 4, 5})},
                     {{"axes", Ints{0, -1}}, {"keepdims", true}},
                     true,
                     {},
                     1e-5,
                     "outer-keep"});
    cases.push_back({o, {In({64, 16})}, {{"axes", Ints{0}}}, true, {}, 1e-5, "bias-grad"});
    cases.push_back({o, {In({2, 33, 7})}, {{"axes", Ints{0, 1}}}, true, {}, 1e-5, "leading2"});
    cases.push_back({o, {In({16, 300})}, {{"axes", Ints{-1}}}, true, {}, 1e-5, "rows"});
    cases.push_back({o, {In({300, 130})}, {{"axes", Ints{0}}}, true, {}, 1e-5, "bias-grad-omp"});
    cases.push_back(
        {o, {In({130, 300})}, {{"axes", Ints{1}}, {"keepdims", true}}, true, {}, 1e-5, "rows-omp"});
    cases.push_back({o, {In({4, 9, 20})}, {{"axes", Ints{1}}}, true, {}, 1e-5, "middle"});
    cases.push_back({o, {In({0, 5})}, {{"axes", Ints{0}}}, false, {}, 1e-5, "empty"});
    // out_dtype = "f32": f32 results from 16-bit x (f32 x: the plain reduction).
    const std::vector<DType> f32_out = {DType::kBF16, DType::kF16, DType::kF32};
    cases.push_back({o,
                     {In({300, 130})},
                     {{"axes", Ints{0}}, {"out_dtype", "f32"}},
                     false,
                     f32_out,
                     1e-5,
                     "bias-grad-f32-out"});
    cases.push_back({o,
                     {In({16, 300})},
                     {{"axes", Ints{-1}}, {"out_dtype", "f32"}},
                     false,
                     f32_out,
                     1e-5,
                     "rows-f32-out"});
    cases.push_back({o,
                     {In({3, 4, 5})},
                     {{"axes", Ints{0, 2}}, {"keepdims", true}, {"out_dtype", "f32"}},
                     false,
                     f32_out,
                     1e-5,
                     "outer-keep-f32-out"});
  }
  for (const char* op : {"max", "min"}) {
    std::string o = op;
    cases.push_back({o, {In({3, 4, 5}, -50, 50)}, {{"axes", Ints{1}}}, true, {}, 1e-5, "mid"});
    cases.push_back({o,
                     {In({3, 4, 5}, -50, 50)},
                     {{"axes", Ints{-1}}, {"keepdims", true}},
                     true,
                     {},
                     1e-5,
                     "last-keep"});
    cases.push_back({o, {In({3, 4, 5}, -50, 50)}, {{"axes", Ints{}}}, true, {}, 1e-5, "all"});
    cases.push_back({o,
                     {In({3, 4, 5}, -50, 50)},
                     {{"axes", Ints{0, 2}}, {"keepdims", true}},
                     true,
                     {},
                     1e-5,
                     "outer-keep"});
  }
  cases.push_back({"prod", {In({3, 4}, 0.5, 1.5)}, {{"axes", Ints{1}}}, true, {}, 1e-5, "rows"});
  cases.push_back({"prod",
                   {In({3, 4, 2}, -1.5, -0.5)},
                   {{"axes", Ints{0, -1}}, {"keepdims", true}},
                   true,
                   {},
                   1e-5,
                   "negative-keep"});
  cases.push_back({"prod", {In({2, 3}, 0.5, 1.5)}, {{"axes", Ints{}}}, true, {}, 1e-5, "all"});
  cases.push_back({"variance", {In({4, 5})}, {{"axes", Ints{1}}}, true, {}, 1e-5, "rows"});
  cases.push_back({"variance",
                   {In({3, 4, 5})},
                   {{"axes", Ints{0, 2}}, {"keepdims", true}},
                   true,
                   {},
                   1e-5,
                   "outer-keep"});
  cases.push_back({"variance", {In({3, 4})}, {{"axes", Ints{}}}, true, {}, 1e-5, "all"});
  for (const char* op : {"argmax", "argmin"}) {
    std::string o = op;
    cases.push_back({o, {In({4, 6}, -50, 50)}, {}, false, {}, 1e-5, "last"});
    cases.push_back({o,
                     {In({4, 6, 3}, -50, 50)},
                     {{"axis", int64_t{1}}, {"keepdims", true}},
                     false,
                     {},
                     1e-5,
                     "mid-keep"});
    cases.push_back({o, {In({5, 2}, -50, 50)}, {{"axis", int64_t{-2}}}, false, {}, 1e-5, "first"});
  }
  return cases;
}

namespace {

// d sum(op(x)) / dx evaluated through the gradient rule, on the ref kernels.
std::vector<double> rule_gradient(const std::string& op, const Tensor& x, const ops::Attrs& attrs) {
  ir::Graph g;
  ir::Value* in = g.input("x", x.type());
  ir::Value* y = g.add(op, {in}, attrs);
  ir::Value* loss = g.add("sum", {y}, {{"axes", Ints{}}});
  std::vector<ir::Value*> wrt{in};
  g.add_output("dx", autodiff::gradients(g, loss, wrt)[0]);
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  return runtime::run_graph_eager(g, {{"x", x}}, nullptr, ref)[0].to_doubles();
}

}  // namespace

TEST(ReduceGrad, MaxSplitsTiesEvenly) {
  Tensor x = Tensor::from_values(DType::kF64, {2, 3}, {1, 3, 3, 2, 2, 2});
  std::vector<double> want{0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  std::vector<double> got = rule_gradient("max", x, {{"axes", Ints{1}}});
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

TEST(ReduceGrad, ProdWithZeros) {
  // Rows: no zero, one zero, two zeros.
  Tensor x = Tensor::from_values(DType::kF64, {3, 3}, {1, 2, 3, 2, 0, 3, 0, 0, 4});
  std::vector<double> want{6, 3, 2, 0, 6, 0, 0, 0, 0};
  std::vector<double> got = rule_gradient("prod", x, {{"axes", Ints{-1}}});
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

TEST(ReduceRef, IntegerSumAndArgmaxTies) {
  Tensor x = Tensor::from_values(DType::kI32, {2, 3}, {5, 7, 7, -1, -1, -3});
  EXPECT_EQ(runtime::eager_call1("sum", {x}, {{"axes", Ints{1}}}).to_doubles(),
            (std::vector<double>{19, -5}));
  EXPECT_EQ(runtime::eager_call1("argmax", {x}).to_doubles(), (std::vector<double>{1, 0}));
  EXPECT_EQ(runtime::eager_call1("argmin", {x}, {{"axis", int64_t{0}}}).to_doubles(),
            (std::vector<double>{1, 1, 1}));
  Tensor v = Tensor::from_values(DType::kF32, {4}, {1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(runtime::eager_call1("variance", {v}).get(0), 1.25);
}

}  // namespace tern::testing

namespace tern::testing {
namespace {

// The name of the candidate normal selection picks for `op` on an f32 input of `shape`, and the
// refusals before it.
struct Picked {
  std::string name;
  std::vector<std::string> declined;
};

Picked select_for(const std::string& op, const Shape& shape, ops::Attrs attrs) {
  runtime::initialize();
  const ops::OpDef& def = ops::OpRegistry::global().get(op);
  std::vector<TensorType> in{{DType::kF32, shape}};
  std::vector<TensorType> out = def.check_and_infer(op, in, attrs);
  kernels::KernelSignature sig{&def, &attrs, in, out, DeviceType::kCPU, false};
  kernels::KernelSelection s = kernels::KernelRegistry::global().select(sig);
  return {s.candidate->name, s.declined};
}

// sum / mean with out_dtype = "f32" of a bf16 x give, bit for bit, the reduction of x cast up (what
// amp rewrites into it), on the fast kernels and on ref; their gradient comes back in x's dtype.
// Bad out_dtype values are named.
TEST(ReduceOutDtype, F32ResultOfBf16IsTheReductionOfTheCastUp) {
  runtime::EagerOptions ref, fast;
  ref.kernel = "ref";
  for (const runtime::EagerOptions& o : {fast, ref}) {
    for (const char* op : {"sum", "mean"}) {
      for (const ops::Attrs& a : {ops::Attrs{{"axes", Ints{0}}}, ops::Attrs{{"axes", Ints{-1}}}}) {
        SCOPED_TRACE(str_cat(op, " ", o.kernel, " axis ", a.get_ints("axes")[0]));
        Tensor x = random_tensor(DType::kBF16, {300, 130}, 8);
        Tensor up = runtime::eager_call1("cast", {x}, {{"dtype", DType::kF32}}, o);
        Tensor want = runtime::eager_call1(op, {up}, a, o);
        ops::Attrs f32 = a;
        f32.set("out_dtype", std::string("f32"));
        Tensor got = runtime::eager_call1(op, {x}, f32, o);
        ASSERT_EQ(got.dtype(), DType::kF32);
        EXPECT_TRUE(bitwise_equal(got, want));
      }
    }
  }
  ir::Graph g;
  ir::Value* x = g.input("x", {DType::kBF16, Shape{4, 3}});
  ir::Value* s = g.add("sum", {x}, {{"axes", Ints{0}}, {"out_dtype", "f32"}});
  ir::Value* loss = g.add("sum", {s}, {{"axes", Ints{}}});
  std::vector<ir::Value*> wrt = {x};
  ir::Value* dx = autodiff::gradients(g, loss, wrt)[0];
  EXPECT_EQ(dx->dtype(), DType::kBF16);
  EXPECT_EQ(dx->shape(), (Shape{4, 3}));
  Tensor f64 = random_tensor(DType::kF64, {4, 3}, 1);
  EXPECT_TERN_ERROR(runtime::eager_call("sum", {f64}, {{"out_dtype", "f32"}}),
                    ErrorCode::kInvalidArgument,
                    "out_dtype \"f32\" needs an f32, bf16 or f16 x, got f64");
  EXPECT_TERN_ERROR(runtime::eager_call("mean", {f64}, {{"out_dtype", "f16"}}),
                    ErrorCode::kInvalidArgument,
                    "out_dtype must be \"\" (x's dtype) or \"f32\", got \"f16\"");
}

TEST(ReduceFast, TakesBiasGradientAndRowPatterns) {
  EXPECT_EQ(select_for("sum", {128, 10}, {{"axes", Ints{0}}}).name, "cpu_vec");
  EXPECT_EQ(select_for("mean", {8, 4, 300}, {{"axes", Ints{-1}}}).name, "cpu_vec");
  EXPECT_EQ(select_for("sum", {8, 1, 6, 5}, {{"axes", Ints{0, 1, 2}}}).name, "cpu_vec");
  Picked s = select_for("sum", {3, 4, 5}, {{"axes", Ints{0, 2}}});
  EXPECT_EQ(s.name, "ref");
  ASSERT_FALSE(s.declined.empty());
  EXPECT_NE(s.declined[0].find("contiguous"), std::string::npos) << s.declined[0];
  EXPECT_EQ(select_for("transpose", {2, 4, 5, 3}, {{"perm", Ints{0, 3, 1, 2}}}).name, "cpu_vec");
}

}  // namespace
}  // namespace tern::testing
