// Convolutions as GEMMs on oneDNN's matmul (declared in onednn_conv.h): over small images, the
// forward as an im2col copy of x times the HWIO filter read in place as a [kh kw c_in, c_out]
// matrix and the input gradient as dy times that matrix transposed followed by col2im; over
// few output pixels, the filter gradient as the patches transposed times dy.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tern/backends/cpu/onednn_conv.h"
#include "tern/backends/cpu/small_gemm.h"
#include "tern/backends/cpu/weight_grad_bf16.h"

namespace tern::cpu::onednn {
namespace {

int64_t gemm_rows(const ops::Conv2dGeometry& g) {
  return g.n * g.out_h * g.out_w;
}
int64_t gemm_depth(const ops::Conv2dGeometry& g) {
  return g.kh * g.kw * g.c_in;
}

// A 1x1 stride-1 convolution without padding reads x itself as its patches.
bool patches_are_x(const ops::Conv2dGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_bottom == 0 && g.pad_left == 0 && g.pad_right == 0;
}

}  // namespace

bool conv_loop_parallel(int64_t bytes) {
  return bytes >= (int64_t{1} << 16) && !omp_in_parallel();
}

bool conv_gemm_applies(const ops::Conv2dGeometry& g, DType dtype) {
  static const bool enabled = [] {
    const char* v = std::getenv("TERN_CONV_GEMM");
    return v == nullptr || std::string_view(v) != "0";
  }();
  if (!enabled) return false;
  // The patches, or the input gradient's f32 columns (the larger of the two).
  const int64_t bytes = gemm_rows(g) * gemm_depth(g) * std::max<int64_t>(4, dtype_size(dtype));
  return g.groups == 1 && g.out_h * g.out_w <= kConvGemmMaxPixels && bytes <= kConvGemmMaxBytes;
}

bool filter_gradient_gemm_applies(const ops::Conv2dGeometry& g, DType x_dtype) {
  static const bool enabled = [] {
    const char* v = std::getenv("TERN_FILTER_GRADIENT_GEMM");
    return v == nullptr || std::string_view(v) != "0";
  }();
  if (!enabled || g.groups != 1) return false;
  // No patches to copy: a 1x1 layer's product at any size where weight_grad_bf16 takes it.
  if (x_dtype == DType::kBF16 && patches_are_x(g) && bf16_products_native() &&
      gemm_rows(g) >= kNativeFilterGradientMinRows) {
    return true;
  }
  return gemm_rows(g) <= kFilterGradientGemmMaxRows &&
         gemm_rows(g) * gemm_depth(g) * static_cast<int64_t>(dtype_size(x_dtype)) <=
             kFilterGradientGemmMaxBytes;
}

bool input_gradient_gemm_applies(const ops::Conv2dGeometry& g, DType dtype) {
  return conv_gemm_applies(g, dtype) &&
         (dtype != DType::kF32 || g.out_h * g.out_w <= kF32InputGradientGemmMaxPixels ||
          g.stride_h > 1 || g.stride_w > 1);
}

void im2col(const ops::Conv2dGeometry& g, size_t esize, const void* x, void* patches) {
  const int64_t pixel = g.c_in * static_cast<int64_t>(esize);
  const int64_t rows = gemm_rows(g), cols = gemm_depth(g);
  const auto* in = static_cast<const std::byte*>(x);
  auto* out = static_cast<std::byte*>(patches);
  const bool parallel = conv_loop_parallel(rows * cols * static_cast<int64_t>(esize));
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / (g.out_h * g.out_w), oh = (r / g.out_w) % g.out_h, ow = r % g.out_w;
    std::byte* row = out + r * cols * static_cast<int64_t>(esize);
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t ih = oh * g.stride_h - g.pad_top + i * g.dil_h;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t iw = ow * g.stride_w - g.pad_left + j * g.dil_w;
        std::byte* dst = row + (i * g.kw + j) * pixel;
        if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) {
          std::memset(dst, 0, static_cast<size_t>(pixel));
        } else {
          std::memcpy(dst, in + ((n * g.h + ih) * g.w + iw) * pixel, static_cast<size_t>(pixel));
        }
      }
    }
  }
}

// --- ConvForwardGemm ---

ConvForwardGemm::ConvForwardGemm(const ops::Conv2dGeometry& g, DType dtype, const Epilogue& ep)
    : g_(g), esize_(dtype_size(dtype)) {
  const int64_t rows = gemm_rows(g), depth = gemm_depth(g);
  // out [rows, c_out] = patches [rows, depth] x filter [depth, c_out] (+ bias, post-ops).
  dnnl::memory::desc a = dense_desc(dnnl_dims{rows, depth}, dtype);
  dnnl::memory::desc b = dense_desc(dnnl_dims{depth, g.c_out}, dtype);
  dnnl::memory::desc c = dense_desc(dnnl_dims{rows, g.c_out}, dtype);
  dnnl::memory::desc bias;
  if (ep.bias_input >= 0) bias = dense_desc(dnnl_dims{1, g.c_out}, dtype);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, bias, c),
                                  make_attr(epilogue_post_ops(ep)), engine());
  runner_.init<dnnl::matmul>(pd);
  runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
  runner_.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
  runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
  if (ep.bias_input >= 0) runner_.add_arg(DNNL_ARG_BIAS, pd.bias_desc());
  patch_bytes_ = static_cast<size_t>(rows * depth) * esize_;
}

void ConvForwardGemm::run(const void* x, const void* filter, const void* bias, void* out) {
  const void* patches = x;
  if (!patches_are_x(g_)) {
    void* p = layout_slot(kPatchesSlot, patch_bytes_);
    im2col(g_, esize_, x, p);
    patches = p;
  }
  runner_.set(DNNL_ARG_SRC, patches);
  runner_.set(DNNL_ARG_WEIGHTS, filter);
  if (bias) runner_.set(DNNL_ARG_BIAS, bias);
  runner_.set(DNNL_ARG_DST, out);
  runner_.execute();
}

// --- FilterGradientGemm ---

FilterGradientGemm::FilterGradientGemm(const ops::Conv2dGeometry& g, DType x_dtype, DType dw_dtype)
    : g_(g), esize_(dtype_size(x_dtype)), dw_dtype_(dw_dtype) {
  const int64_t rows = gemm_rows(g), depth = gemm_depth(g);
  patch_bytes_ = static_cast<size_t>(rows * depth) * esize_;
  native_bf16_ =
      x_dtype == DType::kBF16 && bf16_products_native() && rows >= kNativeFilterGradientMinRows;
  if (native_bf16_) return;
  // dw [depth, c_out] = patches^T (the [rows, depth] patches with strides {1, depth}) x dy [rows,
  // c_out] (NHWC read in place).
  dnnl::memory::desc a(dnnl_dims{depth, rows}, to_dnnl(x_dtype), dnnl_dims{1, depth});
  dnnl::memory::desc b = dense_desc(dnnl_dims{rows, g.c_out}, x_dtype);
  init_matmul(runner_, a, b, dense_desc(dnnl_dims{depth, g.c_out}, dw_dtype));
}

void FilterGradientGemm::run(const void* x, const void* dy, void* dw) {
  // A 1x1 stride-1 layer's patches are x itself (ResNet-50's 1x1 layers at 8x8 and below, batch
  // 32, bf16: [2048, 512]^T [2048, 128] 0.41 -> 0.31 ms without the copy, `kernel_ab_bench`).
  const void* patches = x;
  if (!patches_are_x(g_)) {
    void* p = layout_slot(kPatchesSlot, patch_bytes_);
    im2col(g_, esize_, x, p);
    patches = p;
  }
  if (native_bf16_) {
    const int64_t depth = gemm_depth(g_), k = g_.c_out;
    auto* sums = dw_dtype_ == DType::kF32
                     ? static_cast<float*>(dw)
                     : static_cast<float*>(layout_slot(
                           kGemmResultSlot, static_cast<size_t>(depth * k) * sizeof(float)));
    weight_grad_bf16(gemm_rows(g_), depth, k, static_cast<const bfloat16*>(patches),
                     static_cast<const bfloat16*>(dy), sums);
    if (dw_dtype_ == DType::kBF16) {
      auto* out = static_cast<bfloat16*>(dw);
      const int64_t rows_per_task = std::max<int64_t>(1, (int64_t{1} << 14) / k);
#pragma omp parallel for schedule(static) if (conv_loop_parallel(depth * k * 4))
      for (int64_t r = 0; r < depth; r += rows_per_task) {
        round_rows_f32(std::min(rows_per_task, depth - r), k, sums + r * k, k, out + r * k, k);
      }
    }
    return;
  }
  runner_.set(DNNL_ARG_SRC, patches);
  runner_.set(DNNL_ARG_WEIGHTS, dy);
  runner_.set(DNNL_ARG_DST, dw);
  runner_.execute();
}

// --- InputGradientGemm ---

InputGradientGemm::InputGradientGemm(const ops::Conv2dGeometry& g, DType dtype)
    : g_(g), dtype_(dtype) {
  const int64_t rows = gemm_rows(g), depth = gemm_depth(g);
  // cols [rows, depth] (f32) = dy [rows, c_out] x filter^T: the HWIO filter [depth, c_out] read
  // with transposed strides.
  dnnl::memory::desc a = dense_desc(dnnl_dims{rows, g.c_out}, dtype);
  dnnl::memory::desc b(dnnl_dims{g.c_out, depth}, to_dnnl(dtype), dnnl_dims{1, g.c_out});
  // A 1x1 layer without padding never sums two columns into one pixel: its product is written in
  // dx's dtype, at stride 1 into dx itself, else into a buffer whose rows are copied to the pixels
  // they belong to, the others zeroed (ResNet-50's 1x1 layers at 4x4, batch 32, bf16: [512, 256]
  // x [256, 1024] 0.36 -> 0.27 ms without the f32 columns, their copy and the rounding pass,
  // `kernel_ab_bench` over 8 nodes from memory; W9's stage-4 1024 -> 256 input gradients
  // 0.53-0.55 -> 0.33-0.34 ms in the step; its stride-2 shortcuts' 0.83-1.00 -> 0.69-0.74 ms).
  direct_ = patches_are_x(g);
  scatter_ = !direct_ && g.kh == 1 && g.kw == 1 && g.pad_top == 0 && g.pad_bottom == 0 &&
             g.pad_left == 0 && g.pad_right == 0;
  init_matmul(runner_, a, b,
              dense_desc(dnnl_dims{rows, depth}, direct_ || scatter_ ? dtype : DType::kF32));
  if (direct_) return;
  if (scatter_) {
    cols_bytes_ = static_cast<size_t>(rows * depth) * dtype_size(dtype);
    return;
  }
  cols_bytes_ = static_cast<size_t>(rows * depth) * sizeof(float);
  dx_elements_ = g.n * g.h * g.w * g.c_in;
  if (dtype != DType::kF32) {
    const dnnl_dims dims{dx_elements_};
    to_dx_ = Reorder(dense_desc(dims, DType::kF32), dense_desc(dims, dtype));
  }
}

void InputGradientGemm::run(const void* dy, const void* filter, void* dx) {
  if (direct_ || scatter_) {
    void* product = direct_ ? dx : layout_slot(kGemmResultSlot, cols_bytes_);
    runner_.set(DNNL_ARG_SRC, dy);
    runner_.set(DNNL_ARG_WEIGHTS, filter);
    runner_.set(DNNL_ARG_DST, product);
    runner_.execute();
    if (scatter_) scatter(product, dx);
    return;
  }
  auto* cols = static_cast<float*>(layout_slot(kGemmResultSlot, cols_bytes_));
  runner_.set(DNNL_ARG_SRC, dy);
  runner_.set(DNNL_ARG_WEIGHTS, filter);
  runner_.set(DNNL_ARG_DST, cols);
  runner_.execute();
  // f32: summed straight into dx; else into an f32 buffer (the patches slot, free here) that one
  // reorder rounds into dx.
  float* sum = dtype_ == DType::kF32
                   ? static_cast<float*>(dx)
                   : static_cast<float*>(layout_slot(kPatchesSlot, dx_elements_ * sizeof(float)));
  col2im(cols, sum);
  if (dtype_ != DType::kF32) to_dx_.run(sum, dx);
}

// dx (any dtype) of a 1x1 layer without padding: each row of `product` ([n out_h out_w, c_in])
// copied to the pixel its output pixel reads, the other pixels zeroed; one image per thread.
void InputGradientGemm::scatter(const void* product, void* dx) const {
  const ops::Conv2dGeometry& g = g_;
  const auto pixel = static_cast<int64_t>(dtype_size(dtype_)) * g.c_in;
  const int64_t image = g.h * g.w * pixel;
  const auto* from = static_cast<const std::byte*>(product);
  auto* to = static_cast<std::byte*>(dx);
  const bool parallel = g.n > 1 && conv_loop_parallel(g.n * image);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t n = 0; n < g.n; ++n) {
    std::byte* img = to + n * image;
    std::memset(img, 0, static_cast<size_t>(image));
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        std::memcpy(img + (oh * g.stride_h * g.w + ow * g.stride_w) * pixel,
                    from + ((n * g.out_h + oh) * g.out_w + ow) * pixel, static_cast<size_t>(pixel));
      }
    }
  }
}

// dx[n, ih, iw, :] = the sum of the patch columns that read (ih, iw); one image per thread at a
// time, so no two threads add into the same pixel.
void InputGradientGemm::col2im(const float* cols, float* dx) const {
  const ops::Conv2dGeometry& g = g_;
  const int64_t depth = gemm_depth(g), image = g.h * g.w * g.c_in, c_in = g.c_in;
  const bool parallel = g.n > 1 && conv_loop_parallel(gemm_rows(g) * depth * 4);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t n = 0; n < g.n; ++n) {
    float* img = dx + n * image;
    std::fill(img, img + image, 0.0f);
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const float* row = cols + ((n * g.out_h + oh) * g.out_w + ow) * depth;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t ih = oh * g.stride_h - g.pad_top + i * g.dil_h;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t iw = ow * g.stride_w - g.pad_left + j * g.dil_w;
            if (iw < 0 || iw >= g.w) continue;
            const float* from = row + (i * g.kw + j) * c_in;
            float* to = img + (ih * g.w + iw) * c_in;
#pragma omp simd
            for (int64_t c = 0; c < c_in; ++c) to[c] += from[c];
          }
        }
      }
    }
  }
}

}  // namespace tern::cpu::onednn
