// Test helpers: seeded random tensors and an error-code matcher.
#pragma once

#include <gtest/gtest.h>

#include <cmath>

#include "tern/base/philox.h"
#include "tern/tensor/tensor.h"

namespace tern::testing {

// Uniform values in [lo, hi), converted to dtype (integers are rounded down).
inline Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed, double lo = -1.0,
                            double hi = 1.0) {
  Tensor t(dtype, shape);
  PhiloxStream rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = lo + (hi - lo) * rng.next_double();
    if (!is_floating(dtype)) v = std::floor(v);
    t.set(i, v);
  }
  return t;
}

}  // namespace tern::testing

// Expects `stmt` to throw tern::Error with `code` and a message containing `substr`.
#define EXPECT_TERN_ERROR(stmt, expected_code, substr)                              \
  do {                                                                              \
    try {                                                                           \
      stmt;                                                                         \
      ADD_FAILURE() << "expected tern::Error from " #stmt;                          \
    } catch (const ::tern::Error& e) {                                              \
      EXPECT_EQ(e.code(), expected_code) << e.what();                               \
      EXPECT_NE(std::string(e.what()).find(substr), std::string::npos) << e.what(); \
    }                                                                               \
  } while (0)
