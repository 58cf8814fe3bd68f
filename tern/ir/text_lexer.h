// Tokens of the text IR (see printer.h), with line and column for error messages.
#pragma once

#include <string>
#include <string_view>

#include "tern/base/error.h"

namespace tern::ir {

enum class TokenKind {
  kEnd,
  kValueName,  // %name or %"quoted"; text holds the name
  kGraphName,  // @name or @"quoted"
  kIdent,      // [A-Za-z_][A-Za-z0-9_]*
  kInt,        // -?[0-9]+
  kFloat,      // -?[0-9]+ with '.' or exponent, or -inf
  kString,     // "..." with C escapes decoded
  kPunct,      // one of ( ) { } [ ] < > , = : #
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int line = 1;
  int column = 1;
};

std::string_view token_kind_name(TokenKind kind);

class TextLexer {
 public:
  TextLexer(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  // The next token (kEnd at the end); skips whitespace and // comments.
  Token next();

  // InvalidArgument "<source>:<line>:<column>: <message>".
  template <typename... Args>
  [[noreturn]] void fail_at(int line, int column, const Args&... args) const {
    throw_error(ErrorCode::kInvalidArgument, source_, ":", line, ":", column, ": ", args...);
  }

 private:
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  char advance();
  void skip_space_and_comments();
  std::string read_quoted(int line, int column);
  std::string read_name(int line, int column, char sigil);
  Token read_number(Token t);

  std::string_view text_;
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace tern::ir
