// Tests for the oneDNN softmax kernels against ref: softmax, log_softmax and their gradients over
// inner, middle and outer axes, f32 and bf16.
#include <gtest/gtest.h>

#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

class OneDnnSoftmax : public OneDnnDTypeTest {
 protected:
  double tol() const { return GetParam() == DType::kF32 ? 1e-5 : 2e-2; }
};

TEST_P(OneDnnSoftmax, MatchesRef) {
  DType d = GetParam();
  uint64_t seed = 1;
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  struct Case {
    Shape shape;
    int64_t axis;
  };
  for (const Case& c : {Case{{7}, 0}, Case{{5, 1000}, -1}, Case{{3, 17, 4}, 1}, Case{{6, 2, 5}, 0},
                        Case{{64, 10}, 1}}) {
    SCOPED_TRACE(str_cat("shape ", c.shape, " axis ", c.axis));
    ops::Attrs attrs = {{"axis", c.axis}};
    Tensor x = random_tensor(d, c.shape, seed++, -4, 4);
    Tensor dy = random_tensor(d, c.shape, seed++);
    for (const char* op : {"softmax", "log_softmax"}) {
      expect_onednn_matches_ref(op, {x}, attrs, tol());
      Tensor y = runtime::eager_call1(op, {x}, attrs, ref);
      expect_onednn_matches_ref(str_cat(op, "_grad"), {dy, y}, attrs, tol());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnSoftmax, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(OneDnnSoftmaxSelect, Picked) {
  EXPECT_EQ(selected_kernel("softmax", {{DType::kF32, {4, 10}}}), "onednn");
  expect_onednn_picked_for_bf16("log_softmax_grad",
                                {{DType::kBF16, {4, 10}}, {DType::kBF16, {4, 10}}});
}

}  // namespace
}  // namespace tern::testing
