// dce: text IR in, structure out.
#include "tern/passes/dce.h"

#include "tern/passes/pass_test_util.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::parse;
using testing::run_pass;

TEST(Dce, RemovesWhatNoOutputNeeds) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4]}
    %a = relu(%x)
    %dead = exp(%a)
    %dead2 = neg(%dead)
    %c = constant() {value=tensor<f32[]>[2]}
    return {"a": %a}
  })");
  Dce dce;
  EXPECT_TRUE(run_pass(dce, *g));
  EXPECT_EQ(g->num_nodes(), 2u);
  EXPECT_EQ(count_ops(*g, "exp"), 0u);
  EXPECT_EQ(count_ops(*g, "constant"), 0u);
  EXPECT_FALSE(run_pass(dce, *g));
}

TEST(Dce, KeepsEffectsSourcesAndWhatTheyNeed) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4]}
    %unused_input = input() {dtype=f32, name="u", shape=[2]}
    %v = variable() {dtype=f32, name="v", shape=[4]}
    %noise = random_uniform() {shape=[4]}
    %reader = relu(%v)
    %sq = square(%x)
    %update = assign(%v, %sq) after(%reader)
    %dead = exp(%x)
    return {}
  })");
  Dce dce;
  EXPECT_TRUE(run_pass(dce, *g));
  for (const char* kept : {"x", "unused_input", "v", "noise", "reader", "sq", "update"}) {
    EXPECT_NE(g->find_node(kept), nullptr) << kept;
  }
  EXPECT_EQ(g->find_node("dead"), nullptr);
}

TEST(Dce, KeepsAMultiOutputNodeWhole) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 2]}
    %s = split(%x) {axis=0, sizes=[1, 3]}
    %t = neg(%s#1)
    return {"t": %t}
  })");
  Dce dce;
  EXPECT_FALSE(run_pass(dce, *g));
  EXPECT_EQ(g->find_node("s")->num_outputs(), 2);
}

}  // namespace
}  // namespace tern::passes
