// HostAllocator: aligned host memory with in-use / peak / limit accounting.
#include "tern/device/allocator.h"

#include <cstdio>
#include <cstdlib>

#include "tern/base/error.h"

namespace tern {
namespace {

size_t round_up(size_t bytes, size_t alignment) {
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  return rounded == 0 ? alignment : rounded;
}

}  // namespace

void* HostAllocator::allocate(size_t bytes, size_t alignment) {
  size_t rounded = round_up(bytes, alignment);
  size_t now = in_use_.fetch_add(rounded) + rounded;
  size_t limit = limit_.load();
  if (limit != 0 && now > limit) {
    in_use_.fetch_sub(rounded);
    throw_error(ErrorCode::kResourceExhausted, name_, ": allocating ", format_bytes(bytes),
                " would exceed the memory limit of ", format_bytes(limit), " (",
                format_bytes(now - rounded), " in use)");
  }
  void* p = std::aligned_alloc(alignment, rounded);
  if (!p) {
    in_use_.fetch_sub(rounded);
    throw_error(ErrorCode::kResourceExhausted, name_, ": out of host memory allocating ",
                format_bytes(bytes));
  }
  size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  num_allocs_.fetch_add(1);
  return p;
}

void HostAllocator::deallocate(void* ptr, size_t bytes, size_t alignment) {
  if (!ptr) return;
  std::free(ptr);
  in_use_.fetch_sub(round_up(bytes, alignment));
}

MemoryStats HostAllocator::stats() const {
  return {in_use_.load(), peak_.load(), limit_.load(), num_allocs_.load()};
}

Allocator& host_allocator() {
  static HostAllocator* allocator = new HostAllocator("host");  // never destroyed: tensors in
  return *allocator;                                            // statics may outlive main
}

std::string format_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

}  // namespace tern
