#include "tern/base/float_env.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace tern {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// MXCSR: flush-to-zero (results) and denormals-are-zero (inputs).
constexpr uint64_t kFlushBits = 0x8000u | 0x0040u;
uint64_t read_mode() {
  return _mm_getcsr();
}
void write_mode(uint64_t m) {
  _mm_setcsr(static_cast<unsigned>(m));
}
#elif defined(__aarch64__)
// FPCR.FZ flushes denormal inputs and results of single and double precision.
constexpr uint64_t kFlushBits = uint64_t{1} << 24;
uint64_t read_mode() {
  uint64_t m;
  asm volatile("mrs %0, fpcr" : "=r"(m));
  return m;
}
void write_mode(uint64_t m) {
  asm volatile("msr fpcr, %0" : : "r"(m));
}
#else
constexpr uint64_t kFlushBits = 0;
uint64_t read_mode() {
  return 0;
}
void write_mode(uint64_t) {}
#endif

bool env_default() {
  const char* v = std::getenv("TERN_FLUSH_DENORMALS");
  if (!v) return true;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "false") == 0 || std::strcmp(v, "off") == 0);
}

// -1: not decided yet (read the environment at first use).
std::atomic<int> g_flush{-1};
std::atomic<int> g_generation{0};

}  // namespace

bool flush_denormals() {
  int v = g_flush.load(std::memory_order_relaxed);
  if (v < 0) {
    int expected = -1;
    g_flush.compare_exchange_strong(expected, env_default() ? 1 : 0);
    v = g_flush.load(std::memory_order_relaxed);
  }
  return v == 1;
}

void set_flush_denormals(bool on) {
  g_flush.store(on ? 1 : 0);
  g_generation.fetch_add(1);
}

int flush_denormals_generation() {
  return g_generation.load(std::memory_order_relaxed);
}

void set_thread_flush_denormals(bool on) {
  if (kFlushBits == 0) return;
  const uint64_t m = read_mode();
  const uint64_t want = on ? (m | kFlushBits) : (m & ~kFlushBits);
  if (want != m) write_mode(want);
}

bool thread_flushes_denormals() {
  return kFlushBits != 0 && (read_mode() & kFlushBits) == kFlushBits;
}

FlushDenormalsScope::FlushDenormalsScope() {
  if (kFlushBits == 0 || !flush_denormals()) return;
  saved_ = read_mode();
  if ((saved_ & kFlushBits) == kFlushBits) return;  // already on: nothing to put back
  write_mode(saved_ | kFlushBits);
  restore_ = true;
}

FlushDenormalsScope::~FlushDenormalsScope() {
  // Only the mode goes back; status flags the run raised (overflow, say) stay visible.
  if (restore_) write_mode((read_mode() & ~kFlushBits) | (saved_ & kFlushBits));
}

}  // namespace tern
