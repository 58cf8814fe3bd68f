// IDX tensors as model inputs: u8 images scaled to f32 in [0, 1] and shaped NHWC, integer labels
// checked against the class count and widened to i64 (what the MNIST family feeds a classifier).
//
//   Tensor x = idx_images_to_f32(read_idx(dir + "/train-images-idx3-ubyte.gz"), "train images");
//   Tensor y = idx_labels_to_i64(read_idx(dir + "/train-labels-idx1-ubyte.gz"), 10, "labels");
#pragma once

#include <cstdint>
#include <string>

#include "tern/tensor/tensor.h"

namespace tern::data {

// Images [N, H, W] or [N, H, W, C] -> f32 [N, H, W, C] (C = 1 for rank 3); u8 values are divided
// by 255, other dtypes are cast as they are. `what` (usually the path) names the input in errors.
Tensor idx_images_to_f32(const Tensor& raw, const std::string& what);

// Integer labels [N] -> i64 [N], each in [0, num_classes): an InvalidArgument naming `what`, the
// label and its index otherwise.
Tensor idx_labels_to_i64(const Tensor& raw, int64_t num_classes, const std::string& what);

}  // namespace tern::data
