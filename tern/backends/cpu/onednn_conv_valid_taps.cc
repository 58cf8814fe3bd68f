// Convolutions over small images as GEMMs over the taps inside the image only (ValidTapsConv,
// declared in onednn_conv.h). The output pixels are grouped by the rectangle of filter taps whose
// input pixels lie inside the image (a window that reaches into the padding has fewer); one
// class's patches hold only its taps, and each row of taps in its rectangle is one GEMM against
// the HWIO filter's rows for those taps, read in place (the taps of one filter row are
// contiguous in HWIO):
//   forward          acc[class rows, c_out] (f32) += patches[:, tap row i] filter[taps of row i]
//   input gradient   cols[:, tap row i] (f32) = dy[class rows] filter[taps of row i]^T, col2im
// and the filter gradient is one GEMM per tap over the output pixels that read it, each tap of
// dw written once: dw[tap] (f32) = x_tap^T dy_tap, x's and dy's rows gathered per tap.
// A 3x3 SAME layer at 2x2 multiplies 4 of its 9 taps per pixel, at 4x4 100 of 144 per image.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>

#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_conv.h"

namespace tern::cpu::onednn {
namespace {

// The taps i of one dimension whose input index o * stride - pad + i * dil lies in [0, size):
// [lo, hi), empty (lo == hi) when the whole window is padding. Contiguous: the index grows with i.
std::pair<int64_t, int64_t> valid_range(int64_t o, int64_t stride, int64_t pad, int64_t dil,
                                        int64_t k, int64_t size) {
  int64_t lo = k, hi = k;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t at = o * stride - pad + i * dil;
    if (at < 0 || at >= size) continue;
    if (lo == k) lo = i;
    hi = i + 1;
  }
  return {lo, hi};
}

dnnl::memory::desc strided_desc(int64_t rows, int64_t cols, DType dtype, int64_t row_stride,
                                int64_t col_stride) {
  return dnnl::memory::desc(dnnl_dims{rows, cols}, to_dnnl(dtype),
                            dnnl_dims{row_stride, col_stride});
}

// TERN_CONV_VALID_TAPS: unset or "1" (where it applies), "0" (off).
bool valid_taps_enabled() {
  static const bool enabled = env_switch("TERN_CONV_VALID_TAPS", "the taps inside small images",
                                         "im2col GEMMs or the convolution primitives");
  return enabled;
}

template <typename T>
float load(const void* p, int64_t i) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<const float*>(p)[i];
  } else {
    return static_cast<float>(static_cast<const T*>(p)[i]);
  }
}

template <typename T>
void store(void* p, int64_t i, float v) {
  if constexpr (std::is_same_v<T, float>) {
    static_cast<float*>(p)[i] = v;
  } else {
    static_cast<T*>(p)[i] = T(v);
  }
}

}  // namespace

int64_t valid_taps_useful(const ops::Conv2dGeometry& g) {
  int64_t taps = 0;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const auto [i0, i1] = valid_range(oh, g.stride_h, g.pad_top, g.dil_h, g.kh, g.h);
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const auto [j0, j1] = valid_range(ow, g.stride_w, g.pad_left, g.dil_w, g.kw, g.w);
      taps += (i1 - i0) * (j1 - j0);
    }
  }
  return taps;
}

bool valid_taps_apply(const ops::Conv2dGeometry& g, DType dtype) {
  if (!valid_taps_enabled() || g.groups != 1 || (dtype != DType::kF32 && dtype != DType::kBF16) ||
      g.out_h * g.out_w > kConvGemmMaxPixels) {
    return false;
  }
  const int64_t all = g.out_h * g.out_w * g.kh * g.kw;
  const int64_t useful = valid_taps_useful(g);
  const int64_t bytes = g.n * useful * g.c_in * 4;  // the patches, or the input gradient's columns
  return useful * kValidTapsShareDenominator <= all * kValidTapsShareNumerator &&
         bytes <= kConvGemmMaxBytes;
}

ValidTapsConv::ValidTapsConv(const ops::Conv2dGeometry& g, DType dtype, Direction direction,
                             const Epilogue& ep, DType dw_dtype)
    : g_(g), dtype_(dtype), direction_(direction), ep_(ep), dw_dtype_(dw_dtype) {
  TERN_CHECK(g.groups == 1, "valid-taps convolution: ungrouped layers only");
  // bf16 results summed in f32 and rounded once: dx, or dw when it is not f32.
  const DType out = direction == Direction::kFilterGradient ? dw_dtype : dtype;
  if (direction != Direction::kForward && out != DType::kF32) {
    const dnnl_dims dims{direction == Direction::kFilterGradient ? g.kh * g.kw * g.c_in * g.c_out
                                                                 : g.n * g.h * g.w * g.c_in};
    round_ = Reorder(dense_desc(dims, DType::kF32), dense_desc(dims, out));
  }
  // Classes: the output pixels with the same rectangle of valid taps, in order of first pixel.
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, size_t> index;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const auto [i0, i1] = valid_range(oh, g.stride_h, g.pad_top, g.dil_h, g.kh, g.h);
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const auto [j0, j1] = valid_range(ow, g.stride_w, g.pad_left, g.dil_w, g.kw, g.w);
      auto [it, added] = index.try_emplace({i0, i1, j0, j1}, classes_.size());
      if (added) classes_.push_back(Class{i0, i1, j0, j1});
      classes_[it->second].pixels.push_back(oh * g.out_w + ow);
    }
  }
  for (Class& c : classes_) {
    c.rows = g.n * static_cast<int64_t>(c.pixels.size());
    c.width = (c.i1 - c.i0) * (c.j1 - c.j0) * g.c_in;
    c.patch_at = patch_elements_;
    c.row_at = rows_;
    patch_elements_ += c.rows * c.width;
    rows_ += c.rows;
  }
  const DType f32 = DType::kF32;
  const int64_t k = g.c_out, c_in = g.c_in;
  if (direction == Direction::kFilterGradient) {
    // One GEMM per tap over the output pixels that read it: dw[tap] = x_tap^T dy_tap, each tap
    // written once (per class and row of taps, sums of the taps that several classes read went
    // back and forth through memory: 2x2 layers' filter gradients 0.83-0.86 -> 0.97 ms).
    for (int64_t t = 0; t < g.kh * g.kw; ++t) {
      Tap tap{t};
      for (const Class& c : classes_) {
        if (t / g.kw >= c.i0 && t / g.kw < c.i1 && t % g.kw >= c.j0 && t % g.kw < c.j1) {
          tap.pixels.insert(tap.pixels.end(), c.pixels.begin(), c.pixels.end());
        }
      }
      if (tap.pixels.empty()) {
        unwritten_taps_.push_back(t);
        continue;
      }
      tap.rows = g.n * static_cast<int64_t>(tap.pixels.size());
      tap.row_at = tap_rows_;
      tap_rows_ += tap.rows;
      Gemm gemm;
      gemm.a_at = tap.row_at * c_in;
      gemm.b_at = tap.row_at * k;
      gemm.c_at = t * c_in * k;
      init_matmul(gemm.runner, strided_desc(c_in, tap.rows, dtype, 1, c_in),
                  dense_desc({tap.rows, k}, dtype), dense_desc({c_in, k}, f32), false);
      gemms_.push_back(std::move(gemm));
      taps_.push_back(std::move(tap));
    }
    return;
  }
  // The GEMMs: one per class and row of taps.
  for (const Class& c : classes_) {
    if (c.width == 0) continue;  // windows wholly in the padding: zeros (forward), nothing (dx)
    const int64_t row_width = (c.j1 - c.j0) * c_in;
    for (int64_t i = c.i0; i < c.i1; ++i) {
      const int64_t block = c.patch_at + (i - c.i0) * c.rows * row_width;
      const int64_t filter_at = (i * g.kw + c.j0) * c_in * k;
      Gemm gemm;
      if (direction == Direction::kForward) {
        gemm.a_at = block;
        gemm.b_at = filter_at;
        gemm.c_at = c.row_at * k;
        init_matmul(gemm.runner, dense_desc({c.rows, row_width}, dtype),
                    dense_desc({row_width, k}, dtype), dense_desc({c.rows, k}, f32), i > c.i0);
      } else {
        gemm.a_at = c.row_at * k;
        gemm.b_at = filter_at;
        gemm.c_at = block;
        init_matmul(gemm.runner, dense_desc({c.rows, k}, dtype),
                    strided_desc(k, row_width, dtype, 1, k), dense_desc({c.rows, row_width}, f32),
                    false);
      }
      gemms_.push_back(std::move(gemm));
    }
  }
}

void ValidTapsConv::run_gemms(const void* a, size_t a_esize, const void* b, size_t b_esize,
                              void* c) {
  const auto* ab = static_cast<const std::byte*>(a);
  const auto* bb = static_cast<const std::byte*>(b);
  auto* cf = static_cast<float*>(c);
  for (Gemm& gemm : gemms_) {
    gemm.runner.set(DNNL_ARG_SRC, ab + gemm.a_at * static_cast<int64_t>(a_esize));
    gemm.runner.set(DNNL_ARG_WEIGHTS, bb + gemm.b_at * static_cast<int64_t>(b_esize));
    gemm.runner.set(DNNL_ARG_DST, cf + gemm.c_at);
    gemm.runner.execute();
  }
}

// Each class's patches, one dense block [rows, taps of the row * c_in] per row of taps: row
// (n, pixel) of a block holds x under the row's taps, c_in values each.
void ValidTapsConv::gather_patches(const void* x, void* patches) const {
  const ops::Conv2dGeometry& g = g_;
  const auto esize = static_cast<int64_t>(dtype_size(dtype_));
  const int64_t pixel = esize * g.c_in;
  const auto* in = static_cast<const std::byte*>(x);
  auto* out = static_cast<std::byte*>(patches);
  for (const Class& c : classes_) {
    const auto count = static_cast<int64_t>(c.pixels.size());
#pragma omp parallel for schedule(static) if (conv_loop_parallel(c.rows * c.width * 4))
    for (int64_t r = 0; r < c.rows; ++r) {
      const int64_t n = r / count, p = c.pixels[static_cast<size_t>(r % count)];
      const int64_t oh = p / g.out_w, ow = p % g.out_w;
      const int64_t row_width = (c.j1 - c.j0) * g.c_in;
      for (int64_t i = c.i0; i < c.i1; ++i) {
        const int64_t ih = oh * g.stride_h - g.pad_top + i * g.dil_h;
        std::byte* row = out + (c.patch_at + ((i - c.i0) * c.rows + r) * row_width) * esize;
        for (int64_t j = c.j0; j < c.j1; ++j) {
          const int64_t iw = ow * g.stride_w - g.pad_left + j * g.dil_w;
          std::memcpy(row, in + ((n * g.h + ih) * g.w + iw) * pixel, static_cast<size_t>(pixel));
          row += pixel;
        }
      }
    }
  }
}

// dy's rows in class order: row (n, pixel) of each class.
void ValidTapsConv::gather_rows(const void* dy, void* rows) const {
  const ops::Conv2dGeometry& g = g_;
  const auto pixel = static_cast<int64_t>(dtype_size(dtype_)) * g.c_out;
  const auto* in = static_cast<const std::byte*>(dy);
  auto* out = static_cast<std::byte*>(rows);
  for (const Class& c : classes_) {
    const auto count = static_cast<int64_t>(c.pixels.size());
    for (int64_t r = 0; r < c.rows; ++r) {
      const int64_t n = r / count, p = c.pixels[static_cast<size_t>(r % count)];
      std::memcpy(out + (c.row_at + r) * pixel, in + (n * g.out_h * g.out_w + p) * pixel,
                  static_cast<size_t>(pixel));
    }
  }
}

void ValidTapsConv::forward(const void* x, const void* filter, const void* bias, void* y) {
  TERN_CHECK(direction_ == Direction::kForward, "valid-taps convolution: built for a gradient");
  const size_t esize = dtype_size(dtype_);
  void* patches = layout_slot(kPatchesSlot, static_cast<size_t>(patch_elements_) * esize);
  gather_patches(x, patches);
  auto* acc = static_cast<float*>(
      layout_slot(kGemmResultSlot, static_cast<size_t>(rows_ * g_.c_out) * sizeof(float)));
  // A class whose windows are all padding has no GEMM: its rows are zeros (then the bias).
  for (const Class& c : classes_) {
    if (c.width == 0)
      std::fill(acc + c.row_at * g_.c_out, acc + (c.row_at + c.rows) * g_.c_out, 0.f);
  }
  run_gemms(patches, esize, filter, esize, acc);
  if (dtype_ == DType::kBF16) {
    write_output<bfloat16>(acc, bias, y);
  } else {
    write_output<float>(acc, bias, y);
  }
}

// y's pixels from the class-ordered sums, plus the bias and the residual y holds (relu and other
// activations: the kernel's finish_epilogue).
template <typename T>
void ValidTapsConv::write_output(const float* acc, const void* bias, void* y) const {
  const ops::Conv2dGeometry& g = g_;
  const int64_t k = g.c_out;
  const bool residual = ep_.residual_input >= 0;
  for (const Class& c : classes_) {
    const auto count = static_cast<int64_t>(c.pixels.size());
#pragma omp parallel for schedule(static) if (conv_loop_parallel(c.rows * k * 4))
    for (int64_t r = 0; r < c.rows; ++r) {
      const int64_t n = r / count, p = c.pixels[static_cast<size_t>(r % count)];
      const float* from = acc + (c.row_at + r) * k;
      const int64_t at = (n * g.out_h * g.out_w + p) * k;
      for (int64_t o = 0; o < k; ++o) {
        float v = from[o];
        if (bias) v += load<T>(bias, o);
        if (residual) v += load<T>(y, at + o);
        store<T>(y, at + o, v);
      }
    }
  }
}

void ValidTapsConv::input_gradient(const void* dy, const void* filter, void* dx) {
  TERN_CHECK(direction_ == Direction::kInputGradient,
             "valid-taps convolution: not built for the input gradient");
  const ops::Conv2dGeometry& g = g_;
  const size_t esize = dtype_size(dtype_);
  void* rows = layout_slot(kPatchesSlot, static_cast<size_t>(rows_ * g.c_out) * esize);
  gather_rows(dy, rows);
  auto* cols = static_cast<float*>(
      layout_slot(kGemmResultSlot, static_cast<size_t>(patch_elements_) * sizeof(float)));
  run_gemms(rows, esize, filter, esize, cols);
  // f32: summed straight into dx; else into an f32 buffer (the rows' slot, free now), rounded.
  const int64_t elements = g.n * g.h * g.w * g.c_in;
  float* sum = dtype_ == DType::kF32
                   ? static_cast<float*>(dx)
                   : static_cast<float*>(
                         layout_slot(kPatchesSlot, static_cast<size_t>(elements) * sizeof(float)));
  col2im(cols, sum);
  if (round_.defined()) round_.run(sum, dx);
}

// dx[n, ih, iw, :] = the sum of the columns that read (ih, iw); one image per thread at a time, so
// no two threads add into the same pixel, and each pixel sums its columns in class order.
void ValidTapsConv::col2im(const float* cols, float* dx) const {
  const ops::Conv2dGeometry& g = g_;
  const int64_t image = g.h * g.w * g.c_in, c_in = g.c_in;
  const bool parallel = g.n > 1 && conv_loop_parallel(patch_elements_ * 4);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t n = 0; n < g.n; ++n) {
    float* img = dx + n * image;
    std::fill(img, img + image, 0.0f);
    for (const Class& c : classes_) {
      const auto count = static_cast<int64_t>(c.pixels.size());
      for (int64_t pi = 0; pi < count; ++pi) {
        const int64_t p = c.pixels[static_cast<size_t>(pi)], oh = p / g.out_w, ow = p % g.out_w;
        const int64_t r = n * count + pi, row_width = (c.j1 - c.j0) * c_in;
        for (int64_t i = c.i0; i < c.i1; ++i) {
          const int64_t ih = oh * g.stride_h - g.pad_top + i * g.dil_h;
          const float* from = cols + c.patch_at + ((i - c.i0) * c.rows + r) * row_width;
          for (int64_t j = c.j0; j < c.j1; ++j) {
            const int64_t iw = ow * g.stride_w - g.pad_left + j * g.dil_w;
            float* to = img + (ih * g.w + iw) * c_in;
#pragma omp simd
            for (int64_t e = 0; e < c_in; ++e) to[e] += from[e];
            from += c_in;
          }
        }
      }
    }
  }
}

void ValidTapsConv::filter_gradient(const void* x, const void* dy, void* dw) {
  TERN_CHECK(direction_ == Direction::kFilterGradient,
             "valid-taps convolution: not built for the filter gradient");
  const ops::Conv2dGeometry& g = g_;
  const auto esize = static_cast<int64_t>(dtype_size(dtype_));
  auto* xs = static_cast<std::byte*>(
      layout_slot(kPatchesSlot, static_cast<size_t>(tap_rows_ * g.c_in * esize)));
  auto* dys =
      static_cast<std::byte*>(layout_slot(0, static_cast<size_t>(tap_rows_ * g.c_out * esize)));
  // Each tap's rows (n, pixel): x's pixel under the tap, and dy's.
  const int64_t x_pixel = g.c_in * esize, dy_pixel = g.c_out * esize;
  const auto* in = static_cast<const std::byte*>(x);
  const auto* grad = static_cast<const std::byte*>(dy);
  for (const Tap& tap : taps_) {
    const auto count = static_cast<int64_t>(tap.pixels.size());
    const int64_t i = tap.t / g.kw, j = tap.t % g.kw;
    for (int64_t r = 0; r < tap.rows; ++r) {
      const int64_t n = r / count, p = tap.pixels[static_cast<size_t>(r % count)];
      const int64_t ih = p / g.out_w * g.stride_h - g.pad_top + i * g.dil_h;
      const int64_t iw = p % g.out_w * g.stride_w - g.pad_left + j * g.dil_w;
      std::memcpy(xs + (tap.row_at + r) * x_pixel, in + ((n * g.h + ih) * g.w + iw) * x_pixel,
                  static_cast<size_t>(x_pixel));
      std::memcpy(dys + (tap.row_at + r) * dy_pixel, grad + (n * g.out_h * g.out_w + p) * dy_pixel,
                  static_cast<size_t>(dy_pixel));
    }
  }
  const int64_t per_tap = g.c_in * g.c_out, elements = g.kh * g.kw * per_tap;
  float* sums = !round_.defined()
                    ? static_cast<float*>(dw)
                    : static_cast<float*>(layout_slot(
                          kGemmResultSlot, static_cast<size_t>(elements) * sizeof(float)));
  run_gemms(xs, static_cast<size_t>(esize), dys, static_cast<size_t>(esize), sums);
  for (int64_t t : unwritten_taps_) std::fill(sums + t * per_tap, sums + (t + 1) * per_tap, 0.0f);
  if (round_.defined()) round_.run(sums, dw);
}

}  // namespace tern::cpu::onednn
