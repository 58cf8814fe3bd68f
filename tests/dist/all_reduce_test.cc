// Communicator::all_reduce_sum under mpirun. Every rank builds every rank's contribution from a
// seed, so each can compute the reference locally: one process adding the N contributions in
// rank order, acc = x_0; acc += x_1; ... The deterministic mode must match it bit for bit (at
// N = 4 MPI_Allreduce does not, DISTRIBUTED.md 3.3); the fast mode within rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tern/base/philox.h"
#include "tern/base/sha256.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/support/random_tensor.h"

namespace tern::dist::testing {
namespace {

// Rank `rank`'s contribution: floats spread over 2^-8..2^8 (so the order of additions shows in
// the rounding), integers up to 2^59 in magnitude.
template <typename T>
std::vector<T> contribution(int rank, int64_t count, uint64_t seed) {
  PhiloxStream rng(seed, static_cast<uint64_t>(rank));
  std::vector<T> x(count);
  for (T& v : x) {
    if constexpr (std::is_floating_point_v<T>) {
      const int exponent = static_cast<int>(rng.next_below(17)) - 8;
      v = static_cast<T>(std::ldexp(2.0 * rng.next_double() - 1.0, exponent));
    } else {
      v = static_cast<T>(rng.next_u64() >> 4) - (T{1} << 59);
    }
  }
  return x;
}

// The reference: one process accumulating the contributions in rank order.
template <typename T>
std::vector<T> sequential_sum(int size, int64_t count, uint64_t seed) {
  std::vector<T> acc = contribution<T>(0, count, seed);
  for (int r = 1; r < size; ++r) {
    const std::vector<T> x = contribution<T>(r, count, seed);
    for (int64_t i = 0; i < count; ++i) acc[i] += x[i];
  }
  return acc;
}

// Index of the first element whose bytes differ, or -1.
template <typename T>
int64_t first_mismatch(const std::vector<T>& a, const std::vector<T>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  }
  return -1;
}

// Whether every rank holds exactly these bytes (a collective).
template <typename T>
bool same_bytes_on_every_rank(const std::vector<T>& x) {
  const std::string mine =
      sha256_hex(std::string_view(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(T)));
  for (const std::string& h : test_world().all_gather(mine)) {
    if (h != mine) return false;
  }
  return true;
}

template <typename T>
void expect_deterministic_equals_sequential(DType dtype, int64_t count, uint64_t seed) {
  Communicator& comm = test_world();
  std::vector<T> x = contribution<T>(comm.rank(), count, seed);
  comm.all_reduce_sum(x.data(), count, dtype, ReduceMode::kDeterministic);
  const std::vector<T> expected = sequential_sum<T>(comm.size(), count, seed);
  const int64_t bad = first_mismatch(x, expected);
  EXPECT_EQ(bad, -1) << dtype_name(dtype) << " count " << count << " rank " << comm.rank()
                     << ": element " << bad << " is " << (bad >= 0 ? x[bad] : T{})
                     << ", sequential order gives " << (bad >= 0 ? expected[bad] : T{});
  EXPECT_TRUE(same_bytes_on_every_rank(x)) << dtype_name(dtype) << " count " << count;
}

constexpr int64_t kOddSizes[] = {0, 1, 3, 1000, (int64_t{1} << 20) + 7};

TEST(AllReduceDeterministic, F32EqualsSequentialRankOrderSumBitwise) {
  for (int64_t count : kOddSizes) {
    expect_deterministic_equals_sequential<float>(DType::kF32, count, 11 + count);
  }
}

TEST(AllReduceDeterministic, F64EqualsSequentialRankOrderSumBitwise) {
  for (int64_t count : {int64_t{5}, int64_t{4099}, (int64_t{1} << 18) + 3}) {
    expect_deterministic_equals_sequential<double>(DType::kF64, count, 23 + count);
  }
}

TEST(AllReduceDeterministic, I64EqualsSequentialSum) {
  for (int64_t count : {int64_t{2}, int64_t{777}, (int64_t{1} << 18) + 1}) {
    expect_deterministic_equals_sequential<int64_t>(DType::kI64, count, 37 + count);
  }
}

TEST(AllReduceDeterministic, NullDataWithZeroCountIsFine) {
  test_world().all_reduce_sum(nullptr, 0, DType::kF32, ReduceMode::kDeterministic);
  test_world().all_reduce_sum(nullptr, 0, DType::kF64, ReduceMode::kFast);
}

TEST(AllReduceFast, F32WithinRoundingOfSequentialSumAndSameOnEveryRank) {
  Communicator& comm = test_world();
  const int64_t count = (int64_t{1} << 20) + 7;
  const uint64_t seed = 101;
  std::vector<float> x = contribution<float>(comm.rank(), count, seed);
  comm.all_reduce_sum(x.data(), count, DType::kF32, ReduceMode::kFast);
  const std::vector<float> expected = sequential_sum<float>(comm.size(), count, seed);
  std::vector<double> magnitude(count, 0.0);
  for (int r = 0; r < comm.size(); ++r) {
    const std::vector<float> xr = contribution<float>(r, count, seed);
    for (int64_t i = 0; i < count; ++i) magnitude[i] += std::fabs(xr[i]);
  }
  int64_t outside = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double tolerance = comm.size() * std::ldexp(magnitude[i], -23);
    if (std::fabs(static_cast<double>(x[i]) - expected[i]) > tolerance) ++outside;
  }
  EXPECT_EQ(outside, 0) << "elements beyond N ulps of the summed magnitudes";
  EXPECT_TRUE(same_bytes_on_every_rank(x));
}

TEST(AllReduceScratch, ReservedUpFrontRepeatedCallsAllocateNothing) {
  Communicator& comm = test_world();
  const int64_t largest = (int64_t{1} << 20) + 7;
  comm.reserve(largest * sizeof(float));
  const size_t reserved = comm.scratch_bytes();
  if (comm.size() > 1) {
    EXPECT_GT(reserved, 0u);
  }
  std::vector<float> f32 = contribution<float>(comm.rank(), largest, 7);
  std::vector<double> f64 = contribution<double>(comm.rank(), largest / 2, 8);
  const int64_t before = heap_allocations();
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (int64_t count : {int64_t{3}, int64_t{1000}, largest}) {
      comm.all_reduce_sum(f32.data(), count, DType::kF32, ReduceMode::kDeterministic);
    }
    comm.all_reduce_sum(f64.data(), largest / 2, DType::kF64, ReduceMode::kDeterministic);
  }
  EXPECT_EQ(heap_allocations() - before, 0) << "operator new calls inside all_reduce_sum";
  EXPECT_EQ(comm.scratch_bytes(), reserved) << "scratch grew past reserve()";
}

TEST(AllReduceScratch, GrowsOnlyOnceForTheLargestCount) {
  Communicator& comm = test_world();
  const int64_t count = int64_t{3} << 20;  // more than any test above
  std::vector<float> x = contribution<float>(comm.rank(), count, 9);
  comm.all_reduce_sum(x.data(), count, DType::kF32, ReduceMode::kDeterministic);
  const size_t grown = comm.scratch_bytes();
  const int64_t before = heap_allocations();
  comm.all_reduce_sum(x.data(), count, DType::kF32, ReduceMode::kDeterministic);
  comm.all_reduce_sum(x.data(), count / 3, DType::kF32, ReduceMode::kDeterministic);
  EXPECT_EQ(heap_allocations() - before, 0);
  EXPECT_EQ(comm.scratch_bytes(), grown);
}

TEST(AllReduceErrors, UnsupportedDtypeIsNamed) {
  std::vector<uint8_t> buf(64);
  for (DType dtype :
       {DType::kBF16, DType::kF16, DType::kI32, DType::kI8, DType::kU8, DType::kBool}) {
    for (ReduceMode mode : {ReduceMode::kDeterministic, ReduceMode::kFast}) {
      EXPECT_TERN_ERROR(test_world().all_reduce_sum(buf.data(), 4, dtype, mode),
                        ErrorCode::kInvalidArgument,
                        std::string("dtype ") + std::string(dtype_name(dtype)));
    }
  }
}

TEST(AllReduceErrors, NegativeCountAndNullDataAreRefused) {
  float x = 0;
  EXPECT_TERN_ERROR(test_world().all_reduce_sum(&x, -1, DType::kF32, ReduceMode::kDeterministic),
                    ErrorCode::kInvalidArgument, "count -1");
  EXPECT_TERN_ERROR(test_world().all_reduce_sum(nullptr, 8, DType::kF32, ReduceMode::kFast),
                    ErrorCode::kInvalidArgument, "null");
}

}  // namespace
}  // namespace tern::dist::testing
