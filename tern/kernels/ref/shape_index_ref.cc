// Reference kernels for the shape family, indexing part: slice, strided_slice(_grad) and pad
// (strided window copies), gather (checked indices), scatter_add (double accumulation, rows in
// index order) and one_hot.
#include <algorithm>
#include <numeric>
#include <type_traits>

#include "tern/kernels/index_check.h"
#include "tern/kernels/ref/ref.h"
#include "tern/kernels/ref/strided_copy.h"
#include "tern/ops/infer.h"
#include "tern/ops/shape_ops.h"

namespace tern::kernels::ref {
namespace {

// Fills `t` with `value` converted to its dtype.
void fill_value(Tensor& t, double value) {
  Tensor one = Tensor::scalar(t.dtype(), value);
  dispatch_elem_size(t.dtype(), [&](auto tag) {
    using E = decltype(tag);
    E v;
    std::memcpy(&v, one.raw_data(), sizeof(E));
    std::fill_n(static_cast<E*>(t.raw_data()), t.num_elements(), v);
  });
}

// The window of `big` described per dim by (begin, stride) over `small`'s dims, copied either
// from big into small (slicing) or from small into big (pad, strided_slice_grad).
void window_copy(const Tensor& src, Tensor& dst, const std::vector<ops::StridedDim>& dims,
                 bool into_big) {
  const Shape& big = into_big ? dst.shape() : src.shape();
  std::vector<int64_t> big_strides = big.strides(), strides, sizes;
  int64_t base = 0;
  for (size_t k = 0; k < dims.size(); ++k) {
    base += dims[k].begin * big_strides[k];
    strides.push_back(dims[k].stride * big_strides[k]);
    sizes.push_back(dims[k].size);
  }
  dispatch_elem_size(src.dtype(), [&](auto tag) {
    using E = decltype(tag);
    const E* s = static_cast<const E*>(src.raw_data());
    E* d = static_cast<E*>(dst.raw_data());
    if (into_big) {
      scatter_strided(s, d, base, strides, sizes);
    } else {
      gather_strided(s, base, strides, d, sizes);
    }
  });
}

void slice_ref(KernelContext& ctx) {
  const std::vector<int64_t>& begin = ctx.attrs.get_ints("begin");
  std::vector<ops::StridedDim> dims;
  for (int k = 0; k < ctx.inputs[0].rank(); ++k) {
    dims.push_back({begin[static_cast<size_t>(k)], 1, ctx.outputs[0].shape()[k]});
  }
  window_copy(ctx.inputs[0], ctx.outputs[0], dims, false);
}

std::vector<ops::StridedDim> strided_dims(const KernelContext& ctx, const Shape& full) {
  std::string error;
  std::vector<ops::StridedDim> dims =
      ops::strided_slice_dims(full, ctx.attrs.get_ints("begin"), ctx.attrs.get_ints("end"),
                              ctx.attrs.get_ints("strides"), &error);
  if (!error.empty()) throw_error(ErrorCode::kInvalidArgument, "strided_slice: ", error);
  return dims;
}

void strided_slice_ref(KernelContext& ctx) {
  window_copy(ctx.inputs[0], ctx.outputs[0], strided_dims(ctx, ctx.inputs[0].shape()), false);
}

void strided_slice_grad_ref(KernelContext& ctx) {
  Tensor& dx = ctx.outputs[0];
  fill_value(dx, 0.0);
  window_copy(ctx.inputs[0], dx, strided_dims(ctx, dx.shape()), true);
}

void pad_ref(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const std::vector<int64_t>& pads = ctx.attrs.get_ints("paddings");
  fill_value(y, ctx.attrs.get_float("value"));
  std::vector<ops::StridedDim> dims;
  for (int k = 0; k < x.rank(); ++k)
    dims.push_back({pads[2 * static_cast<size_t>(k)], 1, x.shape()[k]});
  window_copy(x, y, dims, true);
}

void gather_ref(KernelContext& ctx) {
  const Tensor& params = ctx.inputs[0];
  const Tensor& indices = ctx.inputs[1];
  int axis = params.shape().normalize_axis(ctx.attrs.get_int("axis"), "gather axis");
  int64_t n = params.shape()[axis];
  check_indices("gather", indices, n,
                [&] { return str_cat("axis ", axis, " of params ", params.shape()); });
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= params.shape()[i];
  for (int i = axis + 1; i < params.rank(); ++i) inner *= params.shape()[i];
  size_t row = static_cast<size_t>(inner) * dtype_size(params.dtype());
  if (row == 0) return;
  const char* src = static_cast<const char*>(params.raw_data());
  char* dst = static_cast<char*>(ctx.outputs[0].raw_data());
  int64_t m = indices.num_elements();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < m; ++j) {
      int64_t k = index_at(indices, j);
      std::memcpy(dst, src + static_cast<size_t>(o * n + k) * row, row);
      dst += row;
    }
  }
}

template <typename T>
void scatter_add_ref(KernelContext& ctx) {
  const Tensor& indices = ctx.inputs[0];
  const Tensor& updates = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  int64_t rows = y.shape()[0];
  check_indices("scatter_add", indices, rows,
                [&] { return str_cat("axis 0 of output shape ", y.shape()); });
  int64_t inner = rows == 0 ? 0 : y.num_elements() / rows;
  fill_value(y, 0.0);
  // Update rows in index order (stable): each output row is summed in double, in input order.
  std::vector<int64_t> rows_of(static_cast<size_t>(indices.num_elements()));
  for (size_t i = 0; i < rows_of.size(); ++i)
    rows_of[i] = index_at(indices, static_cast<int64_t>(i));
  std::vector<int64_t> order(rows_of.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return rows_of[static_cast<size_t>(a)] < rows_of[static_cast<size_t>(b)];
  });
  using A = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, uint64_t>;
  std::vector<A> acc(static_cast<size_t>(inner));
  const T* pu = updates.data<T>();
  T* py = y.data<T>();
  for (size_t s = 0; s < order.size();) {
    int64_t row = rows_of[static_cast<size_t>(order[s])];
    std::fill(acc.begin(), acc.end(), A(0));
    for (; s < order.size() && rows_of[static_cast<size_t>(order[s])] == row; ++s) {
      const T* u = pu + order[s] * inner;
      for (int64_t k = 0; k < inner; ++k) {
        if constexpr (std::is_floating_point_v<A>) {
          acc[static_cast<size_t>(k)] += static_cast<double>(static_cast<compute_t<T>>(u[k]));
        } else {
          acc[static_cast<size_t>(k)] += static_cast<uint64_t>(static_cast<int64_t>(u[k]));
        }
      }
    }
    T* out = py + row * inner;
    for (int64_t k = 0; k < inner; ++k) {
      if constexpr (std::is_floating_point_v<A>) {
        out[k] = static_cast<T>(static_cast<compute_t<T>>(acc[static_cast<size_t>(k)]));
      } else {
        out[k] = static_cast<T>(static_cast<int64_t>(acc[static_cast<size_t>(k)]));
      }
    }
  }
}

void one_hot_ref(KernelContext& ctx) {
  const Tensor& indices = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  int64_t depth = ctx.attrs.get_int("depth");
  Tensor on = Tensor::scalar(y.dtype(), ctx.attrs.get_float("on_value"));
  fill_value(y, ctx.attrs.get_float("off_value"));
  size_t esize = dtype_size(y.dtype());
  char* out = static_cast<char*>(y.raw_data());
  for (int64_t i = 0; i < indices.num_elements(); ++i) {
    int64_t v = index_at(indices, i);
    if (v >= 0 && v < depth) {
      std::memcpy(out + static_cast<size_t>(i * depth + v) * esize, on.raw_data(), esize);
    }
  }
}

}  // namespace

void register_shape_index_ref(KernelRegistry& r) {
  add_ref(r, "slice", ops::kAllDTypeList, slice_ref);
  add_ref(r, "strided_slice", ops::kAllDTypeList, strided_slice_ref);
  add_ref(r, "strided_slice_grad", ops::kAllDTypeList, strided_slice_grad_ref);
  add_ref(r, "pad", ops::kAllDTypeList, pad_ref);
  add_ref(r, "gather", ops::kAllDTypeList, gather_ref);
  add_ref(r, "one_hot", ops::kAllDTypeList, one_hot_ref);
  add_ref(r, "scatter_add", ops::kNumericDTypes, [](KernelContext& ctx) {
    dispatch_dtype(ctx.inputs[1].dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        throw_error(ErrorCode::kInvalidArgument, "scatter_add: dtype bool is not supported");
      } else {
        scatter_add_ref<T>(ctx);
      }
    });
  });
}

}  // namespace tern::kernels::ref
