// Text IR lexer.
#include "tern/ir/text_lexer.h"

namespace tern::ir {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
bool is_name_char(char c) {
  return is_ident_char(c) || c == '.' || c == '/' || c == '-';
}
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view token_kind_name(TokenKind kind) {
  switch (kind) {
    case TokenKind::kEnd:
      return "end of input";
    case TokenKind::kValueName:
      return "value name";
    case TokenKind::kGraphName:
      return "graph name";
    case TokenKind::kIdent:
      return "identifier";
    case TokenKind::kInt:
      return "integer";
    case TokenKind::kFloat:
      return "float";
    case TokenKind::kString:
      return "string";
    case TokenKind::kPunct:
      return "punctuation";
  }
  return "?";
}

char TextLexer::advance() {
  char c = text_[pos_++];
  if (c == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  return c;
}

void TextLexer::skip_space_and_comments() {
  while (pos_ < text_.size()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance();
    } else if (c == '/' && peek(1) == '/') {
      while (pos_ < text_.size() && peek() != '\n') advance();
    } else {
      return;
    }
  }
}

std::string TextLexer::read_quoted(int line, int column) {
  advance();  // opening quote
  std::string out;
  while (true) {
    if (pos_ >= text_.size()) fail_at(line, column, "unterminated string");
    char c = advance();
    if (c == '"') return out;
    if (c == '\n') fail_at(line, column, "unterminated string (newline inside quotes)");
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= text_.size()) fail_at(line, column, "unterminated string");
    int esc_line = line_, esc_col = column_ - 1;
    char e = advance();
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'x': {
        int hi = hex_value(peek()), lo = hex_value(peek(1));
        if (hi < 0 || lo < 0) fail_at(esc_line, esc_col, "\\x needs two hex digits");
        advance();
        advance();
        out += static_cast<char>(hi * 16 + lo);
        break;
      }
      default:
        fail_at(esc_line, esc_col, "unknown escape '\\", e, "'");
    }
  }
}

std::string TextLexer::read_name(int line, int column, char sigil) {
  advance();  // sigil
  if (peek() == '"') {
    std::string name = read_quoted(line, column);
    if (name.empty()) fail_at(line, column, "empty name after '", sigil, "'");
    return name;
  }
  std::string name;
  while (is_name_char(peek())) name += advance();
  if (name.empty()) fail_at(line, column, "expected a name after '", sigil, "'");
  return name;
}

Token TextLexer::read_number(Token t) {
  if (peek() == '-') t.text += advance();
  if (peek() == 'i') {  // -inf
    while (is_ident_char(peek())) t.text += advance();
    if (t.text != "-inf") fail_at(t.line, t.column, "bad number '", t.text, "'");
    t.kind = TokenKind::kFloat;
    return t;
  }
  if (!is_digit(peek())) fail_at(t.line, t.column, "expected a digit after '-'");
  t.kind = TokenKind::kInt;
  while (is_digit(peek())) t.text += advance();
  if (peek() == '.') {
    t.kind = TokenKind::kFloat;
    t.text += advance();
    while (is_digit(peek())) t.text += advance();
  }
  if (peek() == 'e' || peek() == 'E') {
    t.kind = TokenKind::kFloat;
    t.text += advance();
    if (peek() == '+' || peek() == '-') t.text += advance();
    if (!is_digit(peek())) fail_at(t.line, t.column, "bad exponent in '", t.text, "'");
    while (is_digit(peek())) t.text += advance();
  }
  if (is_ident_char(peek()))
    fail_at(line_, column_, "unexpected '", peek(), "' after number ", t.text);
  return t;
}

Token TextLexer::next() {
  skip_space_and_comments();
  Token t;
  t.line = line_;
  t.column = column_;
  if (pos_ >= text_.size()) return t;
  char c = peek();
  if (c == '%' || c == '@') {
    t.kind = c == '%' ? TokenKind::kValueName : TokenKind::kGraphName;
    t.text = read_name(t.line, t.column, c);
    return t;
  }
  if (c == '"') {
    t.kind = TokenKind::kString;
    t.text = read_quoted(t.line, t.column);
    return t;
  }
  if (is_digit(c) || c == '-') return read_number(t);
  if (is_ident_start(c)) {
    t.kind = TokenKind::kIdent;
    while (is_ident_char(peek())) t.text += advance();
    return t;
  }
  if (std::string_view("(){}[]<>,=:#").find(c) != std::string_view::npos) {
    t.kind = TokenKind::kPunct;
    t.text = std::string(1, advance());
    return t;
  }
  fail_at(t.line, t.column, "unexpected character '", c, "'");
}

}  // namespace tern::ir
