// Reference kernels for the shape family, layout part: reshape / expand_dims / squeeze (a copy),
// transpose and broadcast_to (strided gathers), concat / stack / split (row-block copies). Every
// kernel moves elements by size, so one instantiation serves all dtypes of that width.
#include "tern/kernels/ref/ref.h"
#include "tern/kernels/ref/strided_copy.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {

void register_shape_index_ref(KernelRegistry& r);  // shape_index_ref.cc

namespace {

void copy_kernel(KernelContext& ctx) {
  copy_bytes(ctx.outputs[0].raw_data(), ctx.inputs[0].raw_data(), ctx.inputs[0].nbytes());
}

void transpose_ref(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  std::vector<int64_t> perm = ctx.attrs.get_ints("perm");
  if (perm.empty()) {
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> in_strides = x.shape().strides(), strides;
  for (int64_t p : perm) strides.push_back(in_strides[static_cast<size_t>(p)]);
  dispatch_elem_size(x.dtype(), [&](auto tag) {
    using E = decltype(tag);
    gather_strided(static_cast<const E*>(x.raw_data()), 0, strides, static_cast<E*>(y.raw_data()),
                   y.shape().dims());
  });
}

void broadcast_to_ref(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  int r = y.rank(), lead = y.rank() - x.rank();
  std::vector<int64_t> in_strides = x.shape().strides(), strides(static_cast<size_t>(r), 0);
  for (int i = 0; i < x.rank(); ++i) {
    if (x.shape()[i] != 1)
      strides[static_cast<size_t>(lead + i)] = in_strides[static_cast<size_t>(i)];
  }
  dispatch_elem_size(x.dtype(), [&](auto tag) {
    using E = decltype(tag);
    gather_strided(static_cast<const E*>(x.raw_data()), 0, strides, static_cast<E*>(y.raw_data()),
                   y.shape().dims());
  });
}

// Product of dims [from, to).
int64_t dims_product(const Shape& s, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; ++i) n *= s[i];
  return n;
}

// concat, stack and split share one layout: the whole tensor is `outer` rows, each row the
// blocks of every part in order (part i's block has block_bytes[i] bytes).
void join_blocks(std::span<const Tensor> parts, Tensor& whole, int64_t outer,
                 const std::vector<size_t>& block_bytes) {
  char* out = static_cast<char*>(whole.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < parts.size(); ++i) {
      size_t b = block_bytes[i];
      if (b == 0) continue;
      std::memcpy(out, static_cast<const char*>(parts[i].raw_data()) + static_cast<size_t>(o) * b,
                  b);
      out += b;
    }
  }
}

void cut_blocks(const Tensor& whole, std::span<Tensor> parts, int64_t outer,
                const std::vector<size_t>& block_bytes) {
  const char* in = static_cast<const char*>(whole.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < parts.size(); ++i) {
      size_t b = block_bytes[i];
      if (b == 0) continue;
      std::memcpy(static_cast<char*>(parts[i].raw_data()) + static_cast<size_t>(o) * b, in, b);
      in += b;
    }
  }
}

void concat_ref(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  int axis = y.shape().normalize_axis(ctx.attrs.get_int("axis"), "concat axis");
  size_t esize = dtype_size(y.dtype());
  std::vector<size_t> bytes;
  for (const Tensor& x : ctx.inputs) {
    bytes.push_back(static_cast<size_t>(dims_product(x.shape(), axis, x.rank())) * esize);
  }
  join_blocks(ctx.inputs, y, dims_product(y.shape(), 0, axis), bytes);
}

void stack_ref(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  int axis = y.shape().normalize_axis(ctx.attrs.get_int("axis"), "stack axis");
  const Shape& s = ctx.inputs[0].shape();
  size_t part = static_cast<size_t>(dims_product(s, axis, s.rank())) * dtype_size(y.dtype());
  std::vector<size_t> bytes(ctx.inputs.size(), part);
  join_blocks(ctx.inputs, y, dims_product(s, 0, axis), bytes);
}

void split_ref(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  int axis = x.shape().normalize_axis(ctx.attrs.get_int("axis"), "split axis");
  size_t esize = dtype_size(x.dtype());
  std::vector<size_t> bytes;
  for (const Tensor& y : ctx.outputs) {
    bytes.push_back(static_cast<size_t>(dims_product(y.shape(), axis, y.rank())) * esize);
  }
  cut_blocks(x, ctx.outputs, dims_product(x.shape(), 0, axis), bytes);
}

}  // namespace

void register_shape_ref(KernelRegistry& r) {
  for (const char* op : {"reshape", "expand_dims", "squeeze"}) {
    add_ref(r, op, ops::kAllDTypeList, copy_kernel);
  }
  add_ref(r, "transpose", ops::kAllDTypeList, transpose_ref);
  add_ref(r, "broadcast_to", ops::kAllDTypeList, broadcast_to_ref);
  add_ref(r, "concat", ops::kAllDTypeList, concat_ref);
  add_ref(r, "stack", ops::kAllDTypeList, stack_ref);
  add_ref(r, "split", ops::kAllDTypeList, split_ref);
  register_shape_index_ref(r);
}

}  // namespace tern::kernels::ref
