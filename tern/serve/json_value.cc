// The tape parser behind JsonDocument: recursive descent bounded by kMaxDepth, one node per value.
#include "tern/serve/json_value.h"

#include <algorithm>
#include <limits>

#include "tern/base/error.h"

namespace tern::serve {

std::string_view json_type_name(JsonType t) {
  switch (t) {
    case JsonType::kNull:
      return "Null";
    case JsonType::kFalse:
      return "False";
    case JsonType::kTrue:
      return "True";
    case JsonType::kNumber:
      return "Number";
    case JsonType::kString:
      return "String";
    case JsonType::kArray:
      return "Array";
    case JsonType::kObject:
      return "Object";
  }
  return "Null";
}

class JsonParser {
 public:
  JsonParser(std::string_view s, JsonDocument& doc) : s_(s), doc_(doc) {}

  void parse_document() {
    skip_ws();
    if (pos_ >= s_.size()) fail_at("The document is empty", pos_);
    parse_value(0);
  }

 private:
  [[noreturn]] void fail_at(std::string_view what, size_t offset) {
    throw_error(ErrorCode::kInvalidArgument, "JSON Parse error: ", what, " at offset: ", offset);
  }
  [[noreturn]] void fail(std::string_view what) { fail_at(what, pos_); }

  void skip_ws() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }
  bool consume(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  uint32_t push(JsonType type) {
    JsonNode n;
    n.type = type;
    n.begin = static_cast<uint32_t>(pos_);
    doc_.nodes_.push_back(n);
    return static_cast<uint32_t>(doc_.nodes_.size() - 1);
  }
  void finish(uint32_t i) {
    doc_.nodes_[i].end = static_cast<uint32_t>(pos_);
    doc_.nodes_[i].next = static_cast<uint32_t>(doc_.nodes_.size());
  }

  void parse_value(int depth) {
    if (pos_ >= s_.size()) fail("Invalid value.");
    switch (s_[pos_]) {
      case '{':
        return parse_object(depth);
      case '[':
        return parse_array(depth);
      case '"': {
        uint32_t i = push(JsonType::kString);
        parse_string(i);
        return finish(i);
      }
      case 't':
      case 'f':
      case 'n': {
        JsonType t = s_[pos_] == 't'   ? JsonType::kTrue
                     : s_[pos_] == 'f' ? JsonType::kFalse
                                       : JsonType::kNull;
        uint32_t i = push(t);
        if (!consume(t == JsonType::kTrue ? "true" : t == JsonType::kFalse ? "false" : "null")) {
          fail("Invalid value.");
        }
        return finish(i);
      }
      default:
        return parse_number();
    }
  }

  void parse_object(int depth) {
    if (depth >= JsonDocument::kMaxDepth) fail("Nesting deeper than 512 levels.");
    uint32_t i = push(JsonType::kObject);
    ++pos_;
    skip_ws();
    uint32_t count = 0;
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
    } else {
      while (true) {
        if (pos_ >= s_.size() || s_[pos_] != '"') fail("Missing a name for object member.");
        uint32_t k = push(JsonType::kString);
        parse_string(k);
        finish(k);
        skip_ws();
        if (pos_ >= s_.size() || s_[pos_] != ':')
          fail("Missing a colon after a name of object member.");
        ++pos_;
        skip_ws();
        parse_value(depth + 1);
        ++count;
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          skip_ws();
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == '}') {
          ++pos_;
          break;
        }
        fail("Missing a comma or '}' after an object member.");
      }
    }
    doc_.nodes_[i].size = count;
    finish(i);
  }

  void parse_array(int depth) {
    if (depth >= JsonDocument::kMaxDepth) fail("Nesting deeper than 512 levels.");
    uint32_t i = push(JsonType::kArray);
    ++pos_;
    skip_ws();
    uint32_t count = 0;
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
    } else {
      while (true) {
        parse_value(depth + 1);
        ++count;
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          skip_ws();
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == ']') {
          ++pos_;
          break;
        }
        fail("Missing a comma or ']' after an array element.");
      }
    }
    doc_.nodes_[i].size = count;
    finish(i);
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  // JSON numbers plus NaN / Inf / Infinity with an optional sign (rapidjson's NanAndInf flag).
  void parse_number() {
    uint32_t i = push(JsonType::kNumber);
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (consume("NaN") || consume("Infinity") || consume("Inf")) {
      return finish(i);
    }
    if (pos_ >= s_.size() || !is_digit(s_[pos_])) fail_at("Invalid value.", start);
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (pos_ >= s_.size() || !is_digit(s_[pos_])) fail("Missing fraction part in number.");
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !is_digit(s_[pos_])) fail("Missing exponent in number.");
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    finish(i);
  }

  int hex4() {
    if (pos_ + 4 > s_.size()) fail("Incorrect hex digit after \\u escape in string.");
    int v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= c - '0';
      else if (c >= 'a' && c <= 'f')
        v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        v |= c - 'A' + 10;
      else
        fail_at("Incorrect hex digit after \\u escape in string.", pos_ - 1);
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // At the opening quote of node i's string; strings with escapes get an unescaped copy.
  void parse_string(uint32_t i) {
    size_t start = ++pos_;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c == '\\') break;
      if (static_cast<unsigned char>(c) < 0x20) fail("Invalid encoding in string.");
      ++pos_;
    }
    if (pos_ >= s_.size()) fail_at("Missing a closing quotation mark in string.", pos_);
    doc_.nodes_[i].escaped = true;
    doc_.nodes_[i].size = static_cast<uint32_t>(doc_.unescaped_.size());
    std::string& out = doc_.unescaped_.emplace_back(s_.substr(start, pos_ - start));
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("Invalid encoding in string.");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      if (++pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = static_cast<uint32_t>(hex4());
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!consume("\\u")) fail("The surrogate pair in string is invalid.");
            uint32_t lo = static_cast<uint32_t>(hex4());
            if (lo < 0xDC00 || lo > 0xDFFF) fail("The surrogate pair in string is invalid.");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("The surrogate pair in string is invalid.");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail_at("Invalid escape character in string.", pos_ - 1);
      }
    }
    fail_at("Missing a closing quotation mark in string.", pos_);
  }

  std::string_view s_;
  JsonDocument& doc_;
  size_t pos_ = 0;
};

JsonDocument JsonDocument::parse(std::string_view json) {
  TERN_CHECK_ARG(json.size() < std::numeric_limits<uint32_t>::max(),
                 "JSON Parse error: a document of ", json.size(), " bytes is over 4 GiB");
  JsonDocument doc;
  doc.source_ = json;
  doc.nodes_.reserve(std::min<size_t>(json.size() / 8 + 4, size_t{1} << 16));
  JsonParser(json, doc).parse_document();
  return doc;
}

std::string_view JsonDocument::text(uint32_t i) const {
  const JsonNode& n = nodes_[i];
  if (n.type == JsonType::kNumber) return source_.substr(n.begin, n.end - n.begin);
  if (n.type != JsonType::kString) return {};
  if (n.escaped) return unescaped_[n.size];
  return source_.substr(n.begin + 1, n.end - n.begin - 2);
}

std::optional<uint32_t> JsonDocument::find_member(uint32_t object, std::string_view key) const {
  uint32_t k = first_key(object);
  for (uint32_t m = 0; m < nodes_[object].size; ++m) {
    if (text(k) == key) return k + 1;
    k = nodes_[k + 1].next;
  }
  return std::nullopt;
}

std::string JsonDocument::excerpt(uint32_t i, size_t max_chars) const {
  const JsonNode& n = nodes_[i];
  std::string_view text = source_.substr(n.begin, n.end - n.begin);
  if (text.size() <= max_chars) return std::string(text);
  return std::string(text.substr(0, max_chars)) + "...";
}

bool JsonDocument::is_base64_object(uint32_t i) const {
  const JsonNode& n = nodes_[i];
  return n.type == JsonType::kObject && n.size == 1 && text(i + 1) == "b64" &&
         nodes_[i + 2].type == JsonType::kString;
}

}  // namespace tern::serve
