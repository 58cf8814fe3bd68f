// "Nothing may allocate per record": analyze over raw-pixel image records (the Fashion-MNIST
// layout) allocates per chunk of records, not per record. Counts operator new calls (replaced
// for this test binary) for a file of 1000 records and one of 5000, in chunks of 1000.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "tern/transform/analysis.h"
#include "tern/transform/test_util.h"

namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

// Not under AddressSanitizer, whose runtime owns operator new (in all its forms).
#if !defined(__SANITIZE_ADDRESS__)
// The replacements stay out of line: GCC's -Wmismatched-new-delete takes an inlined
// operator delete's free() for a mismatch with operator new.
[[gnu::noinline]] void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](size_t n) {
  return operator new(n);
}
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete[](void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
#endif

namespace tern::transform {
namespace {

int64_t allocations_of_analyze(const TransformSpec& spec, const std::string& file) {
  const int64_t before = g_allocations.load();
  TransformAnalysis a = analyze(spec, {file}, {.threads = 1, .chunk_records = 1000});
  EXPECT_GT(a.records, 0);
  return g_allocations.load() - before;
}

TEST(TransformAnalyzeAllocations, PerChunkNotPerRecord) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "operator new is AddressSanitizer's here: nothing to count";
#endif
  testing::TempDir dir;
  for (int n : {1000, 5000}) {
    std::vector<data::Example> images;
    for (int i = 0; i < n; ++i)
      images.push_back(testing::example(
          {{"image/encoded", data::Feature::bytes({std::string(784, static_cast<char>(i))})},
           {"image/class/label", data::Feature::int64s({i % 10})}}));
    testing::write_examples(dir / (std::to_string(n) + ".tfrecord"), images);
  }
  TransformSpec spec = parse_transform_spec(
      "[transform]\nlabel = \"image/class/label\"\n[[transform.features]]\n"
      "input = \"image/encoded\"\nop = \"z_score\"\nshape = [28, 28, 1]\n",
      "t.toml");
  allocations_of_analyze(spec, dir / "1000.tfrecord");  // warm-up (one-time initialization)
  const int64_t small = allocations_of_analyze(spec, dir / "1000.tfrecord");
  const int64_t large = allocations_of_analyze(spec, dir / "5000.tfrecord");
  // 4000 more records = 4 more chunks.
  EXPECT_LE(large - small, 4 * 64)
      << small << " allocations for 1000 records, " << large << " for 5000";
  std::cout << "[ alloc ] analyze: " << small << " allocations for 1000 records, " << large
            << " for 5000 (" << (large - small) / 4.0 << " per chunk of 1000)\n";
}

}  // namespace
}  // namespace tern::transform
