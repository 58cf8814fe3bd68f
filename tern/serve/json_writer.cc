// TF Serving's number formatting and a comma-placing JSON writer.
#include "tern/serve/json_writer.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "tern/serve/base64.h"

namespace tern::serve {
namespace {

template <typename T>
void append_decimal(std::string& out, T v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-Infinity" : "Infinity";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, 6);
  T back{};
  std::from_chars(buf, r.ptr, back);
  if (back != v) {
    r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general,
                      std::numeric_limits<T>::max_digits10);
  }
  std::string_view text(buf, static_cast<size_t>(r.ptr - buf));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

}  // namespace

void append_float(std::string& out, float v) {
  append_decimal(out, v);
}
void append_double(std::string& out, double v) {
  append_decimal(out, v);
}

std::string format_float(float v) {
  std::string s;
  append_float(s, v);
  return s;
}

std::string format_double(double v) {
  std::string s;
  append_double(s, v);
  return s;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t run = 0;  // start of the pending run of bytes that need no escape
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
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
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void JsonWriter::value_prefix() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

void JsonWriter::open(char c) {
  value_prefix();
  out_ += c;
  first_.push_back(true);
}

void JsonWriter::close(char c) {
  first_.pop_back();
  out_ += c;
}

void JsonWriter::key(std::string_view k) {
  value_prefix();
  append_json_string(out_, k);
  out_ += ':';
  after_key_ = true;
}

void JsonWriter::string(std::string_view s) {
  value_prefix();
  append_json_string(out_, s);
}

void JsonWriter::float_value(float v) {
  value_prefix();
  append_float(out_, v);
}

void JsonWriter::double_value(double v) {
  value_prefix();
  append_double(out_, v);
}

void JsonWriter::int_value(int64_t v) {
  value_prefix();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out_.append(buf, r.ptr);
}

void JsonWriter::uint_value(uint64_t v) {
  value_prefix();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out_.append(buf, r.ptr);
}

void JsonWriter::bool_value(bool v) {
  value_prefix();
  out_ += v ? "true" : "false";
}

void JsonWriter::bytes_value(std::string_view bytes) {
  begin_object();
  key("b64");
  string(base64_encode(bytes));
  end_object();
}

}  // namespace tern::serve
