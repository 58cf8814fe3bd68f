// Consistency cases: matmul.
#include "tests/consistency/op_case.h"

namespace tern::testing {

TERN_OP_CASES(matmul) {
  return {
      {"matmul", {In({3, 4}), In({4, 5})}},
      {"matmul", {In({4, 3}), In({4, 5})}, {{"transpose_a", true}}, true, {}, 1e-5, "ta"},
      {"matmul", {In({3, 4}), In({5, 4})}, {{"transpose_b", true}}, true, {}, 1e-5, "tb"},
      {"matmul",
       {In({2, 4, 3}), In({5, 4})},
       {{"transpose_a", true}, {"transpose_b", true}},
       true,
       {},
       1e-5,
       "batched-broadcast"},
      {"matmul", {In({2, 1, 3, 4}), In({3, 4, 2})}, {}, true, {}, 1e-5, "batch-broadcast-both"},
  };
}

}  // namespace tern::testing
