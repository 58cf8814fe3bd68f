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

// `count` copies of the element at `in`, from `out` on.
template <typename E>
void fill_typed(char* out, const char* in, int64_t count) {
  E v;
  std::memcpy(&v, in, sizeof(E));
  E* o = reinterpret_cast<E*>(out);
  std::fill(o, o + count, v);
}

// broadcast_to: the output seen as [outer, inner] where inner is the longest suffix of its dims
// that the input has too (the same sizes, so a contiguous run of the input); each outer index
// maps to one input offset through the other dims (stride 0 where the input's dim is 1). When
// that suffix is empty (the last dim is broadcast), inner is the run of broadcast dims at the
// end instead and each outer index fills it with one input element. The plan is made once from
// the kernel's static shapes.
class BroadcastToKernel final : public kernels::Kernel {
 public:
  explicit BroadcastToKernel(const kernels::KernelSignature& sig) {
    const Shape& x = sig.inputs[0].shape;
    const Shape& y = sig.outputs[0].shape;
    const int r = y.rank(), lead = r - x.rank();
    esize_ = dtype_size(sig.inputs[0].dtype);
    dims_ = y.dims();
    strides_.assign(static_cast<size_t>(r), 0);
    const std::vector<int64_t> in_strides = x.strides();
    for (int i = 0; i < x.rank(); ++i) {
      if (x[i] != 1 || y[lead + i] == 1)
        strides_[static_cast<size_t>(lead + i)] = in_strides[static_cast<size_t>(i)];
    }
    // Dims [split_, r) are the inner run: kept dims (copy) or, if the last dim is broadcast,
    // broadcast dims (fill).
    auto kept = [&](int d) {
      return strides_[static_cast<size_t>(d)] != 0 || dims_[static_cast<size_t>(d)] == 1;
    };
    fill_ = r > 0 && !kept(r - 1);
    split_ = r;
    while (split_ > 0 && kept(split_ - 1) != fill_) {
      --split_;
      inner_ *= dims_[static_cast<size_t>(split_)];
    }
    outer_ = inner_ ? y.num_elements() / inner_ : 0;
    parallel_ = y.num_elements() * static_cast<int64_t>(esize_) >= kParallelBytes;
  }

  void run(KernelContext& ctx) override {
    switch (esize_) {
      case 1:
        return copy<uint8_t>(ctx);
      case 2:
        return copy<uint16_t>(ctx);
      case 4:
        return copy<uint32_t>(ctx);
      default:
        return copy<uint64_t>(ctx);  // f64, i64 (every dtype is 1, 2, 4 or 8 bytes)
    }
  }

 private:
  template <typename E>
  void copy(KernelContext& ctx) const {
    const char* src = static_cast<const char*>(ctx.inputs[0].raw_data());
    char* dst = static_cast<char*>(ctx.outputs[0].raw_data());
    const size_t run_bytes = static_cast<size_t>(inner_) * sizeof(E);
#pragma omp parallel for schedule(static) if (parallel_ && !omp_in_parallel())
    for (int64_t o = 0; o < outer_; ++o) {
      int64_t offset = 0;  // the input element of outer index o: its digits over dims [0, split_)
      for (int64_t d = split_ - 1, rest = o; d >= 0; --d) {
        offset += (rest % dims_[static_cast<size_t>(d)]) * strides_[static_cast<size_t>(d)];
        rest /= dims_[static_cast<size_t>(d)];
      }
      char* out = dst + static_cast<size_t>(o) * run_bytes;
      const char* in = src + static_cast<size_t>(offset) * sizeof(E);
      if (!fill_) {
        std::memcpy(out, in, run_bytes);
      } else {
        fill_typed<E>(out, in, inner_);
      }
    }
  }

  size_t esize_ = 0;
  std::vector<int64_t> dims_, strides_;
  int split_ = 0;
  int64_t inner_ = 1, outer_ = 0;
  bool fill_ = false, parallel_ = false;
};

}  // namespace

void register_row_copy_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "embedding", "cpu_vec", ops::kNumericDTypes, kVectorPriority,
                         embedding_cpu);
  r.add("broadcast_to",
        {.name = "cpu_vec",
         .dtypes = ops::kAllDTypeList,
         .priority = kVectorPriority,
         .create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
           return std::make_unique<BroadcastToKernel>(sig);
         }});
}

}  // namespace tern::cpu

TERN_CPU_V3_END
