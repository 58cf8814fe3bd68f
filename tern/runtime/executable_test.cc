// Executable: reshapes of fed inputs and constants run as views (no step, no copy), with the
// same results as a copying reshape, also after the next batch is fed.
#include "tern/runtime/executable.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tern/ir/parser.h"

namespace tern::runtime {
namespace {

bool has_step(const Executable& exe, std::string_view op) {
  for (const StepInfo& s : exe.steps()) {
    if (s.op == op) return true;
  }
  return false;
}

Tensor iota(const Shape& shape, float start) {
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

TEST(Executable, ReshapeOfAFedInputIsAViewThatFollowsEachFeed) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 3, 2]}
    %w = variable() {dtype=f32, name="w", shape=[6, 2]}
    %flat = reshape(%x) {shape=[2, 6]}
    %y = matmul(%flat, %w)
    %r = reshape(%x) {shape=[12]}
    return {"y": %y, "r": %r}
  })");
  VariableStore vars;
  vars.create("w", iota(Shape({6, 2}), 0.0f));
  CompileOptions opts;
  opts.optimize = false;
  auto exe = Executable::compile(*g, vars, opts);
  // %flat is a view (no reshape step); %r is a graph output, so it is copied.
  int reshapes = 0;
  for (const StepInfo& s : exe->steps()) reshapes += s.op == "reshape";
  EXPECT_EQ(reshapes, 1);
  EXPECT_TRUE(has_step(*exe, "matmul"));

  for (float start : {1.0f, -5.0f}) {
    Tensor x = iota(Shape({2, 3, 2}), start);
    exe->feed("x", x);
    exe->run();
    const Tensor& y = exe->output("y");
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        double want = 0;
        for (int64_t k = 0; k < 6; ++k) want += x.get(i * 6 + k) * static_cast<double>(k * 2 + j);
        EXPECT_DOUBLE_EQ(y.get(i * 2 + j), want)
            << "start " << start << " y[" << i << "," << j << "]";
      }
    }
    const Tensor& r = exe->output("r");
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(r.get(i), x.get(i));
  }
}

TEST(Executable, ReshapeOfAComputedValueStaysAStep) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 3]}
    %e = exp(%x)
    %f = reshape(%e) {shape=[6]}
    %s = sum(%f) {axes=[0]}
    return {"s": %s}
  })");
  VariableStore vars;
  CompileOptions opts;
  opts.optimize = false;
  auto exe = Executable::compile(*g, vars, opts);
  EXPECT_TRUE(has_step(*exe, "reshape"));
  exe->feed("x", iota(Shape({2, 3}), 0.0f));
  exe->run();
  double want = 0;
  for (int i = 0; i < 6; ++i) want += std::exp(static_cast<double>(i));
  EXPECT_NEAR(exe->output("s").get(0), want, 1e-4 * want);
}

}  // namespace
}  // namespace tern::runtime
