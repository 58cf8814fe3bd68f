// Text IR: hand-written graphs parse, printing round-trips exactly, and errors name line:column.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tern/base/philox.h"
#include "tern/ir/parser.h"
#include "tern/ir/printer.h"
#include "tests/support/random_tensor.h"

namespace tern::ir {
namespace {

std::string round_trip(const Graph& g) {
  return print_graph(*parse_graph(print_graph(g)));
}

TEST(TextIr, ParsesTheDocumentedExample) {
  auto g = parse_graph(R"(
    graph @main {
      %x = input() {dtype=f32, name="x", shape=[2, 3]} : f32[2, 3]
      %w = variable() {dtype=f32, name="w", shape=[3, 4]}
      %mm = matmul(%x, %w) {transpose_a=false, transpose_b=false}
      %r = relu(%mm)  // types are inferred
      return {"y": %r}
    })");
  EXPECT_EQ(g->name(), "main");
  EXPECT_EQ(g->num_nodes(), 4u);
  Node* r = g->find_node("r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->op_name(), "relu");
  EXPECT_EQ(r->output()->type(), (TensorType{DType::kF32, Shape{2, 4}}));
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0].name, "y");
  EXPECT_EQ(g->outputs()[0].value, r->output());
  EXPECT_EQ(g->find_variable("w")->name(), "w");
}

TEST(TextIr, AttributesTakeTheirKindFromTheOp) {
  // `1` for a float attribute, `[]` for ints, omitted attributes get defaults.
  auto g = parse_graph(R"(
    graph @g {
      %x = input() {dtype=f32, name="x", shape=[2, 3]}
      %s = sum(%x) {axes=[]}
      %p = pad(%x) {paddings=[0, 1, 1, 0], value=1}
      return {"s": %s, "p": %p}
    })");
  const Node* s = g->find_node("s");
  EXPECT_TRUE(s->attrs().get_ints("axes").empty());
  EXPECT_FALSE(s->attrs().get_bool("keepdims"));
  EXPECT_EQ(g->find_node("p")->attrs().get_float("value"), 1.0);
  EXPECT_EQ(g->find_node("p")->output()->shape(), (Shape{3, 4}));
}

TEST(TextIr, RoundTripsEveryAttributeKindExactly) {
  Graph g("round trip");
  Value* x = g.input("x\"quoted\"\n", {DType::kF32, Shape{2, 3}});
  Value* w = g.variable("w", {DType::kF32, Shape{3, 4}});
  // Constants of every dtype, with values that need every digit.
  Tensor f32 = Tensor::from_vector<float>(
      Shape{6},
      {0.1f, -0.0f, 1e-45f, 3.4028235e38f, std::numeric_limits<float>::infinity(), 1.0f / 3});
  Tensor f64 = Tensor::from_vector<double>(Shape{2, 2}, {0.1, 1e-310, -2.0 / 3, 1e300});
  Tensor bf16 = testing::random_tensor(DType::kBF16, Shape{5}, 7, -100, 100);
  Tensor f16 = Tensor::from_values(DType::kF16, Shape{4}, {6e-8, 65504, -0.333, 1.0 / 3});
  Tensor i8 = Tensor::from_values(DType::kI8, Shape{3}, {-128, 0, 127});
  Tensor u8 = Tensor::from_values(DType::kU8, Shape{2}, {0, 255});
  Tensor i32 = Tensor::from_values(DType::kI32, Shape{2}, {-2147483648.0, 2147483647});
  Tensor i64 = Tensor::from_vector<int64_t>(
      Shape{2}, {(int64_t{1} << 62) + 1, std::numeric_limits<int64_t>::min()});
  Tensor flags = Tensor::from_values(DType::kBool, Shape{3}, {1, 0, 1});
  std::vector<Tensor> constants = {f32, f64, bf16, f16,   i8,
                                   u8,  i32, i64,  flags, Tensor::scalar(DType::kF32, 2.5)};
  for (const Tensor& t : constants) g.constant(t);
  Node* mm = g.add_node("matmul", {x, w}, {{"transpose_b", false}}, "dense 1/matmul#odd");
  Node* split = g.add_node("split", {mm->output()},
                           {{"axis", int64_t{1}}, {"sizes", std::vector<int64_t>{1, 3}}});
  Value* c = g.add("cast", {split->output(1)}, {{"dtype", DType::kF64}});
  Node* fe = g.add_node("fused_elementwise", {split->output(1)},
                        {{"opcodes", std::vector<int64_t>{0, 34}},
                         {"operands", std::vector<int64_t>{-1, -1, 0, 1}},
                         {"immediates", std::vector<double>{0.1, 0}}});
  Value* scaled = g.add("pad", {fe->output()},
                        {{"paddings", std::vector<int64_t>{0, 0, 1, 1}}, {"value", 1e-7}});
  fe->add_control_input(split);
  fe->add_control_input(g.find_node("const"));
  g.add_output("cast", c);
  g.add_output("first", split->output(0));
  g.add_output("scaled", scaled);

  std::string text = print_graph(g);
  auto parsed = parse_graph(text);
  EXPECT_EQ(print_graph(*parsed), text) << text;
  EXPECT_EQ(round_trip(*parsed), text);
  // Same names, same control edges, exact tensor values.
  EXPECT_EQ(parsed->name(), "round trip");
  ASSERT_NE(parsed->find_node("dense 1/matmul#odd"), nullptr);
  ASSERT_NE(parsed->find_input("x\"quoted\"\n"), nullptr);
  EXPECT_EQ(parsed->find_node(fe->name())->control_inputs().size(), 2u);
  EXPECT_EQ(parsed->outputs()[0].value->node()->op_name(), "cast");
  EXPECT_EQ(parsed->outputs()[1].value->index(), 0);
  EXPECT_EQ(parsed->find_node(fe->name())->input(0)->index(), 1);
  std::vector<Node*> parsed_constants = parsed->nodes_of("constant");
  ASSERT_EQ(parsed_constants.size(), constants.size());
  for (size_t i = 0; i < constants.size(); ++i) {
    const Tensor& got = parsed_constants[i]->attrs().get_tensor("value");
    EXPECT_TRUE(bitwise_equal(got, constants[i])) << got << " vs " << constants[i];
  }
  EXPECT_EQ(parsed->find_node(fe->name())->attrs().get_floats("immediates")[0], 0.1);
}

TEST(TextIr, NanAndInfinitiesRoundTrip) {
  Graph g;
  double nan = std::numeric_limits<double>::quiet_NaN(),
         inf = std::numeric_limits<double>::infinity();
  g.add_output("c", g.constant(Tensor::from_vector<double>(Shape{3}, {nan, inf, -inf})));
  std::string text = print_graph(g);
  EXPECT_NE(text.find("[nan, inf, -inf]"), std::string::npos) << text;
  auto parsed = parse_graph(text);
  const Tensor& t = parsed->outputs()[0].value->node()->attrs().get_tensor("value");
  EXPECT_TRUE(std::isnan(t.get(0)));
  EXPECT_EQ(t.get(1), inf);
  EXPECT_EQ(t.get(2), -inf);
  EXPECT_EQ(round_trip(g), text);
}

TEST(TextIr, FloatAttributesAlwaysReadAsFloats) {
  EXPECT_EQ(print_attr_value(1.0), "1.0");
  EXPECT_EQ(print_attr_value(1e-7), "1e-07");
  EXPECT_EQ(print_attr_value(std::vector<double>{2, 0.5}), "[2.0, 0.5]");
  EXPECT_EQ(print_attr_value(int64_t{-3}), "-3");
  EXPECT_EQ(print_attr_value(std::string("a\tb")), "\"a\\tb\"");
  EXPECT_EQ(print_attr_value(DType::kBF16), "bf16");
  EXPECT_EQ(print_attr_value(Tensor::from_vector<float>(Shape{2}, {0.1f, 2})),
            "tensor<f32[2]>[0.1, 2]");
}

TEST(TextIr, TypeAnnotationsAreChecked) {
  auto good = parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 3]} : f32[2, 3]
    %s = split(%x) {axis=1, sizes=[1, 2]} : (f32[2, 1], f32[2, 2])
    return {"a": %s#1}
  })");
  EXPECT_EQ(good->outputs()[0].value->shape(), (Shape{2, 2}));
  EXPECT_TERN_ERROR(parse_graph("graph @g {\n"
                                "  %x = input() {dtype=f32, name=\"x\", shape=[2, 3]} : f32[3, 2]\n"
                                "  return {}\n}"),
                    ErrorCode::kInvalidArgument,
                    "<ir>:2:54: %x is declared f32[3, 2] but input infers f32[2, 3]");
}

// The error for `text`, which must fail to parse.
std::string parse_error(std::string_view text) {
  try {
    parse_graph(text, "model.tir");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "parsed: " << text;
  return "";
}

TEST(TextIr, ErrorsNameLineAndColumn) {
  const std::string head = "graph @g {\n  %x = input() {dtype=f32, name=\"x\", shape=[2, 3]}\n";
  auto expect = [&](const std::string& body, const std::string& want) {
    std::string msg = parse_error(head + body);
    EXPECT_NE(msg.find(want), std::string::npos) << "got: " << msg << "\nwant: " << want;
  };
  expect("  %y = relux(%x)\n", "model.tir:3:8: unknown op 'relux' (did you mean 'relu'?)");
  expect("  %y = relu(%z)\n", "model.tir:3:13: undefined value %z");
  expect("  %x = relu(%x)\n", "model.tir:3:3: %x is defined twice");
  expect("  %y = matmul(%x, %x) {transpose=true}\n",
         "model.tir:3:24: op 'matmul' has no attribute 'transpose'");
  expect("  %y = sum(%x) {axes=1}\n", "model.tir:3:22: expected '[', got integer '1'");
  expect("  %y = sum(%x) {keepdims=true, keepdims=false}\n",
         "model.tir:3:32: attribute 'keepdims' given twice");
  expect("  %y = matmul(%x, %x)\n",
         "model.tir:3:3: op 'matmul' (node 'y'): contraction dims differ");
  expect("  %y = split(%x) {axis=0, sizes=[1, 1]}\n  return {\"a\": %y#2}\n}",
         "model.tir:4:16: %y has 2 outputs; #2 does not exist");
  expect("  %c = constant() {value=tensor<f32[3]>[1, 2]}\n",
         "model.tir:3:33: tensor<f32[3]> needs 3 values, got 2");
  expect("  %c = constant() {value=tensor<i8[1]>[300]}\n",
         "model.tir:3:40: 300 does not fit in i8");
  expect("  %c = input() {dtype=f32, name=\"unterminated, shape=[1]}\n",
         "model.tir:3:33: unterminated string");
  expect("  %y = relu(%x) {}\n  return {\"a\": %y, \"a\": %x}\n}",
         "model.tir:4:20: output \"a\" returned twice");
  expect("  %y = relu(%x) $\n", "model.tir:3:17: unexpected character '$'");
  expect("  %y = relu(%x)\n", "model.tir:4:1: expected a node definition");
  expect("  %y = cast(%x) {dtype=f33}\n", "model.tir:3:24: unknown dtype");
}

TEST(TextIr, CommentsAndBlankLinesAreIgnored) {
  auto g = parse_graph("// a comment\ngraph @g { // here too\n\n  return {}  // and here\n}\n");
  EXPECT_EQ(g->num_nodes(), 0u);
}

TEST(TextIr, MangledTextParsesOrFailsCleanly) {
  // Deterministic mutations of a valid graph: every result is a graph or a tern::Error naming a
  // position, never a crash (run under ASan/UBSan in CI).
  const std::string valid = R"(graph @g {
  %x = input() {dtype=f32, name="x", shape=[2, 3]} : f32[2, 3]
  %c = constant() {value=tensor<f32[3]>[0.5, -1e-07, inf]}
  %s = split(%x) {axis=1, sizes=[1, 2]} : (f32[2, 1], f32[2, 2])
  %a = add(%x, %c) after(%s)
  %f = fused_elementwise(%a) {opcodes=[0, 34], operands=[-1, -1, 0, 1], immediates=[2.5, 0]}
  return {"f": %f, "s": %s#1}
})";
  const std::string alphabet = "%#@(){}[]<>,=:\"-0123456789.e aftx\n\\";
  PhiloxStream rng(2024);
  auto pick = [&](size_t n) {
    return static_cast<size_t>(rng.next_double() * static_cast<double>(n));
  };
  int parsed = 0, rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = valid;
    int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits; ++e) {
      size_t at = pick(text.size());
      switch (pick(3)) {
        case 0:
          text.erase(at, 1 + pick(4));
          break;
        case 1:
          text.insert(at, 1, alphabet[pick(alphabet.size())]);
          break;
        default:
          text[at] = alphabet[pick(alphabet.size())];
      }
    }
    try {
      parse_graph(text);
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_EQ(std::string(e.what()).find("InvalidArgument: <ir>:"), 0u) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 2000);
  EXPECT_GT(parsed, 0);
}

TEST(TextIr, TensorLiteralsCannotClaimMoreThanTheyHold) {
  EXPECT_TERN_ERROR(
      parse_graph("graph @g {\n  %c = constant() {value=tensor<f32[1000000000000]>[1]}\n"
                  "  return {}\n}"),
      ErrorCode::kInvalidArgument, "needs 1000000000000 values, got 1");
}

}  // namespace
}  // namespace tern::ir
