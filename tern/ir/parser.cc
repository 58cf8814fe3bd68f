// Text IR parser: recursive descent over TextLexer tokens, building the graph as it goes.
#include "tern/ir/parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "tern/ir/text_lexer.h"
#include "tern/ops/registry.h"

namespace tern::ir {
namespace {

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : lex_(text, source) {
    tok_ = lex_.next();
  }

  std::unique_ptr<Graph> parse() {
    expect_ident("graph");
    if (tok_.kind != TokenKind::kGraphName) fail("expected a graph name like @main");
    auto g = std::make_unique<Graph>(take().text);
    g_ = g.get();
    expect("{");
    while (!(tok_.kind == TokenKind::kIdent && tok_.text == "return")) parse_node();
    take();
    parse_outputs();
    expect("}");
    if (tok_.kind != TokenKind::kEnd) fail("unexpected ", describe(tok_), " after the graph");
    return g;
  }

 private:
  // --- tokens ---

  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    lex_.fail_at(tok_.line, tok_.column, args...);
  }
  template <typename... Args>
  [[noreturn]] void fail_at(const Token& t, const Args&... args) const {
    lex_.fail_at(t.line, t.column, args...);
  }
  static std::string describe(const Token& t) {
    if (t.kind == TokenKind::kEnd) return "end of input";
    return str_cat(token_kind_name(t.kind), " '", t.text, "'");
  }
  Token take() {
    Token t = std::move(tok_);
    tok_ = lex_.next();
    return t;
  }
  bool is(std::string_view punct) const {
    return tok_.kind == TokenKind::kPunct && tok_.text == punct;
  }
  bool accept(std::string_view punct) {
    if (!is(punct)) return false;
    take();
    return true;
  }
  void expect(std::string_view punct) {
    if (!accept(punct)) fail("expected '", punct, "', got ", describe(tok_));
  }
  void expect_ident(std::string_view word) {
    if (tok_.kind != TokenKind::kIdent || tok_.text != word)
      fail("expected '", word, "', got ", describe(tok_));
    take();
  }
  Token expect_kind(TokenKind kind, std::string_view what) {
    if (tok_.kind != kind) fail("expected ", what, ", got ", describe(tok_));
    return take();
  }

  // --- numbers ---

  int64_t int_value(const Token& t) {
    if (t.kind != TokenKind::kInt) fail_at(t, "expected an integer, got ", describe(t));
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size())
      fail_at(t, "integer out of range: ", t.text);
    return v;
  }
  // Any number token (or inf / nan / -inf) as F.
  template <typename F>
  F float_value(const Token& t) {
    if (t.kind == TokenKind::kIdent && t.text == "inf") return std::numeric_limits<F>::infinity();
    if (t.kind == TokenKind::kIdent && t.text == "nan") return std::numeric_limits<F>::quiet_NaN();
    if (t.kind == TokenKind::kFloat && t.text == "-inf") return -std::numeric_limits<F>::infinity();
    if (t.kind != TokenKind::kInt && t.kind != TokenKind::kFloat)
      fail_at(t, "expected a number, got ", describe(t));
    F v{};
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec == std::errc::result_out_of_range) fail_at(t, "number out of range: ", t.text);
    if (ec != std::errc() || p != t.text.data() + t.text.size()) fail_at(t, "bad number: ", t.text);
    return v;
  }

  // --- types ---

  TensorType parse_type() {
    Token d = expect_kind(TokenKind::kIdent, "a dtype like f32");
    TensorType t;
    try {
      t.dtype = parse_dtype(d.text);
    } catch (const Error& e) {
      fail_at(d, e.message());
    }
    expect("[");
    std::vector<int64_t> dims;
    if (!is("]")) {
      do {
        Token n = take();
        int64_t v = int_value(n);
        if (v < 0) fail_at(n, "negative dimension ", v);
        dims.push_back(v);
      } while (accept(","));
    }
    expect("]");
    try {
      t.shape = Shape(dims);
    } catch (const Error& e) {
      fail_at(d, e.message());
    }
    return t;
  }

  std::vector<TensorType> parse_types() {
    if (!accept("(")) return {parse_type()};
    std::vector<TensorType> out;
    if (!is(")")) {
      do {
        out.push_back(parse_type());
      } while (accept(","));
    }
    expect(")");
    return out;
  }

  // --- attribute values ---

  // The values are collected before the tensor is allocated, so a literal can never claim more
  // memory than its text spells out.
  Tensor parse_tensor() {
    expect_ident("tensor");
    expect("<");
    Token at = tok_;
    TensorType type = parse_type();
    expect(">");
    expect("[");
    int64_t want = type.shape.num_elements();
    std::vector<Token> values;
    if (!is("]")) {
      do {
        values.push_back(take());
        if (static_cast<int64_t>(values.size()) > want) {
          fail_at(values.back(), "tensor<", type.to_string(), "> has only ", want, " elements");
        }
      } while (accept(","));
    }
    expect("]");
    if (static_cast<int64_t>(values.size()) != want) {
      fail_at(at, "tensor<", type.to_string(), "> needs ", want, " values, got ", values.size());
    }
    Tensor t(type.dtype, type.shape);
    for (size_t i = 0; i < values.size(); ++i) set_element(t, static_cast<int64_t>(i), values[i]);
    return t;
  }

  void set_element(Tensor& t, int64_t i, const Token& v) {
    dispatch_dtype(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* p = t.data<T>();
      if constexpr (std::is_same_v<T, bool>) {
        if (v.kind != TokenKind::kIdent || (v.text != "true" && v.text != "false")) {
          fail_at(v, "expected true or false, got ", describe(v));
        }
        p[i] = v.text == "true";
      } else if constexpr (std::is_same_v<T, double>) {
        p[i] = float_value<double>(v);
      } else if constexpr (std::is_same_v<T, float>) {
        p[i] = float_value<float>(v);
      } else if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
        p[i] = T(float_value<float>(v));
      } else {
        int64_t x = int_value(v);
        if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
            x > static_cast<int64_t>(std::numeric_limits<T>::max())) {
          fail_at(v, x, " does not fit in ", dtype_name(t.dtype()));
        }
        p[i] = static_cast<T>(x);
      }
    });
  }

  template <typename F>
  std::vector<F> parse_list(F (Parser::*element)(const Token&)) {
    expect("[");
    std::vector<F> out;
    if (!is("]")) {
      do {
        out.push_back((this->*element)(take()));
      } while (accept(","));
    }
    expect("]");
    return out;
  }
  double double_value(const Token& t) { return float_value<double>(t); }

  ops::AttrValue parse_attr_value(ops::AttrKind kind) {
    switch (kind) {
      case ops::AttrKind::kInt:
        return int_value(take());
      case ops::AttrKind::kFloat:
        return float_value<double>(take());
      case ops::AttrKind::kBool: {
        Token t = take();
        if (t.kind != TokenKind::kIdent || (t.text != "true" && t.text != "false")) {
          fail_at(t, "expected true or false, got ", describe(t));
        }
        return t.text == "true";
      }
      case ops::AttrKind::kString:
        return expect_kind(TokenKind::kString, "a string").text;
      case ops::AttrKind::kInts:
        return parse_list<int64_t>(&Parser::int_value);
      case ops::AttrKind::kFloats:
        return parse_list<double>(&Parser::double_value);
      case ops::AttrKind::kDType: {
        Token t = expect_kind(TokenKind::kIdent, "a dtype like f32");
        try {
          return parse_dtype(t.text);
        } catch (const Error& e) {
          fail_at(t, e.message());
        }
      }
      case ops::AttrKind::kTensor:
        return parse_tensor();
    }
    fail("bad attribute kind");
  }

  ops::Attrs parse_attrs(const ops::OpDef& op) {
    ops::Attrs attrs;
    if (!accept("{")) return attrs;
    if (accept("}")) return attrs;
    do {
      Token name = expect_kind(TokenKind::kIdent, "an attribute name");
      const ops::AttrSpec* spec = op.find_attr(name.text);
      if (!spec) {
        std::string known;
        for (const auto& a : op.attrs) known += str_cat(known.empty() ? "" : ", ", a.name);
        fail_at(name, "op '", op.name, "' has no attribute '", name.text,
                "' (attributes: ", known.empty() ? "none" : known, ")");
      }
      if (attrs.has(name.text)) fail_at(name, "attribute '", name.text, "' given twice");
      expect("=");
      attrs.set(name.text, parse_attr_value(spec->kind));
    } while (accept(","));
    expect("}");
    return attrs;
  }

  // --- nodes and values ---

  Node* lookup_node(const Token& t) {
    Node* n = g_->find_node(t.text);
    if (!n) fail_at(t, "undefined value %", t.text);
    return n;
  }

  Value* parse_value_ref() {
    Token t = expect_kind(TokenKind::kValueName, "a value like %x");
    Node* n = lookup_node(t);
    int64_t index = 0;
    if (accept("#")) index = int_value(take());
    if (index < 0 || index >= n->num_outputs()) {
      fail_at(t, "%", t.text, " has ", n->num_outputs(), " outputs; #", index, " does not exist");
    }
    return n->output(static_cast<int>(index));
  }

  void parse_node() {
    Token name =
        expect_kind(TokenKind::kValueName, "a node definition like %y = op(...) or 'return'");
    if (g_->find_node(name.text)) fail_at(name, "%", name.text, " is defined twice");
    expect("=");
    Token op_tok = expect_kind(TokenKind::kIdent, "an op name");
    const ops::OpDef* op = ops::OpRegistry::global().find(op_tok.text);
    if (!op) {
      try {
        ops::OpRegistry::global().get(op_tok.text);
      } catch (const Error& e) {
        fail_at(op_tok, e.message());
      }
      fail_at(op_tok, "unknown op '", op_tok.text, "'");
    }
    expect("(");
    std::vector<Value*> inputs;
    if (!is(")")) {
      do {
        inputs.push_back(parse_value_ref());
      } while (accept(","));
    }
    expect(")");
    std::vector<Node*> controls;
    if (tok_.kind == TokenKind::kIdent && tok_.text == "after") {
      take();
      expect("(");
      do {
        controls.push_back(lookup_node(expect_kind(TokenKind::kValueName, "a node like %n")));
      } while (accept(","));
      expect(")");
    }
    ops::Attrs attrs = parse_attrs(*op);
    Token type_at = tok_;
    std::vector<TensorType> declared;
    bool has_types = accept(":");
    if (has_types) {
      type_at = tok_;
      declared = parse_types();
    }
    Node* n = nullptr;
    try {
      n = g_->add_node(op_tok.text, std::move(inputs), std::move(attrs), name.text);
    } catch (const Error& e) {
      fail_at(name, e.message());
    }
    for (Node* c : controls) n->add_control_input(c);
    if (has_types) check_types(*n, declared, type_at);
  }

  void check_types(const Node& n, const std::vector<TensorType>& declared, const Token& at) {
    auto text = [](const std::vector<TensorType>& ts) {
      std::string s;
      for (size_t i = 0; i < ts.size(); ++i) s += str_cat(i ? ", " : "", ts[i].to_string());
      return ts.size() == 1 ? s : str_cat("(", s, ")");
    };
    std::vector<TensorType> inferred;
    for (int i = 0; i < n.num_outputs(); ++i) inferred.push_back(n.output(i)->type());
    if (declared != inferred) {
      fail_at(at, "%", n.name(), " is declared ", text(declared), " but ", n.op_name(), " infers ",
              text(inferred));
    }
  }

  void parse_outputs() {
    expect("{");
    std::unordered_set<std::string> names;
    if (!is("}")) {
      do {
        Token name = expect_kind(TokenKind::kString, "an output name string");
        if (!names.insert(name.text).second)
          fail_at(name, "output \"", name.text, "\" returned twice");
        expect(":");
        g_->add_output(name.text, parse_value_ref());
      } while (accept(","));
    }
    expect("}");
  }

  TextLexer lex_;
  Token tok_;
  Graph* g_ = nullptr;
};

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text, std::string_view source) {
  return Parser(text, source).parse();
}

}  // namespace tern::ir
