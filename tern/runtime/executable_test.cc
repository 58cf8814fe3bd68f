// Executable: reshapes of fed inputs and constants run as views (no step, no copy), with the
// same results as a copying reshape, also after the next batch is fed.
#include "tern/runtime/executable.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <utility>

#include "tern/base/float_env.h"
#include "tern/ir/parser.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/runtime.h"

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

// CompileOptions::frozen_variables: a convolution prepares its filter (oneDNN's blocked layout;
// the Winograd transform for this 3x3 stride-1 16-channel case of 48x48 = 2304 output pixels)
// at the first run and keeps it, so a served model does not redo it per call; without it, every
// run reads the variable afresh.
TEST(Executable, FrozenVariablesArePreparedOnceOthersEveryRun) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[1, 48, 48, 16]}
    %w = variable() {dtype=f32, name="w", shape=[3, 3, 16, 16]}
    %y = conv2d(%x, %w) {padding="SAME"}
    return {"y": %y}
  })");
  Tensor x = iota(Shape({1, 48, 48, 16}), 0.0f);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = std::sin(x.data<float>()[i]);
  Tensor w0 = iota(Shape({3, 3, 16, 16}), 0.0f);
  for (int64_t i = 0; i < w0.num_elements(); ++i)
    w0.data<float>()[i] = std::cos(w0.data<float>()[i]);
  auto run_twice = [&](bool frozen) {
    VariableStore vars;
    vars.create("w", w0.clone());
    CompileOptions opts;
    opts.frozen_variables = frozen;
    auto exe = Executable::compile(*g, vars, opts);
    exe->feed("x", x);
    exe->run();
    Tensor first = exe->output("y").clone();
    Tensor& w = vars.get("w");
    for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] *= 2.0f;
    exe->run();
    return std::make_pair(first, exe->output("y").clone());
  };
  auto [frozen_first, frozen_second] = run_twice(true);
  auto [live_first, live_second] = run_twice(false);
  ASSERT_EQ(frozen_first.num_elements(), 48 * 48 * 16);
  for (int64_t i = 0; i < frozen_first.num_elements(); ++i) {
    EXPECT_EQ(frozen_first.get(i), live_first.get(i)) << i;
    // Frozen: the filter prepared at the first run is kept (the doubled bytes are not read).
    EXPECT_EQ(frozen_second.get(i), frozen_first.get(i)) << i;
    // Not frozen: the second run sees the doubled filter.
    EXPECT_NEAR(live_second.get(i), 2.0 * live_first.get(i),
                1e-4 * (1 + std::abs(live_first.get(i))))
        << i;
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

namespace tern::runtime {
namespace {

// Test-only ops with the scheduling traits (the real ones are tern/dist's collectives).
void register_schedule_test_ops() {
  static bool done = false;
  if (done) return;
  done = true;
  auto same_as_input = [](const ops::InferContext& ctx) {
    return std::vector<TensorType>{ctx.input(0)};
  };
  ops::OpRegistry::global().add({.name = "test_start",
                                 .family = "test",
                                 .inputs = {"x"},
                                 .dtypes = {DType::kF32},
                                 .traits = ops::kTraitStateful | ops::kTraitScheduleEarly,
                                 .infer = same_as_input});
  ops::OpRegistry::global().add({.name = "test_wait",
                                 .family = "test",
                                 .inputs = {"x"},
                                 .dtypes = {DType::kF32},
                                 .traits = ops::kTraitStateful | ops::kTraitScheduleLate,
                                 .infer = same_as_input});
  for (const char* op : {"test_start", "test_wait"}) {
    kernels::add_fn_kernel(kernels::KernelRegistry::global(), op, "ref", {DType::kF32}, 0,
                           [](kernels::KernelContext& ctx) {
                             if (ctx.inputs[0].raw_data() != ctx.outputs[0].raw_data())
                               ctx.outputs[0].copy_from(ctx.inputs[0]);
                           });
  }
}

TEST(Executable, ScheduleHintsMoveStartsUpAndWaitsDown) {
  // start(a) is created last but runs right after a; wait(s) runs right before its reader.
  register_schedule_test_ops();
  ir::Graph g("hints");
  ir::Value* x = g.input("x", {DType::kF32, Shape{4}});
  ir::Value* a = g.add("relu", {x}, {}, "a");
  ir::Value* b = g.add("neg", {x}, {}, "b");
  ir::Value* c = g.add("exp", {b}, {}, "c");
  ir::Value* d = g.add("sigmoid", {c}, {}, "d");
  ir::Value* s = g.add("test_start", {a}, {}, "start");
  ir::Value* w = g.add("test_wait", {s}, {}, "wait");
  g.add_output("out", g.add("add", {w, d}, {}, "sum"));
  VariableStore vars;
  auto exe = Executable::compile(g, vars, {.optimize = false});
  std::vector<std::string> order;
  for (const StepInfo& st : exe->steps()) order.push_back(st.node);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "start", "b", "c", "d", "wait", "sum"}));
}

TEST(Executable, PinnedValuesAreWrittenIntoTheCallersMemory) {
  // The producer of a pinned value writes straight into the caller's tensor; every reader pins
  // it to the same memory. A value that is a graph output is never pinned.
  register_schedule_test_ops();
  ir::Graph g("pins");
  ir::Value* x = g.input("x", {DType::kF32, Shape{4}});
  ir::Value* a = g.add("neg", {x}, {}, "a");
  ir::Value* s = g.add("test_start", {a}, {}, "start");
  g.add_output("out", g.add("exp", {s}, {}, "e"));
  VariableStore vars;
  Tensor buffer(DType::kF32, Shape{4});
  CompileOptions options{.optimize = false};
  int asked = 0;
  options.pin = [&](const ir::Node& n, bool is_output, int index) -> Tensor {
    ++asked;
    if (n.op_name() == "test_start" && (is_output || index == 0)) return buffer;
    return {};
  };
  auto exe = Executable::compile(g, vars, options);
  EXPECT_GT(asked, 0);
  exe->feed("x", iota(Shape{4}, 1));
  exe->run();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(buffer.data<float>()[i], -(1.0f + static_cast<float>(i)));
  const Tensor out = exe->output_host(0);
  EXPECT_FLOAT_EQ(out.data<float>()[2], std::exp(-3.0f));
}

// tern/base/float_env.h: kernels run with denormals flushed to zero on the calling thread and on
// every intra-op worker (a 1M-element product is split across the threads), the caller's own mode
// comes back after the run, and TERN_FLUSH_DENORMALS=0's setting keeps IEEE denormals.
TEST(Executable, KernelsFlushDenormalsOnEveryThreadAndTheCallerKeepsItsMode) {
  set_intra_op_threads(2);
  constexpr int64_t kN = 1 << 20;
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[1048576]}
    %y = input() {dtype=f32, name="y", shape=[1048576]}
    %z = mul(%x, %y)
    return {"z": %z}
  })");
  VariableStore vars;
  auto exe = Executable::compile(*g, vars, CompileOptions{});
  Tensor x(DType::kF32, Shape({kN})), y(DType::kF32, Shape({kN}));
  for (int64_t i = 0; i < kN; ++i) {
    x.data<float>()[i] = FLT_MIN / 4;  // denormal
    y.data<float>()[i] = 1.0f;
  }
  y.data<float>()[kN - 1] = 8.0f;  // FLT_MIN / 4 * 8: a normal result of a denormal input
  exe->feed("x", x);
  exe->feed("y", y);
  for (bool flush : {true, false, true}) {
    set_flush_denormals(flush);
    ASSERT_FALSE(thread_flushes_denormals());
    exe->run();
    EXPECT_FALSE(thread_flushes_denormals()) << "the caller's mode is put back";
    const Tensor& z = exe->output("z");
    int64_t zeros = 0;
    for (int64_t i = 0; i < kN; ++i) zeros += z.data<float>()[i] == 0.0f;
    if (flush) {
      EXPECT_EQ(zeros, kN) << "every element, whichever thread computed it, is flushed";
    } else {
      EXPECT_EQ(zeros, 0);
      EXPECT_EQ(z.data<float>()[0], FLT_MIN / 4);
      EXPECT_EQ(z.data<float>()[kN - 1], 2 * FLT_MIN);
    }
  }
}

}  // namespace
}  // namespace tern::runtime
