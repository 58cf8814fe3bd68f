// Checked 64-bit integer arithmetic for sizes that come from input (shapes, file headers).
#pragma once

#include <cstdint>
#include <string_view>

#include "tern/base/error.h"

namespace tern {

// a * b, or InvalidArgument naming `what` on overflow or a negative operand.
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what = "size") {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) {
    throw_error(ErrorCode::kInvalidArgument, what, ": ", a, " * ", b, " overflows int64");
  }
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what = "size") {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) {
    throw_error(ErrorCode::kInvalidArgument, what, ": ", a, " + ", b, " overflows int64");
  }
  return r;
}

}  // namespace tern
