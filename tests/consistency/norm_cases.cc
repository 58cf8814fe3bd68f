// Consistency cases: batch norm (training, inference, grad) and layer norm (+ grad).
#include "tests/consistency/op_case.h"

namespace tern::testing {

TERN_OP_CASES(norm) {
  const ops::Attrs eps = {{"epsilon", 1e-2}};
  return {
      {"batch_norm_training", {In({6, 3}), In({3}, 0.5, 1.5), In({3})}},
      {"batch_norm_training",
       {In({2, 3, 2, 4}), In({4}, 0.5, 1.5), In({4})},
       eps,
       true,
       {},
       1e-5,
       "nhwc"},
      {"batch_norm_inference",
       {In({5, 3}), In({3}, 0.5, 1.5), In({3}), In({3}), In({3}, 0.5, 1.5)}},
      {"batch_norm_inference",
       {In({2, 2, 3, 4}), In({4}, 0.5, 1.5), In({4}), In({4}), In({4}, 0.5, 1.5)},
       eps,
       true,
       {},
       1e-5,
       "nhwc"},
      {"batch_norm_grad", {In({6, 3}), In({6, 3}), In({3}, 0.5, 1.5), In({3}), In({3}, 0.5, 1.5)}},
      {"layer_norm", {In({4, 5}), In({5}, 0.5, 1.5), In({5})}},
      {"layer_norm", {In({2, 3, 6}), In({6}, 0.5, 1.5), In({6})}, eps, true, {}, 1e-5, "3d"},
      {"layer_norm", {In({7}), In({7}, 0.5, 1.5), In({7})}, {}, true, {}, 1e-5, "rank1"},
      {"layer_norm_grad", {In({4, 5}), In({4, 5}), In({5}, 0.5, 1.5), In({4}), In({4}, 0.5, 2)}},
  };
}

}  // namespace tern::testing
