// Graph -> text (the format is described in printer.h).
#include "tern/ir/printer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tern/ir/analysis/topo_order.h"

namespace tern::ir {
namespace {

bool is_bare_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string name_token(char sigil, std::string_view name) {
  return is_bare_name(name) ? str_cat(sigil, name) : str_cat(sigil, quote(name));
}

// Shortest decimal that reads back (as F) to the same value; "inf", "-inf", "nan" for the rest.
// With `force_float`, integral values get a ".0" so they read as floats.
template <typename F>
std::string float_text(F v, bool force_float) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (force_float && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string tensor_text(const Tensor& t) {
  std::string out = str_cat("tensor<", t.type().to_string(), ">[");
  auto append = [&](int64_t i, const std::string& s) {
    if (i) out += ", ";
    out += s;
  };
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        append(i, p[i] ? "true" : "false");
      } else if constexpr (std::is_same_v<T, double>) {
        append(i, float_text(p[i], false));
      } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bfloat16> ||
                           std::is_same_v<T, float16>) {
        append(i, float_text(static_cast<float>(p[i]), false));
      } else {
        append(i, std::to_string(static_cast<int64_t>(p[i])));
      }
    }
  });
  return out + "]";
}

std::string types_text(const Node& n) {
  if (n.num_outputs() == 1) return n.output(0)->type().to_string();
  std::string out = "(";
  for (int i = 0; i < n.num_outputs(); ++i)
    out += str_cat(i ? ", " : "", n.output(i)->type().to_string());
  return out + ")";
}

}  // namespace

std::string print_value_ref(const Value& v) {
  std::string s = name_token('%', v.node()->name());
  return v.index() == 0 ? s : str_cat(s, "#", v.index());
}

std::string print_attr_value(const ops::AttrValue& value) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return float_text(x, true);
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quote(x);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          std::string s = "[";
          for (size_t i = 0; i < x.size(); ++i) s += str_cat(i ? ", " : "", x[i]);
          return s + "]";
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          std::string s = "[";
          for (size_t i = 0; i < x.size(); ++i) s += str_cat(i ? ", " : "", float_text(x[i], true));
          return s + "]";
        } else if constexpr (std::is_same_v<T, DType>) {
          return std::string(dtype_name(x));
        } else {
          return tensor_text(x);
        }
      },
      value);
}

std::string print_node(const Node& n) {
  std::string out = str_cat(name_token('%', n.name()), " = ", n.op_name(), "(");
  for (int i = 0; i < n.num_inputs(); ++i)
    out += str_cat(i ? ", " : "", print_value_ref(*n.input(i)));
  out += ")";
  if (!n.control_inputs().empty()) {
    out += " after(";
    for (size_t i = 0; i < n.control_inputs().size(); ++i) {
      out += str_cat(i ? ", " : "", name_token('%', n.control_inputs()[i]->name()));
    }
    out += ")";
  }
  if (!n.attrs().items().empty()) {
    out += " {";
    bool first = true;
    for (const auto& [name, value] : n.attrs().items()) {
      out += str_cat(first ? "" : ", ", name, "=", print_attr_value(value));
      first = false;
    }
    out += "}";
  }
  return str_cat(out, " : ", types_text(n));
}

std::string print_graph(const Graph& g) {
  std::string out = str_cat("graph ", name_token('@', g.name()), " {\n");
  for (Node* n : topo_order(g)) out += str_cat("  ", print_node(*n), "\n");
  out += "  return {";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const GraphOutput& o = g.outputs()[i];
    out += str_cat(i ? ", " : "", quote(o.name), ": ", print_value_ref(*o.value));
  }
  return out + "}\n}\n";
}

}  // namespace tern::ir
