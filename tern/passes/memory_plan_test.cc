// Memory planning: no two live values share bytes (property check on random graphs), in-place
// chains, reuse on an MLP, and planned executables computing what the eager path computes.
#include "tern/passes/memory_plan.h"

#include "tern/autodiff/autodiff.h"
#include "tern/base/philox.h"
#include "tern/ir/analysis/topo_order.h"
#include "tern/passes/pass_test_util.h"
#include "tern/runtime/executable.h"
#include "tests/support/random_tensor.h"

namespace tern::passes {
namespace {

using testing::parse;

// Every pair of planned values that is live at the same time occupies disjoint bytes, except an
// in-place output and a value it was (transitively) written over, which meet at exactly one
// step, and a view (reshape, ...) and what it views, which share bytes while both live.
void expect_sound(const MemoryPlan& plan) {
  std::vector<const ir::Value*> values;
  for (const auto& [v, _] : plan.offsets) values.push_back(v);
  for (const ir::Value* v : values) {
    EXPECT_EQ(plan.offsets.at(v) % kArenaAlignment, 0u);
    EXPECT_LE(plan.offsets.at(v) + plan.lifetimes.at(v).bytes, plan.arena_bytes);
  }
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = i + 1; j < values.size(); ++j) {
      const ir::Value *a = values[i], *b = values[j];
      const Lifetime &la = plan.lifetimes.at(a), &lb = plan.lifetimes.at(b);
      size_t oa = plan.offsets.at(a), ob = plan.offsets.at(b);
      bool bytes_overlap = la.bytes > 0 && lb.bytes > 0 && oa < ob + lb.bytes && ob < oa + la.bytes;
      bool time_overlap = la.first <= lb.last && lb.first <= la.last;
      if (!bytes_overlap || !time_overlap) continue;
      auto handoff = [&](const ir::Value* out, const ir::Value* in) {
        bool views = true;  // every link from out back to in is a view
        for (const ir::Value* v = out;;) {
          auto it = plan.inplace_of.find(v);
          if (it == plan.inplace_of.end()) return false;
          views = views && v->node()->op().has_trait(ops::kTraitView);
          v = it->second;
          if (v == in) break;
        }
        return views || plan.lifetimes.at(in).last == plan.lifetimes.at(out).first;
      };
      EXPECT_TRUE(handoff(a, b) || handoff(b, a))
          << a->ref() << " [" << la.first << ", " << la.last << "] @" << oa << "+" << la.bytes
          << " and " << b->ref() << " [" << lb.first << ", " << lb.last << "] @" << ob << "+"
          << lb.bytes;
    }
  }
}

// A random graph of elementwise ops, matmuls, splits and concats over [4, 8] values.
std::unique_ptr<ir::Graph> random_graph(uint64_t seed) {
  auto g = std::make_unique<ir::Graph>();
  PhiloxStream rng(seed);
  auto pick = [&](size_t n) {
    return static_cast<size_t>(rng.next_double() * static_cast<double>(n));
  };
  const TensorType t{DType::kF32, Shape{4, 8}};
  std::vector<ir::Value*> pool = {g->input("x", t), g->input("y", t),
                                  g->variable("w", {DType::kF32, Shape{8, 8}})};
  int nodes = 8 + static_cast<int>(pick(24));
  for (int i = 0; i < nodes; ++i) {
    ir::Value* a = pool[pick(pool.size())];
    if (a->shape() != t.shape) a = pool[0];
    ir::Value* b = pool[pick(pool.size())];
    if (b->shape() != t.shape) b = pool[1];
    switch (pick(8)) {
      case 0:
        pool.push_back(g->add("relu", {a}));
        break;
      case 1:
        pool.push_back(g->add("neg", {a}));
        break;
      case 2:
        pool.push_back(g->add("add", {a, b}));
        break;
      case 3:
        pool.push_back(g->add("mul", {a, b}));
        break;
      case 4:
        pool.push_back(g->add("matmul", {a, pool[2]}));
        break;
      case 5: {
        ir::Node* s = g->add_node("split", {a},
                                  {{"axis", int64_t{1}}, {"sizes", std::vector<int64_t>{3, 5}}});
        pool.push_back(g->add("concat", {s->output(1), s->output(0)}, {{"axis", int64_t{1}}}));
        break;
      }
      case 6:
        pool.push_back(
            g->add("reshape", {g->add("exp", {a})}, {{"shape", std::vector<int64_t>{4, 8}}}));
        break;
      default:  // a view of a value that may live on
        pool.push_back(g->add("reshape", {a}, {{"shape", std::vector<int64_t>{4, 8}}}));
    }
  }
  int outputs = 1 + static_cast<int>(pick(3));
  for (int i = 0; i < outputs; ++i)
    g->add_output(str_cat("out", i), pool[3 + pick(pool.size() - 3)]);
  return g;
}

TEST(MemoryPlan, LiveValuesNeverShareBytesOnRandomGraphs) {
  int inplace = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(str_cat("seed ", seed));
    auto g = random_graph(seed);
    MemoryPlan plan = plan_memory(*g, ir::live_topo_order(*g));
    expect_sound(plan);
    EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
    inplace += plan.inplace_count;
  }
  EXPECT_GT(inplace, 0);
}

TEST(MemoryPlan, PlannedExecutablesMatchTheEagerPath) {
  runtime::VariableStore vars;
  vars.create("w", tern::testing::random_tensor(DType::kF32, Shape{8, 8}, 5));
  runtime::Feeds feeds = {{"x", tern::testing::random_tensor(DType::kF32, Shape{4, 8}, 6)},
                          {"y", tern::testing::random_tensor(DType::kF32, Shape{4, 8}, 7)}};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(str_cat("seed ", seed));
    auto g = random_graph(seed);
    std::vector<Tensor> want = runtime::run_graph_eager(*g, feeds, &vars);
    runtime::CompileOptions options;
    options.optimize = false;  // the plan alone, in-place included
    auto exe = runtime::Executable::compile(*g, vars, options);
    std::vector<Tensor> got = exe->run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i;
  }
}

TEST(MemoryPlan, ReluChainRunsInPlace) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[1000]}
    %a = relu(%x)
    %b = neg(%a)
    %c = exp(%b)
    %d = sigmoid(%c)
    return {"d": %d}
  })");
  MemoryPlan plan = plan_memory(*g, ir::live_topo_order(*g));
  EXPECT_EQ(plan.inplace_count, 3);    // a is fresh (x is bound by the caller), b, c, d reuse it
  EXPECT_EQ(plan.arena_bytes, 4032u);  // one 4000-byte block, 64-aligned
  EXPECT_EQ(plan.naive_bytes, 4 * 4032u);
  for (const char* n : {"b", "c", "d"})
    EXPECT_EQ(plan.offsets.at(g->find_node(n)->output()),
              plan.offsets.at(g->find_node("a")->output()));
  EXPECT_EQ(plan.lifetimes.at(g->find_node("d")->output()).last,
            5);  // graph outputs live to the end
}

TEST(MemoryPlan, NoInPlaceIntoOutputsBroadcastsOrLiveValues) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 8]}
    %row = input() {dtype=f32, name="row", shape=[8]}
    %a = relu(%x)
    %b = neg(%a)
    %r = exp(%row)
    %c = add(%r, %b)
    %d = mul(%c, %c)
    %e = tanh(%b)
    return {"a": %a, "d": %d, "e": %e}
  })");
  MemoryPlan plan = plan_memory(*g, ir::live_topo_order(*g));
  expect_sound(plan);
  auto inplace_of = [&](const char* n) -> std::string {
    auto it = plan.inplace_of.find(g->find_node(n)->output());
    return it == plan.inplace_of.end() ? "" : it->second->node()->name();
  };
  EXPECT_EQ(inplace_of("b"), "");   // a is a graph output
  EXPECT_EQ(inplace_of("c"), "");   // r is broadcast ([8] -> [4, 8]); b is still read by e
  EXPECT_EQ(inplace_of("d"), "c");  // c dies at d (read twice there)
  EXPECT_EQ(inplace_of("e"), "b");
}

// A reshape shares its input's bytes even while the input is read later (no copy); the shared
// block is then not written in place until both are dead.
TEST(MemoryPlan, ViewsShareTheirInputsBlock) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 8]}
    %a = relu(%x)
    %v = reshape(%a) {shape=[32]}
    %b = neg(%a)
    %c = exp(%v)
    %d = tanh(%c)
    return {"b": %b, "d": %d}
  })");
  MemoryPlan plan = plan_memory(*g, ir::live_topo_order(*g));
  expect_sound(plan);
  auto offset = [&](const char* n) { return plan.offsets.at(g->find_node(n)->output()); };
  auto inplace_of = [&](const char* n) -> std::string {
    auto it = plan.inplace_of.find(g->find_node(n)->output());
    return it == plan.inplace_of.end() ? "" : it->second->node()->name();
  };
  EXPECT_EQ(inplace_of("v"), "a");
  EXPECT_EQ(offset("v"), offset("a"));
  // Whichever of b and c runs last may take the block over; the other must not while v or a
  // is still read.
  const bool b_last = plan.lifetimes.at(g->find_node("b")->output()).first >
                      plan.lifetimes.at(g->find_node("c")->output()).first;
  EXPECT_EQ(inplace_of(b_last ? "c" : "b"), "");

  runtime::VariableStore vars;
  runtime::Feeds feeds = {{"x", tern::testing::random_tensor(DType::kF32, Shape{4, 8}, 3)}};
  std::vector<Tensor> want = runtime::run_graph_eager(*g, feeds, &vars);
  runtime::CompileOptions options;
  options.optimize = false;
  std::vector<Tensor> got = runtime::Executable::compile(*g, vars, options)->run(feeds);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i;
}

// fused_matmul / fused_conv2d write their result over a residual that dies at the node (input
// 2, or 3 after a bias); never over a bias, not even where a [1, N] output has its element count.
// The compiled graphs compute what the eager path does (which writes every output fresh).
TEST(MemoryPlan, FusedResidualRunsInPlaceButNeverTheBias) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[6, 8]}
    %w = input() {dtype=f32, name="w", shape=[8, 4]}
    %x1 = input() {dtype=f32, name="x1", shape=[1, 8]}
    %b = input() {dtype=f32, name="b", shape=[4]}
    %r = exp(%x)
    %r2 = matmul(%r, %w)
    %a = fused_matmul(%x, %w, %r2) {has_residual=true}
    %c = fused_matmul(%x, %w, %b, %a) {has_bias=true, has_residual=true, activation="relu"}
    %bb = neg(%b)
    %d = fused_matmul(%x1, %w, %bb) {has_bias=true}
    %img = input() {dtype=f32, name="img", shape=[2, 5, 5, 3]}
    %f = input() {dtype=f32, name="f", shape=[3, 3, 3, 4]}
    %res = input() {dtype=f32, name="res", shape=[2, 5, 5, 4]}
    %rr = relu(%res)
    %e = fused_conv2d(%img, %f, %rr) {has_residual=true, padding="SAME"}
    return {"c": %c, "d": %d, "e": %e}
  })");
  MemoryPlan plan = plan_memory(*g, ir::live_topo_order(*g));
  expect_sound(plan);
  auto inplace_of = [&](const char* n) -> std::string {
    auto it = plan.inplace_of.find(g->find_node(n)->output());
    return it == plan.inplace_of.end() ? "" : it->second->node()->name();
  };
  EXPECT_EQ(inplace_of("a"), "r2");
  EXPECT_EQ(inplace_of("c"), "a");
  EXPECT_EQ(inplace_of("d"), "");  // bb is [4] like d, and dies there: still not paired
  EXPECT_EQ(inplace_of("e"), "rr");

  runtime::VariableStore vars;
  runtime::Feeds feeds;
  uint64_t seed = 11;
  for (const char* name : {"x", "w", "x1", "b", "img", "f", "res"}) {
    feeds.emplace_back(name, tern::testing::random_tensor(
                                 DType::kF32, g->find_node(name)->output()->shape(), seed++));
  }
  std::vector<Tensor> want = runtime::run_graph_eager(*g, feeds, &vars);
  runtime::CompileOptions options;
  options.optimize = false;
  std::vector<Tensor> got = runtime::Executable::compile(*g, vars, options)->run(feeds);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i;
}

// A two-layer MLP training step: forward, loss, gradients.
std::unique_ptr<ir::Graph> mlp_graph() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->input("x", {DType::kF32, Shape{64, 128}});
  ir::Value* w1 = g->variable("w1", {DType::kF32, Shape{128, 256}});
  ir::Value* w2 = g->variable("w2", {DType::kF32, Shape{256, 10}});
  ir::Value* h = g->add("relu", {g->add("matmul", {x, w1})});
  ir::Value* logits = g->add("matmul", {h, w2});
  ir::Value* loss =
      g->add("mean", {g->add("square", {logits})}, {{"axes", std::vector<int64_t>{}}});
  std::vector<ir::Value*> wrt = {w1, w2};
  std::vector<ir::Value*> grads = autodiff::gradients(*g, loss, wrt);
  g->add_output("loss", loss);
  g->add_output("dw1", grads[0]);
  g->add_output("dw2", grads[1]);
  return g;
}

TEST(MemoryPlan, ReusesMemoryOnAnMlpTrainingStep) {
  auto g = mlp_graph();
  MemoryPlan plan = plan_memory(*g, ir::live_topo_order(*g));
  expect_sound(plan);
  EXPECT_LT(plan.arena_bytes, plan.naive_bytes);
  std::cout << "mlp step: arena " << plan.arena_bytes << " bytes, naive " << plan.naive_bytes
            << " bytes, " << plan.inplace_count << " in place\n";
}

}  // namespace
}  // namespace tern::passes
