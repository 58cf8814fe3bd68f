// The text IR of a convolution layer under a 2x2 / 2 max pooling with its gradients, as autodiff
// writes it for training (conv -> bias -> pool -> relu; the routed gradient read by the filter
// gradient, the input gradient and the bias gradient's sum), for the tests of the pooled forms
// (passes pool_argmax and fuse_epilogue, the CPU's pooled Winograd kernels).
#pragma once

#include <cstdint>
#include <string>

#include "tern/base/error.h"  // str_cat

namespace tern::testing {

// x [n, size, size, c_in] f32, a 3x3 VALID filter to c_out channels, dy the pooling's gradient.
// Without `input_gradient` (a first layer) there is no dx. With `ordered_reader`, a node reading
// the filter is ordered after both gradients (as an optimizer's update is) and returned as "k".
inline std::string conv_pool_block(int64_t n, int64_t size, int64_t c_in, int64_t c_out,
                                   bool input_gradient = true, bool ordered_reader = false) {
  const int64_t out = size - 2, pooled = out / 2;
  const std::string x = str_cat("[", n, ", ", size, ", ", size, ", ", c_in, "]");
  const std::string f = str_cat("[3, 3, ", c_in, ", ", c_out, "]");
  return str_cat(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=)",
                 x, R"(}
    %f = input() {dtype=f32, name="f", shape=)",
                 f, R"(}
    %b = input() {dtype=f32, name="b", shape=[)",
                 c_out, R"(]}
    %dy = input() {dtype=f32, name="dy", shape=[)",
                 n, ", ", pooled, ", ", pooled, ", ", c_out, R"(]}
    %c = conv2d(%x, %f)
    %z = add(%c, %b)
    %p = max_pool2d(%z) {ksize=[2, 2], strides=[2, 2]}
    %r = relu(%p)
    %dp = relu_grad(%dy, %p)
    %dz = max_pool2d_grad(%z, %dp) {ksize=[2, 2], strides=[2, 2]}
    %df = conv2d_backprop_filter(%x, %dz) {filter_shape=)",
                 f, R"(}
    )",
                 input_gradient
                     ? str_cat("%dx = conv2d_backprop_input(%dz, %f) {input_shape=", x, "}\n    ")
                     : "",
                 R"(%db = sum(%dz) {axes=[0, 1, 2]}
)",
                 ordered_reader ? "    %k = neg(%f) after(%df, %dx)\n" : "",
                 R"(    return {"r": %r, "df": %df, )", input_gradient ? R"("dx": %dx, )" : "",
                 R"("db": %db)", ordered_reader ? R"(, "k": %k)" : "", "}\n  }");
}

}  // namespace tern::testing
