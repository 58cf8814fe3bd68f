// A JSON document as TF Serving's REST API reads it: RFC 8259 plus the bare tokens NaN, Inf,
// Infinity (optionally signed), parsing stops after the root value (trailing bytes are ignored,
// like rapidjson's kParseStopWhenDoneFlag). The document is a flat tape of nodes in document order
// (an array's items follow it, an object's keys and values alternate after it; `next` skips a
// whole subtree), so a 50k-number tensor is one allocation, not 50k. Numbers keep their token
// text: the signature's dtype decides how a number is read (json_tensor.h), never the parser.
//
// Does not: validate UTF-8 in strings (bytes pass through, as in TF Serving), keep more than the
// first of duplicate keys visible to find_member.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tern::serve {

enum class JsonType : uint8_t { kNull, kFalse, kTrue, kNumber, kString, kArray, kObject };

// "Null", "False", "True", "Number", "String", "Array", "Object" (rapidjson's type names, used in
// TF Serving's messages).
std::string_view json_type_name(JsonType t);

// 20 bytes: a 64 MiB body of single-digit numbers costs at most ~640 MiB of nodes.
struct JsonNode {
  JsonType type = JsonType::kNull;
  bool escaped = false;  // string with escapes: `size` indexes the unescaped copies
  uint32_t size = 0;     // array: items; object: members
  uint32_t next = 0;     // index of the first node after this value's subtree
  uint32_t begin = 0;    // byte offset of the value in the document
  uint32_t end = 0;      // byte offset one past the value
};

class JsonDocument {
 public:
  // Nesting deeper than this is an InvalidArgument (bounds the parser's recursion).
  static constexpr int kMaxDepth = 512;

  // InvalidArgument "JSON Parse error: <what> at offset: N" for malformed input; the document is
  // empty -> "JSON Parse error: The document is empty". Keeps a view of `json`: it must outlive
  // the document.
  static JsonDocument parse(std::string_view json);

  uint32_t root() const { return 0; }
  const JsonNode& node(uint32_t i) const { return nodes_[i]; }
  JsonType type(uint32_t i) const { return nodes_[i].type; }
  // number: the token ("-1.5e3", "NaN"); string: the unescaped bytes; "" otherwise.
  std::string_view text(uint32_t i) const;
  size_t num_nodes() const { return nodes_.size(); }

  // Items of an array: first item (valid only if size > 0), then next(i).
  uint32_t first_item(uint32_t array) const { return array + 1; }
  uint32_t next(uint32_t i) const { return nodes_[i].next; }
  // Members of an object: key node, its value at key + 1, the next key at next(key + 1).
  uint32_t first_key(uint32_t object) const { return object + 1; }
  // The value of the first member named `key`, if any.
  std::optional<uint32_t> find_member(uint32_t object, std::string_view key) const;
  // The value as written in the document, cut to `max_chars` with "..." (for error messages).
  std::string excerpt(uint32_t i, size_t max_chars = 64) const;

  // {"b64": "<string>"}: an object with exactly one key b64 whose value is a string.
  bool is_base64_object(uint32_t i) const;

 private:
  friend class JsonParser;
  std::string_view source_;
  std::vector<JsonNode> nodes_;
  std::deque<std::string> unescaped_;  // storage for strings that had escapes
};

}  // namespace tern::serve
