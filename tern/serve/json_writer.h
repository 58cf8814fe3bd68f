// Writing TF Serving's JSON by hand: an append-only writer that places commas, escapes strings,
// and writes floats the way TF Serving's WriteDecimal does (SERVING.md section 1.3):
//   1. %g with 6 significant digits;
//   2. if that text does not read back as the same float (double), %.9g (%.17g);
//   3. ".0" appended to a whole number not in exponent form (3 -> 3.0, 9e+06 stays);
//   4. NaN, Infinity, -Infinity as bare tokens (not RFC 8259 JSON; TF Serving's documented choice).
// Output is compact (whitespace is not part of the contract).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::serve {

// One number as TF Serving writes it.
std::string format_float(float v);
std::string format_double(double v);
// Appends to `out` without a temporary.
void append_float(std::string& out, float v);
void append_double(std::string& out, double v);
// Appends `s` as a quoted JSON string (", \ and control characters escaped; other bytes as is).
void append_json_string(std::string& out, std::string_view s);

class JsonWriter {
 public:
  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  // The next value is this member's.
  void key(std::string_view k);
  void string(std::string_view s);
  void float_value(float v);
  void double_value(double v);
  void int_value(int64_t v);
  void uint_value(uint64_t v);
  void bool_value(bool v);
  // {"b64": "<base64 of bytes>"}
  void bytes_value(std::string_view bytes);

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void value_prefix();
  void open(char c);
  void close(char c);

  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace tern::serve
