// Executable: reshapes of fed inputs and constants run as views (no step, no copy), with the
// same results as a copying reshape, also after the next batch is fed.
#include "tern/runtime/executable.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <map>
#include <utility>

#include "tern/base/float_env.h"
#include "tern/ir/parser.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/runtime.h"
#include "tests/support/random_tensor.h"

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

// sin(i) and cos(i) tensors: smooth, signed, reproducible values.
Tensor sines(const Shape& shape) {
  Tensor t = iota(shape, 0.0f);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = std::sin(t.data<float>()[i]);
  return t;
}
Tensor cosines(const Shape& shape) {
  Tensor t = iota(shape, 0.0f);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = std::cos(t.data<float>()[i]);
  return t;
}

// Runs graph `g` (input "x", variable "w", output "y") on `x` with "w" = `w0`, doubles the
// variable's bytes in place and runs again: {first output, second output}.
std::pair<Tensor, Tensor> run_twice(const ir::Graph& g, const Tensor& x, const Tensor& w0,
                                    bool frozen) {
  VariableStore vars;
  vars.create("w", w0.clone());
  CompileOptions opts;
  opts.frozen_variables = frozen;
  auto exe = Executable::compile(g, vars, opts);
  exe->feed("x", x);
  exe->run();
  Tensor first = exe->output("y").clone();
  Tensor& w = vars.get_mutable("w");
  for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] *= 2.0f;
  exe->run();
  return {first, exe->output("y").clone()};
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
  Tensor x = sines(Shape({1, 48, 48, 16})), w0 = cosines(Shape({3, 3, 16, 16}));
  auto [frozen_first, frozen_second] = run_twice(*g, x, w0, true);
  auto [live_first, live_second] = run_twice(*g, x, w0, false);
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

// The same for a dense layer's weight: frozen, the matmul keeps it in oneDNN's blocked layout
// from the first run (packs_constant_b); live, every run reads the variable.
TEST(Executable, FrozenMatmulWeightIsPackedOnce) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[3, 200]}
    %w = variable() {dtype=f32, name="w", shape=[200, 40]}
    %y = matmul(%x, %w)
    return {"y": %y}
  })");
  Tensor x = sines(Shape({3, 200})), w0 = cosines(Shape({200, 40}));
  auto [frozen_first, frozen_second] = run_twice(*g, x, w0, true);
  auto [live_first, live_second] = run_twice(*g, x, w0, false);
  ASSERT_EQ(frozen_first.num_elements(), 3 * 40);
  for (int64_t i = 0; i < frozen_first.num_elements(); ++i) {
    double want = 0;  // x w0 in double
    for (int64_t k = 0; k < 200; ++k) want += x.get(i / 40 * 200 + k) * w0.get(k * 40 + i % 40);
    EXPECT_NEAR(frozen_first.get(i), want, 1e-4 * (1 + std::abs(want))) << i;
    EXPECT_NEAR(live_first.get(i), want, 1e-4 * (1 + std::abs(want))) << i;
    EXPECT_EQ(frozen_second.get(i), frozen_first.get(i)) << i;
    EXPECT_NEAR(live_second.get(i), 2.0 * live_first.get(i),
                1e-4 * (1 + std::abs(live_first.get(i))))
        << i;
  }
}

// A served model's conv -> batch norm -> relu with every weight in a variable: frozen, the
// variables become constants, the norm folds into the filter and the whole graph is one fused
// convolution step, computing what the live graph computes; the store's tensors are not touched.
TEST(Executable, FrozenVariablesFoldBatchNormsIntoConvolutions) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 6, 6, 4]}
    %w = variable() {dtype=f32, name="w", shape=[3, 3, 4, 8]}
    %gamma = variable() {dtype=f32, name="gamma", shape=[8]}
    %beta = variable() {dtype=f32, name="beta", shape=[8]}
    %mean = variable() {dtype=f32, name="mean", shape=[8]}
    %var = variable() {dtype=f32, name="var", shape=[8]}
    %c = conv2d(%x, %w) {padding="SAME"}
    %n = batch_norm_inference(%c, %gamma, %beta, %mean, %var) {epsilon=0.001}
    %y = relu(%n)
    return {"y": %y}
  })");
  VariableStore vars;
  vars.create("w", tern::testing::random_tensor(DType::kF32, Shape{3, 3, 4, 8}, 1));
  vars.create("gamma", tern::testing::random_tensor(DType::kF32, Shape{8}, 2, -1.5, 1.5));
  vars.create("beta", tern::testing::random_tensor(DType::kF32, Shape{8}, 3));
  vars.create("mean", tern::testing::random_tensor(DType::kF32, Shape{8}, 4));
  vars.create("var", tern::testing::random_tensor(DType::kF32, Shape{8}, 5, 0.1, 2.0));
  std::map<std::string, Tensor> before;
  for (const char* v : {"w", "gamma", "beta", "mean", "var"}) before[v] = vars.get(v).clone();
  Feeds feeds = {{"x", tern::testing::random_tensor(DType::kF32, Shape{2, 6, 6, 4}, 6)}};
  std::vector<Tensor> want = Executable::compile(*g, vars, {})->run(feeds);
  CompileOptions frozen;
  frozen.frozen_variables = true;
  auto exe = Executable::compile(*g, vars, frozen);
  std::vector<Tensor> got = exe->run(feeds);
  EXPECT_TRUE(allclose(got[0], want[0], 1e-5, 1e-5)) << max_abs_diff(got[0], want[0]);
  ASSERT_EQ(exe->steps().size(), 1u);
  EXPECT_EQ(exe->steps()[0].op, "fused_conv2d");
  EXPECT_TRUE(exe->graph().nodes_of("variable").empty());
  for (const auto& [name, t] : before) EXPECT_TRUE(bitwise_equal(vars.get(name), t)) << name;
}

// A served model's frozen filter reaches the kernels as a constant input: a 3x3 convolution over a
// 4x4 image then runs on the constant-filter kernel (cpu_small_image, where the CPU has AVX-512),
// which a live variable never gets; both give ref's result.
TEST(Executable, FrozenFilterSelectsTheConstantFilterKernel) {
  initialize();
  bool registered = false;
  for (const kernels::KernelCandidate* c :
       kernels::KernelRegistry::global().candidates("conv2d", DeviceType::kCPU)) {
    registered |= c->name == "cpu_small_image";
  }
  if (!registered) GTEST_SKIP() << "cpu_small_image is registered only where AVX-512 runs";
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[1, 4, 4, 32]}
    %w = variable() {dtype=f32, name="w", shape=[3, 3, 32, 64]}
    %y = conv2d(%x, %w) {padding="SAME"}
    return {"y": %y}
  })");
  Tensor x = sines(Shape({1, 4, 4, 32})), w = cosines(Shape({3, 3, 32, 64}));
  EagerOptions ref;
  ref.kernel = "ref";
  const Tensor want = eager_call1("conv2d", {x, w}, {{"padding", std::string("SAME")}}, ref);
  for (bool frozen : {true, false}) {
    VariableStore vars;
    vars.create("w", w.clone());
    CompileOptions opts;
    opts.frozen_variables = frozen;
    auto exe = Executable::compile(*g, vars, opts);
    std::vector<Tensor> got = exe->run({{"x", x}});
    std::string kernel;
    for (const StepInfo& s : exe->steps()) {
      if (s.op == "conv2d") kernel = s.kernel;
    }
    EXPECT_EQ(kernel == "cpu_small_image", frozen) << kernel;
    EXPECT_TRUE(allclose(got[0], want, 1e-5, 1e-5)) << max_abs_diff(got[0], want);
  }
}

// fold_frozen_variables leaves variables a node writes, keeps broadcast_to (the graph may be
// rebatched after) and shares the store's memory with the constants it makes.
TEST(Executable, FoldFrozenVariablesKeepsWrittenVariablesAndBroadcasts) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 3]}
    %p = variable() {dtype=f32, name="p", shape=[3]}
    %q = variable() {dtype=f32, name="q", shape=[3]}
    %r = variable() {dtype=f32, name="r", shape=[3]}
    %b = broadcast_to(%r) {shape=[4, 3]}
    %s = add(%x, %b)
    %t = mul(%s, %q)
    %u = add(%t, %p)
    %v = input() {dtype=f32, name="v", shape=[3]}
    %a = assign(%p, %v) after(%u)
    return {"u": %u}
  })");
  VariableStore vars;
  for (const char* v : {"p", "q", "r"})
    vars.create(v, tern::testing::random_tensor(DType::kF32, Shape{3}, 7));
  fold_frozen_variables(*g, vars);
  ASSERT_EQ(g->nodes_of("variable").size(), 1u);
  EXPECT_EQ(g->nodes_of("variable")[0]->attrs().get_string("name"), "p");
  ASSERT_EQ(g->nodes_of("broadcast_to").size(), 1u);
  const ir::Node* r = g->nodes_of("broadcast_to")[0]->input(0)->node();
  ASSERT_EQ(r->op_name(), "constant");
  EXPECT_EQ(r->attrs().get_tensor("value").data<float>(), vars.get("r").data<float>());
}

// A variable stored with another type than the graph declares is not frozen into a constant of
// the wrong type: it stays a variable, and compiling names it.
TEST(Executable, FrozenVariableOfTheWrongTypeIsNamedAtCompile) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[3]}
    %w = variable() {dtype=f32, name="w", shape=[3]}
    %y = mul(%x, %w)
    return {"y": %y}
  })");
  VariableStore vars;
  vars.create("w", iota(Shape({4}), 0.0f));
  fold_frozen_variables(*g, vars);
  EXPECT_EQ(g->nodes_of("variable").size(), 1u);
  CompileOptions frozen;
  frozen.frozen_variables = true;
  try {
    Executable::compile(*g, vars, frozen);
    FAIL() << "compiled a graph whose variable has the wrong shape";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("variable 'w' is f32[4]"), std::string::npos) << e.message();
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

// The store's 16-bit copies: cast from the variable on first use, kept fresh by the update that
// writes them with the variable, cast again after any write the store sees without them.
TEST(VariableStore, EraseDropsTheVariableAndNamesAMissingOne) {
  VariableStore vars;
  vars.create("kernel", iota(Shape({2, 3}), 1.0f));
  vars.copy("kernel", DType::kBF16);
  Tensor alias = vars.get("kernel");  // shares its memory
  vars.erase("kernel");
  EXPECT_FALSE(vars.has("kernel"));
  EXPECT_EQ(vars.size(), 0u);
  EXPECT_EQ(alias.get(5), 6.0);  // still alive through the alias
  try {
    vars.erase("kernal");
    FAIL() << "erased a missing variable";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(e.message().find("'kernal'"), std::string::npos) << e.message();
  }
  vars.create("kernel", iota(Shape({2}), 0.0f));  // the name is free again, with another type
  EXPECT_EQ(vars.get("kernel").shape(), Shape({2}));
}

TEST(VariableStore, CopiesFollowTheirVariablesVersions) {
  VariableStore vars;
  vars.create("w", iota(Shape({2, 3}), 0.5f));
  const Tensor& c = vars.copy("w", DType::kBF16);
  EXPECT_EQ(c.type(), (TensorType{DType::kBF16, Shape({2, 3})}));
  EXPECT_EQ(c.get(1), 1.5);
  EXPECT_EQ(vars.copy_casts(), 1);
  EXPECT_FALSE(vars.refresh_copy("w", DType::kBF16));
  // A write with the copy written alongside keeps it fresh; one without makes it stale.
  vars.written("w", std::vector<DType>{DType::kBF16});
  EXPECT_FALSE(vars.refresh_copy("w", DType::kBF16));
  vars.written("w");
  EXPECT_TRUE(vars.refresh_copy("w", DType::kBF16));
  vars.assign("w", iota(Shape({2, 3}), 10.0f));
  EXPECT_TRUE(vars.refresh_copy("w", DType::kBF16));
  EXPECT_EQ(vars.copy("w", DType::kBF16).get(5), 15.0);
  vars.get_mutable("w").set(5, 3.0);  // through a writable reference
  EXPECT_TRUE(vars.refresh_copy("w", DType::kBF16));
  EXPECT_EQ(vars.copy("w", DType::kBF16).get(5), 3.0);
  EXPECT_EQ(vars.copy_casts(), 4);
  const VariableStore& read_only = vars;  // reading does not make copies stale
  EXPECT_EQ(read_only.get("w").get(5), 3.0);
  EXPECT_FALSE(vars.refresh_copy("w", DType::kBF16));
  // Copies are not variables, and only f32 variables have one.
  EXPECT_EQ(vars.names(), std::vector<std::string>{"w"});
  vars.create("i", Tensor(DType::kI32, Shape({2})));
  EXPECT_THROW(vars.copy("i", DType::kBF16), Error);
  EXPECT_THROW(vars.copy("w", DType::kF64), Error);
  // An f32 copy holds the values rounded to bf16 (the bf16 copy widened).
  vars.get_mutable("w").set(4, 1.0 + 1.0 / 1024);  // between two bf16 values: rounds to 1
  EXPECT_EQ(vars.copy("w", DType::kF32).get(4), 1.0);
  EXPECT_EQ(vars.get("w").get(4), 1.0 + 1.0 / 1024);
  EXPECT_THROW(vars.refresh_copy("i", DType::kBF16), Error);
}

// A mixed-precision step that updates its weight reads the store's bf16 copy, which the update
// writes; every other way the weight changes between runs (assign, a write through get, an f32
// executable or the eager path updating it) is seen at the next run. Small integers keep every
// value exact in bf16, so each run's y must equal x . w for the weight as it was before the run.
TEST(Executable, MixedPrecisionStepsReadWeightCopiesThatAreNeverStale) {
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 4]}
    %lr = input() {dtype=f32, name="lr", shape=[]}
    %gw = input() {dtype=f32, name="gw", shape=[4, 3]}
    %w = variable() {dtype=f32, name="w", shape=[4, 3]}
    %y = matmul(%x, %w)
    %u = sgd_update(%lr, %w, %gw) after(%y) {num_params=1}
    return {"y": %y}
  })";
  auto g = ir::parse_graph(text);
  Tensor w0(DType::kF32, Shape({4, 3}));
  for (int64_t i = 0; i < 12; ++i) w0.set(i, static_cast<double>(i % 7 - 3));
  Tensor x(DType::kF32, Shape({2, 4}));
  for (int64_t i = 0; i < 8; ++i) x.set(i, static_cast<double>(i % 3 - 1));
  Tensor ones(DType::kF32, Shape({4, 3}));
  for (int64_t i = 0; i < 12; ++i) ones.set(i, 1.0);
  const Feeds feeds = {{"x", x}, {"lr", Tensor::scalar(DType::kF32, 1.0)}, {"gw", ones}};

  VariableStore vars;
  vars.create("w", w0);
  CompileOptions mixed;
  mixed.mixed_precision = DType::kBF16;
  auto exe = Executable::compile(*g, vars, mixed);
  int copies = 0, casts_of_variables = 0;
  for (const ir::Node* n : exe->graph().nodes()) {
    copies += n->op_name() == "variable_copy";
    casts_of_variables +=
        n->op_name() == "cast" && n->input(0)->node()->op_name() == "variable" ? 1 : 0;
  }
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(casts_of_variables, 0);

  // y = x . w, for the weight as the store holds it before the run.
  auto run_and_check = [&](const std::string& when) {
    const Tensor w = static_cast<const VariableStore&>(vars).get("w").clone();
    std::vector<Tensor> y = exe->run(feeds);
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        double want = 0;
        for (int64_t k = 0; k < 4; ++k) want += x.get(i * 4 + k) * w.get(k * 3 + j);
        EXPECT_EQ(y[0].get(i * 3 + j), want) << when << ": y[" << i << "," << j << "]";
      }
    }
  };
  run_and_check("first run");
  const VariableStore& store = vars;
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(store.get("w").get(i), w0.get(i) - 1.0);
    EXPECT_EQ(vars.copy("w", DType::kBF16).get(i), w0.get(i) - 1.0) << "the update wrote it";
  }
  const int64_t casts = vars.copy_casts();
  run_and_check("second run");
  run_and_check("third run");
  EXPECT_EQ(vars.copy_casts(), casts) << "steps that write the copy need no cast";

  vars.assign("w", w0);
  run_and_check("after assign");
  vars.get_mutable("w").set(4, 2.0);
  run_and_check("after a write through get");
  auto f32 = Executable::compile(*g, vars);
  f32->run(feeds);
  run_and_check("after an f32 executable updated the weight");
  run_graph_eager(*g, feeds, &vars);
  run_and_check("after the eager path updated the weight");
}

// A graph's variable_copy must name an f32 variable of its shape in the store.
TEST(Executable, VariableCopiesThatDoNotMatchTheStoreAreErrors) {
  VariableStore vars;
  vars.create("w", iota(Shape({2, 3}), 0.0f));
  vars.create("steps", Tensor(DType::kI64, Shape({})));
  auto graph = [](const char* name, const char* shape) {
    return ir::parse_graph(str_cat(R"(graph @g {
      %c = variable_copy() {dtype=bf16, name=")",
                                   name, R"(", shape=)", shape, R"(}
      %y = cast(%c) {dtype=f32}
      return {"y": %y}
    })"));
  };
  EXPECT_TERN_ERROR(Executable::compile(*graph("w", "[3, 2]"), vars), ErrorCode::kInvalidArgument,
                    "the bf16 copy of variable 'w' is bf16[2, 3] but the graph expects bf16[3, 2]");
  EXPECT_TERN_ERROR(Executable::compile(*graph("steps", "[]"), vars), ErrorCode::kInvalidArgument,
                    "variable 'steps' is i64[]: only an f32 variable has a 16-bit copy");
  EXPECT_TERN_ERROR(Executable::compile(*graph("v", "[2, 3]"), vars), ErrorCode::kNotFound,
                    "variable 'v' is not in the store");
  // The matching one reads the copy.
  auto exe = Executable::compile(*graph("w", "[2, 3]"), vars);
  EXPECT_EQ(exe->run({})[0].get(5), 5.0);
}

}  // namespace
}  // namespace tern::runtime
