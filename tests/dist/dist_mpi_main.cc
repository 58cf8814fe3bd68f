// dist_mpi_test's main: run under mpirun (CTest dist_mpi_1, dist_mpi_2, dist_mpi_4). Takes
// tern::dist::world() before the tests and lets it go after; MPI is finalized when static
// objects are destroyed at exit. Rank 0 prints gtest's usual output, the other ranks only their
// failures (prefixed with the rank). Also counts operator new calls (heap_allocations()).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>

#include "tests/dist/mpi_test_world.h"

namespace {

std::atomic<int64_t> g_allocations{0};
std::shared_ptr<tern::dist::Communicator> g_world;

// The failures of one rank other than 0, each line prefixed "[rank R]".
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
    }
  }

 private:
  int rank_;
};

}  // namespace

// The replacements stay out of line: GCC's -Wmismatched-new-delete takes an inlined
// operator delete's free() for a mismatch with operator new.
[[gnu::noinline]] void* operator new(size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](size_t size) {
  return operator new(size);
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

namespace tern::dist::testing {

Communicator& test_world() {
  return *g_world;
}
int64_t heap_allocations() {
  return g_allocations.load();
}

}  // namespace tern::dist::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_world = tern::dist::world();
  if (!g_world) {
    std::fprintf(stderr, "dist_mpi_test: run it under mpirun (no MPI launcher variables set)\n");
    return 1;
  }
  if (g_world->rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(g_world->rank()));
  }
  const int rc = RUN_ALL_TESTS();
  g_world.reset();
  return rc;
}
