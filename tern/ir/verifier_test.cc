// Verifier: a valid graph passes, and each invariant a buggy pass could break is caught.
#include "tern/ir/verifier.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tern/ir/parser.h"
#include "tests/support/random_tensor.h"

namespace tern::ir {
namespace {

constexpr const char* kChain = R"(graph @g {
  %x = input() {dtype=f32, name="x", shape=[2, 3]}
  %a = relu(%x)
  %b = neg(%a)
  %s = sum(%b) {axes=[1]}
  return {"s": %s}
})";

// A pass that writes attributes behind inference's back is what these tests simulate.
ops::Attrs& mutable_attrs(Node* n) {
  return const_cast<ops::Attrs&>(n->attrs());
}

TEST(Verifier, AcceptsAValidGraph) {
  auto g = parse_graph(kChain);
  verify(*g, "nothing");
}

TEST(Verifier, NamesThePassThatBrokeTheGraph) {
  auto g = parse_graph(kChain);
  Node* a = g->find_node("a");
  a->set_input(0, g->find_node("b")->output());  // a <- b <- a
  EXPECT_TERN_ERROR(verify(*g, "bad_pass"), ErrorCode::kInternal,
                    "graph verification failed after bad_pass");
}

TEST(Verifier, CatchesADataCycle) {
  auto g = parse_graph(kChain);
  g->find_node("a")->set_input(0, g->find_node("b")->output());
  EXPECT_TERN_ERROR(verify(*g), ErrorCode::kInternal, "cycle");
}

TEST(Verifier, CatchesAControlCycle) {
  auto g = parse_graph(kChain);
  g->find_node("a")->add_control_input(g->find_node("s"));
  EXPECT_TERN_ERROR(verify(*g), ErrorCode::kInternal, "cycle");
}

TEST(Verifier, CatchesAnInputFromAnotherGraph) {
  auto g = parse_graph(kChain);
  auto other = parse_graph(kChain);
  g->find_node("b")->set_input(0, other->find_node("a")->output());
  EXPECT_TERN_ERROR(verify(*g), ErrorCode::kInternal, "node 'b' input 0 is not in the graph");
}

TEST(Verifier, CatchesAControlInputFromAnotherGraph) {
  auto g = parse_graph(kChain);
  auto other = parse_graph(kChain);
  g->find_node("b")->add_control_input(other->find_node("a"));
  EXPECT_TERN_ERROR(verify(*g), ErrorCode::kInternal,
                    "node 'b' has a control input outside the graph");
}

TEST(Verifier, CatchesAGraphOutputFromAnotherGraph) {
  auto g = parse_graph(kChain);
  auto other = parse_graph(kChain);
  g->set_output(0, other->find_node("s")->output());
  EXPECT_TERN_ERROR(verify(*g), ErrorCode::kInternal, "graph output 's' is not defined");
}

TEST(Verifier, CatchesAStaleOutputType) {
  // keepdims flips the inferred shape from f32[2] to f32[2, 1]; the value still says f32[2].
  auto g = parse_graph(kChain);
  mutable_attrs(g->find_node("s")).set("keepdims", true);
  EXPECT_TERN_ERROR(verify(*g), ErrorCode::kInternal,
                    "node 's' output 0 is f32[2] but infers f32[2, 1]");
}

TEST(Verifier, CatchesANodeThatNoLongerTypeChecks) {
  auto g = parse_graph(kChain);
  mutable_attrs(g->find_node("s")).set("axes", std::vector<int64_t>{5});
  EXPECT_TERN_ERROR(verify(*g), ErrorCode::kInternal, "node 's' no longer type-checks");
  auto h = parse_graph(kChain);
  mutable_attrs(h->find_node("a")).set("bogus", int64_t{1});
  EXPECT_TERN_ERROR(verify(*h), ErrorCode::kInternal, "unknown attribute 'bogus'");
}

constexpr const char* kUpdate = R"(graph @g {
  %v = variable() {dtype=f32, name="v", shape=[3]}
  %x = input() {dtype=f32, name="x", shape=[3]}
  %r = relu(%v)
  %u = assign(%v, %x)%s
  return {"r": %r}
})";

std::string with_after(const char* after) {
  std::string text = kUpdate;
  return text.replace(text.find("%s"), 2, after);
}

TEST(Verifier, CatchesAMutationNotOrderedAfterAReader) {
  auto unordered = parse_graph(with_after(""));
  EXPECT_TERN_ERROR(verify(*unordered), ErrorCode::kInternal,
                    "node 'u' mutates variable 'v' but reader 'r' is not ordered before it");
  auto ordered = parse_graph(with_after(" after(%r)"));
  verify(*ordered);
}

TEST(Verifier, GraphApiRefusesWhatTheVerifierCannotSee) {
  // Duplicate names and type-changing rewires never reach the verifier: the graph refuses them.
  auto g = parse_graph(kChain);
  EXPECT_EQ(g->add_node("relu", {g->find_node("x")->output()}, {}, "a")->name(), "a_1");
  EXPECT_TERN_ERROR(g->find_node("b")->set_input(0, g->find_node("s")->output()),
                    ErrorCode::kInternal, "set_input on node 'b'");
  EXPECT_TERN_ERROR(g->remove_node(g->find_node("a")), ErrorCode::kInternal, "still used");
}

}  // namespace
}  // namespace tern::ir
