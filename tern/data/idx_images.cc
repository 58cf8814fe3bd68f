// IDX images and labels as f32 / i64 model inputs.
#include "tern/data/idx_images.h"

#include "tern/base/error.h"

namespace tern::data {

Tensor idx_images_to_f32(const Tensor& raw, const std::string& what) {
  TERN_CHECK_ARG(raw.rank() == 3 || raw.rank() == 4, "image file '", what, "' has shape ",
                 raw.shape(), "; expected [N, H, W] or [N, H, W, C]");
  Tensor f = raw.cast(DType::kF32);
  float* p = f.data<float>();
  const float scale = raw.dtype() == DType::kU8 ? 1.0f / 255.0f : 1.0f;
  for (int64_t i = 0; i < f.num_elements(); ++i) p[i] *= scale;
  if (raw.rank() == 3) return f.reshape({raw.shape()[0], raw.shape()[1], raw.shape()[2], 1});
  return f;
}

Tensor idx_labels_to_i64(const Tensor& raw, int64_t num_classes, const std::string& what) {
  TERN_CHECK_ARG(raw.rank() == 1, "label file '", what, "' has shape ", raw.shape(),
                 "; expected [N]");
  TERN_CHECK_ARG(is_integer(raw.dtype()), "label file '", what, "' holds ", dtype_name(raw.dtype()),
                 ", not integers");
  Tensor y = raw.cast(DType::kI64);
  const int64_t* p = y.data<int64_t>();
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    if (p[i] < 0 || p[i] >= num_classes) {
      throw_error(ErrorCode::kInvalidArgument, "label file '", what, "': label ", p[i],
                  " at index ", i, " is outside [0, ", num_classes, ")");
    }
  }
  return y;
}

}  // namespace tern::data
