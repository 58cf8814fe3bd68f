// Tests for the vectorized elementwise kernels beyond what the consistency harness checks: the
// libm-free math over the whole float range and its special values, 16-bit float conversions
// against the scalar ones bit for bit, broadcast plans, kernel selection and decline reasons,
// in-place runs, and results independent of the thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <functional>

#include "tern/backends/cpu/elementwise_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"
#include "tern/backends/cpu/elementwise_math.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/fused_program.h"
#include "tern/ops/registry.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/runtime.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {
namespace {

namespace vmath = cpu::vmath;

// Largest error of f against `want` (double) over n points in [lo, hi], in units of the float
// spacing at the wanted value (ulp), with an absolute floor of `abs_floor` for results near 0.
double max_error(const std::function<float(float)>& f, const std::function<double(double)>& want,
                 float lo, float hi, int n, double abs_floor = 0) {
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    float x = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
    double w = want(x);
    double got = f(x);
    float wf = static_cast<float>(w);
    double ulp = std::fabs(std::nextafter(wf, INFINITY) - wf);
    double err = std::fabs(got - w);
    if (err <= abs_floor) continue;
    worst = std::max(worst, err / ulp);
  }
  return worst;
}

TEST(ElementwiseMath, ExpLogTanhSigmoidWithinFewUlp) {
  EXPECT_LT(max_error(
                vmath::exp, [](double x) { return std::exp(x); }, -87, 88, 200001),
            2);
  EXPECT_LT(max_error(
                vmath::log, [](double x) { return std::log(x); }, 1e-30f, 1e30f, 200001),
            2);
  EXPECT_LT(max_error(
                vmath::log, [](double x) { return std::log(x); }, 0.25, 4, 200001),
            2);
  EXPECT_LT(max_error(
                vmath::log, [](double x) { return std::log(x); }, 1e-44f, 1e-38f, 20001),
            2);
  EXPECT_LT(max_error(
                vmath::log1p, [](double x) { return std::log1p(x); }, -0.999f, 100, 200001),
            3);
  EXPECT_LT(max_error(
                vmath::log1p, [](double x) { return std::log1p(x); }, -1e-6f, 1e-6f, 20001),
            3);
  EXPECT_LT(max_error(
                vmath::tanh, [](double x) { return std::tanh(x); }, -12, 12, 200001),
            3);
  EXPECT_LT(max_error(
                vmath::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -80, 30, 200001),
            4);
}

// erfc keeps its relative accuracy into the tail (the normal CDF of very negative inputs, where
// gelu's erf form is x times it): a form fitted to an absolute error bound (Abramowitz and
// Stegun's 7.1.26, 1.5e-7) is off by 0.3% at z = 4 and 3.5% at z = 9.
TEST(ElementwiseMath, ErfcRelativeErrorInTheTail) {
  auto relative = [](float lo, float hi) {
    double worst = 0;
    for (int i = 0; i <= 100000; ++i) {
      float z = lo + (hi - lo) * static_cast<float>(i) / 100000.f;
      double want = std::erfc(static_cast<double>(z));
      worst = std::max(worst, std::fabs(vmath::erfc_nonnegative(z) / want - 1));
    }
    return worst;
  };
  EXPECT_LT(relative(0, 4), 8e-7);
  EXPECT_LT(relative(4, 9), 5e-6);  // the rounding of z^2 inside exp
  EXPECT_EQ(vmath::erfc_nonnegative(0.f), 1.f);
  EXPECT_EQ(vmath::erfc_nonnegative(INFINITY), 0.f);
}

TEST(ElementwiseMath, GeluFormsMatchDoublePrecision) {
  auto gelu_erf = [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
  auto gelu_tanh = [](double x) {
    double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    return x / (1 + std::exp(-2 * u));  // == 0.5 x (1 + tanh u), without cancellation
  };
  // Deep in the lower tail the rounding of x^2 inside exp dominates (relative error ~1e-5 at
  // x = -12, where gelu is ~1e-32); elsewhere both forms are within a few ulp.
  EXPECT_LT(max_error(vmath::gelu_erf, gelu_erf, -12, 12, 200001), 300);
  EXPECT_LT(max_error(vmath::gelu_tanh, gelu_tanh, -12, 12, 200001), 300);
  EXPECT_LT(max_error(vmath::gelu_erf, gelu_erf, -3, 12, 200001), 20);
  EXPECT_LT(max_error(vmath::gelu_tanh, gelu_tanh, -3, 12, 200001), 20);
  auto erf_slope = [](double x) {
    return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
  };
  // The derivative crosses zero near -0.75, where only an absolute bound makes sense.
  EXPECT_LT(max_error(vmath::gelu_erf_derivative, erf_slope, -12, 12, 200001, 3e-7), 64);
}

TEST(ElementwiseMath, SpecialValues) {
  const float inf = INFINITY, nan = NAN;
  EXPECT_EQ(vmath::exp(inf), inf);
  EXPECT_EQ(vmath::exp(-inf), 0.f);
  EXPECT_EQ(vmath::exp(100.f), inf);
  EXPECT_EQ(vmath::exp(-120.f), 0.f);
  EXPECT_GT(vmath::exp(-100.f), 0.f);  // denormal results survive
  EXPECT_TRUE(std::isnan(vmath::exp(nan)));
  EXPECT_EQ(vmath::log(0.f), -inf);
  EXPECT_EQ(vmath::log(inf), inf);
  EXPECT_TRUE(std::isnan(vmath::log(-1.f)));
  EXPECT_TRUE(std::isnan(vmath::log(nan)));
  EXPECT_EQ(vmath::log1p(-1.f), -inf);
  EXPECT_EQ(vmath::log1p(inf), inf);
  EXPECT_EQ(vmath::log1p(1e-30f), 1e-30f);
  EXPECT_EQ(vmath::tanh(inf), 1.f);
  EXPECT_EQ(vmath::tanh(-50.f), -1.f);
  EXPECT_TRUE(std::isnan(vmath::tanh(nan)));
  EXPECT_EQ(vmath::sigmoid(-inf), 0.f);
  EXPECT_EQ(vmath::sigmoid(inf), 1.f);
  EXPECT_GT(vmath::sigmoid(-100.f), 0.f);
  EXPECT_EQ(vmath::gelu_erf(0.f), 0.f);
  EXPECT_EQ(vmath::gelu_erf(inf), inf);
}

// The f32 gelu / gelu_grad kernels and fused_elementwise's GELU rows (vmath_v4.h's intrinsics
// where the CPU runs AVX-512, GCC's loops of the portable formula elsewhere) against double
// precision with the portable formula's own bounds (GeluFormsMatchDoublePrecision), over
// [-12, 12] in a length that leaves a partial last vector, and special values as the portable
// formula gives them. A changed coefficient or a dropped term fails here.
TEST(ElementwiseMath, GeluKernelsMatchDoublePrecision) {
  runtime::initialize();
  const std::vector<float> special = {0.f, -0.f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, 100.f};
  std::vector<float> xs = special;
  const int points = 200003;
  for (int i = 0; i < points; ++i)
    xs.push_back(-12.f + 24.f * static_cast<float>(i) / (points - 1));
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor x(DType::kF32, {n}), dy(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[i] = xs[static_cast<size_t>(i)];
    dy.data<float>()[i] = 1.f;
  }
  auto gelu = [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); };
  auto slope = [](double v) {
    return 0.5 * std::erfc(-v / std::sqrt(2.0)) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI);
  };
  // The worst error in ulp of the wanted value (absolute errors up to abs_floor pass) over the
  // range's points with x >= lo; the special values must equal the portable formula's.
  auto check = [&](const Tensor& got, const std::function<double(double)>& want,
                   const std::function<float(float)>& portable, double lo, double abs_floor) {
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float xi = xs[static_cast<size_t>(i)], g = got.data<float>()[i];
      if (static_cast<size_t>(i) < special.size()) {
        const float p = portable(xi);
        EXPECT_TRUE(std::isnan(p) ? std::isnan(g) : g == p) << "x = " << xi << ": " << g;
        continue;
      }
      if (xi < lo) continue;
      const double w = want(xi), err = std::fabs(g - w);
      if (err <= abs_floor) continue;
      const float wf = static_cast<float>(w);
      worst = std::max(worst, err / std::fabs(std::nextafter(wf, INFINITY) - wf));
    }
    return worst;
  };
  runtime::EagerOptions vec;
  vec.kernel = "vec";
  auto fused = [&](ops::FusedOpcode code, std::vector<Tensor> inputs) {
    ops::FusedProgram p;
    p.num_inputs = static_cast<int>(inputs.size());
    p.code = {{code, 0, p.num_inputs == 2 ? 1 : -1}};
    ops::Attrs attrs;
    p.to_attrs(attrs);
    return runtime::eager_call1("fused_elementwise", inputs, attrs, vec);
  };
  for (const Tensor& y : {runtime::eager_call1("gelu", {x}, {{"approximate", false}}, vec),
                          fused(ops::FusedOpcode::kGeluErf, {x})}) {
    EXPECT_LT(check(y, gelu, vmath::gelu_erf, -12, 0), 300);
    EXPECT_LT(check(y, gelu, vmath::gelu_erf, -3, 0), 20);
  }
  for (const Tensor& d : {runtime::eager_call1("gelu_grad", {dy, x}, {{"approximate", false}}, vec),
                          fused(ops::FusedOpcode::kGeluErfGrad, {dy, x})}) {
    EXPECT_LT(check(d, slope, vmath::gelu_erf_derivative, -12, 3e-7), 64);
  }
}

TEST(ElementwiseConvert, Bf16MatchesScalarRoundingBitForBit) {
  std::vector<float> in;
  PhiloxStream rng(5);
  for (int i = 0; i < 100000; ++i) {
    in.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng.next_double() * 4294967296.0)));
  }
  for (float f : {0.f, -0.f, INFINITY, -INFINITY, NAN, 1e-40f, 3.3895314e38f, 1.00390625f}) {
    in.push_back(f);
  }
  std::vector<bfloat16> out(in.size());
  cpu::from_float(in.data(), out.data(), static_cast<int64_t>(in.size()));
  std::vector<float> back(in.size());
  cpu::to_float(out.data(), back.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i].bits, bfloat16(in[i]).bits) << in[i];
    float want = static_cast<float>(bfloat16(in[i]));
    ASSERT_TRUE(std::bit_cast<uint32_t>(back[i]) == std::bit_cast<uint32_t>(want)) << in[i];
  }
}

// The widened kernels' conversion (onednn_widen.cc): both ways over OpenMP threads, bit for bit
// the scalar rounding; any other pair of dtypes is refused.
TEST(ElementwiseConvert, Bf16F32BothWaysAcrossThreads) {
  std::vector<float> in;
  PhiloxStream rng(7);
  for (int i = 0; i < 300000; ++i) in.push_back(static_cast<float>(rng.next_double() * 8 - 4));
  for (float f : {0.f, -0.f, INFINITY, -INFINITY, 1e-40f}) in.push_back(f);
  const auto n = static_cast<int64_t>(in.size());
  std::vector<bfloat16> rounded(in.size());
  cpu::convert_bf16_f32(in.data(), DType::kF32, rounded.data(), DType::kBF16, n);
  std::vector<float> back(in.size());
  cpu::convert_bf16_f32(rounded.data(), DType::kBF16, back.data(), DType::kF32, n);
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(rounded[i].bits, bfloat16(in[i]).bits) << i;
    ASSERT_EQ(std::bit_cast<uint32_t>(back[i]),
              std::bit_cast<uint32_t>(static_cast<float>(bfloat16(in[i]))))
        << i;
  }
  EXPECT_THROW(cpu::convert_bf16_f32(in.data(), DType::kF32, back.data(), DType::kF16, 1), Error);
}

TEST(ElementwiseConvert, F16MatchesScalarConversion) {
  std::vector<float16> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i].bits = static_cast<uint16_t>(i);
  std::vector<float> widened(all.size());
  cpu::to_float(all.data(), widened.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    float want = static_cast<float>(all[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(widened[i])) << i;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(widened[i]), std::bit_cast<uint32_t>(want)) << i;
    }
  }
  std::vector<float> in;
  PhiloxStream rng(6);
  for (int i = 0; i < 100000; ++i)
    in.push_back(static_cast<float>((rng.next_double() - 0.5) * 1.4e5));
  for (int i = 0; i < 1000; ++i) in.push_back(static_cast<float>((rng.next_double() - 0.5) * 1e-4));
  for (float f : {0.f, -0.f, INFINITY, -INFINITY, 65520.f, 65519.f, 5.96e-8f, 2.98e-8f}) {
    in.push_back(f);
  }
  std::vector<float16> narrowed(in.size());
  cpu::from_float(in.data(), narrowed.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(narrowed[i].bits, float16(in[i]).bits) << in[i];
}

// --- broadcast plans ---

std::string plan(std::vector<Shape> shapes, const Shape& out, cpu::BroadcastPlan* p) {
  return cpu::plan_broadcast(shapes, out, p);
}

TEST(ElementwisePlan, CommonPatternsBecomeTwoDimensional) {
  cpu::BroadcastPlan p;
  ASSERT_EQ(plan({{4, 5}, {4, 5}}, {4, 5}, &p), "");
  EXPECT_EQ(p.rows, 1);
  EXPECT_EQ(p.cols, 20);
  ASSERT_EQ(plan({{2, 3, 4}, {4}}, {2, 3, 4}, &p), "");  // bias row
  EXPECT_EQ(p.rows, 6);
  EXPECT_EQ(p.cols, 4);
  EXPECT_EQ(p.operands[1].row_stride, 0);
  EXPECT_TRUE(p.operands[1].contiguous);
  ASSERT_EQ(plan({{6, 4}, {6, 1}}, {6, 4}, &p), "");  // keepdims column
  EXPECT_EQ(p.rows, 6);
  EXPECT_EQ(p.operands[1].row_stride, 1);
  EXPECT_FALSE(p.operands[1].contiguous);
  ASSERT_EQ(plan({{}, {3, 4}}, {3, 4}, &p), "");  // scalar
  EXPECT_EQ(p.cols, 12);
  EXPECT_FALSE(p.operands[0].contiguous);
  ASSERT_EQ(plan({{3, 1}, {1, 4}}, {3, 4}, &p), "");  // outer product
  EXPECT_EQ(p.rows, 3);
  EXPECT_EQ(p.cols, 4);
  std::string why = plan({{2, 3, 4}, {3, 1}}, {2, 3, 4}, &p);
  EXPECT_NE(why.find("[2, 3, 4] with [3, 1]"), std::string::npos) << why;
}

// --- selection, in place, threads ---

const ops::Attrs kNoAttrs;

kernels::KernelSelection select(const std::string& op, std::vector<TensorType> in,
                                const ops::Attrs& attrs = kNoAttrs) {
  runtime::initialize();
  const ops::OpDef& def = ops::OpRegistry::global().get(op);
  ops::Attrs filled = attrs;
  std::vector<TensorType> out = def.check_and_infer(op, in, filled);
  static std::vector<ops::Attrs> keep;  // the signature points at its attrs
  keep.push_back(filled);
  kernels::KernelSignature sig{&def, &keep.back(), in, out, DeviceType::kCPU, false};
  return kernels::KernelRegistry::global().select(sig);
}

TEST(ElementwiseSelect, VecTakesSupportedPatternsAndExplainsTheRest) {
  EXPECT_EQ(select("add", {{DType::kF32, {8, 3}}, {DType::kF32, {3}}}).candidate->name, "vec");
  EXPECT_EQ(select("mul", {{DType::kBF16, {8, 1}}, {DType::kBF16, {8, 5}}}).candidate->name, "vec");
  EXPECT_EQ(select("exp", {{DType::kF16, {7}}}).candidate->name, "vec");
  EXPECT_EQ(select("where", {{DType::kBool, {4, 1}}, {DType::kI64, {4, 3}}, {DType::kI64, {}}})
                .candidate->name,
            "vec");
  auto generic = select("add", {{DType::kF32, {2, 3, 4}}, {DType::kF32, {3, 1}}});
  EXPECT_TRUE(generic.candidate->is_ref());
  ASSERT_FALSE(generic.declined.empty());
  EXPECT_NE(generic.declined[0].find("vec: broadcast of [2, 3, 4] with [3, 1]"), std::string::npos)
      << generic.declined[0];
  auto to_int = select("cast", {{DType::kF32, {4}}}, {{"dtype", DType::kI32}});
  EXPECT_TRUE(to_int.candidate->is_ref());
  EXPECT_EQ(to_int.declined[0], "vec: cast to i32 has no vectorized loop");
  EXPECT_TRUE(select("add", {{DType::kF64, {4}}, {DType::kF64, {4}}}).candidate->is_ref());
}

// Runs the selected kernel with output 0 written over input `alias` (as memory planning does).
Tensor run_in_place(const std::string& op, std::vector<Tensor> inputs, size_t alias) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  auto sel = select(op, types);
  EXPECT_EQ(sel.candidate->name, "vec");
  std::vector<Tensor> outputs = {inputs[alias]};
  kernels::KernelContext ctx{inputs, outputs, kNoAttrs, host_stream()};
  sel.kernel->run(ctx);
  return outputs[0];
}

TEST(ElementwiseInPlace, OutputMayOverwriteASameShapeInput) {
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  for (DType d : {DType::kF32, DType::kBF16}) {
    Tensor a = random_tensor(d, {40, 33}, 1), b = random_tensor(d, {33}, 2);
    Tensor want = runtime::eager_call1("sub", {a, b}, {}, ref);
    Tensor got = run_in_place("sub", {a.clone(), b}, 0);
    EXPECT_TRUE(bitwise_equal(got, want)) << dtype_name(d);
    Tensor x = random_tensor(d, {1000}, 3, 0.1, 4);
    Tensor want_exp = runtime::eager_call1("sqrt", {x}, {}, ref);
    EXPECT_LT(max_abs_diff(run_in_place("sqrt", {x.clone()}, 0), want_exp), 1e-2);
    Tensor dy = random_tensor(d, {1000}, 4);
    Tensor want_grad = runtime::eager_call1("relu_grad", {dy, x}, {}, ref);
    EXPECT_TRUE(bitwise_equal(run_in_place("relu_grad", {dy.clone(), x}, 0), want_grad));
  }
}

TEST(ElementwiseThreads, ResultsDoNotDependOnTheThreadCount) {
  runtime::initialize();
  struct Run {
    std::string op;
    std::vector<Tensor> inputs;
  };
  std::vector<Run> runs = {
      {"add", {random_tensor(DType::kF32, {300, 257}, 1), random_tensor(DType::kF32, {257}, 2)}},
      {"mul",
       {random_tensor(DType::kBF16, {300, 1}, 3), random_tensor(DType::kBF16, {300, 190}, 4)}},
      {"gelu", {random_tensor(DType::kF16, {100003}, 5, -5, 5)}},
      {"where",
       {random_tensor(DType::kBool, {70000}, 6), random_tensor(DType::kI32, {70000}, 7, -9, 9),
        random_tensor(DType::kI32, {}, 8, -9, 9)}},
  };
  int saved = omp_get_max_threads();
  for (const Run& r : runs) {
    omp_set_num_threads(1);
    Tensor one = runtime::eager_call1(r.op, r.inputs);
    omp_set_num_threads(4);
    Tensor four = runtime::eager_call1(r.op, r.inputs);
    EXPECT_TRUE(bitwise_equal(one, four)) << r.op;
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    Tensor want = runtime::eager_call1(r.op, r.inputs, {}, ref);
    EXPECT_LT(max_abs_diff(four, want), 2e-2) << r.op;
  }
  omp_set_num_threads(saved);
}

// fused_elementwise's column sums (bias gradients): rows in fixed tasks whose partial sums are
// added in task order, so one thread and four give the same bits.
TEST(ElementwiseThreads, ColumnSumsDoNotDependOnTheThreadCount) {
  runtime::initialize();
  ops::FusedProgram p;
  p.num_inputs = 2;
  p.code = {{ops::FusedOpcode::kGeluErfGrad, 0, 1}};
  ops::Attrs attrs;
  p.to_attrs(attrs);
  attrs.set("column_sum", true);
  int saved = omp_get_max_threads();
  for (DType d : {DType::kF32, DType::kBF16}) {
    std::vector<Tensor> in = {random_tensor(d, {1000, 96}, 1), random_tensor(d, {1000, 96}, 2)};
    omp_set_num_threads(1);
    std::vector<Tensor> one = runtime::eager_call("fused_elementwise", in, attrs);
    omp_set_num_threads(4);
    std::vector<Tensor> four = runtime::eager_call("fused_elementwise", in, attrs);
    EXPECT_TRUE(bitwise_equal(one[0], four[0])) << dtype_name(d);
    EXPECT_TRUE(bitwise_equal(one[1], four[1])) << dtype_name(d);
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace tern::testing
