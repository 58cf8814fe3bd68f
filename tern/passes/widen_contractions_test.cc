// widen_contractions: text IR in, structure out; and the compiled step against the kernels that
// widen their own operands, bit for bit.
#include "tern/passes/widen_contractions.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

#include "tern/device/device.h"
#include "tern/ops/fused_program.h"
#include "tern/passes/pass_test_util.h"
#include "tern/runtime/executable.h"
#include "tern/runtime/runtime.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

// The cast producing `v`, which must be one from `from`.
const ir::Node& cast_from(const ir::Value* v, DType from) {
  const ir::Node& n = *v->node();
  EXPECT_EQ(n.op_name(), "cast");
  EXPECT_EQ(n.input(0)->dtype(), from);
  return n;
}

TEST(WidenContractions, OneCastPerOperandSharedByItsMatmuls) {
  // A forward matmul, its input gradient and its weight gradient: x, w and dy are each read by
  // two matmuls.
  auto g = parse(R"(graph @g {
    %x = input() {dtype=bf16, name="x", shape=[4, 8]}
    %w = input() {dtype=bf16, name="w", shape=[8, 3]}
    %dy = input() {dtype=bf16, name="dy", shape=[4, 3]}
    %y = matmul(%x, %w)
    %dx = matmul(%dy, %w) {transpose_b=true}
    %dw = matmul(%x, %dy) {transpose_a=true, out_dtype="f32"}
    %r = relu(%y)
    return {"r": %r, "dx": %dx, "dw": %dw}
  })");
  WidenContractions pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "matmul"), 3u);
  for (const ir::Node* m : g->nodes_of("matmul")) {
    EXPECT_EQ(m->input(0)->dtype(), DType::kF32) << m->name();
    EXPECT_EQ(m->input(1)->dtype(), DType::kF32) << m->name();
    EXPECT_EQ(m->output()->dtype(), DType::kF32) << m->name();
    EXPECT_EQ(m->attrs().get_string("out_dtype"), "") << m->name();
  }
  // Three widening casts (x, w, dy) and two rounding ones (y, dx); dw was f32 already.
  EXPECT_EQ(count_ops(*g, "cast"), 5u);
  const ir::Node& dx_round = cast_from(output_node(*g, "dx").output(), DType::kF32);
  EXPECT_EQ(dx_round.output()->dtype(), DType::kBF16);
  const ir::Node& dw = output_node(*g, "dw");
  EXPECT_EQ(dw.op_name(), "matmul");
  const ir::Node& relu = output_node(*g, "r");
  EXPECT_EQ(relu.input(0)->dtype(), DType::kBF16);  // the rest of the graph still sees bf16
  const ir::Node& y = *relu.input(0)->node()->input(0)->node();
  const ir::Node& dx = *dx_round.input(0)->node();
  EXPECT_EQ(y.input(0), dw.input(0));   // x widened once
  EXPECT_EQ(y.input(1), dx.input(1));   // w widened once
  EXPECT_EQ(dx.input(0), dw.input(1));  // dy widened once
  cast_from(y.input(0), DType::kBF16);
  EXPECT_FALSE(run_pass(pass, *g));  // nothing bf16 left to widen
}

TEST(WidenContractions, FusedEpilogueOperandsAreWidenedToo) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=bf16, name="x", shape=[4, 8]}
    %w = input() {dtype=bf16, name="w", shape=[8, 3]}
    %b = input() {dtype=bf16, name="b", shape=[3]}
    %res = input() {dtype=bf16, name="res", shape=[4, 3]}
    %y = fused_matmul(%x, %w, %b, %res) {activation="relu", has_bias=true, has_residual=true}
    return {"y": %y}
  })");
  WidenContractions pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& round = output_node(*g, "y");
  EXPECT_EQ(round.op_name(), "cast");
  EXPECT_EQ(round.output()->dtype(), DType::kBF16);
  const ir::Node& fused = *round.input(0)->node();
  ASSERT_EQ(fused.op_name(), "fused_matmul");
  EXPECT_EQ(fused.attrs().get_string("activation"), "relu");
  ASSERT_EQ(fused.num_inputs(), 4);
  for (int i = 0; i < 4; ++i) cast_from(fused.input(i), DType::kBF16);
}

TEST(WidenContractions, ACastDownAndUpIsOneRounding) {
  // x is cast to bf16 for two matmuls only: one rounding in f32 replaces the cast; y's cast is
  // also read by a bf16 relu, so it stays next to the rounding; m, a matmul result only another
  // matmul reads, is rounded in f32 where it was cast down and up.
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 8]}
    %y = input() {dtype=f32, name="y", shape=[8, 3]}
    %xl = cast(%x) {dtype=bf16}
    %yl = cast(%y) {dtype=bf16}
    %m = matmul(%xl, %yl)
    %d = matmul(%xl, %m) {transpose_a=true}
    %r = relu(%yl)
    return {"d": %d, "r": %r}
  })");
  WidenContractions pass;
  EXPECT_TRUE(run_pass(pass, *g));
  ASSERT_EQ(count_ops(*g, "fused_elementwise"), 3u);
  std::multiset<std::string> rounded;
  for (const ir::Node* f : g->nodes_of("fused_elementwise")) {
    ops::FusedProgram p;
    ASSERT_EQ(ops::decode_fused_program(f->attrs(), 1, &p), "");
    ASSERT_EQ(p.code.size(), 1u);
    EXPECT_EQ(p.code[0].op, ops::FusedOpcode::kRoundBF16);
    EXPECT_EQ(f->input(0)->dtype(), DType::kF32);
    rounded.insert(f->input(0)->node()->op_name());
  }
  EXPECT_EQ(rounded, (std::multiset<std::string>{"input", "input", "matmul"}));
  // Left: y's cast for the relu, and d's cast down.
  EXPECT_EQ(count_ops(*g, "cast"), 2u);
  EXPECT_EQ(output_node(*g, "r").input(0)->node()->op_name(), "cast");
}

TEST(WidenContractions, LeavesOtherDtypesAndOpsAlone) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 8]}
    %w = input() {dtype=f32, name="w", shape=[8, 3]}
    %h = input() {dtype=f16, name="h", shape=[4, 8]}
    %hw = input() {dtype=f16, name="hw", shape=[8, 3]}
    %i = input() {dtype=bf16, name="i", shape=[1, 5, 5, 2]}
    %f = input() {dtype=bf16, name="f", shape=[3, 3, 2, 4]}
    %y = matmul(%x, %w)
    %z = matmul(%h, %hw)
    %c = conv2d(%i, %f)
    return {"y": %y, "z": %z, "c": %c}
  })");
  WidenContractions pass;
  EXPECT_FALSE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "cast"), 0u);
}

// The compiled step with the pass (casts in the graph, f32 kernels) and without it (the bf16
// matmuls' own widening kernels, onednn_f32) give the same bits.
TEST(WidenContractions, SameBitsAsTheWideningKernels) {
  runtime::initialize();  // registers the backends
  if (!DeviceRegistry::global()
           .get(DeviceType::kCPU)
           .supports(DeviceCapability::kBF16WidenedContractions)) {
    GTEST_SKIP() << "this CPU runs bf16 matmuls natively";
  }
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[64, 96]}
    %w1 = variable() {dtype=f32, name="w1", shape=[96, 128]}
    %b1 = variable() {dtype=f32, name="b1", shape=[128]}
    %w2 = variable() {dtype=f32, name="w2", shape=[128, 8]}
    %h = matmul(%x, %w1)
    %hb = add(%h, %b1)
    %r = relu(%hb)
    %y = matmul(%r, %w2)
    %dr = matmul(%y, %w2) {transpose_b=true}
    %dw = matmul(%r, %y) {transpose_a=true}
    return {"y": %y, "dr": %dr, "dw": %dw}
  })";
  runtime::VariableStore vars;
  vars.create("w1", testing::sine_tensor(Shape({96, 128}), 0.2));
  vars.create("b1", testing::sine_tensor(Shape({128}), 0.1));
  vars.create("w2", testing::sine_tensor(Shape({128, 8}), 0.3));
  Tensor x = testing::sine_tensor(Shape({64, 96}), 1.0);
  std::vector<Tensor> out[2];
  for (int mode = 0; mode < 2; ++mode) {
    auto g = parse(text);
    runtime::CompileOptions o;
    o.mixed_precision = DType::kBF16;
    if (mode == 1) o.disabled_passes = {"widen_contractions"};
    auto exe = runtime::Executable::compile(*g, vars, o);
    size_t casts = 0, bf16_matmuls = 0;
    for (const ir::Node* n : exe->graph().nodes()) {
      casts += n->op_name() == "cast";
      bf16_matmuls +=
          n->op_name().find("matmul") != std::string::npos && n->input(0)->dtype() == DType::kBF16;
    }
    EXPECT_EQ(bf16_matmuls, mode == 0 ? 0u : 4u) << mode;
    out[mode] = exe->run({{"x", x}});
    for (Tensor& t : out[mode]) t = t.clone();
  }
  for (size_t i = 0; i < out[0].size(); ++i) {
    ASSERT_EQ(out[0][i].type(), out[1][i].type()) << i;
    EXPECT_EQ(std::memcmp(out[0][i].raw_data(), out[1][i].raw_data(), out[0][i].nbytes()), 0)
        << "output " << i;
  }
}

// The runtime runs the pass exactly where the device reports widened bf16 contractions, and the
// device follows TERN_BF16_CONTRACTIONS (ctest runs these tests again under =native and =f32):
// A weight's bf16 copy that only matmuls (all widened) and its update read becomes the store's f32
// copy rounded to bf16: the update writes it, the widened matmuls read it with no cast. A copy
// another op reads too (relu here) stays bf16 and is cast for its matmul.
TEST(WidenContractions, UpdatedCopiesReadOnlyByMatmulsAreKeptWidened) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=bf16, name="x", shape=[4, 8]}
    %dy = input() {dtype=bf16, name="dy", shape=[4, 3]}
    %lr = input() {dtype=f32, name="lr", shape=[]}
    %w1 = variable() {dtype=f32, name="w1", shape=[8, 3]}
    %w2 = variable() {dtype=f32, name="w2", shape=[8, 3]}
    %g1 = input() {dtype=f32, name="g1", shape=[8, 3]}
    %g2 = input() {dtype=f32, name="g2", shape=[8, 3]}
    %c1 = variable_copy() {name="w1", dtype=bf16, shape=[8, 3]}
    %c2 = variable_copy() {name="w2", dtype=bf16, shape=[8, 3]}
    %y = matmul(%x, %c1)
    %dx = matmul(%dy, %c1) {transpose_b=true}
    %z = matmul(%x, %c2)
    %r = relu(%c2)
    %u = sgd_update(%lr, %w1, %w2, %g1, %g2, %c1, %c2) after(%y, %dx, %z, %r) {num_params=2, momentum=0.0, copies=[0, 1]}
    return {"y": %y, "dx": %dx, "z": %z, "r": %r}
  })");
  WidenContractions pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node* update = nullptr;
  for (const ir::Node* n : g->nodes_of("sgd_update")) update = n;
  ASSERT_NE(update, nullptr);
  ASSERT_EQ(update->num_inputs(), 7);
  const ir::Node& c1 = *update->input(5)->node();
  EXPECT_EQ(c1.op_name(), "variable_copy");
  EXPECT_EQ(c1.attrs().get_string("name"), "w1");
  EXPECT_EQ(c1.output()->dtype(), DType::kF32);
  EXPECT_EQ(update->input(6)->dtype(), DType::kBF16);  // w2's copy: relu reads it too
  EXPECT_EQ(update->control_inputs().size(), 4u);      // the update still waits for its readers
  for (const ir::Node* m : g->nodes_of("matmul")) {
    const ir::Node& w = *m->input(1)->node();
    if (m->name() == "z/widened") {
      cast_from(m->input(1), DType::kBF16);
    } else {
      EXPECT_EQ(&w, &c1) << m->name();
    }
  }
  EXPECT_EQ(count_ops(*g, "variable_copy"), 2u);
}

// f32 always widens; native keeps oneDNN's bf16 kernels wherever the CPU has AVX-512 (without
// it oneDNN has no bf16 kernels and widening is the only fast form).
TEST(WidenContractions, RunsWhereTheDeviceWidens) {
  runtime::initialize();
  const bool widens = DeviceRegistry::global()
                          .get(DeviceType::kCPU)
                          .supports(DeviceCapability::kBF16WidenedContractions);
  const char* env = std::getenv("TERN_BF16_CONTRACTIONS");
  const std::string mode = env ? env : "";
  if (mode == "f32") {
    EXPECT_TRUE(widens);
  }
  if (mode == "native" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    EXPECT_FALSE(widens);
  }
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[16, 32]}
    %w = variable() {dtype=f32, name="w", shape=[32, 8]}
    %y = matmul(%x, %w)
    return {"y": %y}
  })");
  runtime::VariableStore vars;
  vars.create("w", testing::sine_tensor(Shape({32, 8}), 0.2));
  runtime::CompileOptions o;
  o.mixed_precision = DType::kBF16;
  auto exe = runtime::Executable::compile(*g, vars, o);
  size_t bf16_matmuls = 0, f32_matmuls = 0;
  for (const ir::Node* n : exe->graph().nodes()) {
    if (n->op_name().find("matmul") == std::string::npos) continue;
    (n->input(0)->dtype() == DType::kBF16 ? bf16_matmuls : f32_matmuls) += 1;
  }
  EXPECT_EQ(bf16_matmuls, widens ? 0u : 1u) << "mode '" << mode << "'";
  EXPECT_EQ(f32_matmuls, widens ? 1u : 0u) << "mode '" << mode << "'";
  // Either way the product is the f32 one within bf16's rounding.
  Tensor x = testing::sine_tensor(Shape({16, 32}), 1.0);
  const Tensor& w = vars.get("w");
  std::vector<Tensor> out = exe->run({{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < 16; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      double want = 0;
      for (int64_t k = 0; k < 32; ++k) want += x.get(i * 32 + k) * w.get(k * 8 + j);
      EXPECT_NEAR(out[0].get(i * 8 + j), want, 0.02 * (1 + std::abs(want))) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace tern::passes
