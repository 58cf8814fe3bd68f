// Helpers for tern/format's tests: bytes from hex text, and the message of an expected DataLoss.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "tern/base/error.h"

namespace tern::format::testing {

// "0a 0c 0a" -> the bytes 0x0a 0x0c 0x0a (spaces ignored).
inline std::string unhex(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (c != ' ') digits += c;
  }
  std::string out;
  for (size_t i = 0; i + 1 < digits.size(); i += 2)
    out += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  return out;
}

// Runs `fn`, which must throw a DataLoss; returns its message (a test failure and "" otherwise).
template <typename Fn>
std::string data_loss(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "expected a DataLoss";
  return "";
}

}  // namespace tern::format::testing
