// Shared machinery of the vectorized elementwise kernels (elementwise_unary.cc,
// elementwise_binary.cc, elementwise_cast.cc): OpenMP splitting of large ranges, block conversion
// between the 16-bit floats and float, and the 2-D view of a NumPy broadcast that the binary
// kernels run on.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/kernels/kernel.h"
#include "tern/tensor/tensor.h"

namespace tern::cpu {

// Ranges up to this many elements run on the calling thread; larger ones are split over the
// OpenMP threads (thread start-up costs more than a small loop).
constexpr int64_t kParallelThreshold = 32768;
// 16-bit floats are converted to float in blocks of this many elements (on the stack).
constexpr int64_t kConvertBlock = 512;

// Calls fn(begin, end) on contiguous pieces covering [0, n): once on this thread when n is at most
// kParallelThreshold (or already inside a parallel region), else one piece per OpenMP thread.
void parallel_ranges(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

// --- 16-bit float blocks (vectorized; rounding to nearest even, as bfloat16/float16 do) ---

// One bf16 value widened / one float rounded to bf16 (nearest even, NaN kept quiet: the rounding
// of bfloat16::from_float), for `omp simd` loops that read or write bf16 directly.
[[gnu::always_inline]] inline float bf16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}
[[gnu::always_inline]] inline uint16_t float_to_bf16_bits(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? ((u >> 16) | 0x40u) : rounded);
}

// One element of an f32 or bf16 tensor as f32, and an f32 value stored into one (rounded once to
// bf16), for loops templated on the element type. Through bfloat16's own conversions: with the
// two bit helpers above instead, tern's Winograd channel loops vectorized worse (the bf16 forward
// of 64 channels at 32x32, batch 32: 3.06 against 1.94 ms).
[[gnu::always_inline]] inline float to_f32(float x) {
  return x;
}
[[gnu::always_inline]] inline float to_f32(bfloat16 x) {
  return static_cast<float>(x);
}
[[gnu::always_inline]] inline void store_f32(float& out, float v) {
  out = v;
}
[[gnu::always_inline]] inline void store_f32(bfloat16& out, float v) {
  out.bits = bfloat16::from_float(v);
}

void to_float(const bfloat16* in, float* out, int64_t n);
void to_float(const float16* in, float* out, int64_t n);
void from_float(const float* in, bfloat16* out, int64_t n);
void from_float(const float* in, float16* out, int64_t n);

// --- broadcast as 2-D ---

// How one operand is read in the [rows, cols] view of the output: element (r, c) is at
// r * row_stride + (contiguous ? c : 0).
struct BroadcastOperand {
  int64_t row_stride = 0;
  bool contiguous = false;
};

// The output viewed as [rows, cols] such that each operand is full ([rows, cols]), a repeated
// row ([1, cols]), a repeated column ([rows, 1]) or a single scalar. Same-shape, scalar,
// trailing-row (bias) and column (keepdims reduction) broadcasts all have one.
struct BroadcastPlan {
  int64_t rows = 1;
  int64_t cols = 1;
  std::vector<BroadcastOperand> operands;
};

// Fills `plan` and returns "", or returns why the shapes have no such view
// (e.g. [2, 3, 4] with [3, 1]). Operand shapes must broadcast to `out`.
std::string plan_broadcast(std::span<const Shape> operands, const Shape& out, BroadcastPlan* plan);

// Calls fn(row, col, length, out_offset) for each row piece of the output range [begin, end).
template <typename Fn>
void for_each_segment(const BroadcastPlan& plan, int64_t begin, int64_t end, Fn&& fn) {
  if (begin >= end) return;
  int64_t row = begin / plan.cols, col = begin % plan.cols;
  for (int64_t pos = begin; pos < end; ++row, col = 0) {
    int64_t length = std::min(plan.cols - col, end - pos);
    fn(row, col, length, pos);
    pos += length;
  }
}

// Start of operand `i`'s data for the segment at (row, col).
template <typename T>
const T* segment_start(const BroadcastPlan& plan, size_t i, const T* base, int64_t row,
                       int64_t col) {
  const BroadcastOperand& o = plan.operands[i];
  return base + row * o.row_stride + (o.contiguous ? col : 0);
}

// plan_broadcast for a kernel signature: its inputs against output 0.
std::string plan_broadcast(const kernels::KernelSignature& sig, BroadcastPlan* plan);

// Registers candidate "vec" (kVectorPriority) for `op` whose kernels are K(BroadcastPlan), made
// once per node; it declines the signatures plan_broadcast has no plan for, saying why.
template <typename K>
void add_planned_kernel(kernels::KernelRegistry& r, std::string_view op,
                        std::vector<DType> dtypes) {
  kernels::KernelCandidate c;
  c.name = "vec";
  c.dtypes = std::move(dtypes);
  c.priority = kVectorPriority;
  c.decline = [](const kernels::KernelSignature& sig) {
    BroadcastPlan plan;
    return plan_broadcast(sig, &plan);
  };
  c.create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    BroadcastPlan plan;
    std::string why = plan_broadcast(sig, &plan);
    if (!why.empty()) throw_error(ErrorCode::kInternal, "vec ", sig.to_string(), ": ", why);
    return std::make_unique<K>(std::move(plan));
  };
  r.add(op, std::move(c));
}

}  // namespace tern::cpu
