// Fast embedding and broadcast_to: both are copies of contiguous rows (an embedding's table rows;
// the runs of broadcast_to's output that equal a run of its input), so both copy whole rows with
// memcpy over OpenMP threads where ref walks one element at a time through its strided
// iterator. Bitwise equal to ref (copies only); any dtype.
#include <omp.h>
#include <algorithm>
#include <cstring>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/kernels/index_check.h"
#include "tern/ops/infer.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

// Below this many output bytes one thread copies.
constexpr int64_t kParallelBytes = 1 << 18;

// embedding(params [vocab, ...], ids [...]) -> [..ids, ...params[1:]]: row ids[p] of params
// into row p of the output. Ids are checked first (the same error as ref's).
void embedding_cpu(KernelContext& ctx) {
  const Tensor& params = ctx.inputs[0];
  const Tensor& ids = ctx.inputs[1];
  const int64_t vocab = params.shape()[0], n = ids.num_elements();
  kernels::check_embedding_ids(ids, vocab);
  const auto row_bytes =
      static_cast<size_t>(vocab ? params.num_elements() / vocab : 0) * dtype_size(params.dtype());
  const char* src = static_cast<const char*>(params.raw_data());
  char* dst = static_cast<char*>(ctx.outputs[0].raw_data());
  const bool parallel = static_cast<int64_t>(row_bytes) * n >= kParallelBytes;
#pragma omp parallel for schedule(static) if (parallel && !omp_in_parallel())
  for (int64_t p = 0; p < n; ++p) {
    std::memcpy(dst + static_cast<size_t>(p) * row_bytes,
                src + static_cast<size_t>(kernels::index_at(ids, p)) * row_bytes, row_bytes);
  }
}

// `count` copies of the element of `esize` bytes at `in`, from `out` on.
template <typename E>
void fill_typed(char* out, const char* in, int64_t count) {
  E v;
  std::memcpy(&v, in, sizeof(E));
  E* o = reinterpret_cast<E*>(out);
  std::fill(o, o + count, v);
}

void fill_elements(char* out, const char* in, int64_t count, size_t esize) {
  switch (esize) {
    case 1:
      return fill_typed<uint8_t>(out, in, count);
    case 2:
      return fill_typed<uint16_t>(out, in, count);
    case 4:
      return fill_typed<uint32_t>(out, in, count);
    case 8:
      return fill_typed<uint64_t>(out, in, count);
    default:
      for (int64_t e = 0; e < count; ++e)
        std::memcpy(out + static_cast<size_t>(e) * esize, in, esize);
  }
}

// broadcast_to: the output seen as [outer, inner] where inner is the longest suffix of its dims
// that the input has too (the same sizes, so a contiguous run of the input); each outer index
// maps to one input offset through the other dims (stride 0 where the input's dim is 1). When
// that suffix is empty (the last dim is broadcast), inner is the run of broadcast dims at the
// end instead and each outer index fills it with one input element.
void broadcast_to_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const int r = y.rank(), lead = r - x.rank();
  const size_t esize = dtype_size(x.dtype());
  std::vector<int64_t> dims = y.shape().dims(), strides(static_cast<size_t>(r), 0);
  const std::vector<int64_t> in_strides = x.shape().strides();
  for (int i = 0; i < x.rank(); ++i) {
    if (x.shape()[i] != 1 || y.shape()[lead + i] == 1)
      strides[static_cast<size_t>(lead + i)] = in_strides[static_cast<size_t>(i)];
  }
  // Dims [split, r) are the inner run: kept dims (copy) or, if the last dim is broadcast,
  // broadcast dims (fill).
  auto kept = [&](int d) {
    return strides[static_cast<size_t>(d)] != 0 || dims[static_cast<size_t>(d)] == 1;
  };
  const bool fill = r > 0 && !kept(r - 1);
  int split = r;
  int64_t inner = 1;
  while (split > 0 && kept(split - 1) != fill) {
    --split;
    inner *= dims[static_cast<size_t>(split)];
  }
  const int64_t outer = inner ? y.num_elements() / inner : 0;
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  const size_t run_bytes = static_cast<size_t>(inner) * esize;
  const bool parallel = y.num_elements() * static_cast<int64_t>(esize) >= kParallelBytes;
#pragma omp parallel for schedule(static) if (parallel && !omp_in_parallel())
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offset = 0;  // the input element of outer index o: its digits over dims [0, split)
    for (int64_t d = split - 1, rest = o; d >= 0; --d) {
      offset += (rest % dims[static_cast<size_t>(d)]) * strides[static_cast<size_t>(d)];
      rest /= dims[static_cast<size_t>(d)];
    }
    char* out = dst + static_cast<size_t>(o) * run_bytes;
    const char* in = src + static_cast<size_t>(offset) * esize;
    if (!fill) {
      std::memcpy(out, in, run_bytes);
    } else {
      fill_elements(out, in, inner, esize);
    }
  }
}

}  // namespace

void register_row_copy_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "embedding", "cpu_vec", ops::kNumericDTypes, kVectorPriority,
                         embedding_cpu);
  kernels::add_fn_kernel(r, "broadcast_to", "cpu_vec", ops::kAllDTypeList, kVectorPriority,
                         broadcast_to_cpu);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
